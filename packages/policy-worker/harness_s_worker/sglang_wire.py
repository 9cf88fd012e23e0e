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
  `python/sglang/srt/lora/lora_registry.py` (an adapter not loaded is that ValueError).

SGLang names a LoRA adapter per request in `lora_path`; the worker serves each policy as the adapters
`<policy>` and `<policy>@v<N>` (`names.py`), and `meta_info.weight_version` is the version sampled
(SGLang's is the server's `--weight-version` string, which a trainer sets at each weight update).
SGLang's `/tokenize` and `/v1/tokenize` (`serving_tokenize.py` @ 0351c1fafe4c53c91c331dea205af48b018af559)
take text only (`prompt`), no chat messages: nothing here renders messages for an SGLang caller."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

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
    top_logprobs_num: int | None = None
    token_ids_logprob: Any = None
    return_text_in_logprobs: bool = False
    stream: bool = False
    lora_path: str | None = None
    session_params: Any = None


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
    if req.logprob_start_len not in (None, -1) or req.top_logprobs_num not in (None, 0):
        raise WorkerError(
            400,
            "VALIDATION_FAILED",
            "logprob_start_len and top_logprobs_num: only output logprobs of the sampled tokens are served (-1 and 0)",
        )
    if not req.input_ids:
        raise WorkerError(400, "VALIDATION_FAILED", "input_ids cannot be empty.")
    return [list(p) for p in req.input_ids] if isinstance(req.input_ids[0], list) else [list(req.input_ids)]


def generate_out(req: GenerateReqInput, rid: str, turn: TokenTurn, decode: Any, skip_special: bool) -> dict[str, Any]:
    """One output as `_handle_batch_output` builds it for a finished, non-streamed request."""
    last = turn.ids[-1] if turn.ids else None
    finish = {"type": "stop", "matched": last} if turn.finish == "stop" else {"type": "length", "length": len(turn.ids)}
    meta: dict[str, Any] = {
        "id": rid,
        "finish_reason": finish,
        "prompt_tokens": len(turn.prompt),
        "weight_version": str(turn.version),
        "num_retractions": 0,
    }
    if req.return_logprob:
        texts = [decode([t]) for t in turn.ids] if req.return_text_in_logprobs else [None] * len(turn.ids)
        meta["input_token_logprobs"] = []  # logprob_start_len -1: output logprobs only
        meta["output_token_logprobs"] = [[lp, t, s] for lp, t, s in zip(turn.logprobs, turn.ids, texts, strict=True)]
        meta["output_token_logprobs_length"] = len(turn.ids)
    meta.update(
        {"reasoning_tokens": 0, "completion_tokens": len(turn.ids), "cached_tokens": 0, "e2e_latency": turn.seconds}
    )
    return {"text": decode(turn.ids, skip_special_tokens=skip_special), "output_ids": turn.ids, "meta_info": meta}


def request_ids(req: GenerateReqInput, n: int) -> list[str]:
    """`rid` as SGLang normalises it: one request keeps it; a batch gets `<rid>_<i>` (or fresh hex ids)."""
    if n == 1:
        return [req.rid or uuid.uuid4().hex]
    return [f"{req.rid}_{i}" if req.rid else uuid.uuid4().hex for i in range(n)]
