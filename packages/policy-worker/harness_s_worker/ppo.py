"""The update: PPO-clip on per-token log-probabilities, token-mean or sequence-mean aggregation,
optional KL to the base model (adapter disabled) with the k3 estimator. Log-probabilities in fp32."""
from __future__ import annotations

from dataclasses import dataclass

import torch


def token_logprobs(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """log p(ids[t] | ids[:t]) for t ≥ 1, in fp32; position 0 gets 0 (nothing predicts it)."""
    logits = model(input_ids=ids.unsqueeze(0)).logits[0, :-1].float()
    lp = torch.log_softmax(logits, dim=-1).gather(-1, ids[1:].unsqueeze(-1)).squeeze(-1)
    return torch.cat([torch.zeros(1, device=lp.device), lp])


@dataclass
class Loss:
    clip_low: float = 0.2
    clip_high: float = 0.2
    agg: str = "token-mean"
    kl_coef: float = 0.0


# The log-ratio is clamped before exp (as verl does), so one extreme behaviour log-probability
# cannot overflow the ratio to inf and the loss to NaN; far inside the clamp, PPO's clip acts first.
LOG_RATIO_LIMIT = 20.0


def datum_terms(new: torch.Tensor, old: torch.Tensor, ref: torch.Tensor | None, mask: torch.Tensor, advantage: float, loss: Loss):
    """Per-token clipped surrogate (to minimise), clip indicator and k3 KL, on masked tokens."""
    ratio = torch.exp(torch.clamp(new - old, -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT))
    unclipped = ratio * advantage
    clipped = torch.clamp(ratio, 1 - loss.clip_low, 1 + loss.clip_high) * advantage
    surrogate = -torch.minimum(unclipped, clipped)
    clip = (unclipped != clipped).float()
    kl = torch.exp(ref - new) - (ref - new) - 1 if ref is not None else torch.zeros_like(new)
    return surrogate * mask, clip * mask, kl * mask


def aggregate(values: list[torch.Tensor], masks: list[torch.Tensor], agg: str) -> torch.Tensor:
    if agg == "sequence-mean":
        per = [v.sum() / m.sum().clamp(min=1) for v, m in zip(values, masks)]
        return torch.stack(per).mean()
    total = sum(m.sum() for m in masks)
    return sum(v.sum() for v in values) / torch.clamp(total, min=1)
