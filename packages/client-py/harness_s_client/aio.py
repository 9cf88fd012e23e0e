"""`AsyncHarnessS`: the same calls as `HarnessS`, over asyncio (verl's and SkyRL's loops are
async). The calls are built once (api.py); only the sending differs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Unpack, cast

import httpx

from . import api
from .api import Call
from .client import (
    _answer,
    _headers,
    _transport_error,
    experiment_finished,
    experiment_poll_s,
    experiment_timeout,
    rescue_finished,
)
from .convert import Trajectory, pair_rows
from .errors import RESCUE_TIMEOUT, HarnessSTimeoutError
from .types import (
    CallerRescue,
    Context,
    EndpointKind,
    ExperimentPage,
    ExperimentPlot,
    ExperimentProgress,
    ExperimentRequest,
    ExperimentStatus,
    PolicyEndpoint,
    PoolSummary,
    Quote,
    RescueAccepted,
    RescueStatus,
    TokenMode,
    TrajectoryPage,
    TrajectoryRow,
    Usage,
)


class AsyncHarnessS:
    """The service's API over asyncio; see `HarnessS` for each call."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        timeout_s: float = 30.0,
        retries: int = 3,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"), headers=_headers(api_key), timeout=timeout_s, transport=transport
        )
        self.base_url = base_url.rstrip("/")
        self.retries = retries

    async def __aenter__(self) -> AsyncHarnessS:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def send(self, call: Call) -> Any:
        for attempt in range(self.retries + 1 if call.repeatable else 1):
            last = attempt == self.retries or not call.repeatable
            try:
                res = await self.http.request(
                    call.method,
                    call.path,
                    json=call.body,
                    params=call.params,
                    timeout=call.timeout_s if call.timeout_s is not None else httpx.USE_CLIENT_DEFAULT,
                )
            except httpx.TransportError as exc:
                if last:
                    raise _transport_error(call, exc, self.base_url, attempt + 1) from exc
                await asyncio.sleep(api.retry_delay(attempt))
                continue
            if res.status_code in api.RETRYABLE_STATUSES and not last:
                await asyncio.sleep(api.retry_delay(attempt))
                continue
            return _answer(call, res)
        raise AssertionError("unreachable")

    async def register_policy_endpoint(
        self,
        id: str,
        kind: EndpointKind,
        url: str,
        policy: str,
        secret_header: tuple[str, str] | None = None,
        mode: TokenMode | None = None,
    ) -> PolicyEndpoint:
        return cast(
            PolicyEndpoint, await self.send(api.register_policy_endpoint(id, kind, url, policy, secret_header, mode))
        )

    async def policy_endpoints(self) -> list[PolicyEndpoint]:
        return cast(list[PolicyEndpoint], (await self.send(api.policy_endpoints()))["endpoints"])

    async def policy_endpoint(self, id: str) -> PolicyEndpoint:
        return cast(PolicyEndpoint, await self.send(api.policy_endpoint(id)))

    async def delete_policy_endpoint(self, id: str) -> None:
        await self.send(api.delete_policy_endpoint(id))

    async def start_rescue(
        self,
        pool_id: str,
        failure_tags: list[str],
        caller: CallerRescue | dict[str, Any] | None = None,
        k: int = 2,
        rollouts_per_harness: int = 2,
        harnesses: list[str] | None = None,
        task_id: str | None = None,
        mode: str | None = None,
        resample_evidence: dict[str, int] | None = None,
    ) -> RescueAccepted:
        return cast(
            RescueAccepted,
            await self.send(
                api.start_rescue(
                    api.rescue_body(
                        pool_id,
                        failure_tags,
                        caller,
                        k,
                        rollouts_per_harness,
                        harnesses,
                        task_id,
                        mode,
                        resample_evidence,
                    )
                )
            ),
        )

    async def rescue(self, rescue_id: str, wait_s: float = 0.0, seen: int = 0) -> RescueStatus:
        return cast(RescueStatus, await self.send(api.rescue(rescue_id, wait_s, seen)))

    async def wait(
        self,
        rescue_id: str,
        timeout_s: float = 600.0,
        on_progress: Callable[[RescueStatus], None] | None = None,
        fail_fast: bool = True,
    ) -> RescueStatus:
        deadline = time.monotonic() + timeout_s
        seen = 0
        while True:
            left = deadline - time.monotonic()
            status = await self.rescue(rescue_id, wait_s=max(0.0, min(api.MAX_WAIT_S, left)), seen=seen)
            finished = status["completed"] + len(status["failed"])
            if finished > seen and on_progress is not None:
                on_progress(status)
            seen = finished
            if rescue_finished(status, fail_fast):
                return status
            if time.monotonic() >= deadline:
                raise HarnessSTimeoutError(f"rescue {rescue_id} still running after {timeout_s:g} s", RESCUE_TIMEOUT)

    async def cancel(self, rescue_id: str) -> RescueStatus:
        return cast(RescueStatus, await self.send(api.cancel_rescue(rescue_id)))

    async def trajectory_rows(
        self, rescue_id: str, context: Context = "sampled", page: int = 64
    ) -> list[TrajectoryRow]:
        rows: list[TrajectoryRow] = []
        cursor: int | None = 0
        while cursor is not None:
            got = cast(TrajectoryPage, await self.send(api.trajectories(rescue_id, context, cursor, page)))
            rows.extend(got["trajectories"])
            cursor = got["next"]
        return rows

    async def trajectories(self, rescue_id: str, context: Context = "sampled", page: int = 64) -> list[Trajectory]:
        sampled = await self.trajectory_rows(rescue_id, "sampled", page)
        if context == "sampled":
            return [Trajectory.from_json(r) for r in sampled]
        return pair_rows(await self.trajectory_rows(rescue_id, "base", page), sampled)

    async def route(
        self,
        pool_id: str,
        task: dict[str, Any],
        failure_tags: list[str] | None = None,
        k: int | None = None,
        include_base: bool | None = None,
    ) -> dict[str, Any]:
        return cast(dict[str, Any], await self.send(api.route(pool_id, task, failure_tags or [], k, include_base)))

    async def decision(self, id: str) -> dict[str, Any]:
        return cast(dict[str, Any], await self.send(api.decision(id)))

    async def pools(self) -> list[PoolSummary]:
        return cast(list[PoolSummary], (await self.send(api.pools()))["pools"])

    async def pool(self, pool_id: str) -> dict[str, Any]:
        return cast(dict[str, Any], await self.send(api.pool(pool_id)))

    async def evolve_pool(self, request: dict[str, Any]) -> dict[str, Any]:
        return cast(dict[str, Any], await self.send(api.evolve_pool(request)))

    async def pool_evolution(self, evolution_id: str) -> dict[str, Any]:
        return cast(dict[str, Any], await self.send(api.pool_evolution(evolution_id)))

    async def profiles(self, pool_id: str) -> dict[str, Any]:
        return cast(dict[str, Any], (await self.send(api.profiles(pool_id)))["profiles"])

    async def report_evidence(self, pool_id: str, outcomes: list[dict[str, Any]]) -> int:
        return int((await self.send(api.report_evidence(pool_id, outcomes)))["queued"])

    async def quote_rescue(
        self,
        pool_id: str,
        failure_tags: list[str],
        caller: CallerRescue | dict[str, Any] | None = None,
        k: int = 2,
        rollouts_per_harness: int = 2,
        harnesses: list[str] | None = None,
        task_id: str | None = None,
    ) -> Quote:
        return cast(
            Quote,
            await self.send(
                api.quote_rescue(
                    api.rescue_body(pool_id, failure_tags, caller, k, rollouts_per_harness, harnesses, task_id)
                )
            ),
        )

    async def quote_experiment(self, experiment: ExperimentRequest | dict[str, Any]) -> Quote:
        return cast(Quote, await self.send(api.quote_experiment(experiment)))

    async def start_experiment(self, **request: Unpack[ExperimentRequest]) -> ExperimentStatus:
        return cast(ExperimentStatus, await self.send(api.start_experiment(request)))

    async def experiment(self, experiment_id: str) -> ExperimentStatus:
        return cast(ExperimentStatus, await self.send(api.experiment(experiment_id)))

    async def list_experiments(self, limit: int | None = None, cursor: str | None = None) -> ExperimentPage:
        return cast(ExperimentPage, await self.send(api.experiments(limit, cursor)))

    async def cancel_experiment(self, experiment_id: str) -> ExperimentStatus:
        return cast(ExperimentStatus, await self.send(api.cancel_experiment(experiment_id)))

    async def wait_experiment(
        self,
        experiment_id: str,
        poll_s: float = 5.0,
        timeout_s: float | None = None,
        on_progress: Callable[[ExperimentStatus], None] | None = None,
    ) -> ExperimentStatus:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        seen: tuple[str, ExperimentProgress] | None = None
        while True:
            status = await self.experiment(experiment_id)
            if on_progress is not None and (status["status"], status["progress"]) != seen:
                on_progress(status)
            seen = (status["status"], status["progress"])
            if experiment_finished(status):
                return status
            if deadline is not None and time.monotonic() >= deadline:
                raise experiment_timeout(experiment_id, status, timeout_s)
            await asyncio.sleep(experiment_poll_s(poll_s, deadline))

    async def experiment_steps(
        self, experiment_id: str, arm: str | None = None, seed: int | None = None
    ) -> list[dict[str, Any]]:
        return cast(list[dict[str, Any]], (await self.send(api.experiment_steps(experiment_id, arm, seed)))["steps"])

    async def experiment_metrics(self, experiment_id: str) -> dict[str, Any]:
        return cast(dict[str, Any], await self.send(api.experiment_metrics(experiment_id)))

    async def experiment_report(self, experiment_id: str) -> str:
        return cast(str, await self.send(api.experiment_report(experiment_id)))

    async def experiment_plots(self, experiment_id: str) -> list[ExperimentPlot]:
        return cast(list[ExperimentPlot], (await self.send(api.experiment_plots(experiment_id)))["plots"])

    async def experiment_plot(self, experiment_id: str, file: str) -> bytes:
        return cast(bytes, await self.send(api.experiment_plot(experiment_id, file)))

    async def usage(self, from_day: str | None = None, to_day: str | None = None) -> Usage:
        return cast(Usage, await self.send(api.usage(from_day, to_day)))

    async def usage_export(self, from_day: str, to_day: str, format: str = "jsonl") -> str:
        return cast(str, await self.send(api.usage_export(from_day, to_day, format)))

    async def health(self) -> bool:
        return bool((await self.send(api.health()))["ok"])
