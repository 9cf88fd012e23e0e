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
from .ppo import LOGSOFTMAX_CHUNK
from .sampling import SamplingRule, distribution

if TYPE_CHECKING:
    from .names import ServedName
    from .policies import Policies, Policy


@dataclass(frozen=True)
class PromptScore:
    """One prompt id (not the first: nothing predicts it) under the model at the version sampled."""

    #: log p(id | the ids before it): the model's own log-softmax in fp32, as `/score` computes it.
    logprob: float
    #: Its rank in the vocabulary: how many ids are at least as likely, itself included (1: the most likely).
    rank: int
    #: The most likely ids at that position and their log-probabilities, most likely first.
    top: list[tuple[int, float]]


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
    #: Each prompt id after the first as the model scores it in place (`prompt_logprobs`), when asked for.
    prompt_scores: list[PromptScore] | None = None


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
    logits = logits_at(policies, p, turn.version, turn.prompt + turn.ids, len(turn.prompt) - 1)
    out = []
    for row in logits.float():
        values, index = torch.topk(distribution(row, rule), min(n, row.shape[-1]))
        out.append(list(zip(index.tolist(), values.tolist(), strict=True)))
    return out


def logits_at(policies: Policies, p: Policy, version: int, ids: list[int], first: int) -> torch.Tensor:
    """The logits at positions `first`.. `len(ids) - 2` (each predicting the id after it) of one
    forward pass over `ids` by policy `p` at `version`: a publish or a delete holds the adapters'
    lock, so the version cannot move under the pass, and a version published meanwhile is a 404
    NOT_FOUND, never logits from other weights."""
    adapted = policies.adapted
    with adapted.lock, torch.no_grad():
        if policies.policies.get(p.id) is not p or p.version != version:
            raise WorkerError(404, "NOT_FOUND", f"policy {p.id!r} is no longer at version {version}")
        adapted.activate(p.adapter)
        device = next(adapted.parameters()).device
        logits: torch.Tensor = adapted(input_ids=torch.tensor([ids], device=device)).logits
        return logits[0, first : len(ids) - 1]


def prompt_scores(policies: Policies, p: Policy, turn: TokenTurn, n: int) -> list[PromptScore]:
    """Each prompt id after the first under the model at the version the turn was sampled at (one
    forward pass over the prompt): its log-probability given the ids before it, the model's own (no
    temperature or top-p: what `/score` gives the same ids, and what vLLM's `prompt_logprobs` and
    SGLang's `input_token_logprobs` report), its rank, and the `n` most likely ids there. The
    log-softmax runs in fp32 one chunk of positions at a time (`ppo.LOGSOFTMAX_CHUNK`), as `/score`'s does."""
    if n > MAX_ALTERNATIVES:
        raise WorkerError(
            400,
            "VALIDATION_FAILED",
            f"Requested prompt logprobs of {n}, which is greater than max allowed: {MAX_ALTERNATIVES}",
        )
    if len(turn.prompt) < 2:
        return []
    logits = logits_at(policies, p, turn.version, turn.prompt, 0)
    targets = torch.tensor(turn.prompt[1:], device=logits.device)
    out = []
    for start in range(0, logits.shape[0], LOGSOFTMAX_CHUNK):
        logp = torch.log_softmax(logits[start : start + LOGSOFTMAX_CHUNK].float(), dim=-1)
        chosen = logp.gather(-1, targets[start : start + LOGSOFTMAX_CHUNK].unsqueeze(-1))
        ranks = (logp >= chosen).sum(-1)
        values, index = torch.topk(logp, min(n, logp.shape[-1]))
        for lp, rank, top_v, top_i in zip(
            chosen.squeeze(-1).tolist(), ranks.tolist(), values.tolist(), index.tolist(), strict=True
        ):
            out.append(PromptScore(lp, rank, list(zip(top_i, top_v, strict=True))))
    return out
