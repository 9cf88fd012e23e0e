"""SGLang's native `/generate` wire format, as much of it as a caller's rescue samples through, each
field spelled and shaped as SGLang's own source defines it. Read at sgl-project/sglang:
- `python/sglang/srt/managers/io_struct.py` @ 001067fffe33427bee0ed2f007fb7551a1d76b44 (`GenerateReqInput`: a
  dataclass FastAPI validates, so an unknown field is ignored; `logprob_start_len` -1 returns output
  logprobs only);
- `python/sglang/srt/managers/tokenizer_manager.py` @ 001067fffe33427bee0ed2f007fb7551a1d76b44
  (`_handle_batch_output`: `{"text", "output_ids", "meta_info"}`; `meta_info` `id`, `finish_reason`,
  `prompt_tokens`, `weight_version`, `num_retractions`, `input_token_logprobs`, `output_token_logprobs`
  as `[logprob, token_id, text or null]`, `output_token_logprobs_length`, `reasoning_tokens`,
  `completion_tokens`, `cached_tokens`, `e2e_latency`);
- `python/sglang/srt/sampling/sampling_params.py` @ 00c17cafcb9e289d5ca97c50e44ada54e4fd5b03 (`SamplingParams`:
  `max_new_tokens` 128, `temperature`, `top_p`, `sampling_seed`; built by `SamplingParams(**sampling_params)`,
  so an unknown key is refused);
- `python/sglang/srt/managers/schedule_batch.py` (`FINISH_MATCHED_TOKEN` → `{"type": "stop", "matched": id}`,
  `FINISH_LENGTH` → `{"type": "length", "length": n}`);
- `python/sglang/srt/entrypoints/http_server.py` @ 0025436eab0556737d615b36a4dd3e1e26e82f3d (`/generate`; a
  ValueError is `{"error": {"message"}}` 400; an invalid body is `ErrorResponse` 400) and
  `python/sglang/srt/lora/lora_registry.py` (an adapter not loaded is that ValueError); it also routes
  `/v1/detokenize` and `/detokenize` to `OpenAIServingDetokenize` (`serving_tokenize.py` @
  0351c1fafe4c53c91c331dea205af48b018af559): served here at `/v1/detokenize` only, `/detokenize` being vLLM's;
- `python/sglang/srt/managers/scheduler_output_processor_mixin.py` @ 004ec010d0292427acff6a0003fd5fd4c91fb356
  (`_process_input_token_logprobs`: from `logprob_start_len` k, the ids `input_ids[k:]`, the first logprob null);
- `python/sglang/srt/entrypoints/openai/protocol.py` and `serving_chat.py` @ 004c82e07d876f6e4a0ad6e15325706b0f478f1a
  (`DetokenizeRequest` / `DetokenizeResponse`; the chat flags `return_prompt_token_ids`, `return_token_ids`,
  `return_meta_info`, filled per choice by `_build_chat_response`: `facade.py` answers them).

SGLang names a LoRA adapter per request in `lora_path`; the worker serves each policy as the adapters
`<policy>` and `<policy>@v<N>` (`names.py`), and `meta_info.weight_version` is the version sampled
(SGLang's is the server's `--weight-version` string, which a trainer sets at each weight update).
SGLang's `/tokenize` and `/v1/tokenize` (`serving_tokenize.py` @ 0351c1fafe4c53c91c331dea205af48b018af559)
take text only (`prompt`), no chat messages: nothing here renders messages for an SGLang caller."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import WireError, WorkerError
from .sampling import SamplingRule
from .tokens import TokenTurn

TokenId = Annotated[int, Field(ge=0)]
TOP_K_ALL = 1 << 30
ANY = object()

#: `SamplingParams` fields the façade serves only at their neutral values (`ANY`: any value, text only).
NEUTRAL: dict[str, tuple[Any, ...]] = {
    "n": (1, None),
    "stop": (None, [], ""),
    "stop_token_ids": (None, []),
    "stop_regex": (None, [], ""),
    "top_k": (-1, TOP_K_ALL, None),
    "min_p": (0, None),
    "frequency_penalty": (0, None),
    "presence_penalty": (0, None),
    "repetition_penalty": (1, None),
    "min_new_tokens": (0, None),
    "json_schema": (None,),
    "regex": (None,),
    "ebnf": (None,),
    "structural_tag": (None,),
    "ignore_eos": (False, None),
    "custom_params": (None,),
    "logit_bias": (None, {}),
    "skip_special_tokens": (ANY,),
    "spaces_between_special_tokens": (ANY,),
    "no_stop_trim": (ANY,),
    "stream_interval": (ANY,),
}
SERVED = frozenset({"max_new_tokens", "temperature", "top_p", "sampling_seed"})


class GenerateReqInput(BaseModel):
    # SGLang's GenerateReqInput is a dataclass FastAPI validates: an unknown field is ignored.
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)
    rid: str | None = None
    text: Any = None
    input_ids: list[TokenId] | list[list[TokenId]] | None = None
    input_embeds: Any = None
    sampling_params: dict[str, Any] | list[dict[str, Any]] | None = None
    return_logprob: bool | None = None
    logprob_start_len: int | None = None
    """With `return_logprob`: -1 (or unset) returns output log-probabilities only (`input_token_logprobs`
    `[]`); k in [0, len(input_ids)) also returns `meta_info.input_token_logprobs`, one
    `[logprob, token_id, text or null]` per input id from position k, the first one's logprob null
    (`input_token_logprobs`); k past the input is SGLang's 400.
    sgl-project/sglang@001067fffe33427bee0ed2f007fb7551a1d76b44 `python/sglang/srt/managers/io_struct.py`
    (`GenerateReqInput.logprob_start_len`) and `tokenizer_manager.py` (`input_token_logprobs` in
    `meta_info`); the null first entry and the ids from k as `scheduler_output_processor_mixin.py`
    @ 004ec010d0292427acff6a0003fd5fd4c91fb356 (`_process_input_token_logprobs`) builds them."""
    top_logprobs_num: int | None = None
    token_ids_logprob: Any = None
    return_text_in_logprobs: bool = False
    stream: bool = False
    lora_path: str | None = None
    session_params: Any = None


class DetokenizeRequest(BaseModel):
    """SGLang's `/v1/detokenize` body (sgl-project/sglang@004c82e07d876f6e4a0ad6e15325706b0f478f1a
    `python/sglang/srt/entrypoints/openai/protocol.py` `DetokenizeRequest`; a plain pydantic model: an
    unknown field is ignored). `model` is not checked (`OpenAIServingDetokenize` decodes with the one
    tokenizer whatever it names)."""

    model_config = ConfigDict(extra="ignore")
    model: str = "default"
    """Not checked, as SGLang's handler does not check it (protocol.py @ 004c82e: default `"default"`)."""
    tokens: list[TokenId] | list[list[TokenId]]
    """Ids to decode, or a list of id lists (each decoded alone: `text` is then a list), as protocol.py @ 004c82e."""
    skip_special_tokens: bool = True
    """Special tokens dropped unless false (protocol.py @ 004c82e; vLLM's `/detokenize` keeps them)."""


class Sampling(BaseModel):
    model_config = ConfigDict(extra="allow", allow_inf_nan=False)
    max_new_tokens: int | None = Field(128, ge=1)
    temperature: float | None = Field(1.0, ge=0)
    top_p: float | None = Field(1.0, gt=0, le=1)
    sampling_seed: int | None = None

    def rule(self) -> SamplingRule:
        return SamplingRule(
            1.0 if self.temperature is None else self.temperature, 1.0 if self.top_p is None else self.top_p
        )


def sglang_error(message: str, status: int = 400) -> WireError:
    """What `/generate` answers for a ValueError (`_create_error_response`)."""
    return WireError(status, {"error": {"message": message}})


def invalid_body(err: ValidationError) -> WireError:
    """SGLang's handler for an invalid body: its `ErrorResponse`, 400."""
    message = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in err.errors())
    return WireError(400, {"object": "error", "message": message, "type": "Bad Request", "param": None, "code": 400})


def error_response(message: str, status: int = 400, kind: str = "BadRequestError") -> WireError:
    """What an OpenAI-compatible SGLang route answers for a request it refuses (`create_error_response`)."""
    return WireError(status, {"object": "error", "message": message, "type": kind, "param": None, "code": status})


def detokenize(req: DetokenizeRequest, decode: Any, vocab: int) -> dict[str, Any]:
    """`DetokenizeResponse` (`{"text"}`: a string, or one per id list), as `OpenAIServingDetokenize`
    (`serving_tokenize.py` @ 0351c1fafe4c53c91c331dea205af48b018af559) decodes: each list with
    `skip_special_tokens`, an empty `tokens` `""`. An id outside the vocabulary is a 400 here."""
    nested = bool(req.tokens) and isinstance(req.tokens[0], list)
    lists = cast(list[list[int]], req.tokens) if nested else [cast(list[int], req.tokens)]
    if any(t >= vocab for ids in lists for t in ids):
        raise error_response(f"tokens: an id is outside the vocabulary (size {vocab})")
    if not req.tokens:
        return {"text": ""}
    texts = [str(decode(list(ids), skip_special_tokens=req.skip_special_tokens)) for ids in lists]
    return {"text": texts if nested else texts[0]}


def not_loaded(name: str | None, loaded: list[str]) -> WireError:
    """SGLang's answer for an adapter it has not loaded (`LoRARegistry`)."""
    return sglang_error(
        f"The following requested LoRA adapters are not loaded: {name}\nLoaded adapters: {', '.join(loaded)}."
    )


def sampling_of(raw: dict[str, Any] | None) -> Sampling:
    """The sampling parameters served, or a 400 naming what is not."""
    values = raw or {}
    for key, value in values.items():
        if key in SERVED:
            continue
        allowed = NEUTRAL.get(key)
        if allowed is None:
            raise WorkerError(400, "VALIDATION_FAILED", f"sampling_params.{key}: not a sampling parameter")
        if ANY not in allowed and value not in allowed:
            raise WorkerError(
                400,
                "VALIDATION_FAILED",
                f"sampling_params.{key}: {value!r} is not served here (the worker samples under temperature and top_p only)",
            )
    try:
        return Sampling.model_validate(values)
    except ValidationError as err:
        raise invalid_body(err) from None


def check_request(req: GenerateReqInput) -> list[list[int]]:
    """The prompts to sample (one, or a batch), or a 400 for what the façade does not serve."""
    if req.input_ids is None:
        raise WorkerError(
            400, "VALIDATION_FAILED", "input_ids: this worker samples token ids (text and input_embeds are not served)"
        )
    if req.stream or req.session_params is not None or req.token_ids_logprob is not None:
        raise WorkerError(400, "VALIDATION_FAILED", "stream, session_params and token_ids_logprob are not served here")
    if req.top_logprobs_num not in (None, 0):
        raise WorkerError(
            400,
            "VALIDATION_FAILED",
            "top_logprobs_num: only the log-probabilities of the ids themselves are served (0)",
        )
    if req.logprob_start_len is not None and req.logprob_start_len < -1:
        raise WorkerError(
            400, "VALIDATION_FAILED", "logprob_start_len: -1 (output logprobs only) or a position in input_ids"
        )
    if not req.input_ids:
        raise WorkerError(400, "VALIDATION_FAILED", "input_ids cannot be empty.")
    prompts = [list(p) for p in req.input_ids] if isinstance(req.input_ids[0], list) else [list(req.input_ids)]
    start = input_logprobs_from(req)
    for prompt in prompts:
        if start is not None and start >= len(prompt):
            # SGLang's scheduler (`handle_generate_request`) aborts the request with this message, a 400.
            raise sglang_error(
                f"req.logprob_start_len={start} is higher than the number of input tokens "
                f"len(req.origin_input_ids)={len(prompt)}. Please use a smaller logprob_start_len."
            )
    return prompts


def input_logprobs_from(req: GenerateReqInput) -> int | None:
    """The input position `input_token_logprobs` start at, or None where none are returned
    (`return_logprob` unset, or `logprob_start_len` -1 or unset)."""
    start = req.logprob_start_len
    return start if req.return_logprob and start is not None and start >= 0 else None


def input_logprobs(req: GenerateReqInput, turn: TokenTurn, decode: Any) -> list[list[Any]]:
    """`meta_info.input_token_logprobs`: `[logprob, token_id, text or null]` for each input id from
    `logprob_start_len`, the first one's logprob null (SGLang pads it: the position before it is not
    scored), each later one the model's log-probability of that id given the ids before it
    (`tokens.prompt_scores`, the score at position i being that of id i + 1)."""
    start = input_logprobs_from(req)
    if start is None or turn.prompt_scores is None:
        return []  # logprob_start_len -1: output logprobs only
    ids = turn.prompt[start:]
    values: list[float | None] = [None, *(s.logprob for s in turn.prompt_scores[start:])]
    texts = [decode([t]) for t in ids] if req.return_text_in_logprobs else [None] * len(ids)
    return [[lp, t, text] for lp, t, text in zip(values, ids, texts, strict=True)]


def generate_out(req: GenerateReqInput, rid: str, turn: TokenTurn, decode: Any, skip_special: bool) -> dict[str, Any]:
    """One output as `_handle_batch_output` builds it for a finished, non-streamed request."""
    meta = meta_info(
        rid, turn, decode, bool(req.return_logprob), req.return_text_in_logprobs, input_logprobs(req, turn, decode)
    )
    return {"text": decode(turn.ids, skip_special_tokens=skip_special), "output_ids": turn.ids, "meta_info": meta}


def meta_info(
    rid: str, turn: TokenTurn, decode: Any, logprobs: bool, texts: bool, inputs: list[list[Any]] | None = None
) -> dict[str, Any]:
    """A finished request's `meta_info` (`_handle_batch_output`): with `logprobs` (`return_logprob`), the
    input log-probabilities given (`input_token_logprobs`) and the output's as `[logprob, token_id,
    text or null]` (text with `texts`: `return_text_in_logprobs`)."""
    last = turn.ids[-1] if turn.ids else None
    finish = {"type": "stop", "matched": last} if turn.finish == "stop" else {"type": "length", "length": len(turn.ids)}
    meta: dict[str, Any] = {
        "id": rid,
        "finish_reason": finish,
        "prompt_tokens": len(turn.prompt),
        "weight_version": str(turn.version),
        "num_retractions": 0,
    }
    if logprobs:
        words = [decode([t]) for t in turn.ids] if texts else [None] * len(turn.ids)
        meta["input_token_logprobs"] = inputs or []
        meta["output_token_logprobs"] = [[lp, t, w] for lp, t, w in zip(turn.logprobs, turn.ids, words, strict=True)]
        meta["output_token_logprobs_length"] = len(turn.ids)
    meta.update(
        {"reasoning_tokens": 0, "completion_tokens": len(turn.ids), "cached_tokens": 0, "e2e_latency": turn.seconds}
    )
    return meta


def request_ids(req: GenerateReqInput, n: int) -> list[str]:
    """`rid` as SGLang normalises it: one request keeps it; a batch gets `<rid>_<i>` (or fresh hex ids)."""
    if n == 1:
        return [req.rid or uuid.uuid4().hex]
    return [f"{req.rid}_{i}" if req.rid else uuid.uuid4().hex for i in range(n)]
