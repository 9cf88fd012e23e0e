"""A rescue's token rows (`GET /v1/rescues/{id}/trajectories`) in the shapes trainers take. Ids,
log-probabilities and masks are handed on exactly as the service returned them: nothing is
re-tokenised, so the log-probabilities stay those of these ids, and every id the policy did not
sample (the environment's text, every harness insertion) keeps mask 0. Rows end as the policy
ended them: a last turn that stopped on an end-of-sequence id keeps it.

Two log-probability arrays per row: `logprobs`, the ones the policy sampled these ids with (the
behaviour policy, in the context it saw), and for rows read with `context="base"`,
`base_logprobs`: the same completion ids re-scored at the same weights under H0's prompt (the ids
of such a row are H0's rendering; at mask 1 they are the ids sampled, in the same order).

The framework types are those declared at the commits read (verl b178a3c,
`verl/experimental/agent_loop/agent_loop.py`; SkyRL a956457, `skyrl/train/generators/base.py`):
neither is imported unless installed."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypedDict

from .types import TrajectoryRow


@dataclass(frozen=True)
class Trajectory:
    index: int
    harness_id: str
    decision_id: str
    weight_version: int
    reward: float
    success: bool
    finish_reason: Literal["submitted", "budget-exhausted"]
    failure_tags: list[str]
    prompt_ids: list[int]
    completion_ids: list[int]
    #: The log-probabilities the policy sampled `completion_ids` with (0 at mask 0).
    logprobs: list[float]
    loss_mask: list[int]
    context: Literal["sampled", "base"]
    #: One of several rows of this rollout (a chat template that rewrote earlier turns), each exact on its own.
    segmented: bool = False
    #: `context="base"`: H0's re-scores of the same ids at the same weights (0 at mask 0); else None.
    base_logprobs: list[float] | None = field(default=None)

    @classmethod
    def from_json(
        cls, row: TrajectoryRow | dict[str, Any], sampled: TrajectoryRow | dict[str, Any] | None = None
    ) -> Trajectory:
        """A row as the service sent it. A `context="base"` row carries H0's re-scores in
        `logprobs`: give the same rollout's `sampled` row too, and the sampled log-probabilities
        are put at its mask-1 ids (the same ids in the same order), H0's beside them."""
        fields = {k: row[k] for k in cls.__dataclass_fields__ if k not in ("segmented", "base_logprobs")}  # type: ignore[literal-required]
        t = cls(**fields, segmented=bool(row.get("segmented", False)))
        _check(t)
        if t.context == "sampled":
            return t
        if sampled is None:
            raise ValueError(
                f"trajectory {t.index}: a base row needs the sampled row of the same rollout for its sampled log-probabilities"
            )
        return _beside(t, cls.from_json(sampled))


def _check(t: Trajectory) -> None:
    if not (len(t.completion_ids) == len(t.logprobs) == len(t.loss_mask)):
        raise ValueError(f"trajectory {t.index}: completion_ids, logprobs and loss_mask differ in length")
    if any(m not in (0, 1) for m in t.loss_mask):
        raise ValueError(f"trajectory {t.index}: loss_mask holds values other than 0 and 1")


def _beside(base: Trajectory, sampled: Trajectory) -> Trajectory:
    """The base row with the sampled log-probabilities in `logprobs` and H0's in `base_logprobs`."""
    at = [i for i, m in enumerate(base.loss_mask) if m == 1]
    sampled_at = [i for i, m in enumerate(sampled.loss_mask) if m == 1]
    if [base.completion_ids[i] for i in at] != [sampled.completion_ids[i] for i in sampled_at]:
        raise ValueError(f"trajectory {base.index}: the base row's sampled ids are not the sampled row's")
    logprobs = [0.0] * len(base.completion_ids)
    for i, j in zip(at, sampled_at, strict=True):
        logprobs[i] = sampled.logprobs[j]
    return replace(base, logprobs=logprobs, base_logprobs=base.logprobs)


def pair_rows(
    base: Sequence[TrajectoryRow | dict[str, Any]], sampled: Sequence[TrajectoryRow | dict[str, Any]]
) -> list[Trajectory]:
    """Base rows with their sampled rows (the same rollout index, segments in order)."""
    by_index: dict[int, list[TrajectoryRow | dict[str, Any]]] = {}
    for s in sampled:
        by_index.setdefault(int(s["index"]), []).append(s)
    seen: dict[int, int] = {}
    out = []
    for b in base:
        i = int(b["index"])
        n = seen.get(i, 0)
        seen[i] = n + 1
        segments = by_index.get(i, [])
        if n >= len(segments):
            raise ValueError(f"trajectory {i}: a base row without its sampled row")
        out.append(Trajectory.from_json(b, segments[n]))
    return out


# --- TRL ---------------------------------------------------------------------------------------

#: The row fields TRL hands on to the reward functions, the same keys from `to_trl`,
#: `rescue_rollout_func` and the reward helpers (`environment_reward(**extras)` takes them all).
TRL_EXTRAS = ("env_reward", "harness_id", "rescued", "weight_version", "finish_reason", "base_logprobs")


def trl_extras(rows: Sequence[Trajectory], rescued: bool | Sequence[bool] = True) -> dict[str, list[Any]]:
    flags = list(rescued) if not isinstance(rescued, bool) else [rescued] * len(rows)
    return {
        "env_reward": [float(r.reward) for r in rows],
        "harness_id": [r.harness_id for r in rows],
        "rescued": flags,
        "weight_version": [r.weight_version for r in rows],
        "finish_reason": [r.finish_reason for r in rows],
        "base_logprobs": [r.base_logprobs for r in rows],
    }


def to_trl(rows: Sequence[Trajectory], rescued: bool | Sequence[bool] = True) -> dict[str, Any]:
    """TRL's `rollout_func` result: one entry per completion; `env_mask` (1 = the model's token)
    becomes the loss mask, `logprobs` the sampling log-probabilities (TRL's
    `sampling_per_token_logps`); the extras (`TRL_EXTRAS`) reach the reward functions."""
    return {
        "prompt_ids": [r.prompt_ids for r in rows],
        "completion_ids": [r.completion_ids for r in rows],
        "logprobs": [r.logprobs for r in rows],
        "env_mask": [r.loss_mask for r in rows],
        **trl_extras(rows, rescued),
    }


# --- verl --------------------------------------------------------------------------------------


class VerlMetrics(TypedDict):
    """verl's `AgentLoopMetrics` fields (b178a3c): the rescue's time is not the loop's."""

    generate_sequences: float
    tool_calls: float
    num_preempted: int


class VerlOutput(TypedDict):
    """verl's `AgentLoopOutput` fields (b178a3c), every one: `AgentLoopOutput(**to_verl(row))`."""

    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    response_logprobs: list[float] | None
    routed_experts: Any
    multi_modal_data: dict[str, Any] | None
    reward_score: float | None
    num_turns: int
    metrics: VerlMetrics
    extra_fields: dict[str, Any]


def verl_turns(mask: Sequence[int]) -> int:
    """verl's `num_turns`: user + assistant + tool messages. The prompt is one (the user's), each
    run of sampled ids an assistant turn, each run of other ids between them a tool (or user) turn."""
    runs = sum(1 for i, m in enumerate(mask) if i == 0 or m != mask[i - 1])
    return 1 + runs


def to_verl(row: Trajectory, rescued: bool = True) -> VerlOutput:
    """verl's `AgentLoopOutput` fields for one rollout: `response_mask` 0 on tool and inserted
    ids, the sampled log-probabilities, the reward as a float; what verl has no field for in
    `extra_fields` (verl's postprocess makes each key a non-tensor column of the batch)."""
    return {
        "prompt_ids": row.prompt_ids,
        "response_ids": row.completion_ids,
        "response_mask": row.loss_mask,
        "response_logprobs": row.logprobs,
        "routed_experts": None,
        "multi_modal_data": None,
        "reward_score": float(row.reward),
        "num_turns": verl_turns(row.loss_mask),
        "metrics": {"generate_sequences": 0.0, "tool_calls": 0.0, "num_preempted": -1},
        "extra_fields": {
            "harness_id": row.harness_id,
            "weight_version": row.weight_version,
            "finish_reason": row.finish_reason,
            "decision_id": row.decision_id,
            "rescued": rescued,
            "base_logprobs": row.base_logprobs,
        },
    }


def verl_output_class() -> Any:
    """verl's `AgentLoopOutput` where verl is installed, else None (the converters then give dicts)."""
    try:
        return importlib.import_module("verl.experimental.agent_loop.agent_loop").AgentLoopOutput
    except ImportError:
        return None


# --- SkyRL -------------------------------------------------------------------------------------


@dataclass
class TrajectoryID:
    """SkyRL's `TrajectoryID` (a956457) where SkyRL is not installed: the prompt's uid and the row's repetition."""

    instance_id: str
    repetition_id: int

    def to_string(self) -> str:
        return f"{self.instance_id}_{self.repetition_id}"


def trajectory_id(instance_id: str, repetition_id: int) -> Any:
    """SkyRL's own `TrajectoryID` where installed, else the stand-in of the same shape."""
    try:
        cls: Any = importlib.import_module("skyrl.train.generators.base").TrajectoryID
    except ImportError:
        cls = TrajectoryID
    return cls(instance_id=instance_id, repetition_id=repetition_id)


class SkyRLOutput(TypedDict):
    """SkyRL's `GeneratorOutput` (a956457), every key (a total TypedDict: the trainer indexes them)."""

    prompt_token_ids: list[list[int]]
    response_ids: list[list[int]]
    rewards: list[float] | list[list[float]]
    loss_masks: list[list[int]]
    stop_reasons: list[str] | None
    rollout_metrics: dict[str, Any] | None
    rollout_logprobs: list[list[float]] | None
    trajectory_ids: list[Any] | None
    trajectory_generation_times: list[float] | None
    trajectory_time_splits: dict[str, list[float]] | None
    rollout_expert_indices: list[Any] | None
    is_last_step: list[bool] | None
    env_metrics: list[dict[str, Any]] | None
    pixel_values: list[Any] | None
    image_grid_thw: list[Any] | None


def stop_reason(row: Trajectory) -> str:
    return "stop" if row.finish_reason == "submitted" else "length"


def skyrl_env_metrics(row: Trajectory, rescued: bool = True) -> dict[str, Any]:
    return {
        "harness_id": row.harness_id,
        "weight_version": row.weight_version,
        "finish_reason": row.finish_reason,
        "rescued": rescued,
    }


def to_skyrl(
    rows: Sequence[Trajectory], instance_id: str, metrics: dict[str, Any] | None = None, first_repetition: int = 0
) -> SkyRLOutput:
    """SkyRL's `GeneratorOutput` for one group's rows: one row per input as the trainer groups
    them, `trajectory_ids` the prompt's uid with each row's repetition."""
    return {
        "prompt_token_ids": [r.prompt_ids for r in rows],
        "response_ids": [r.completion_ids for r in rows],
        "rewards": [float(r.reward) for r in rows],
        "loss_masks": [r.loss_mask for r in rows],
        "stop_reasons": [stop_reason(r) for r in rows],
        "rollout_metrics": dict(metrics or {}),
        "rollout_logprobs": [r.logprobs for r in rows],
        "trajectory_ids": [trajectory_id(instance_id, first_repetition + i) for i in range(len(rows))],
        "trajectory_generation_times": None,
        "trajectory_time_splits": None,
        "rollout_expert_indices": None,
        "is_last_step": None,
        "env_metrics": [skyrl_env_metrics(r) for r in rows],
        "pixel_values": None,
        "image_grid_thw": None,
    }
