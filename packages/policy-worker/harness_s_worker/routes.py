"""The worker's routes, one router per resource: health, policies (protocol v2's state, rendering,
scoring, replay, checkpoints), sampling (turns, episodes, the OpenAI-compatible façade) and updates."""

from __future__ import annotations

import asyncio
import os
import re
import time
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Header, Query
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from .errors import WorkerError
from .facade import Facade
from .model_card import model_card
from .names import NotServed
from .policies import Policies, Policy
from .schemas import (
    ID,
    SCORE_CONTEXTS,
    ChatRequest,
    CreatePolicy,
    RenderRequest,
    ReplayRequest,
    SampleRequest,
    ScoreRequest,
    UpdateRequest,
)
from .updates import Updates
from .vllm_wire import not_found


@dataclass
class Served:
    """What the routes serve: the policies, their update queue, the chat façade and the model's name."""

    policies: Policies
    updates: Updates
    facade: Facade
    model_name: str

    def trained_here(self) -> None:
        if not self.policies.trainable:
            raise WorkerError(
                409,
                "NOT_TRAINED_HERE",
                "this endpoint serves a model its trainer updates: policies are not created, deleted, updated or checkpointed here",
            )

    def state(self, p: Policy) -> dict[str, Any]:
        policies = self.policies
        return {
            "policy_id": p.id,
            "version": p.version,
            "tokenizer": {
                "name": self.model_name,
                "eos_ids": sorted(policies.eos_ids),
                "vocab_size": policies.adapted.vocab_size(),
            },
            "template": {**policies.chat.describe(), "tool_parser": policies.tool_parser},
            "open_episodes": len(p.episodes),
            "capabilities": {
                "sample": True,
                "score": True,
                "updates": policies.trainable,
                "kl": policies.trainable,
                "checkpoints": policies.trainable,
            },
        }

    def check_ids(self, field: str, ids: list[int]) -> None:
        vocab = self.policies.adapted.vocab_size()
        bad = next((t for t in ids if t >= vocab), None)
        if bad is not None:
            raise WorkerError(
                400, "VALIDATION_FAILED", f"{field}: token id {bad} is outside the vocabulary (size {vocab})"
            )

    async def sample_turn(self, pid: str, body: SampleRequest, key: str | None = None) -> dict[str, Any]:
        policies = self.policies
        if key is not None:
            again = await run_in_threadpool(policies.episodes.answered, pid, body.episode_id, key)
            if again is not None:
                return again
        request, context = await run_in_threadpool(policies.episodes.prepare, pid, body, key)
        future = policies.engine.submit(request)
        try:
            result = await asyncio.wait_for(asyncio.wrap_future(future), policies.limits.sample_timeout_s)
        except TimeoutError:
            future.cancel()
            raise WorkerError(
                503,
                "SAMPLE_TIMEOUT",
                f"the sample did not finish within {policies.limits.sample_timeout_s:g} s; the worker is overloaded (send fewer requests at once)",
            ) from None
        return await run_in_threadpool(policies.episodes.finish, context, result)


def check_id(pid: str) -> str:
    if not re.match(ID, pid):
        raise WorkerError(400, "VALIDATION_FAILED", "policy id: invalid")
    return pid


def health_routes(served: Served) -> APIRouter:
    router = APIRouter()

    @router.get("/healthz")
    def healthz() -> dict[str, Any]:
        policies = served.policies
        kv = policies.engine.kv
        return {
            "ok": True,
            "protocol": 2,
            "pid": os.getpid(),
            "model": served.model_name,
            "base": model_card(policies.adapted.base, policies.tokenizer, policies.adapted.max_context()),
            "policies": len(policies.policies),
            "device": str(next(policies.adapted.base.parameters()).device),
            "sampler": {
                "steps": policies.engine.steps,
                "tokens": policies.engine.tokens_sampled,
                "prefills": policies.engine.prefills,
                "kv_cache": {
                    "mb": round(kv.used / 2**20, 1),
                    "episodes": len(kv.entries),
                    "hits": kv.hits,
                    "misses": kv.misses,
                    "evictions": kv.evictions,
                },
            },
        }

    return router


def policy_routes(served: Served) -> APIRouter:
    router = APIRouter(prefix="/v2/policies/{pid}")
    policies = served.policies

    @router.put("")
    def put_policy(pid: str, body: CreatePolicy) -> JSONResponse:
        served.trained_here()
        p, created = policies.create(check_id(pid), body)
        return JSONResponse(served.state(p), status_code=201 if created else 200)

    @router.get("")
    def get_policy(pid: str) -> dict[str, Any]:
        return served.state(policies.get(pid))

    @router.delete("")
    def delete_policy(pid: str) -> dict[str, Any]:
        served.trained_here()
        policies.delete(pid)
        served.updates.forget_policy(pid)
        return {"deleted": pid}

    @router.post("/render")
    def render(pid: str, body: RenderRequest) -> dict[str, Any]:
        policies.get(pid)
        return {"ids": policies.episodes.render(body.messages, body.tools, body.add_generation_prompt)}

    @router.post("/score")
    def score(pid: str, body: ScoreRequest) -> dict[str, Any]:
        context = policies.adapted.max_context()
        for i, sq in enumerate(body.sequences):
            served.check_ids(f"sequences.{i}.ids", sq.ids)
            if sq.mask is not None and len(sq.mask) != len(sq.ids):
                raise WorkerError(400, "VALIDATION_FAILED", f"sequences.{i}: ids and mask must have the same length")
            if len(sq.ids) > context:
                raise WorkerError(
                    400,
                    "CONTEXT_TOO_LONG",
                    f"sequences.{i} holds {len(sq.ids)} tokens, past the model's context of {context}",
                )
        total = sum(len(sq.ids) for sq in body.sequences)
        if total > SCORE_CONTEXTS * context:
            raise WorkerError(
                400,
                "VALIDATION_FAILED",
                f"the sequences hold {total} tokens in all, past the {SCORE_CONTEXTS * context} one score request takes ({SCORE_CONTEXTS} contexts): split them",
            )
        return {"logprobs": policies.score(pid, body.version, [s.ids for s in body.sequences])}

    @router.post("/replay")
    def replay(pid: str, body: ReplayRequest) -> dict[str, Any]:
        for i, t in enumerate(body.turns):
            served.check_ids(f"turns.{i}.completion_ids", t.completion_ids)
        return {
            "turns": policies.replay(
                pid, body.version, body.messages, body.tools, body.turns, body.constrain_tool_calls
            )
        }

    @router.post("/checkpoints")
    def checkpoint(pid: str) -> dict[str, Any]:
        served.trained_here()
        return policies.checkpoint(pid)

    return router


def sampling_routes(served: Served) -> APIRouter:
    router = APIRouter()

    @router.post("/v2/policies/{pid}/sample")
    async def sample(
        pid: str,
        body: SampleRequest,
        idempotency_key: str | None = Header(None, alias="Idempotency-Key", max_length=200),
    ) -> dict[str, Any]:
        """One turn; with an Idempotency-Key, the same request again (its reply lost) gets the same answer, never a second turn."""
        return await served.sample_turn(pid, body, idempotency_key)

    @router.delete("/v2/policies/{pid}/episodes/{eid}")
    def close_episode(pid: str, eid: str) -> dict[str, Any]:
        return {"closed": served.policies.episodes.close_episode(pid, eid)}

    @router.post("/v1/chat/completions")
    async def chat(body: ChatRequest) -> dict[str, Any]:
        """vLLM's chat completions (`facade.py`); a model name the worker does not serve, or no
        longer holds when the turn starts, is vLLM's 404, other errors keep the worker's shape."""
        started = time.perf_counter()
        try:
            # Off the event loop: measuring and keying a conversation reads all of it.
            pid, req, held = await run_in_threadpool(served.facade.request, body)
            out = await served.sample_turn(pid, req)
        except NotServed as err:
            raise not_found(err.name) from None
        except WorkerError as err:
            if err.status == 404 or (err.code == "STALE_POLICY_VERSION" and "@v" in body.model):
                raise not_found(body.model) from None
            raise
        return await run_in_threadpool(served.facade.response, pid, req, body, held, out, time.perf_counter() - started)

    return router


def update_routes(served: Served) -> APIRouter:
    router = APIRouter()

    @router.post("/v2/policies/{pid}/updates", status_code=202)
    def post_update(
        pid: str, body: UpdateRequest, idempotency_key: str = Header(..., alias="Idempotency-Key", max_length=200)
    ) -> JSONResponse:
        served.trained_here()
        for i, d in enumerate(body.datums):
            if not (len(d.loss_mask) == len(d.ids) == len(d.behaviour_logprobs)):
                raise WorkerError(
                    400,
                    "VALIDATION_FAILED",
                    f"datums.{i}: ids, loss_mask and behaviour_logprobs must have the same length",
                )
            if d.token_weights is not None and len(d.token_weights) != len(d.ids):
                raise WorkerError(400, "VALIDATION_FAILED", f"datums.{i}.token_weights: one weight per token")
            if d.loss_mask[0] != 0:
                raise WorkerError(
                    400, "VALIDATION_FAILED", f"datums.{i}.loss_mask: the first token is never trained on"
                )
            served.check_ids(f"datums.{i}.ids", d.ids)
        job, created = served.updates.submit(pid, idempotency_key, body)
        return JSONResponse({"update_id": job.id, "status": job.status, "created": created}, status_code=202)

    @router.get("/v2/updates/{uid}")
    def get_update(
        uid: str,
        wait: float = Query(
            0, ge=0, le=30, description="seconds to wait for the job to finish before answering (long poll)"
        ),
    ) -> dict[str, Any]:
        job = served.updates.get(uid)
        if wait:
            job.finished.wait(wait)
        return {
            "update_id": job.id,
            "policy_id": job.policy_id,
            "status": job.status,
            "base_version": job.base_version,
            "version": job.version,
            "metrics": job.metrics,
            "error": job.error,
        }

    return router
