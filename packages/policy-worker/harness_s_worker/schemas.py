"""Protocol v2's request bodies (docs/design.md §5): strict, with every number finite and
every id and mask in range, so a bad request is a 400 naming its field."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ID = r"^[A-Za-z0-9][A-Za-z0-9_.:@+=-]{0,199}$"
# A checkpoint as `POST …/checkpoints` names it: `<policy id>/v<version>`.
CHECKPOINT = r"^[A-Za-z0-9][A-Za-z0-9_.:@+=-]{0,199}/v[0-9]{1,9}$"
# A module name peft matches LoRA targets against (`q_proj`, `model.layers.0.mlp.up_proj`).
MODULE = r"^[A-Za-z0-9_][A-Za-z0-9_.]{0,199}$"


class Strict(BaseModel):
    # No NaN or Infinity anywhere (JSON parsers here accept them): a non-finite number is a 400.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Lora(Strict):
    rank: int = Field(8, ge=1, le=256)
    alpha: float = Field(16, gt=0)
    targets: list[Annotated[str, Field(pattern=MODULE)]] = Field(["q_proj", "v_proj"], min_length=1, max_length=64)


class CreatePolicy(Strict):
    base_model: str
    lora: Lora = Lora()
    seed: int = 0
    init_from: str | None = Field(None, pattern=CHECKPOINT)


class Version(Strict):
    exact: int | None = None
    min: int | None = None


class Sampling(Strict):
    temperature: float = Field(1.0, ge=0, le=5)
    top_p: float = Field(1.0, gt=0, le=1)
    max_tokens: int = Field(64, ge=1, le=4096)
    seed: int | None = Field(None, ge=0)
    # "train" (the default) must be drawn at temperature 1 and top_p 1; "eval" may use others.
    purpose: Literal["train", "eval"] = "train"


Tools = list[dict[str, Any]]


class SampleRequest(Strict):
    episode_id: str = Field(pattern=ID)
    version: Version | None = None
    messages: list[dict[str, Any]] | None = None
    append: list[dict[str, Any]] | None = None
    tools: Tools | None = None
    sampling: Sampling = Sampling()
    # Set on an episode's first turn (with `tools`): every turn of it is then exactly one call of
    # one of those tools with arguments that fit its schema (`constrained.py`).
    constrain_tool_calls: bool = False

    @model_validator(mode="after")
    def one_turn_kind(self) -> SampleRequest:
        # The first turn renders `messages`, a later one appends `append`: both at once is not a turn.
        if (self.messages is None) == (self.append is None):
            raise ValueError("exactly one of messages (the first turn) or append (a later turn)")
        return self


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


class ReplayTurn(Strict):
    # The messages appended before this turn (none on the first) and the ids sampled at it.
    append: list[dict[str, Any]] | None = None
    completion_ids: list[TokenId] = Field(min_length=1, max_length=4096)


class ReplayRequest(Strict):
    """An episode's sampled completions under other messages (rescue scored in H0's context)."""

    version: Version | None = None
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    turns: list[ReplayTurn] = Field(min_length=1, max_length=512)
    # The turns were sampled with constrained tool calls: score them under the same constraint.
    constrain_tool_calls: bool = False


class Constraint(Strict):
    """The tools a datum's turns were sampled constrained to (`constrain_tool_calls`): the trainer
    scores each sampled token under the same renormalised distribution."""

    tools: Tools = Field(min_length=1, max_length=256)


class Datum(Strict):
    sample_id: str
    group_id: str
    ids: list[TokenId] = Field(min_length=2, max_length=32768)
    loss_mask: list[Mask]
    # A log-probability is at most 0 (a little above for rounding); the ratio it enters is
    # clamped in the loss, so an extreme but finite value cannot overflow it.
    behaviour_logprobs: list[Annotated[float, Field(le=1e-3)]]
    advantage: float = Field(ge=-1e4, le=1e4)
    # Per-token weights on the advantage (a row re-scored in H0's context, importance-corrected and
    # truncated by the service at CONTEXT_WEIGHT_BOUND = 2, core's training/context-correction.ts);
    # None: all 1.
    token_weights: list[Annotated[float, Field(ge=0, le=2)]] | None = None
    constraint: Constraint | None = None


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


#: The most datums one update trains on.
MAX_DATUMS = 4096
#: The most tokens one `/score` request scores, in contexts of the model: a page of rescued
#: trajectories or a training batch's reference pass fits; more is split into several requests.
SCORE_CONTEXTS = 64


class UpdateRequest(Strict):
    base_version: int = Field(ge=0)
    datums: list[Datum] = Field(min_length=1, max_length=MAX_DATUMS)
    loss: LossSpec = LossSpec()
    optim: Optim


class ChatRequest(BaseModel):
    """OpenAI's chat-completions body with vLLM's token fields (`vllm_wire.py` names the source
    read); fields this façade does not use are ignored, as OpenAI does and as vLLM does (it logs them)."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)
    model: str
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    max_tokens: int | None = Field(None, ge=1, le=4096)
    # vLLM's preferred spelling; used when set.
    max_completion_tokens: int | None = Field(None, ge=1, le=4096)
    temperature: float = Field(1.0, ge=0, le=5)
    top_p: float = Field(1.0, gt=0, le=1)
    seed: int | None = Field(None, ge=0)
    logprobs: bool = False
    # Only 0 is served: each entry's `top_logprobs` is empty, as vLLM's is at 0.
    top_logprobs: int | None = Field(0, ge=0, le=0)
    return_token_ids: bool | None = None
    """vLLM: the top-level `prompt_token_ids` and each choice's `token_ids` (always there in this façade).
    SGLang: each choice's `token_ids` and `prompt_token_ids`
    (sgl-project/sglang@004c82e07d876f6e4a0ad6e15325706b0f478f1a
    `python/sglang/srt/entrypoints/openai/protocol.py` `ChatCompletionRequest.return_token_ids`, filled by
    `serving_chat.py` @ 004c82e `_build_chat_response`)."""
    return_prompt_token_ids: bool = False
    """SGLang: each choice's `prompt_token_ids`, the whole prompt the completion followed
    (sgl-project/sglang@004c82e07d876f6e4a0ad6e15325706b0f478f1a `protocol.py` `ChatCompletionRequest` /
    `ChatCompletionResponseChoice.prompt_token_ids`)."""
    return_meta_info: bool = False
    """SGLang: each choice's `meta_info`, the `/generate` `meta_info` of its turn (`weight_version` the version
    sampled; with `logprobs`, `output_token_logprobs` as `[logprob, id, text]`)
    (sgl-project/sglang@004c82e07d876f6e4a0ad6e15325706b0f478f1a `protocol.py`
    `ChatCompletionResponseChoice.meta_info`; `serving_chat.py` @ 004c82e passes `ret_item["meta_info"]`)."""
    # Logprob tokens spelled `token_id:<id>`.
    return_tokens_as_token_ids: bool | None = None

    def completion_tokens(self) -> int:
        return self.max_completion_tokens or self.max_tokens or 64
