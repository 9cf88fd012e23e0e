"""One sampling rule, applied the same way when drawing a token and when reporting its
log-probability: temperature, then top-p (nucleus) over the tempered distribution, renormalised.
Temperature 0 is greedy, and its log-probability is the untempered model's (informational: a
greedy turn is never trained on, see `SamplingRule.for_training`)."""
from __future__ import annotations

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


def draw(logits: torch.Tensor, rules: list[SamplingRule], generators: list[torch.Generator]) -> tuple[list[int], list[float]]:
    """One token per row, each from its own generator (a sequence's draws do not depend on what
    else is in the batch), with the log-probability of the drawn token under the same distribution."""
    tokens, logprobs = [], []
    same = all(r.exact for r in rules)
    if same:
        rows = torch.log_softmax(logits, dim=-1)
    for i, rule in enumerate(rules):
        logp = rows[i] if same else distribution(logits[i], rule)
        if rule.temperature == 0:
            token = int(torch.argmax(logp))
        else:
            token = int(torch.multinomial(logp.exp().cpu(), 1, generator=generators[i]))
        tokens.append(token)
        logprobs.append(float(logp[token]))
    return tokens, logprobs
