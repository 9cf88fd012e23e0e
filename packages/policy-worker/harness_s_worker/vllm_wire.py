"""vLLM's OpenAI-server wire format, as much of it as a caller's rescue samples through, each field
spelled and shaped as vLLM's own source defines it. Read at vllm-project/vllm:
- `vllm/entrypoints/openai/chat_completion/protocol.py` and `completion/protocol.py` @ d5dba2d7b0ab9b98096560c69db7126b54b14d79
  (requests; `ChatCompletionResponse`, `ChatCompletionLogProbsContent`, `CompletionResponse`, `CompletionLogProbs`);
- `vllm/entrypoints/openai/chat_completion/serving.py` @ 5e918640d7b65820db5beaa98c2a99925bff7c17 and
  `completion/serving.py` @ cc139d8ea6ff4db984778a3e77e95e1d1c7f1362 (how the replies are filled);
- `vllm/entrypoints/openai/engine/protocol.py` @ 040a2cc2a6295ea9c313d86526ff90a103eacb3e (`OpenAIBaseModel`:
  `extra="allow"`, unknown fields logged and ignored; `ErrorResponse`, `UsageInfo`);
- `vllm/entrypoints/serve/utils/error_response.py` @ 1c6ebf2c6b4f0604b68a07980ab01791671ba52c and
  `openai/models/serving.py` @ 00153c8b7948077ebdfc5bfa14e403da41aaea6d (the unknown-model 404);
- `vllm/entrypoints/serve/tokenize/protocol.py` @ 343bacafc7bf4f973a105e8e7d99fa7de61f7e18, `tokenize/serving.py`
  @ cf34c18c302ae4b2702d03afe903f5ccf71e2599 and `tokenize/api_router.py` @ 045d7575500e01e0f4a7ff84e039a9f7f7dc3bd0;
- `vllm/entrypoints/serve/disagg/protocol.py` @ 06408932946d17ad6453126aca82ea96c4509605, `disagg/serving.py`
  @ 0001948bc76939369ca855c90b36d81256477e85 and `disagg/api_router.py` @ 063e5a89d54d5e17ded57593252c998889f9eb40
  (`/inference/v1/generate`, PR 24261);
- `vllm/entrypoints/chat_utils.py` `_postprocess_messages` (tool-call arguments given to the template as objects);
- `vllm/entrypoints/openai/completion/protocol.py` @ 002032ee2b18e1f7bd924ec47b62504ba3866063
  (`CompletionRequest.prompt_logprobs`, `CompletionResponseChoice.prompt_logprobs`), `vllm/logprobs.py` @
  578b601cd1f41074873532e99af8369bf75cb5a9 (`Logprob`, `create_prompt_logprobs`: the first prompt id's entry is
  null; `append_logprobs_for_next_position`: the id itself first, then the top N).

What is not served is refused (400), never silently ignored: a sampling parameter away from its
neutral value (penalties, top-k, min-p, stop lists, logit bias, beam search, …), `n` > 1,
streaming, `echo`, chat `top_logprobs` above 0, and `prompt_logprobs` anywhere but `/v1/completions`.
The worker samples the model's own distribution
under temperature and top-p only and reports log-probabilities under that distribution (at
temperature 1 and top_p 1, vLLM's default raw log-probabilities); the top alternatives of
`/v1/completions` and `/inference/v1/generate` (`logprobs` N > 0) come from one more forward pass at
the version sampled (`tokens.alternatives`), and `/v1/completions`' `prompt_logprobs` from a forward pass
over the prompt at that version (`tokens.prompt_scores`: the model's own log-probabilities, as vLLM's
prompt log-probabilities are, whatever the temperature)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from http import HTTPStatus
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import WireError, WorkerError
from .tokens import TokenTurn

TokenId = Annotated[int, Field(ge=0)]
ANY = object()  # a neutral-table entry: any value is served (it changes only text, never the sample)
LOGPROB_FLOOR = -9999.0  # vLLM clamps every reported log-probability at it (`max(logprob, -9999.0)`)

#: Request fields vLLM knows and the façade serves only at their neutral values.
NEUTRAL: dict[str, tuple[Any, ...]] = {
    "n": (1, None),
    "stream": (False, None),
    "echo": (False, None),
    "best_of": (1, None),
    "use_beam_search": (False, None),
    "frequency_penalty": (0, None),
    "presence_penalty": (0, None),
    "repetition_penalty": (1, None),
    "top_k": (0, -1, None),
    "min_p": (0, None),
    "min_tokens": (0, None),
    "stop": (None, [], ""),
    "stop_token_ids": (None, []),
    "bad_words": (None, []),
    "ignore_eos": (False, None),
    "logit_bias": (None, {}),
    "allowed_token_ids": (None,),
    "prompt_logprobs": (None,),
    "suffix": (None,),
    "response_format": (None,),
    "structured_outputs": (None,),
    "logits_processors": (None,),
    "truncate_prompt_tokens": (None,),
    "stream_options": (None,),
    "prompt_embeds": (None,),
    "extra_args": (None, {}),
    "max_repetition_pattern_size": (0, None),
    "min_repetition_pattern_size": (0, None),
    "repetition_min_count": (0, None),
    "include_stop_str_in_output": (ANY,),
    "skip_special_tokens": (ANY,),
    "flat_logprobs": (ANY,),
    "skip_reading_prefix_cache": (ANY,),
    "spaces_between_special_tokens": (ANY,),
    "detokenize": (ANY,),
    "output_kind": (ANY,),
    "skip_clone": (ANY,),
}


class VllmModel(BaseModel):
    # vLLM's OpenAIBaseModel: extra="allow" (an unknown field is accepted, logged and ignored).
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)


class CompletionRequest(VllmModel):
    model: str | None = None
    prompt: list[TokenId] | list[list[TokenId]] | str | list[str] | None = None
    max_tokens: int | None = Field(16, ge=1)
    temperature: float | None = Field(None, ge=0)
    top_p: float | None = Field(None, gt=0, le=1)
    seed: int | None = None
    logprobs: int | None = Field(None, ge=0)
    return_token_ids: bool | None = None
    return_tokens_as_token_ids: bool | None = None
    add_special_tokens: bool = True
    skip_special_tokens: bool = True
    prompt_logprobs: int | None = None
    """N ≥ 0: each choice's `prompt_logprobs`, one entry per prompt id (`null` for the first), each
    holding the prompt id and the N most likely ids there (`prompt_logprobs_of`); -1 (the whole
    vocabulary) or N > 20 is vLLM's 400 at its default `max_logprobs`. vLLM `CompletionRequest.prompt_logprobs`
    (vllm-project/vllm@002032ee2b18e1f7bd924ec47b62504ba3866063 `vllm/entrypoints/openai/completion/protocol.py`:
    `check_logprobs` refuses a value below -1; `to_sampling_params` passes it on, `max_tokens` still ≥ 1)."""


class TokenizeRequest(VllmModel):
    """`TokenizeChatRequest` (with `messages`) or `TokenizeCompletionRequest` (with `prompt`)."""

    model: str | None = None
    prompt: str | None = None
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    add_generation_prompt: bool = True
    continue_final_message: bool = False
    add_special_tokens: bool | None = None  # True for a prompt, False for messages (vLLM's defaults)
    return_token_strs: bool | None = False
    chat_template: str | None = None
    chat_template_kwargs: dict[str, Any] | None = None


class DetokenizeRequest(VllmModel):
    model: str | None = None
    tokens: list[TokenId]


class GenerateRequest(BaseModel):
    # vLLM's GenerateRequest is a plain pydantic BaseModel: an unknown field is ignored.
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)
    request_id: str | None = None
    token_ids: list[TokenId]
    features: Any = None
    sampling_params: dict[str, Any]
    model: str | None = None
    stream: bool | None = False


class GenerateSampling(BaseModel):
    # vLLM's SamplingParams (a msgspec Struct): the fields served; the rest go through `NEUTRAL`.
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)
    temperature: float = Field(1.0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    seed: int | None = None
    max_tokens: int | None = Field(None, ge=1)
    logprobs: int | None = Field(None, ge=0)


def vllm_error(status: int, message: str, param: str | None = None) -> WireError:
    """vLLM's `ErrorResponse`: `{"error": {"message", "type", "param", "code"}}`."""
    kinds = {400: "BadRequestError", 404: "NotFoundError", 501: "NotImplementedError"}
    kind = kinds.get(status) or (
        "InternalServerError" if status >= 500 else HTTPStatus(status).phrase.replace(" ", "") + "Error"
    )
    return WireError(status, {"error": {"message": message, "type": kind, "param": param, "code": status}})


def not_found(name: str) -> WireError:
    """vLLM's answer for a model it does not serve (`OpenAIModelRegistry.check_model`)."""
    return vllm_error(404, f"The model `{name}` does not exist.", "model")


M = TypeVar("M", bound=BaseModel)


def parsed(model: type[M], body: Any) -> M:
    """The body as `model`, or vLLM's 400 naming each invalid field."""
    try:
        return model.model_validate(body)
    except ValidationError as err:
        issues = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in err.errors())
        raise vllm_error(400, issues) from None


def check_neutral(values: Mapping[str, Any], where: str = "", known: frozenset[str] = frozenset()) -> None:
    """400 for a known field away from its neutral value; with `known`, also for any other field
    not in it (a parameter struct that refuses unknown keys)."""
    for key, value in values.items():
        allowed = NEUTRAL.get(key)
        if allowed is None:
            if known and key not in known:
                raise WorkerError(400, "VALIDATION_FAILED", f"{where}{key}: not a sampling parameter")
            continue
        if ANY not in allowed and value not in allowed:
            raise WorkerError(
                400,
                "VALIDATION_FAILED",
                f"{where}{key}: {value!r} is not served here (the worker samples under temperature and top_p only; served: {allowed!r})",
            )


def token_text(decode: Any, token: int, as_id: bool | None) -> str:
    return f"token_id:{token}" if as_id else str(decode([token]))


def chat_logprobs(decode: Any, ids: list[int], logprobs: list[float], as_id: bool | None) -> dict[str, Any]:
    """`ChatCompletionLogProbs` with `top_logprobs` 0: one entry per sampled token."""
    content = []
    for t, lp in zip(ids, logprobs, strict=True):
        decoded = str(decode([t]))
        content.append(
            {
                "token": token_text(decode, t, as_id),
                "logprob": max(lp, LOGPROB_FLOOR),
                "bytes": list(decoded.encode("utf-8", errors="replace")),
                "top_logprobs": [],
            }
        )
    return {"content": content}


def entries(sampled: int, logprob: float, top: list[tuple[int, float]] | None) -> list[tuple[int, float]]:
    """One position's log-probabilities as vLLM orders them: the sampled id first, then the most
    likely others (the sampled id once)."""
    return [(sampled, logprob), *[(t, v) for t, v in top or [] if t != sampled]]


def completion_logprobs(decode: Any, turn: TokenTurn, n: int, as_id: bool | None) -> dict[str, Any]:
    """`CompletionLogProbs`: each position's `top_logprobs` holds the sampled token and the `n` most
    likely (`num_output_top_logprobs >= i`: up to n + 1 entries)."""
    tokens = [token_text(decode, t, as_id) for t in turn.ids]
    values = [max(lp, LOGPROB_FLOOR) for lp in turn.logprobs]
    offsets = [sum(len(s) for s in tokens[:i]) for i in range(len(tokens))]
    top = []
    for i, (t, lp) in enumerate(zip(turn.ids, turn.logprobs, strict=True)):
        step = entries(t, lp, turn.top[i] if turn.top else None)
        top.append({token_text(decode, u, as_id): max(v, LOGPROB_FLOOR) for k, (u, v) in enumerate(step) if n >= k})
    return {"text_offset": offsets, "token_logprobs": values, "tokens": tokens, "top_logprobs": top}


def generate_logprobs(turn: TokenTurn, n: int) -> dict[str, Any]:
    """`/inference/v1/generate`'s logprobs (`ServingTokens._create_tokens_logprobs`): tokens always
    spelled `token_id:<id>`; `top_logprobs` the first max(n, 1) of the sampled token and the most likely."""
    content = []
    for i, (t, lp) in enumerate(zip(turn.ids, turn.logprobs, strict=True)):
        step = entries(t, lp, turn.top[i] if turn.top else None)[: max(n, 1)]
        top = [{"token": f"token_id:{u}", "logprob": max(v, LOGPROB_FLOOR), "bytes": None} for u, v in step]
        content.append(
            {"token": f"token_id:{t}", "logprob": max(lp, LOGPROB_FLOOR), "bytes": None, "top_logprobs": top}
        )
    return {"content": content}


def prompt_logprobs_of(decode: Any, turn: TokenTurn, n: int) -> list[dict[str, dict[str, Any]] | None]:
    """`CompletionResponseChoice.prompt_logprobs` (`list[dict[int, Logprob] | None]`, ids as JSON
    string keys): `null` for the first prompt id, then per id a dict that holds the id itself first
    (`rank`: how many ids are at least as likely) and then the `n` most likely ids (`rank` 1..n), an
    id already there keeping its place (vLLM's `append_logprobs_for_next_position` in
    `vllm/logprobs.py`); each `Logprob` is `{"logprob", "rank", "decoded_token"}`, -inf reported as
    -9999.0 (`clamp_prompt_logprobs`)."""
    out: list[dict[str, dict[str, Any]] | None] = [None]
    for token, score in zip(turn.prompt[1:], turn.prompt_scores or [], strict=True):
        entries = [(token, score.logprob, score.rank)] + [(u, v, k) for k, (u, v) in enumerate(score.top[:n], 1)]
        step: dict[str, dict[str, Any]] = {}
        for u, v, rank in entries:
            step[str(u)] = {
                "logprob": LOGPROB_FLOOR if v == float("-inf") else v,
                "rank": rank,
                "decoded_token": str(decode([u])),
            }
        out.append(step)
    return out


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
        "prompt_tokens_details": None,
    }


def completion_response(name: str, req: CompletionRequest, turns: list[TokenTurn], decode: Any) -> dict[str, Any]:
    """`CompletionResponse` as vLLM dumps it (every field, unset ones null)."""
    choices = []
    for i, turn in enumerate(turns):
        ids = turn.ids
        choices.append(
            {
                "index": i,
                "text": decode(ids, skip_special_tokens=req.skip_special_tokens),
                "logprobs": completion_logprobs(decode, turn, req.logprobs, req.return_tokens_as_token_ids)
                if req.logprobs is not None
                else None,
                "finish_reason": turn.finish,
                "stop_reason": None,  # vLLM: None when the completion ended at an end-of-sequence id or its length
                "token_ids": ids if req.return_token_ids else None,
                "prompt_logprobs": prompt_logprobs_of(decode, turn, req.prompt_logprobs)
                if req.prompt_logprobs is not None
                else None,
                "prompt_token_ids": turn.prompt if req.return_token_ids else None,
            }
        )
    prompt_tokens, completion_tokens = sum(len(t.prompt) for t in turns), sum(len(t.ids) for t in turns)
    return {
        "id": f"cmpl-{uuid.uuid4().hex}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": name,
        "choices": choices,
        "service_tier": None,
        "system_fingerprint": None,
        "usage": usage(prompt_tokens, completion_tokens),
        "kv_transfer_params": None,
    }


def generate_response(turn: TokenTurn, logprobs: int | None) -> dict[str, Any]:
    """`GenerateResponse` as vLLM dumps it. Its serving code passes `id`, `model`, `usage` and
    `created` too, but the pydantic model declares none of them and ignores them, and passes the
    request id as `id`, so the reply's `request_id` is the model's default, a fresh uuid."""
    choice = {
        "index": 0,
        "logprobs": generate_logprobs(turn, logprobs) if logprobs is not None else None,
        "finish_reason": turn.finish,
        "token_ids": turn.ids,
    }
    return {"request_id": uuid.uuid4().hex, "choices": [choice], "prompt_logprobs": None, "kv_transfer_params": None}


def template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as vLLM hands them to a chat template (`_postprocess_messages`): an assistant
    message's tool-call arguments parsed from their JSON text into objects (empty: `{}`), an empty
    `tool_calls` list dropped."""
    out = []
    for m in messages:
        calls = m.get("tool_calls")
        if m.get("role") == "assistant" and isinstance(calls, list):
            m = {k: v for k, v in m.items() if k != "tool_calls"}
            if calls:
                m["tool_calls"] = [with_parsed_arguments(c) for c in calls]
        out.append(m)
    return out


def with_parsed_arguments(call: Any) -> Any:
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        return call
    arguments = call["function"].get("arguments")
    try:
        value = (json.loads(arguments) if isinstance(arguments, str) else arguments) if arguments else {}
    except json.JSONDecodeError as err:
        raise WorkerError(400, "VALIDATION_FAILED", f"messages: tool-call arguments are not JSON ({err})") from err
    return {**call, "function": {**call["function"], "arguments": value}}


def template_tools(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """Tools as vLLM hands them to a template (`ChatCompletionToolsParam.model_dump()`): `type`,
    then `function` with `name`, `description` and `parameters` (null when absent) first."""
    if tools is None:
        return None
    out = []
    for t in tools:
        f = t.get("function") or {}
        function = {
            "name": f.get("name"),
            "description": f.get("description"),
            "parameters": f.get("parameters"),
            **{k: v for k, v in f.items() if k not in ("name", "description", "parameters")},
        }
        out.append(
            {
                "type": t.get("type", "function"),
                "function": function,
                **{k: v for k, v in t.items() if k not in ("type", "function")},
            }
        )
    return out
