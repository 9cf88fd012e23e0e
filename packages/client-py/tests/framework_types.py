"""Stand-ins of the framework types the converters produce, declared here in the shape of their
sources at the commits read (neither framework installs here):

- verl, volcengine/verl@b178a3cd56f58b2d502255daba591e92833930a7,
  verl/experimental/agent_loop/agent_loop.py: `AgentLoopMetrics` and `AgentLoopOutput` (pydantic
  models). The stand-ins forbid extra fields, where verl's ignore them: a field the converter
  gives that verl has no place for would be dropped silently there, and fails here.
- SkyRL, NovaSky-AI/SkyRL@a9564572eb8e91076be43c1bd5e4615e3de17265,
  skyrl/train/generators/base.py: `TrajectoryID` (a dataclass) and `GeneratorOutput` (a total
  TypedDict: the trainer indexes every key); skyrl/train/utils/trainer_utils.py:
  `validate_generator_output`, whose checks `check_generator_output` restates (one row per input,
  every per-row list as long as `response_ids`, ids, masks and log-probabilities aligned, rewards
  all floats or all lists)."""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, StrictInt, TypeAdapter
from typing_extensions import TypedDict


class AgentLoopMetrics(BaseModel):
    model_config = ConfigDict(extra="forbid")
    generate_sequences: float = 0.0
    tool_calls: float = 0.0
    num_preempted: int = -1


class AgentLoopOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    response_logprobs: list[float] | None = None
    routed_experts: Any | None = None
    multi_modal_data: dict[str, Any] | None = None
    reward_score: float | None = None
    num_turns: StrictInt = 0
    metrics: AgentLoopMetrics
    extra_fields: dict[str, Any] = {}


@dataclass
class TrajectoryID:
    instance_id: str
    repetition_id: int

    def to_string(self) -> str:
        return f"{self.instance_id}_{self.repetition_id}"


class GeneratorOutput(TypedDict):
    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    prompt_token_ids: list[list[int]]
    response_ids: list[list[int]]
    rewards: list[float] | list[list[float]]
    loss_masks: list[list[int]]
    stop_reasons: list[str] | None
    rollout_metrics: dict[str, Any] | None
    rollout_logprobs: list[list[float]] | None
    trajectory_ids: list[TrajectoryID] | None
    trajectory_generation_times: list[float] | None
    trajectory_time_splits: dict[str, list[float]] | None
    rollout_expert_indices: list[Any] | None
    is_last_step: list[bool] | None
    env_metrics: list[dict[str, Any]] | None
    pixel_values: list[Any] | None
    image_grid_thw: list[Any] | None


GENERATOR_OUTPUT = TypeAdapter(GeneratorOutput)
PER_ROW = (
    "response_ids",
    "loss_masks",
    "rewards",
    "rollout_logprobs",
    "stop_reasons",
    "trajectory_ids",
    "rollout_expert_indices",
    "is_last_step",
    "pixel_values",
    "image_grid_thw",
)


def check_generator_output(num_prompts: int, out: dict[str, Any]) -> None:
    """SkyRL's output checks as the trainer makes them (not step-wise), plus the declared type."""
    GENERATOR_OUTPUT.validate_python(out)
    n = len(out["response_ids"])
    assert n > 0 and n == num_prompts == len(out["prompt_token_ids"])
    for key in PER_ROW:
        if isinstance(out.get(key), list):
            assert len(out[key]) == n, key
    for i, (ids, mask, reward) in enumerate(zip(out["response_ids"], out["loss_masks"], out["rewards"])):
        assert len(ids) == len(mask), i
        if isinstance(reward, list):
            assert len(reward) == len(ids), i
        if out["rollout_logprobs"]:
            assert len(out["rollout_logprobs"][i]) == len(ids), i
    assert all(isinstance(r, list) for r in out["rewards"]) or not any(isinstance(r, list) for r in out["rewards"])


class _StandIn(types.ModuleType):
    """A module made here for a framework that is not installed."""


def install_stand_ins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Puts the stand-ins where the converters' optional imports look (verl's and SkyRL's module paths)."""
    modules = {
        "verl.experimental.agent_loop.agent_loop": {
            "AgentLoopOutput": AgentLoopOutput,
            "AgentLoopMetrics": AgentLoopMetrics,
        },
        "skyrl.train.generators.base": {"TrajectoryID": TrajectoryID, "GeneratorOutput": GeneratorOutput},
    }
    for name, attrs in modules.items():
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if not isinstance(sys.modules.get(prefix), _StandIn):
                monkeypatch.setitem(sys.modules, prefix, _StandIn(prefix))
        for key, value in attrs.items():
            setattr(sys.modules[name], key, value)
