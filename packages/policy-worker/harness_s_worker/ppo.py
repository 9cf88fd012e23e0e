"""The update's pieces: log-probabilities of the chosen tokens without the full-vocabulary fp32
matrix (chunked, selective log-softmax), micro-batches packed by a token budget, and the loss as
a registered choice (PPO-clip with separate low/high clips; token-mean, sequence-mean or a
constant normaliser as Dr. GRPO has it; k3 KL to the base model). Log-probabilities in fp32."""

from __future__ import annotations

from dataclasses import dataclass

import torch

# The log-ratio is clamped before exp (as verl does), so one extreme behaviour log-probability
# cannot overflow the ratio to inf and the loss to NaN; far inside the clamp, PPO's clip acts first.
LOG_RATIO_LIMIT = 20.0
# Positions whose log-softmax is taken in fp32 at once: memory is chunk × vocabulary, not sequence × vocabulary.
LOGSOFTMAX_CHUNK = 512


def chosen_logprobs(logits: torch.Tensor, targets: torch.Tensor, chunk: int = LOGSOFTMAX_CHUNK) -> torch.Tensor:
    """log softmax(logits)[target] per position, in fp32, one chunk of positions at a time."""
    out = []
    for start in range(0, logits.shape[0], chunk):
        part = logits[start : start + chunk].float()
        out.append(
            part.gather(-1, targets[start : start + chunk].unsqueeze(-1)).squeeze(-1) - torch.logsumexp(part, dim=-1)
        )
    return torch.cat(out) if out else logits.new_zeros(0, dtype=torch.float32)


#: Per sequence, the tokens allowed at each constrained position (`constrained.allowed_rows`).
Allowed = dict[int, torch.Tensor]


def token_logprobs(model: torch.nn.Module, ids: torch.Tensor) -> torch.Tensor:
    """log p(ids[t] | ids[:t]) for t ≥ 1, in fp32; position 0 gets 0 (nothing predicts it)."""
    return batch_logprobs(model, [ids])[0]


def constrained_logprobs(logits: torch.Tensor, targets: torch.Tensor, allowed: Allowed | None) -> torch.Tensor:
    """`chosen_logprobs`, except that at each position in `allowed` (a position of the sequence:
    its logits are row position − 1) the distribution is renormalised over the allowed tokens."""
    out = chosen_logprobs(logits, targets)
    if not allowed:
        return out
    positions = sorted(allowed)
    rows = torch.tensor([t - 1 for t in positions], device=logits.device)
    masks = torch.stack([allowed[t] for t in positions]).to(logits.device)
    part = logits.index_select(0, rows).float().masked_fill(~masks, float("-inf"))
    chosen = part.gather(-1, targets.index_select(0, rows).unsqueeze(-1)).squeeze(-1) - torch.logsumexp(part, dim=-1)
    return torch.index_put(out, (rows,), chosen)


def batch_logprobs(
    model: torch.nn.Module, seqs: list[torch.Tensor], allowed: list[Allowed | None] | None = None
) -> list[torch.Tensor]:
    """`token_logprobs` of several sequences in one forward pass (right-padded, attention-masked),
    each under its constraint where `allowed` gives one."""
    longest = max(len(s) for s in seqs)
    dev = seqs[0].device
    ids = torch.zeros(len(seqs), longest, dtype=torch.long, device=dev)
    attention = torch.zeros(len(seqs), longest, dtype=torch.long, device=dev)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = s
        attention[i, : len(s)] = 1
    logits = model(input_ids=ids, attention_mask=attention).logits
    zero = torch.zeros(1, device=dev)
    return [
        torch.cat([zero, constrained_logprobs(logits[i, : len(s) - 1], s[1:], allowed[i] if allowed else None)])
        for i, s in enumerate(seqs)
    ]


def micro_batches(lengths: list[int], token_budget: int) -> list[list[int]]:
    """Datum indices packed in order into batches of at most `token_budget` padded tokens (a datum
    longer than the budget goes alone)."""
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for i, n in enumerate(lengths):
        if current and max(longest, n) * (len(current) + 1) > token_budget:
            batches.append(current)
            current, longest = [], 0
        current.append(i)
        longest = max(longest, n)
    if current:
        batches.append(current)
    return batches


@dataclass
class Loss:
    clip_low: float = 0.2
    clip_high: float = 0.2
    agg: str = "token-mean"
    kl_coef: float = 0.0
    # The constant divisor of "constant" aggregation (Dr. GRPO: the generation budget in tokens).
    normaliser: float | None = None


def datum_terms(
    new: torch.Tensor,
    old: torch.Tensor,
    ref: torch.Tensor | None,
    mask: torch.Tensor,
    advantage: float | torch.Tensor,
    loss: Loss,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-token clipped surrogate (to minimise), clip indicator and k3 KL, on masked tokens; the
    advantage is one number, or one per token (a row's token weights applied)."""
    ratio = torch.exp(torch.clamp(new - old, -LOG_RATIO_LIMIT, LOG_RATIO_LIMIT))
    unclipped = ratio * advantage
    clipped = torch.clamp(ratio, 1 - loss.clip_low, 1 + loss.clip_high) * advantage
    surrogate = -torch.minimum(unclipped, clipped)
    clip = (unclipped != clipped).float()
    kl = torch.exp(ref - new) - (ref - new) - 1 if ref is not None else torch.zeros_like(new)
    return surrogate * mask, clip * mask, kl * mask


def datum_loss(surrogate: torch.Tensor, kl: torch.Tensor, weight: float, loss: Loss) -> torch.Tensor:
    """One datum's share of the objective to minimise: its summed surrogate plus the KL penalty
    (a cost for drifting from the reference, never a bonus), times its aggregation weight."""
    return weight * (surrogate.sum() + loss.kl_coef * kl.sum())


def datum_weights(masks: list[torch.Tensor], loss: Loss) -> list[float]:
    """What each datum's summed token terms are multiplied by, so that summing over micro-batches
    gives the aggregated loss: token-mean Σ/Σ tokens, sequence-mean the mean of per-sequence means,
    constant Σ/(datums × normaliser)."""
    n = len(masks)
    if loss.agg == "sequence-mean":
        return [1.0 / (n * max(float(m.sum()), 1.0)) for m in masks]
    if loss.agg == "constant":
        norm = loss.normaliser or max(len(m) for m in masks)
        return [1.0 / (n * norm)] * n
    total = max(float(sum(m.sum() for m in masks)), 1.0)
    return [1.0 / total] * n


AGGREGATIONS = ("token-mean", "sequence-mean", "constant")
