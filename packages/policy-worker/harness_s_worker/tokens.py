"""Tokens in, tokens out: one completion of a prompt given as ids, sampled by the same engine (and
so the same continuous batching, sampling rule and log-probabilities) as protocol v2's turns, but
outside any episode: the caller holds the ids. Behind vLLM's `/v1/completions` with id prompts and
`/inference/v1/generate`, and SGLang's `/generate` (`wire_routes.py`).

Each request is pre-filled whole: no cache is kept between requests (a real server's prefix cache
is not modelled; the ids and log-probabilities do not depend on it)."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from .engine import Request
from .errors import WorkerError
from .sampling import SamplingRule, distribution

if TYPE_CHECKING:
    from .names import ServedName
    from .policies import Policies, Policy


@dataclass(frozen=True)
class TokenTurn:
    prompt: list[int]
    ids: list[int]
    logprobs: list[float]
    #: "stop" (an end-of-turn id ended it; it is the last id) or "length" (max_tokens).
    finish: str
    version: int
    seconds: float
    #: Each completion position's most likely ids and their log-probabilities (`alternatives`), when asked for.
    top: list[list[tuple[int, float]]] | None = None


def check_prompt(policies: Policies, prompt: list[int], max_tokens: int, field: str) -> None:
    """400 for an empty prompt, an id outside the vocabulary or a prompt and completion past the context."""
    if not prompt:
        raise WorkerError(400, "VALIDATION_FAILED", f"{field}: the prompt is empty")
    vocab = policies.adapted.vocab_size()
    bad = next((t for t in prompt if not 0 <= t < vocab), None)
    if bad is not None:
        raise WorkerError(400, "VALIDATION_FAILED", f"{field}: token id {bad} is outside the vocabulary (size {vocab})")
    context = policies.adapted.max_context()
    if len(prompt) + max_tokens > context:
        raise WorkerError(
            400,
            "CONTEXT_TOO_LONG",
            f"This model's maximum context length is {context} tokens. However, you requested {len(prompt) + max_tokens} tokens ({len(prompt)} in the messages, {max_tokens} in the completion).",
        )


async def sample_ids(
    policies: Policies,
    served: ServedName,
    p: Policy,
    prompt: list[int],
    rule: SamplingRule,
    max_tokens: int,
    seed: int | None,
) -> TokenTurn:
    """One completion of `prompt` by policy `p` at the version `served` names (checked again when
    the sequence starts: a version published meanwhile is a 404 NOT_FOUND, never a sample at
    another version)."""
    version = [p.version]

    def admit() -> None:  # on the scheduler thread, when the sequence starts
        with policies.lock:
            if policies.find(p.id) is not p or (served.version is not None and p.version != served.version):
                raise WorkerError(404, "NOT_FOUND", f"the worker does not hold {served.name!r}")
            version[0] = p.version

    key = f"{p.id}/tokens-{uuid.uuid4().hex}"
    started = time.perf_counter()
    future = policies.engine.submit(
        Request(p.adapter, key, list(prompt), rule, max_tokens, policies.eos_ids, seed, admit=admit)
    )
    try:
        ids, logprobs, finish, _ = await asyncio.wait_for(asyncio.wrap_future(future), policies.limits.sample_timeout_s)
    except TimeoutError:
        future.cancel()
        raise WorkerError(
            503,
            "SAMPLE_TIMEOUT",
            f"the sample did not finish within {policies.limits.sample_timeout_s:g} s; the worker is overloaded (send fewer requests at once)",
        ) from None
    finally:
        policies.engine.forget_key(key)  # no episode continues from it
    return TokenTurn(list(prompt), ids, logprobs, finish, version[0], time.perf_counter() - started)


#: The most alternatives a request may ask for at each position (vLLM's default `max_logprobs`).
MAX_ALTERNATIVES = 20


def alternatives(
    policies: Policies, p: Policy, turn: TokenTurn, rule: SamplingRule, n: int
) -> list[list[tuple[int, float]]]:
    """Each completion position's `n` most likely ids under the distribution the turn was sampled
    from, with their log-probabilities: one forward pass over the prompt and completion at the
    version sampled (the engine reports only the sampled id's; a version published meanwhile is a
    404 NOT_FOUND, never alternatives from other weights)."""
    if n > MAX_ALTERNATIVES:
        raise WorkerError(
            400,
            "VALIDATION_FAILED",
            f"Requested sample logprobs of {n}, which is greater than max allowed: {MAX_ALTERNATIVES}",
        )
    ids = turn.prompt + turn.ids
    adapted = policies.adapted
    with adapted.lock, torch.no_grad():  # a publish or a delete holds it: the version cannot move under the pass
        if policies.policies.get(p.id) is not p or p.version != turn.version:
            raise WorkerError(404, "NOT_FOUND", f"policy {p.id!r} is no longer at version {turn.version}")
        adapted.activate(p.adapter)
        logits = (
            adapted(input_ids=torch.tensor([ids], device=next(adapted.parameters()).device))
            .logits[0, len(turn.prompt) - 1 : len(ids) - 1]
            .float()
        )
    out = []
    for row in logits:
        values, index = torch.topk(distribution(row, rule), min(n, row.shape[-1]))
        out.append(list(zip(index.tolist(), values.tolist(), strict=True)))
    return out
