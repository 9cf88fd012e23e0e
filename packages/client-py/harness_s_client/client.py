"""The Harness-S service's HTTP API for a trainer, synchronous (`HarnessS`; `AsyncHarnessS` in
aio.py is the same over asyncio). Every call is bounded in time; the ones that are safe to repeat
(reads, and writes that replace by id) are repeated on a dropped connection or a 502/503/504;
starting a rescue or routing is sent once. Every failure is a `HarnessSError` with a code."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

import httpx

from . import api
from .api import Call
from .convert import Trajectory, pair_rows
from .errors import (
    RESCUE_TIMEOUT,
    HarnessSConnectionError,
    HarnessSError,
    HarnessSTimeoutError,
    RescueFailedError,
    error_of,
)
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


def _answer(call: Call, res: httpx.Response) -> Any:
    if res.status_code >= 400:
        try:
            body = res.json()
        except ValueError:
            body = None
        raise error_of(res.status_code, body, res.text)
    return res.text if call.text else res.json()


def _transport_error(call: Call, exc: httpx.TransportError) -> HarnessSError:
    what = f"{call.method} {call.path}"
    if isinstance(exc, httpx.TimeoutException):
        return HarnessSTimeoutError(f"{what}: no answer in time ({exc.__class__.__name__})")
    return HarnessSConnectionError(f"{what}: {exc.__class__.__name__}: {exc}")


def rescue_finished(status: RescueStatus, fail_fast: bool) -> bool:
    """Whether a wait is over: the rescue no longer runs, or (fail fast) a slot has failed, which
    no retry of the service's will store (the rescue can no longer finish whole)."""
    if fail_fast and status["failed"]:
        raise RescueFailedError(cast(dict[str, Any], status))
    if status["status"] == "failed":
        raise RescueFailedError(cast(dict[str, Any], status))
    return status["status"] != "running"


def _headers(api_key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {api_key}"}


class HarnessS:
    """The service's API (see the module's text). `transport` replaces httpx's (tests, recording)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        timeout_s: float = 30.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.http = httpx.Client(
            base_url=base_url.rstrip("/"), headers=_headers(api_key), timeout=timeout_s, transport=transport
        )
        self.retries = retries

    def __enter__(self) -> HarnessS:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def send(self, call: Call) -> Any:
        """One call, repeated as `call.repeatable` allows; its JSON answer (or text)."""
        for attempt in range(self.retries + 1 if call.repeatable else 1):
            last = attempt == self.retries or not call.repeatable
            try:
                res = self.http.request(
                    call.method,
                    call.path,
                    json=call.body,
                    params=call.params,
                    timeout=call.timeout_s if call.timeout_s is not None else httpx.USE_CLIENT_DEFAULT,
                )
            except httpx.TransportError as exc:
                if last:
                    raise _transport_error(call, exc) from exc
                time.sleep(api.retry_delay(attempt))
                continue
            if res.status_code in api.RETRYABLE_STATUSES and not last:
                time.sleep(api.retry_delay(attempt))
                continue
            return _answer(call, res)
        raise AssertionError("unreachable")

    # --- policy endpoints
    def register_policy_endpoint(
        self,
        id: str,
        kind: EndpointKind,
        url: str,
        policy: str,
        secret_header: tuple[str, str] | None = None,
        mode: TokenMode | None = None,
    ) -> PolicyEndpoint:
        """Registers (or replaces) your policy endpoint; the service probes it first (protocol v2:
        the policy must already exist at your worker, else 400 ENDPOINT_PROBE_FAILED)."""
        return cast(PolicyEndpoint, self.send(api.register_policy_endpoint(id, kind, url, policy, secret_header, mode)))

    def policy_endpoints(self) -> list[PolicyEndpoint]:
        return cast(list[PolicyEndpoint], self.send(api.policy_endpoints())["endpoints"])

    def policy_endpoint(self, id: str) -> PolicyEndpoint:
        return cast(PolicyEndpoint, self.send(api.policy_endpoint(id)))

    def delete_policy_endpoint(self, id: str) -> None:
        self.send(api.delete_policy_endpoint(id))

    # --- rescues
    def start_rescue(
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
        """Routes an all-fail group to its Top-k siblings and starts their rollouts (sent once);
        with `harnesses`, runs exactly those harnesses of the pool instead (no routing). With
        `mode="adaptive"` the same rollouts go under the Top-k, under H0 again, or nowhere (then
        `expected` is 0 and no rescue starts), as the answer's `adaptive` says; `resample_evidence`
        (`attempts`, `successes`) is what your own H0 resamples found, the H0 option's evidence."""
        return cast(
            RescueAccepted,
            self.send(
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

    def rescue(self, rescue_id: str, wait_s: float = 0.0, seen: int = 0) -> RescueStatus:
        """A rescue's status; with `wait_s` (at most 20), once more than `seen` slots have finished
        or it is no longer running (the service holds the request: no polling loop here)."""
        return cast(RescueStatus, self.send(api.rescue(rescue_id, wait_s, seen)))

    def wait(
        self,
        rescue_id: str,
        timeout_s: float = 600.0,
        on_progress: Callable[[RescueStatus], None] | None = None,
        fail_fast: bool = True,
    ) -> RescueStatus:
        """The rescue's status once it is no longer running, following it slot by slot
        (`on_progress(status)` per slot). Raises `RescueFailedError` with the service's code and
        reason as soon as a slot has failed (`fail_fast`; else once the rescue has ended
        failed), and `HarnessSTimeoutError` (RESCUE_TIMEOUT) past `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        seen = 0
        while True:
            left = deadline - time.monotonic()
            status = self.rescue(rescue_id, wait_s=max(0.0, min(api.MAX_WAIT_S, left)), seen=seen)
            finished = status["completed"] + len(status["failed"])
            if finished > seen and on_progress is not None:
                on_progress(status)
            seen = finished
            if rescue_finished(status, fail_fast):
                return status
            if time.monotonic() >= deadline:
                raise HarnessSTimeoutError(f"rescue {rescue_id} still running after {timeout_s:g} s", RESCUE_TIMEOUT)

    def cancel(self, rescue_id: str) -> RescueStatus:
        """Cancels a rescue: slots not started never run, running ones finish and are kept (safe to repeat)."""
        return cast(RescueStatus, self.send(api.cancel_rescue(rescue_id)))

    def trajectory_rows(self, rescue_id: str, context: Context = "sampled", page: int = 64) -> list[TrajectoryRow]:
        """Every token row of a caller rescue as sent, page by page, in rollout order."""
        rows: list[TrajectoryRow] = []
        cursor: int | None = 0
        while cursor is not None:
            got = cast(TrajectoryPage, self.send(api.trajectories(rescue_id, context, cursor, page)))
            rows.extend(got["trajectories"])
            cursor = got["next"]
        return rows

    def trajectories(self, rescue_id: str, context: Context = "sampled", page: int = 64) -> list[Trajectory]:
        """Every token row of a caller rescue. `context="base"`: H0's rendering, with the sampled
        log-probabilities in `logprobs` and H0's re-scores in `base_logprobs` (both contexts read)."""
        sampled = self.trajectory_rows(rescue_id, "sampled", page)
        if context == "sampled":
            return [Trajectory.from_json(r) for r in sampled]
        return pair_rows(self.trajectory_rows(rescue_id, "base", page), sampled)

    # --- routing, pools, profiles
    def route(
        self,
        pool_id: str,
        task: dict[str, Any],
        failure_tags: list[str] | None = None,
        k: int | None = None,
        include_base: bool | None = None,
    ) -> dict[str, Any]:
        """Ranks a pool's harnesses for a task (Top-k with failure tags, Rank-1 without): the decision."""
        return cast(dict[str, Any], self.send(api.route(pool_id, task, failure_tags or [], k, include_base)))

    def decision(self, id: str) -> dict[str, Any]:
        return cast(dict[str, Any], self.send(api.decision(id)))

    def pools(self) -> list[PoolSummary]:
        return cast(list[PoolSummary], self.send(api.pools())["pools"])

    def pool(self, pool_id: str) -> dict[str, Any]:
        """A harness pool: its base harness H0 (`base`) and its siblings."""
        return cast(dict[str, Any], self.send(api.pool(pool_id)))

    def evolve_pool(self, request: dict[str, Any]) -> dict[str, Any]:
        """Starts evolving a pool for your environment (`POST /v1/pools` with `{"evolve": request}`); the job's record."""
        return cast(dict[str, Any], self.send(api.evolve_pool(request)))

    def pool_evolution(self, evolution_id: str) -> dict[str, Any]:
        """A pool evolution's state (queued, running, done or failed) and, when done, its pool's id."""
        return cast(dict[str, Any], self.send(api.pool_evolution(evolution_id)))

    def profiles(self, pool_id: str) -> dict[str, Any]:
        """The behaviour profiles of a pool's harnesses, by harness id."""
        return cast(dict[str, Any], self.send(api.profiles(pool_id))["profiles"])

    def report_evidence(self, pool_id: str, outcomes: list[dict[str, Any]]) -> int:
        """Outcomes your trainer observed (each with an `id`: applied once); how many were queued."""
        return int(self.send(api.report_evidence(pool_id, outcomes))["queued"])

    # --- cost
    def quote_rescue(
        self,
        pool_id: str,
        failure_tags: list[str],
        caller: CallerRescue | dict[str, Any] | None = None,
        k: int = 2,
        rollouts_per_harness: int = 2,
        harnesses: list[str] | None = None,
        task_id: str | None = None,
    ) -> Quote:
        """What `start_rescue` with these arguments would cost, before it is asked for."""
        return cast(
            Quote,
            self.send(
                api.quote_rescue(
                    api.rescue_body(pool_id, failure_tags, caller, k, rollouts_per_harness, harnesses, task_id)
                )
            ),
        )

    def quote_experiment(self, experiment: dict[str, Any]) -> Quote:
        return cast(Quote, self.send(api.quote_experiment(experiment)))

    def usage(self, from_day: str | None = None, to_day: str | None = None) -> Usage:
        """The key's metered usage, quota and budget; with both days (YYYY-MM-DD), by UTC day."""
        return cast(Usage, self.send(api.usage(from_day, to_day)))

    def usage_export(self, from_day: str, to_day: str, format: str = "jsonl") -> str:
        return cast(str, self.send(api.usage_export(from_day, to_day, format)))

    def health(self) -> bool:
        return bool(self.send(api.health())["ok"])


#: The name the client had before it was a package of its own.
HarnessSClient = HarnessS
