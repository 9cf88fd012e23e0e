"""The warm start's training: cross-entropy on the calls' tokens, and the imitation gap on
held-back conversations."""

from __future__ import annotations

import math
import random
import sys
import time
from typing import Any

import torch
from transformers import LlamaForCausalLM

from .ppo import micro_batches
from .warm_start import Conversation


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def supervised(
    model: LlamaForCausalLM,
    data: list[tuple[list[int], list[float]]],
    *,
    seed: int,
    epochs: int,
    lr: float,
    batch_tokens: int,
) -> list[float]:
    """Cross-entropy on the completions, AdamW with a cosine schedule, batches packed by a token
    budget in a seeded order; returns the mean loss of each epoch."""
    order_rng = random.Random(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    by_length = sorted(range(len(data)), key=lambda i: len(data[i][0]))
    batches = [[by_length[j] for j in b] for b in micro_batches([len(data[i][0]) for i in by_length], batch_tokens)]
    total = max(1, epochs * len(batches))
    losses, step, started = [], 0, time.time()
    model.train()
    for epoch in range(epochs):
        order = list(range(len(batches)))
        order_rng.shuffle(order)
        summed, count = 0.0, 0
        for b in order:
            batch = [data[i] for i in batches[b]]
            width = max(len(ids) for ids, _ in batch)
            ids = torch.zeros(len(batch), width, dtype=torch.long)
            weights = torch.zeros(len(batch), width)
            attention = torch.zeros(len(batch), width, dtype=torch.long)
            for r, (seq, mask) in enumerate(batch):
                ids[r, : len(seq)] = torch.tensor(seq)
                attention[r, : len(seq)] = 1
                weights[r, : len(seq)] = torch.tensor(mask)
            for group in optimizer.param_groups:
                group["lr"] = lr * 0.5 * (1 + math.cos(math.pi * step / total))
            logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
            token_loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1), reduction="none"
            )
            w = weights[:, 1:].reshape(-1)
            loss = (token_loss * w).sum() / w.sum().clamp(min=1e-9)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            step += 1
            summed += float(loss.detach()) * len(batch)
            count += len(batch)
        losses.append(summed / max(count, 1))
        log(f"suite-lm: epoch {epoch + 1}/{epochs} loss {losses[-1]:.4f} ({time.time() - started:.0f} s)")
    model.eval()
    return losses


VALIDATION_EVERY = 20


def call_logprobs(model: torch.nn.Module, ids: list[int], mask: list[float]) -> list[float]:
    """log p of each positive-weight run (one turn's call) of one conversation, in turn order."""
    logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].float()
    token_lp = torch.log_softmax(logits, -1).gather(-1, torch.tensor(ids[1:]).unsqueeze(-1)).squeeze(-1)
    runs, current = [], 0.0
    for i in range(1, len(ids)):
        if mask[i]:
            current += float(token_lp[i - 1])
            if i + 1 == len(ids) or not mask[i + 1]:
                runs.append(current)
                current = 0.0
    return runs


@torch.no_grad()
def following_loss(model: torch.nn.Module, data: list[tuple[list[int], list[float]]]) -> dict[str, Any]:
    """On held-back instruction-following conversations: −log p of the call the text asks for, in
    nats per turn (0 when the model always makes it), and how often it is the likelier half."""
    model.eval()
    nll = [-lp for ids, mask in data for lp in call_logprobs(model, ids, mask)]
    return {
        "turns": len(nll),
        "nats_per_turn": round(sum(nll) / len(nll), 4) if nll else None,
        "above_half": round(sum(x < math.log(2) for x in nll) / len(nll), 4) if nll else None,
    }


@torch.no_grad()
def imitation_gap(
    model: torch.nn.Module, data: list[tuple[list[int], list[float]]], conversations: list[Conversation]
) -> dict[str, Any]:
    """On held-back conversations: the model's negative log-likelihood of each call minus the
    embedded policy's (−log p of the same call), in nats per turn — a cross-entropy minus an
    entropy, so an estimate of the KL from the embedded policy to the model (an upper bound: the
    model's other spellings of a call are not counted) — overall and on hinted turns."""
    model.eval()
    gaps: list[float] = []
    hinted: list[float] = []
    for (ids, mask), c in zip(data, conversations, strict=True):
        for lp, turn in zip(call_logprobs(model, ids, mask), c.turns, strict=True):
            if turn.logprob is None:
                continue
            gap = turn.logprob - lp
            gaps.append(gap)
            if turn.hinted:
                hinted.append(gap)

    def mean(xs: list[float]) -> float | None:
        return round(sum(xs) / len(xs), 4) if xs else None

    return {
        "turns": len(gaps),
        "nats_per_turn": mean(gaps),
        "hinted_turns": len(hinted),
        "nats_per_hinted_turn": mean(hinted),
    }
