"""A rescue's token rows (`GET /v1/rescues/{id}/trajectories`) in the shapes trainers take. Ids,
log-probabilities and masks are handed on exactly as the service returned them: nothing is
re-tokenised, so the log-probabilities stay those of these ids, and every id the policy did not
sample (the environment's text, every harness insertion) keeps mask 0."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


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
    logprobs: list[float]
    loss_mask: list[int]
    context: Literal["sampled", "base"]

    @classmethod
    def from_json(cls, row: dict[str, Any]) -> Trajectory:
        t = cls(**{k: row[k] for k in cls.__dataclass_fields__})
        if not (len(t.completion_ids) == len(t.logprobs) == len(t.loss_mask)):
            raise ValueError(f"trajectory {t.index}: completion_ids, logprobs and loss_mask differ in length")
        if any(m not in (0, 1) for m in t.loss_mask):
            raise ValueError(f"trajectory {t.index}: loss_mask holds values other than 0 and 1")
        return t


def to_trl(rows: list[Trajectory]) -> dict[str, Any]:
    """TRL's `rollout_func` result: one entry per completion; `env_mask` (1 = the model's token)
    becomes the loss mask, `logprobs` the sampling log-probabilities; the other keys (reward,
    harness, weight version) reach the reward functions."""
    return {
        "prompt_ids": [r.prompt_ids for r in rows],
        "completion_ids": [r.completion_ids for r in rows],
        "logprobs": [r.logprobs for r in rows],
        "env_mask": [r.loss_mask for r in rows],
        "rescue_reward": [r.reward for r in rows],
        "rescue_harness": [r.harness_id for r in rows],
        "weight_version": [r.weight_version for r in rows],
    }


def to_verl(row: Trajectory) -> dict[str, Any]:
    """verl's `AgentLoopOutput` fields for one rollout: `response_mask` 0 on tool and inserted tokens."""
    return {
        "prompt_ids": row.prompt_ids,
        "response_ids": row.completion_ids,
        "response_mask": row.loss_mask,
        "response_logprobs": row.logprobs,
        "reward_score": row.reward,
        "num_turns": _turns(row.loss_mask),
        "metrics": {"harness_id": row.harness_id, "weight_version": row.weight_version, "finish_reason": row.finish_reason},
    }


def to_skyrl(rows: list[Trajectory]) -> dict[str, Any]:
    """SkyRL's `GeneratorOutput` for a batch of rollouts."""
    return {
        "prompt_token_ids": [r.prompt_ids for r in rows],
        "response_ids": [r.completion_ids for r in rows],
        "rewards": [r.reward for r in rows],
        "loss_masks": [r.loss_mask for r in rows],
        "rollout_logprobs": [r.logprobs for r in rows],
        "stop_reasons": ["stop" if r.finish_reason == "submitted" else "length" for r in rows],
        "trajectory_ids": [f"{r.decision_id}#{r.index}" for r in rows],
    }


def _turns(mask: list[int]) -> int:
    """Model turns in a row: runs of sampled (mask 1) ids, plus the first one the prompt ends before."""
    return sum(1 for i, m in enumerate(mask) if m == 1 and (i == 0 or mask[i - 1] == 0))
