"""The reference policy worker: protocol v2 over HTTP (docs/design.md §5) and an OpenAI-compatible
`/v1/chat/completions` façade. `python -m harness_s_worker.server --model tiny --port 8765`."""
from __future__ import annotations

import argparse
import re
import tempfile
import time
import uuid
from pathlib import Path
from typing import Annotated, Any, Literal

import torch
import uvicorn
from fastapi import FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from .policies import Limits, Policies, WorkerError
from .sampler import GenerateSampler
from .tiny import build_tiny, load_model
from .toolcalls import parse_tool_calls

ID = r"^[A-Za-z0-9][A-Za-z0-9_.:@+=-]{0,199}$"


class Strict(BaseModel):
    # No NaN or Infinity anywhere (JSON parsers here accept them): a non-finite number is a 400.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Lora(Strict):
    rank: int = Field(8, ge=1, le=256)
    alpha: float = Field(16, gt=0)
    targets: list[str] = ["q_proj", "v_proj"]


class CreatePolicy(Strict):
    base_model: str
    lora: Lora = Lora()
    seed: int = 0
    init_from: str | None = None


class Version(Strict):
    exact: int | None = None
    min: int | None = None


class Sampling(Strict):
    temperature: float = Field(1.0, ge=0, le=5)
    top_p: float = Field(1.0, gt=0, le=1)
    max_tokens: int = Field(64, ge=1, le=4096)
    seed: int | None = None


class SampleRequest(Strict):
    episode_id: str = Field(pattern=ID)
    version: Version | None = None
    messages: list[dict[str, Any]] | None = None
    append: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    sampling: Sampling = Sampling()


class RenderRequest(Strict):
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    add_generation_prompt: bool = False


Mask = Literal[0, 1]
TokenId = Annotated[int, Field(ge=0)]


class Sequence(Strict):
    ids: list[TokenId] = Field(min_length=1, max_length=32768)
    mask: list[Mask] | None = None


class ScoreRequest(Strict):
    version: Version | None = None
    sequences: list[Sequence] = Field(min_length=1, max_length=1024)


class Datum(Strict):
    sample_id: str
    group_id: str
    ids: list[TokenId] = Field(min_length=2, max_length=32768)
    loss_mask: list[Mask]
    # A log-probability is at most 0 (a little above for rounding); the ratio it enters is
    # clamped in the loss, so an extreme but finite value cannot overflow it.
    behaviour_logprobs: list[Annotated[float, Field(le=1e-3)]]
    advantage: float = Field(ge=-1e4, le=1e4)


class LossSpec(Strict):
    kind: Literal["ppo"] = "ppo"
    clip_low: float = Field(0.2, ge=0, le=1)
    clip_high: float = Field(0.2, ge=0, le=10)
    agg: Literal["token-mean", "sequence-mean", "constant"] = "token-mean"
    kl_coef: float = Field(0.0, ge=0)
    normaliser: float | None = Field(None, gt=0)


class Optim(Strict):
    lr: float = Field(gt=0, le=1)
    betas: tuple[float, float] = (0.9, 0.999)
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(1.0, gt=0)
    epochs: int = Field(1, ge=1, le=16)
    micro_batch_tokens: int = Field(8192, ge=1, le=1 << 20)
    gradient_checkpointing: bool = False


class UpdateRequest(Strict):
    base_version: int = Field(ge=0)
    datums: list[Datum] = Field(min_length=1, max_length=4096)
    loss: LossSpec = LossSpec()
    optim: Optim


class ChatRequest(BaseModel):
    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    max_tokens: int | None = Field(None, ge=1, le=4096)
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None
    logprobs: bool = False


def error(status: int, code: str, message: str, **extra) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status)


class BodyLimit:
    """Refuses a body over `max_bytes` with 413: by its declared length before any of it is read,
    or counted as it arrives (chunked)."""

    def __init__(self, app, max_bytes: int):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        too_large = error(413, "PAYLOAD_TOO_LARGE", f"request body exceeds {self.max_bytes} bytes")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            return await too_large(scope, receive, send)
        # The body is read here, counted as it arrives, and replayed to the app: what the app would
        # have held anyway, never more than the limit.
        messages, seen = [], 0
        while True:
            message = await receive()
            messages.append(message)
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                return await too_large(scope, receive, send)
            if message["type"] != "http.request" or not message.get("more_body"):
                break

        async def replayed():
            return messages.pop(0) if messages else await receive()

        return await self.app(scope, replayed, send)


def create_app(policies: Policies, token: str | None = None, model_name: str = "tiny", max_body_bytes: int = 64 << 20) -> FastAPI:
    app = FastAPI(title="Harness-S policy worker", version="2")
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)

    @app.exception_handler(WorkerError)
    async def worker_error(_req, err: WorkerError):
        return error(err.status, err.code, err.message)

    @app.exception_handler(RequestValidationError)
    async def invalid(_req, err: RequestValidationError):
        issues = [f"{'.'.join(str(p) for p in e['loc'][1:]) or '(root)'}: {e['msg']}" for e in err.errors()]
        return error(400, "VALIDATION_FAILED", "request body is invalid", issues=issues)

    @app.middleware("http")
    async def auth(request: Request, call_next):
        if token and request.url.path != "/healthz" and request.headers.get("authorization") != f"Bearer {token}":
            return error(401, "UNAUTHENTICATED", "a valid bearer token is required")
        return await call_next(request)

    def check_id(pid: str) -> str:
        if not re.match(ID, pid):
            raise WorkerError(400, "VALIDATION_FAILED", "policy id: invalid")
        return pid

    def state(p) -> dict:
        return {"policy_id": p.id, "version": p.version, "tokenizer": {"name": model_name, "eos_ids": [policies.tokenizer.eos_token_id]}, "capabilities": {"sample": True, "score": True, "updates": True, "kl": True, "checkpoints": True}}

    @app.get("/healthz")
    def healthz():
        return {"ok": True, "protocol": 2, "model": model_name, "policies": len(policies.policies), "device": str(next(policies.base.parameters()).device)}

    @app.put("/v2/policies/{pid}")
    def put_policy(pid: str, body: CreatePolicy):
        p, created = policies.create(check_id(pid), body.model_dump())
        return JSONResponse(state(p), status_code=201 if created else 200)

    @app.get("/v2/policies/{pid}")
    def get_policy(pid: str):
        return state(policies.get(pid))

    @app.delete("/v2/policies/{pid}")
    def delete_policy(pid: str):
        policies.delete(pid)
        return {"deleted": pid}

    @app.post("/v2/policies/{pid}/sample")
    def sample(pid: str, body: SampleRequest):
        out = policies.sample(pid, body.model_dump(exclude_none=True))
        text = policies.tokenizer.decode([t for t in out["ids"] if t != policies.tokenizer.eos_token_id], skip_special_tokens=False)
        content, calls, parse_error = parse_tool_calls(text, f"{body.episode_id}-{len(out['ids'])}")
        completion = {"ids": out["ids"], "logprobs": out["logprobs"], "text": text, "finish_reason": out["finish_reason"], "content": content}
        completion["tool_calls" if calls is not None else "parse_error"] = calls if calls is not None else parse_error
        if parse_error is None and calls is None:
            completion.pop("parse_error", None)
        return {"policy_version": out["policy_version"], "prompt_ids": out["prompt_ids"], "completion": completion}

    @app.post("/v2/policies/{pid}/render")
    def render(pid: str, body: RenderRequest):
        policies.get(pid)
        return {"ids": policies.render(body.messages, body.tools, body.add_generation_prompt)}

    vocab = policies.vocab_size()

    def check_ids(field: str, ids: list[int]) -> None:
        bad = next((t for t in ids if t >= vocab), None)
        if bad is not None:
            raise WorkerError(400, "VALIDATION_FAILED", f"{field}: token id {bad} is outside the vocabulary (size {vocab})")

    @app.post("/v2/policies/{pid}/score")
    def score(pid: str, body: ScoreRequest):
        for i, sq in enumerate(body.sequences):
            check_ids(f"sequences.{i}.ids", sq.ids)
            if sq.mask is not None and len(sq.mask) != len(sq.ids):
                raise WorkerError(400, "VALIDATION_FAILED", f"sequences.{i}: ids and mask must have the same length")
        return {"logprobs": policies.score(pid, body.version.model_dump(exclude_none=True) if body.version else None, [s.model_dump() for s in body.sequences])}

    @app.post("/v2/policies/{pid}/updates", status_code=202)
    def updates(pid: str, body: UpdateRequest, idempotency_key: str = Header(..., alias="Idempotency-Key", max_length=200)):
        for i, d in enumerate(body.datums):
            if not (len(d.loss_mask) == len(d.ids) == len(d.behaviour_logprobs)):
                raise WorkerError(400, "VALIDATION_FAILED", f"datums.{i}: ids, loss_mask and behaviour_logprobs must have the same length")
            if d.loss_mask[0] != 0:
                raise WorkerError(400, "VALIDATION_FAILED", f"datums.{i}.loss_mask: the first token is never trained on")
            check_ids(f"datums.{i}.ids", d.ids)
        job, created = policies.submit_update(pid, idempotency_key, body.model_dump())
        return JSONResponse({"update_id": job.id, "status": job.status, "created": created}, status_code=202)

    @app.get("/v2/updates/{uid}")
    def get_update(uid: str):
        job = policies.jobs.get(uid)
        if job is None:
            raise WorkerError(404, "NOT_FOUND", f"update {uid!r} not found")
        return {"update_id": job.id, "policy_id": job.policy_id, "status": job.status, "base_version": job.base_version, "version": job.version, "metrics": job.metrics, "error": job.error}

    @app.post("/v2/policies/{pid}/checkpoints")
    def checkpoint(pid: str):
        return policies.checkpoint(pid)

    @app.post("/v1/chat/completions")
    def chat(body: ChatRequest):
        pid, _, v = body.model.partition("@v")
        p = policies.get(pid)
        episode = f"chat-{uuid.uuid4().hex[:10]}"
        out = policies.sample(pid, {"episode_id": episode, "version": {"exact": int(v)} if v else None, "messages": body.messages, "tools": body.tools, "sampling": {"temperature": body.temperature, "top_p": body.top_p, "max_tokens": body.max_tokens or 64, **({"seed": body.seed} if body.seed is not None else {})}})
        p.episodes.pop(episode, None)
        text = policies.tokenizer.decode([t for t in out["ids"] if t != policies.tokenizer.eos_token_id], skip_special_tokens=False)
        content, calls, parse_error = parse_tool_calls(text, episode)
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if calls:
            message["tool_calls"] = calls
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else out["finish_reason"], "token_ids": out["ids"]}
        if parse_error:
            choice["parse_error"] = parse_error
        if body.logprobs:
            choice["logprobs"] = {"content": [{"token": policies.tokenizer.decode([t]), "logprob": lp} for t, lp in zip(out["ids"], out["logprobs"])]}
        return {"id": episode, "object": "chat.completion", "created": int(time.time()), "model": f"{pid}@v{out['policy_version']}", "choices": [choice], "prompt_token_ids": out["prompt_ids"], "usage": {"prompt_tokens": len(out["prompt_ids"]), "completion_tokens": len(out["ids"]), "total_tokens": len(out["prompt_ids"]) + len(out["ids"])}}

    return app


def set_threads(model: str, device: str, threads: int | None) -> None:
    """`threads`, else 1 for the tiny model on CPU (more threads only add overhead there), else torch's default."""
    threads = threads or (1 if model == "tiny" and device == "cpu" else None)
    if threads:
        torch.set_num_threads(threads)


def build(model: str, state_dir: Path | None, device: str, limits: Limits | None = None) -> tuple[Policies, str]:
    if model == "tiny":
        base, tokenizer = build_tiny(0)
        base = base.to(device)
    else:
        base, tokenizer = load_model(model, device)
    base.eval()
    state = state_dir or Path(tempfile.mkdtemp(prefix="harness-s-worker-"))
    state.mkdir(parents=True, exist_ok=True)
    name = "tiny" if model == "tiny" else Path(model).name
    return Policies(base, tokenizer, state, GenerateSampler(), limits, model_name=name), name


def main() -> None:
    ap = argparse.ArgumentParser(description="Harness-S reference policy worker (protocol v2)")
    ap.add_argument("--model", default="tiny", help="a Hugging Face model directory, or 'tiny' (built offline for tests)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--token", default=None, help="bearer token every request but /healthz must carry")
    ap.add_argument("--state-dir", type=Path, default=None, help="where adapters and checkpoints live (default: a fresh temp folder)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--max-policies", type=int, default=Limits.policies, help="policies held at once (429 past it)")
    ap.add_argument("--max-episodes", type=int, default=Limits.episodes_per_policy, help="open episodes per policy (429 past it)")
    ap.add_argument("--max-body-mb", type=int, default=64, help="largest request body (413 past it)")
    ap.add_argument("--threads", type=int, default=None, help="CPU threads for torch (default: 1 for the tiny model, where more threads only add overhead; torch's own default otherwise)")
    args = ap.parse_args()
    set_threads(args.model, args.device, args.threads)
    if not 0 <= args.port <= 65535:
        ap.error(f"--port {args.port}: a port is 0-65535")
    policies, name = build(args.model, args.state_dir, args.device, Limits(policies=args.max_policies, episodes_per_policy=args.max_episodes))
    uvicorn.run(create_app(policies, args.token, name, args.max_body_mb << 20), host=args.host, port=args.port, log_level="warning", timeout_graceful_shutdown=30)


if __name__ == "__main__":
    main()
