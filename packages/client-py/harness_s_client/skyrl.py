"""Selective harness rescue in SkyRL: `RescueGenerator` wraps your generator. It runs the batch
with yours, groups the rows by the prompt's uid (`trajectory_ids`' `instance_id`, as the trainer
groups them), sends each group whose every row failed to the service, and puts the rescued rows in
its rows' places when some of them succeed: the same count per group (one row per input, as
`validate_generator_output` asserts), the same `TrajectoryID`s. The rescue metrics join
`rollout_metrics` (the trainer logs them). The output is SkyRL's complete `GeneratorOutput`
(a956457, `skyrl/train/generators/base.py`); SkyRL is never imported here.

    generator = RescueGenerator(my_generator, AsyncHarnessS(url, key),
                                RescueSettings(pool_id="embedded", environment={"kind": "openenv", "url": env_url},
                                               endpoint_id=rank_endpoint_id("skyrl")),
                                task_of=lambda env_extras, prompt: tasks[env_extras["task_id"]])
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .aio import AsyncHarnessS
from .convert import SkyRLOutput, Trajectory, skyrl_env_metrics, stop_reason
from .groups import UNTAGGED, AsyncGroupRescuer, GroupOutcome, RescueSettings, all_fail, log, rescue_metrics
from .types import CallerTask

#: Every key of SkyRL's `GeneratorOutput` at a956457: a total TypedDict, each present (None where unused).
GENERATOR_OUTPUT_KEYS = tuple(SkyRLOutput.__annotations__)


class Generator(Protocol):
    async def generate(self, input_batch: Any) -> Any: ...


def _reward(value: Any) -> float:
    return float(sum(value)) if isinstance(value, list) else float(value)


def _uids(output: dict[str, Any], input_batch: Any) -> list[str]:
    ids = output.get("trajectory_ids") or input_batch.get("trajectory_ids")
    if not ids:
        raise ValueError(
            "RescueGenerator needs trajectory_ids (the prompt's uid per row) in the generator's input or output"
        )
    return [str(t.instance_id) for t in ids]


class RescueGenerator:
    """SkyRL's `GeneratorInterface` around yours (see the module's text). `task_of(env_extras,
    prompt)` gives a row's task as the service takes it; `weight_version(step)` and
    `served_model(step)` pin the rescue to the weights your inference engine serves at that step
    (required for vLLM and SGLang endpoints; protocol v2 states its own); `score(rows)` gives the
    rescued rows your reward (default: the environment's)."""

    def __init__(
        self,
        generator: Generator,
        client: AsyncHarnessS,
        settings: RescueSettings,
        task_of: Callable[[Any, Any], CallerTask | dict[str, Any]],
        weight_version: Callable[[int], int | None] | None = None,
        served_model: Callable[[int], str | None] | None = None,
        score: Callable[[list[Trajectory]], Sequence[float]] | None = None,
    ) -> None:
        self.generator, self.settings, self.task_of = generator, settings, task_of
        self.rescuer = AsyncGroupRescuer(client, settings, score)
        self.weight_version, self.served_model = weight_version, served_model
        self.outcomes: list[GroupOutcome] = []

    async def generate(self, input_batch: Any) -> SkyRLOutput:
        output: dict[str, Any] = dict(await self.generator.generate(input_batch))
        for key in GENERATOR_OUTPUT_KEYS:
            output.setdefault(key, None)
        if output["is_last_step"] is not None:
            log.warning("RescueGenerator: step-wise trajectories are handed on unrescued")
            return output  # type: ignore[return-value]
        uids = _uids(output, input_batch)
        output["trajectory_ids"] = output["trajectory_ids"] or list(input_batch["trajectory_ids"])
        groups: dict[str, list[int]] = {}
        for i, uid in enumerate(uids):
            groups.setdefault(uid, []).append(i)
        meta = input_batch.get("batch_metadata")
        step = int(getattr(meta, "global_step", 0) or 0)
        outcomes = [GroupOutcome(step, g, uid, "kept") for g, uid in enumerate(groups)]
        rescues = []
        for outcome, rows in zip(outcomes, groups.values(), strict=True):
            if all_fail([_reward(output["rewards"][i]) for i in rows], self.settings.fail_at_or_below):
                extras = (input_batch.get("env_extras") or [None] * len(uids))[rows[0]]
                task = self.task_of(extras, input_batch["prompts"][rows[0]])
                outcome.task_id = str(task["id"])
                version = self.weight_version(step) if self.weight_version else None
                served = self.served_model(step) if self.served_model else None
                rescues.append(self.rescuer.rescue(outcome, task, _tags(output, rows), len(rows), version, served))
        await asyncio.gather(*rescues)
        for outcome, rows in zip(outcomes, groups.values(), strict=True):
            if outcome.kind == "replaced":
                _splice(output, rows, outcome.rows)
        output["rollout_metrics"] = {**(output["rollout_metrics"] or {}), **rescue_metrics(outcomes)}
        self.outcomes.extend(outcomes)
        return output  # type: ignore[return-value]


def _tags(output: dict[str, Any], rows: list[int]) -> list[str]:
    """The failed rows' tags where your generator reports them (`env_metrics[i]["failure_tags"]`), else untagged."""
    metrics = output["env_metrics"] or []
    tags = [
        t
        for i in rows
        if i < len(metrics) and isinstance(metrics[i], dict)
        for t in metrics[i].get("failure_tags") or []
    ]
    return list(dict.fromkeys(tags))[:50] or [UNTAGGED]


def _splice(output: dict[str, Any], at: list[int], rows: list[Trajectory]) -> None:
    """The rescued rows in the group's places (its `trajectory_ids` kept: the prompt's uid and
    each row's repetition); per-token rewards get the reward on the last id."""
    for i, row in zip(at, rows, strict=True):
        output["prompt_token_ids"][i] = row.prompt_ids
        output["response_ids"][i] = row.completion_ids
        output["loss_masks"][i] = row.loss_mask
        per_token = isinstance(output["rewards"][i], list)
        output["rewards"][i] = (
            [0.0] * (len(row.completion_ids) - 1) + [float(row.reward)] if per_token else float(row.reward)
        )
        if output["stop_reasons"] is not None:
            output["stop_reasons"][i] = stop_reason(row)
        if output["rollout_logprobs"] is not None:
            output["rollout_logprobs"][i] = row.logprobs
        if output["env_metrics"] is not None:
            output["env_metrics"][i] = skyrl_env_metrics(row)
