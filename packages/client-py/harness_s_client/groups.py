"""What the trainer hooks share (TRL's `rescue_rollout_func`, verl's group filter, SkyRL's
generator wrapper): the decision that a group all failed, the failure tags a rescue is routed by,
what became of each group, the rescue metrics a trainer logs, each data-parallel rank's own
endpoint id, and one group's rescue over the async client."""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from .aio import AsyncHarnessS
from .convert import Trajectory
from .errors import HarnessSError
from .types import CallerRescue, CallerTask, Context, RescueStatus

log = logging.getLogger("harness_s_client")

#: Failure tag sent when the failed rows carry none (the router still ranks by the task).
UNTAGGED = "no-success"


def all_fail(rewards: Sequence[float], fail_at_or_below: float = 0.0) -> bool:
    """A group every row of which failed: no advantage to learn from, the group a rescue is for."""
    return all(float(r) <= fail_at_or_below for r in rewards)


def failure_tags(rows: Sequence[Trajectory]) -> list[str]:
    """The failed rows' tags, most frequent first (at most 50), or `UNTAGGED`."""
    counts = Counter(tag for r in rows for tag in r.failure_tags)
    return [t for t, _ in counts.most_common(50)] or [UNTAGGED]


def rank() -> int | None:
    """This process's data-parallel rank, from torch.distributed's launch variables (RANK, else LOCAL_RANK)."""
    for name in ("RANK", "LOCAL_RANK"):
        value = os.environ.get(name)
        if value is not None and value.strip().isdigit():
            return int(value)
    return None


def rank_endpoint_id(base: str) -> str:
    """`base` on a single process, `base-r<rank>` on each data-parallel rank: each rank registers
    and samples its own endpoint (the same id would have each rank replace the others')."""
    r = rank()
    return base if r is None else f"{base}-r{r}"


def rows_per_harness(size: int, k: int, siblings: int) -> int:
    """Rollouts per routed harness so that every routed sibling runs and `size` rows come back."""
    return -(-size // max(1, min(k, siblings)))


@dataclass
class GroupOutcome:
    """What became of one group (`kept`: it did not all fail; `replaced`: the rescued rows stand in
    its place; `unrescued`: the rescued rows failed too, or the rescue did not finish whole, and the
    group stays as it was: `code` and `reason` say why, as the service gave them)."""

    step: int
    group: int
    task_id: str
    kind: Literal["kept", "replaced", "unrescued"]
    base_run: str | None = None
    rescue_id: str | None = None
    rows: list[Trajectory] = field(default_factory=list)
    reason: str | None = None
    code: str | None = None
    #: The harnesses the rescue ran (routed), and what it spent.
    chosen: list[str] = field(default_factory=list)
    spent: dict[str, float] = field(default_factory=dict)
    #: Rows the rescue returned (the group takes the first as many as it has).
    rollouts: int = 0
    #: With mode "adaptive": the option taken ("siblings", "resample", "none") and the service's estimates.
    option: str | None = None
    adaptive: dict[str, Any] | None = None


def rescue_metrics(outcomes: Sequence[GroupOutcome], prefix: str = "rescue/") -> dict[str, float]:
    """The figures a trainer logs for a batch: groups kept / replaced / unrescued (and how many of
    those the service failed, with a code), rescue rollouts returned, what the rescues spent, and
    how often each harness was chosen."""
    kinds = Counter(o.kind for o in outcomes)
    rescued = [o for o in outcomes if o.rescue_id is not None]
    out: dict[str, float] = {
        f"{prefix}groups_kept": float(kinds["kept"]),
        f"{prefix}groups_replaced": float(kinds["replaced"]),
        f"{prefix}groups_unrescued": float(kinds["unrescued"]),
        f"{prefix}groups_failed": float(sum(1 for o in outcomes if o.code is not None)),
        f"{prefix}rescues": float(len(rescued)),
        f"{prefix}rollouts": float(sum(o.rollouts for o in rescued)),
        f"{prefix}policy_tokens": float(sum(o.spent.get("policyTokens", 0.0) for o in rescued)),
        f"{prefix}policy_seconds": float(sum(o.spent.get("policySeconds", 0.0) for o in rescued)),
        f"{prefix}environment_seconds": float(sum(o.spent.get("environmentSeconds", 0.0) for o in rescued)),
    }
    for harness, n in sorted(Counter(h for o in rescued for h in o.chosen).items()):
        out[f"{prefix}chosen/{harness}"] = float(n)
    for option, n in sorted(Counter(o.option for o in outcomes if o.option is not None).items()):
        out[f"{prefix}option/{option}"] = float(n)
    return out


def spent_of(status: RescueStatus | dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in dict(status.get("spent") or {}).items()}


@dataclass
class RescueSettings:
    """How a hook asks for rescues: the pool, your environment and your registered endpoint (made
    per rank by `rank_endpoint_id`), the episode's system text and tokens per turn, Top-k, what
    counts as a failed row, how long to wait, each rescue's budget, and which log-probabilities
    come back (`context`: "sampled", or "base" with H0's re-scores beside them)."""

    pool_id: str
    environment: dict[str, Any]
    endpoint_id: str
    system: str = ""
    max_tokens: int = 256
    k: int = 2
    fail_at_or_below: float = 0.0
    timeout_s: float = 600.0
    budget: dict[str, float] | None = None
    context: Context = "sampled"
    #: "router": the Top-k; "adaptive": the service chooses siblings, H0 again or nothing per group.
    mode: Literal["router", "adaptive"] = "router"

    def caller(
        self, task: CallerTask | dict[str, Any], weight_version: int | None = None, served_model: str | None = None
    ) -> CallerRescue:
        caller: dict[str, Any] = {
            "endpoint": self.endpoint_id,
            "environment": self.environment,
            "task": task,
            "system": self.system,
            "maxTokens": self.max_tokens,
        }
        if weight_version is not None:
            caller["weightVersion"] = weight_version
        if served_model is not None:
            caller["servedModel"] = served_model
        if self.budget:
            caller["budget"] = self.budget
        return caller  # type: ignore[return-value]


class AsyncGroupRescuer:
    """One all-fail group's rescue over the async client: start it (routed by the failed rows'
    tags), follow it, read its rows, and say what became of the group. A rescue the service fails
    (a slot with a code) or that runs past its time is cancelled and logged, and the group stays.
    `score(rows)` re-scores the rescued rows with your own reward (default: the environment's)."""

    def __init__(
        self,
        client: AsyncHarnessS,
        settings: RescueSettings,
        score: Callable[[list[Trajectory]], Sequence[float]] | None = None,
    ) -> None:
        self.client, self.settings, self.score = client, settings, score
        self.siblings: int | None = None
        #: Under mode "adaptive": what the H0 resamples it ran found (sent as the H0 option's evidence).
        self.resamples = {"attempts": 0, "successes": 0}

    async def _siblings(self) -> int:
        if self.siblings is None:
            self.siblings = len((await self.client.pool(self.settings.pool_id))["siblings"])
        return self.siblings

    async def rescue(
        self,
        outcome: GroupOutcome,
        task: CallerTask | dict[str, Any],
        tags: list[str],
        size: int,
        weight_version: int | None = None,
        served_model: str | None = None,
    ) -> GroupOutcome:
        """Fills `outcome` (an all-fail group's, kind `unrescued` until its rows succeed) and returns it."""
        s = self.settings
        outcome.kind = "unrescued"
        try:
            per = rows_per_harness(size, s.k, await self._siblings())
            extra: dict[str, Any] = (
                {"mode": s.mode, "resample_evidence": dict(self.resamples)} if s.mode == "adaptive" else {}
            )
            started = await self.client.start_rescue(
                s.pool_id,
                tags or [UNTAGGED],
                s.caller(task, weight_version, served_model),
                k=s.k,
                rollouts_per_harness=per,
                **extra,
            )
            outcome.adaptive = started.get("adaptive")
            outcome.option = outcome.adaptive["option"] if outcome.adaptive else None
            if "id" not in started:  # adaptive chose to spend nothing: the group stays
                outcome.reason = "adaptive: no option expected a success"
                return outcome
            outcome.rescue_id, outcome.chosen = started["id"], list(started["chosen"])
            status = await self.client.wait(started["id"], timeout_s=s.timeout_s)
            outcome.spent = spent_of(status)
            every = await self.client.trajectories(started["id"], s.context)
        except HarnessSError as err:
            return await self._failed(outcome, err)
        outcome.rollouts, rows = len(every), every[:size]
        if self.score is not None:
            rows = [replace(r, reward=float(v)) for r, v in zip(rows, self.score(rows), strict=True)]
        outcome.rows = rows
        if outcome.option == "resample":
            self.resamples["attempts"] += len(rows)
            self.resamples["successes"] += sum(1 for r in rows if r.reward > s.fail_at_or_below)
        if len(rows) == size and not all_fail([r.reward for r in rows], s.fail_at_or_below):
            outcome.kind = "replaced"
        return outcome

    async def _failed(self, outcome: GroupOutcome, err: HarnessSError) -> GroupOutcome:
        outcome.code, outcome.reason = err.code, err.message
        rescue = getattr(err, "rescue", None)
        if isinstance(rescue, dict):
            outcome.spent = spent_of(rescue)
        if outcome.rescue_id is not None:
            try:
                await self.client.cancel(outcome.rescue_id)
            except HarnessSError:
                pass
        log.warning(
            "rescue of group %d (task %s) failed: %s %s; the group stays as it was",
            outcome.group,
            outcome.task_id,
            err.code,
            err.message,
        )
        return outcome
