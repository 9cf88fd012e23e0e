"""One sampling rule, applied the same way when drawing a token and when reporting its
log-probability: temperature, then top-p (nucleus) over the tempered distribution, renormalised.
Temperature 0 is greedy, and its log-probability is the untempered model's (informational: a
greedy turn is never trained on: only an `exact` rule's samples are, see `episodes.prepare`).
Other rules are computed in float64 with the largest logit subtracted before the temperature
divides (so no temperature above 0 overflows), and the nucleus always keeps the most likely token
(so no top_p above 0 empties it): every reported log-probability is finite."""

from __future__ import annotations

import random
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class SamplingRule:
    temperature: float = 1.0
    top_p: float = 1.0

    @property
    def exact(self) -> bool:
        """True when the drawn distribution is the model's own, the one an update scores."""
        return self.temperature == 1.0 and self.top_p == 1.0


def distribution(logits: torch.Tensor, rule: SamplingRule) -> torch.Tensor:
    """Log-probabilities (float64) of the distribution `rule` draws from, for one row of logits;
    for an exact rule and for greedy ones, the model's own fp32 values (what an update scores)."""
    if rule.temperature == 0 or rule.exact:
        return torch.log_softmax(logits, dim=-1).double()
    wide = logits.double()
    # (logits - max) <= 0: divided by any temperature it is at most 0 and at worst -inf, never NaN.
    logp = torch.log_softmax((wide - wide.max()) / rule.temperature, dim=-1)
    if rule.top_p < 1.0:
        sorted_logp, order = torch.sort(logp, descending=True)
        probs = sorted_logp.exp()
        # Keep the smallest set whose mass reaches top_p; the most likely token always stays.
        drop_sorted = probs.cumsum(-1) - probs >= rule.top_p
        drop_sorted[..., 0] = False
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        logp = torch.log_softmax(logp.masked_fill(drop, float("-inf")), dim=-1)
    return logp


def draw(
    logits: torch.Tensor, rules: list[SamplingRule], generators: list[random.Random]
) -> tuple[list[int], list[float]]:
    """One token per row by inverse-CDF sampling with one uniform from that row's own generator
    (a sequence's draws do not depend on what else is in the batch), and the log-probability of
    the drawn token under the same distribution."""
    if all(r.exact for r in rules):
        logp = torch.log_softmax(logits, dim=-1)
    else:
        logp = torch.stack([distribution(logits[i], r) for i, r in enumerate(rules)])
    cdf = logp.exp().cumsum(-1).cpu()
    # 1 - u is in (0, 1]: the first index whose cumulative mass reaches it has mass of its own.
    u = torch.tensor([[1.0 - g.random()] for g in generators], dtype=cdf.dtype)
    tokens = torch.searchsorted(cdf, u * cdf[:, -1:]).squeeze(1).clamp(max=logits.shape[-1] - 1)
    for i, rule in enumerate(rules):
        if rule.temperature == 0:
            tokens[i] = int(torch.argmax(logp[i]))
    chosen = logp.gather(1, tokens.to(logp.device).unsqueeze(1)).squeeze(1)
    return tokens.tolist(), chosen.tolist()
