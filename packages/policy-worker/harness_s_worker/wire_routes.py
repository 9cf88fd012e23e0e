"""The routes that speak vLLM's and SGLang's wire formats (`vllm_wire.py`, `sglang_wire.py`) over the
worker's policies, named as `names.py` says. Each parses its body, samples through `tokens.py` (or
renders through the policy's chat template) and shapes the reply; every error is answered in that
server's own error shape. `/v1/chat/completions` is the façade in `routes.py`."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool
from pydantic import ValidationError

from . import sglang_wire as sg
from . import vllm_wire as vl
from .errors import WireError, WorkerError
from .names import NotServed, ServedName, resolve
from .sampling import SamplingRule
from .tokens import MAX_ALTERNATIVES, TokenTurn, alternatives, check_prompt, prompt_scores, sample_ids

if TYPE_CHECKING:
    from .policies import Policies
    from .routes import Served

T = TypeVar("T")


async def in_vllm_shape(name: str | None, work: Awaitable[T]) -> T:
    """`work`'s result, its errors answered as vLLM answers them (an unserved name: its 404)."""
    try:
        return await work
    except NotServed as err:
        raise vl.not_found(err.name) from None
    except WorkerError as err:
        if err.status == 404 and name is not None:
            raise vl.not_found(name) from None
        raise vl.vllm_error(err.status, err.message) from None


def served_as(policies: Policies, name: str | None) -> tuple[ServedName, Any]:
    if name is None:
        raise WorkerError(
            400,
            "VALIDATION_FAILED",
            "model: name the policy to sample (<policy> or <policy>@v<N>); this worker serves no base model",
        )
    return resolve(policies, name)


def prompts_of(policies: Policies, req: vl.CompletionRequest) -> list[list[int]]:
    """`prompt` as id lists: ids as given, text tokenised (`add_special_tokens`)."""
    prompt = req.prompt
    if prompt is None or (isinstance(prompt, list) and not prompt):
        raise WorkerError(
            400, "VALIDATION_FAILED", "prompt: Either prompt or prompt_embeds must be provided and non-empty."
        )
    items: list[Any] = [prompt] if isinstance(prompt, str) or isinstance(prompt[0], int) else list(prompt)
    out = []
    for item in items:
        if isinstance(item, str):
            policies.bound.check("prompt", [item], policies.adapted.max_context())
            item = list(
                policies.tokenizer(item, add_special_tokens=req.add_special_tokens, return_attention_mask=False)[
                    "input_ids"
                ]
            )
        out.append(list(item))
    return out


async def completions(policies: Policies, body: Any) -> dict[str, Any]:
    """vLLM's `/v1/completions` over token-id (or text) prompts: one choice per prompt."""
    req = vl.parsed(vl.CompletionRequest, body)
    vl.check_neutral(req.model_extra or {})
    if req.prompt_logprobs is not None and req.prompt_logprobs < -1:  # vLLM's request validator, before the model
        raise vl.vllm_error(400, "`prompt_logprobs` must be a positive value or -1.", "prompt_logprobs")
    served, p = served_as(policies, req.model)
    check_prompt_logprobs(policies, req.prompt_logprobs)
    prompts = await run_in_threadpool(prompts_of, policies, req)
    max_tokens = req.max_tokens or policies.adapted.max_context() - max(len(x) for x in prompts)
    for i, prompt in enumerate(prompts):
        check_prompt(policies, prompt, max_tokens, f"prompt.{i}" if len(prompts) > 1 else "prompt")
    rule = SamplingRule(1.0 if req.temperature is None else req.temperature, 1.0 if req.top_p is None else req.top_p)
    turns = await asyncio.gather(
        *(sample_ids(policies, served, p, prompt, rule, max_tokens, req.seed) for prompt in prompts)
    )
    turns = [await with_alternatives(policies, p, t, rule, req.logprobs) for t in turns]
    turns = [await with_prompt_scores(policies, p, t, req.prompt_logprobs) for t in turns]
    return await run_in_threadpool(vl.completion_response, served.name, req, turns, policies.tokenizer.decode)


def check_prompt_logprobs(policies: Policies, n: int | None) -> None:
    """vLLM's 400 for more `prompt_logprobs` than `max_logprobs` (20 by default; -1 asks for the whole
    vocabulary), before anything is sampled."""
    if n is None:
        return
    wanted = policies.adapted.vocab_size() if n == -1 else n
    if wanted > MAX_ALTERNATIVES:
        raise vl.vllm_error(
            400,
            f"Requested prompt logprobs of {wanted}, which is greater than max allowed: {MAX_ALTERNATIVES}",
            "prompt_logprobs",
        )


async def with_prompt_scores(policies: Policies, p: Any, turn: TokenTurn, n: int | None) -> TokenTurn:
    """The turn with each prompt id's log-probability in place and the `n` most likely ids there,
    where a request asks for them (`n` not None), at the version the turn was sampled at."""
    if n is None:
        return turn
    return replace(turn, prompt_scores=await run_in_threadpool(prompt_scores, policies, p, turn, n))


async def with_alternatives(
    policies: Policies, p: Any, turn: TokenTurn, rule: SamplingRule, n: int | None
) -> TokenTurn:
    """The turn with each position's `n` most likely ids, where a request asks for them (`logprobs` > 0)."""
    if not n:
        return turn
    return replace(turn, top=await run_in_threadpool(alternatives, policies, p, turn, rule, n))


def tokenize(policies: Policies, body: Any) -> dict[str, Any]:
    """vLLM's `/tokenize`: `messages` rendered by the chat template, or `prompt` tokenised."""
    req = vl.parsed(vl.TokenizeRequest, body)
    if req.model is not None:
        resolve(policies, req.model)
    if req.chat_template is not None or req.chat_template_kwargs or req.continue_final_message:
        raise WorkerError(
            400,
            "VALIDATION_FAILED",
            "chat_template, chat_template_kwargs and continue_final_message are not served here (the worker renders with its own template)",
        )
    if req.messages is not None:
        if req.add_generation_prompt and req.continue_final_message:
            raise WorkerError(
                400,
                "VALIDATION_FAILED",
                "Cannot set both `continue_final_message` and `add_generation_prompt` to True.",
            )
        ids = policies.episodes.render(
            vl.template_messages(req.messages), vl.template_tools(req.tools), req.add_generation_prompt
        )
        if req.add_special_tokens:
            ids = list(policies.tokenizer.build_inputs_with_special_tokens(ids))
    elif req.prompt is not None:
        policies.bound.check("prompt", [req.prompt], policies.adapted.max_context())
        ids = list(
            policies.tokenizer(
                req.prompt, add_special_tokens=req.add_special_tokens is not False, return_attention_mask=False
            )["input_ids"]
        )
    else:
        raise WorkerError(400, "VALIDATION_FAILED", "messages or prompt is required")
    strs = policies.tokenizer.convert_ids_to_tokens(ids) if req.return_token_strs else None
    return {"count": len(ids), "max_model_len": policies.adapted.max_context(), "tokens": ids, "token_strs": strs}


async def generate_tokens(policies: Policies, body: Any) -> dict[str, Any]:
    """vLLM's `/inference/v1/generate`: token ids in, token ids out."""
    req = vl.parsed(vl.GenerateRequest, body)
    sampling = vl.parsed(vl.GenerateSampling, req.sampling_params)
    vl.check_neutral(sampling.model_extra or {}, "sampling_params.", frozenset(vl.NEUTRAL))
    if req.stream or req.features is not None:
        raise WorkerError(400, "VALIDATION_FAILED", "stream and features are not served here")
    served, p = served_as(policies, req.model)
    max_tokens = sampling.max_tokens or policies.adapted.max_context() - len(req.token_ids)
    check_prompt(policies, req.token_ids, max_tokens, "token_ids")
    rule = SamplingRule(sampling.temperature, sampling.top_p)
    turn = await sample_ids(policies, served, p, req.token_ids, rule, max_tokens, sampling.seed)
    return vl.generate_response(await with_alternatives(policies, p, turn, rule, sampling.logprobs), sampling.logprobs)


def detokenize(policies: Policies, body: Any) -> dict[str, Any]:
    """vLLM's `/detokenize`: the text of some ids, special tokens kept (a tokenizer's plain decode)."""
    req = vl.parsed(vl.DetokenizeRequest, body)
    if req.model is not None:
        resolve(policies, req.model)
    vocab = policies.adapted.vocab_size()
    if any(t >= vocab for t in req.tokens):
        raise WorkerError(400, "VALIDATION_FAILED", f"tokens: an id is outside the vocabulary (size {vocab})")
    return {"prompt": policies.tokenizer.decode(req.tokens)}


def vllm_routes(served: Served) -> APIRouter:
    router = APIRouter()
    policies = served.policies

    def name_in(body: Any) -> str | None:
        name = body.get("model") if isinstance(body, dict) else None
        return name if isinstance(name, str) else None

    @router.post("/v1/completions")
    async def v1_completions(body: dict[str, Any]) -> dict[str, Any]:
        return await in_vllm_shape(name_in(body), completions(policies, body))

    @router.post("/tokenize")
    async def v1_tokenize(body: dict[str, Any]) -> dict[str, Any]:
        # Off the event loop: rendering and tokenising read all of the text.
        return await in_vllm_shape(name_in(body), run_in_threadpool(tokenize, policies, body))

    @router.post("/detokenize")
    async def v1_detokenize(body: dict[str, Any]) -> dict[str, Any]:
        return await in_vllm_shape(name_in(body), run_in_threadpool(detokenize, policies, body))

    @router.post("/inference/v1/generate")
    async def inference_generate(body: dict[str, Any]) -> dict[str, Any]:
        return await in_vllm_shape(name_in(body), generate_tokens(policies, body))

    return router


async def sglang_generate(policies: Policies, body: Any) -> Any:
    """SGLang's `/generate` over `input_ids` (one prompt, or a batch: a list of outputs)."""
    try:
        req = sg.GenerateReqInput.model_validate(body)
    except ValidationError as err:
        raise sg.invalid_body(err) from None
    prompts = sg.check_request(req)
    raw = req.sampling_params if isinstance(req.sampling_params, list) else [req.sampling_params] * len(prompts)
    if len(raw) != len(prompts):
        raise WorkerError(400, "VALIDATION_FAILED", "sampling_params: one per prompt")
    samplings = [sg.sampling_of(r) for r in raw]
    served, p = resolve(policies, req.lora_path or only_policy(policies))
    rids = sg.request_ids(req, len(prompts))
    context = policies.adapted.max_context()
    for prompt, s in zip(prompts, samplings, strict=True):
        check_prompt(policies, prompt, s.max_new_tokens or context - len(prompt), "input_ids")
    turns: list[TokenTurn] = await asyncio.gather(
        *(
            sample_ids(
                policies, served, p, prompt, s.rule(), s.max_new_tokens or context - len(prompt), s.sampling_seed
            )
            for prompt, s in zip(prompts, samplings, strict=True)
        )
    )
    if sg.input_logprobs_from(req) is not None:  # one forward pass over each prompt at the version it was sampled at
        turns = [await with_prompt_scores(policies, p, t, 0) for t in turns]
    skip = [s.model_extra.get("skip_special_tokens", True) is not False if s.model_extra else True for s in samplings]
    outs = [
        sg.generate_out(req, rid, turn, policies.tokenizer.decode, sk)
        for rid, turn, sk in zip(rids, turns, skip, strict=True)
    ]
    return outs[0] if len(outs) == 1 and not isinstance(req.input_ids[0], list) else outs  # type: ignore[index]


def sglang_detokenize(policies: Policies, body: Any) -> dict[str, Any]:
    try:
        req = sg.DetokenizeRequest.model_validate(body)
    except ValidationError as err:
        raise sg.invalid_body(err) from None
    return sg.detokenize(req, policies.tokenizer.decode, policies.adapted.vocab_size())


def only_policy(policies: Policies) -> str:
    """Without `lora_path`, SGLang samples the one model it serves: here, the worker's one policy."""
    held = list(policies.policies)
    if len(held) != 1:
        raise WorkerError(
            400,
            "VALIDATION_FAILED",
            f"lora_path: this worker holds {len(held)} policies, served as LoRA adapters <policy> or <policy>@v<N>; name one",
        )
    return held[0]


def sglang_routes(served: Served) -> APIRouter:
    router = APIRouter()
    policies = served.policies

    def loaded() -> list[str]:
        return [n for pid, p in list(policies.policies.items()) for n in (pid, f"{pid}@v{p.version}")]

    @router.post("/v1/detokenize")
    async def v1_detokenize(body: dict[str, Any]) -> dict[str, Any]:
        """SGLang's `/v1/detokenize` (`{"text"}`). SGLang serves it at `/detokenize` too, where this
        worker answers vLLM's `{"prompt"}` (`vllm_routes`): one path, two servers."""
        return await run_in_threadpool(sglang_detokenize, policies, body)

    @router.post("/generate")
    async def generate(body: dict[str, Any]) -> Any:
        try:
            return await sglang_generate(policies, body)
        except WireError:
            raise
        except NotServed as err:
            raise sg.not_loaded(err.name, loaded()) from None
        except WorkerError as err:
            if err.status == 404 and body.get("lora_path"):  # the adapter named is no longer held when its turn begins
                raise sg.not_loaded(body["lora_path"], loaded()) from None
            raise sg.sglang_error(err.message, err.status) from None

    return router
