"""Selective harness rescue in verl, at the trainer's group filter: the place DAPO's
`filter_groups` sits, once the batch's rollouts have their rewards. A verl agent loop sees one
sample; rescue is a decision about a group (every rollout of one prompt failed), so the hook takes
the batch's groups of `AgentLoopOutput`s with their rewards, sends each all-fail group to the
service (your endpoint, your environment, the pool's routed siblings) and splices the rescued rows
in its place when some of them succeed. A group that did not all fail, or whose rescue failed too
or did not finish (the service's code logged), stays as it was.

    rescue = VerlGroupRescue(AsyncHarnessS(url, key), RescueSettings(pool_id="embedded",
             environment={"kind": "openenv", "url": env_url}, endpoint_id=rank_endpoint_id("verl")))
    filtered = await rescue(groups, step=global_step, weight_version=global_step, served_model=f"step-{global_step}")
    outputs = [o for g in filtered.outputs for o in g]     # verl's AgentLoopOutputs, one per input
    metrics.update(filtered.metrics)                       # rescue/groups_replaced, rescue/rollouts, …

Rescued rows are verl's `AgentLoopOutput` where verl is installed (`output_cls`), else dicts of
its fields (b178a3c): verl's agent-loop postprocess pads them with the others. verl is never
imported here unless present."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .aio import AsyncHarnessS
from .convert import Trajectory, to_verl, verl_output_class
from .groups import UNTAGGED, AsyncGroupRescuer, GroupOutcome, RescueSettings, all_fail, rescue_metrics
from .types import CallerTask


@dataclass
class VerlGroup:
    """One prompt's rollouts: its uid, its task as the service takes it, verl's outputs (objects
    or dicts with `reward_score`), and their rewards when not in the outputs."""

    uid: str
    task: CallerTask | dict[str, Any]
    outputs: list[Any]
    rewards: list[float] | None = None
    #: What the failed rollouts did wrong (routes the rescue); default: each output's
    #: `extra_fields["failure_tags"]`, else untagged.
    failure_tags: list[str] | None = None


@dataclass
class VerlFiltered:
    """Each group's outputs, in the groups' order (the same count per group: one row per input),
    what became of each, and the rescue metrics for verl's metrics dict."""

    outputs: list[list[Any]]
    outcomes: list[GroupOutcome]
    metrics: dict[str, float] = field(default_factory=dict)


def _field(output: Any, name: str) -> Any:
    return output.get(name) if isinstance(output, dict) else getattr(output, name, None)


def _rewards(group: VerlGroup) -> list[float]:
    if group.rewards is not None:
        return [float(r) for r in group.rewards]
    scores = [_field(o, "reward_score") for o in group.outputs]
    if any(s is None for s in scores):
        raise ValueError(f"group {group.uid}: outputs without reward_score; pass the group's rewards")
    return [float(s) for s in scores]


def _tags(group: VerlGroup) -> list[str]:
    if group.failure_tags is not None:
        return group.failure_tags or [UNTAGGED]
    tags = [t for o in group.outputs for t in ((_field(o, "extra_fields") or {}).get("failure_tags") or [])]
    return list(dict.fromkeys(tags))[:50] or [UNTAGGED]


class VerlGroupRescue:
    """The group filter (see the module's text). `output_cls` builds each rescued row (default:
    verl's `AgentLoopOutput` where installed, else the fields as a dict); `score(rows)` gives the
    rescued rows your reward (default: the environment's, as the service returned it)."""

    def __init__(
        self,
        client: AsyncHarnessS,
        settings: RescueSettings,
        output_cls: Callable[..., Any] | None = None,
        score: Callable[[list[Trajectory]], Sequence[float]] | None = None,
    ) -> None:
        self.rescuer = AsyncGroupRescuer(client, settings, score)
        self.settings = settings
        self.output_cls = output_cls if output_cls is not None else verl_output_class()
        self.outcomes: list[GroupOutcome] = []

    def output(self, row: Trajectory) -> Any:
        fields = to_verl(row)
        return self.output_cls(**fields) if self.output_cls is not None else fields

    async def __call__(
        self, groups: Sequence[VerlGroup], step: int, weight_version: int | None = None, served_model: str | None = None
    ) -> VerlFiltered:
        outcomes = [GroupOutcome(step, i, str(g.task["id"]), "kept") for i, g in enumerate(groups)]
        failed = [i for i, g in enumerate(groups) if all_fail(_rewards(g), self.settings.fail_at_or_below)]
        await asyncio.gather(
            *(
                self.rescuer.rescue(
                    outcomes[i], groups[i].task, _tags(groups[i]), len(groups[i].outputs), weight_version, served_model
                )
                for i in failed
            )
        )
        outputs = [
            [self.output(r) for r in o.rows] if o.kind == "replaced" else list(g.outputs)
            for g, o in zip(groups, outcomes, strict=True)
        ]
        self.outcomes.extend(outcomes)
        return VerlFiltered(outputs, outcomes, rescue_metrics(outcomes))
