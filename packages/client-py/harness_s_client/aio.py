"""`AsyncHarnessS`: the same calls as `HarnessS`, over asyncio (verl's and SkyRL's loops are
async). The calls are built once (api.py); only the sending differs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, cast

import httpx

from . import api
from .api import Call
from .client import _answer, _headers, _transport_error, rescue_finished
from .convert import Trajectory, pair_rows
from .errors import RESCUE_TIMEOUT, HarnessSTimeoutError
from .types import (
    CallerRescue,
    Context,
    EndpointKind,
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
                    raise _transport_error(call, exc) from exc
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

    async def quote_experiment(self, experiment: dict[str, Any]) -> Quote:
        return cast(Quote, await self.send(api.quote_experiment(experiment)))

    async def usage(self, from_day: str | None = None, to_day: str | None = None) -> Usage:
        return cast(Usage, await self.send(api.usage(from_day, to_day)))

    async def usage_export(self, from_day: str, to_day: str, format: str = "jsonl") -> str:
        return cast(str, await self.send(api.usage_export(from_day, to_day, format)))

    async def health(self) -> bool:
        return bool((await self.send(api.health()))["ok"])
