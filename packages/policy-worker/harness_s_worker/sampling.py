"""One sampling rule, applied the same way when drawing a token and when reporting its
log-probability: temperature, then top-p (nucleus) over the tempered distribution, renormalised.
Temperature 0 is greedy, and its log-probability is the untempered model's (informational: a
greedy turn is never trained on, see `SamplingRule.for_training`)."""

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
    """Log-probabilities (fp32) of the distribution `rule` draws from, for one row of logits."""
    if rule.temperature == 0:
        return torch.log_softmax(logits, dim=-1)
    logp = torch.log_softmax(logits / rule.temperature, dim=-1)
    if rule.top_p < 1.0:
        sorted_logp, order = torch.sort(logp, descending=True)
        cumulative = sorted_logp.exp().cumsum(-1)
        # Keep the smallest set whose mass reaches top_p (the first token always stays).
        drop_sorted = cumulative - sorted_logp.exp() >= rule.top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        logp = torch.log_softmax(logp.masked_fill(drop, float("-inf")), dim=-1)
    return logp


def draw(logits: torch.Tensor, rules: list[SamplingRule], generators: list[random.Random]) -> tuple[list[int], list[float]]:
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
