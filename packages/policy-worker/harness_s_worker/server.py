"""The reference policy worker: protocol v2 over HTTP (docs/design.md §5) and an OpenAI-compatible
`/v1/chat/completions` façade. Started by `python -m harness_s_worker.launch --model tiny --port 8765`,
which checks its arguments before this module imports torch."""

from __future__ import annotations

import argparse
import gc
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import torch
import uvicorn
from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .checkpoints import restore_policies
from .errors import WireError, WorkerError
from .facade import Facade
from .limits import Limits
from .policies import Policies
from .routes import Served, health_routes, policy_routes, sampling_routes, update_routes
from .schemas import MAX_DATUMS, SCORE_CONTEXTS
from .textbound import TextBound
from .threads import set_threads
from .tiny import build_tiny, load_model
from .updates import Updates
from .wire_routes import sglang_routes, vllm_routes


def error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status)


class BodyLimit:
    """Refuses a body over its route's limit (`limit_of(path)`) with 413: by its declared length
    before any of it is read, or counted as it arrives (chunked)."""

    def __init__(self, app: ASGIApp, limit_of: Callable[[str], int]) -> None:
        self.app, self.limit_of = app, limit_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        max_bytes = self.limit_of(scope["path"])
        declared = dict(scope.get("headers") or []).get(b"content-length")
        too_large = error(413, "PAYLOAD_TOO_LARGE", f"request body exceeds {max_bytes} bytes")
        if declared is not None and declared.isdigit() and int(declared) > max_bytes:
            return await too_large(scope, receive, send)
        # The body is read here, counted as it arrives, and replayed to the app: what the app would
        # have held anyway, never more than the limit.
        messages: list[Message] = []
        seen = 0
        while True:
            message = await receive()
            messages.append(message)
            seen += len(message.get("body", b""))
            if seen > max_bytes:
                return await too_large(scope, receive, send)
            if message["type"] != "http.request" or not message.get("more_body"):
                break

        async def replayed() -> Message:
            return messages.pop(0) if messages else await receive()

        return await self.app(scope, replayed, send)


#: Routes whose body is a conversation (its text, and at most a context of token ids): their
#: limit follows from the model's context as well as `--max-body-mb`.
TEXT_ROUTES = re.compile(
    r"^/(?:v2/policies/[^/]+/(?:sample|render|replay)|v1/chat/completions|v1/completions|tokenize|inference/v1/generate|generate)$"
)
SCORE_ROUTE = re.compile(r"^/v2/policies/[^/]+/score$")
UPDATE_ROUTE = re.compile(r"^/v2/policies/[^/]+/updates$")
ID_JSON_BYTES = 12  # a token id and its separator in JSON, at most ("4294967295, ")
MASK_JSON_BYTES = 3  # a 0/1 mask entry and its separator ("1, ")
FLOAT_JSON_BYTES = 26  # a float and its separator, at most ("-1.2345678901234567e-300, ")
OTHER_BYTES = 1 << 20  # what any route's body holds beside its ids and text


def text_body_bytes(bound: TextBound) -> int:
    """The most a text route's body can need: the most text the context can hold, as JSON (an
    escape such as \\u001f is at most 6 bytes for each byte of text), a context of ids, and 1 MiB
    for everything else. A body past it cannot be a turn that fits, so it is never read whole."""
    return 6 * bound.limit(bound.context) + ID_JSON_BYTES * bound.context + OTHER_BYTES


def score_body_bytes(context: int) -> int:
    """The most a `/score` body can need: {@link SCORE_CONTEXTS} contexts of ids, each with its mask."""
    return SCORE_CONTEXTS * context * (ID_JSON_BYTES + MASK_JSON_BYTES) + OTHER_BYTES


def update_body_bytes(context: int, datums: int) -> int:
    """The most an update's body can need: `datums` sequences of a context each, every token with
    its id, loss mask, behaviour log-probability and weight."""
    return datums * context * (ID_JSON_BYTES + MASK_JSON_BYTES + 2 * FLOAT_JSON_BYTES) + OTHER_BYTES


def route_limits(bound: TextBound, context: int, max_body_bytes: int) -> Callable[[str], int]:
    """Each route's largest body: what a conversation, a score or an update can use at this
    model's context, any other route 1 MiB; never more than `--max-body-mb`."""
    text, score, update = text_body_bytes(bound), score_body_bytes(context), update_body_bytes(context, MAX_DATUMS)

    def limit_of(path: str) -> int:
        own = (
            text
            if TEXT_ROUTES.match(path)
            else score
            if SCORE_ROUTE.match(path)
            else update
            if UPDATE_ROUTE.match(path)
            else OTHER_BYTES
        )
        return min(max_body_bytes, own)

    return limit_of


DRAIN_S = 30.0  # how long a stopping worker waits for its accepted updates


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def create_app(
    policies: Policies,
    token: str | None = None,
    model_name: str = "tiny",
    max_body_bytes: int = 64 << 20,
    drain_s: float = DRAIN_S,
    chat_prompts: str = "episode",
) -> FastAPI:
    updates = Updates(policies)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        # SIGTERM: uvicorn has stopped taking requests and finished the open ones; the accepted updates finish too.
        await run_in_threadpool(updates.drain, drain_s, log)

    app = FastAPI(title="Harness-S policy worker", version="2", lifespan=lifespan)
    app.add_middleware(BodyLimit, limit_of=route_limits(policies.bound, policies.adapted.max_context(), max_body_bytes))
    app.state.updates = updates

    @app.exception_handler(WorkerError)
    async def worker_error(_req: Request, err: WorkerError) -> JSONResponse:
        return error(err.status, err.code, err.message, **err.extra)

    @app.exception_handler(WireError)
    async def wire_error(_req: Request, err: WireError) -> JSONResponse:
        return JSONResponse(err.body, status_code=err.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(_req: Request, err: RequestValidationError) -> JSONResponse:
        issues = [f"{'.'.join(str(p) for p in e['loc'][1:]) or '(root)'}: {e['msg']}" for e in err.errors()]
        return error(400, "VALIDATION_FAILED", "request body is invalid", issues=issues)

    @app.middleware("http")
    async def auth(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        if token and request.url.path != "/healthz" and request.headers.get("authorization") != f"Bearer {token}":
            return error(401, "UNAUTHENTICATED", "a valid bearer token is required")
        return await call_next(request)

    served = Served(policies, updates, Facade(policies, render=chat_prompts == "render"), model_name)
    for router in (
        health_routes(served),
        policy_routes(served),
        sampling_routes(served),
        update_routes(served),
        vllm_routes(served),
        sglang_routes(served),
    ):
        app.include_router(router)
    return app


def build(
    model: str,
    state_dir: Path,
    device: str,
    limits: Limits | None = None,
    tool_parser: str | None = None,
    chat_template: str | None = None,
    served_name: str | None = None,
) -> tuple[Policies, str]:
    """The policies over `model` ('tiny' or a model folder), named `served_name` (default: the folder's name, or tiny); `chat_template` replaces the model's own."""
    base: torch.nn.Module
    if model == "tiny":
        tiny, tokenizer = build_tiny(0)
        base = cast(torch.nn.Module, tiny)
        base.to(device)
    else:
        base, tokenizer = load_model(model, device)
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    base.eval()
    state_dir.mkdir(parents=True, exist_ok=True)
    name = served_name or ("tiny" if model == "tiny" else Path(model).name)
    policies = Policies(base, tokenizer, state_dir, limits, model_name=name, tool_parser=tool_parser)
    restored = restore_policies(policies.state_dir, policies.create, log)
    if restored:
        log(f"policy worker: restored {len(restored)} policies from {state_dir}: {', '.join(restored)}")
    return policies, name


def serve(args: argparse.Namespace, ap: argparse.ArgumentParser) -> None:
    """Loads the model and serves it; `args` are the launcher's, already checked ({@link launch.main})."""
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    limits = Limits(
        policies=args.max_policies,
        episodes_per_policy=args.max_episodes,
        cache_mb=args.kv_cache_mb,
        sample_timeout_s=args.sample_timeout_s,
    )
    try:
        template = args.chat_template.read_text() if args.chat_template else None
        policies, name = build(
            args.model, args.state_dir, device, limits, args.tool_parser, template, args.served_model_name
        )
    except (OSError, ValueError) as err:  # not a model folder, weights or a tokenizer missing or unreadable
        ap.error(f"--model {args.model}: cannot be loaded ({type(err).__name__}: {err})")

    set_threads(sum(p.numel() for p in policies.adapted.base.parameters()), device, args.threads)
    # The model's objects live as long as the process: kept out of the collector's scans.
    gc.collect()
    gc.freeze()
    uvicorn.run(
        create_app(policies, args.token, name, args.max_body_mb << 20, chat_prompts=args.chat_prompts),
        host=args.host,
        port=args.port,
        log_level="warning",
        timeout_graceful_shutdown=30,
    )
