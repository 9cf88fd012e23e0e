"""The Harness-S service's HTTP API for a trainer, synchronous (`HarnessS`; `AsyncHarnessS` in
aio.py is the same over asyncio). Every call is bounded in time; the ones that are safe to repeat
(reads, and writes that replace by id) are repeated on a dropped connection or a 502/503/504;
starting a rescue, an experiment or routing is sent once. Every failure is a `HarnessSError` with a
code; a call with no answer at all says where it went and what happened (refused, a host name that
did not resolve, timed out)."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any, Unpack, cast

import httpx

from . import api
from .api import Call
from .convert import Trajectory, pair_rows
from .errors import (
    EXPERIMENT_TIMEOUT,
    RESCUE_TIMEOUT,
    ExperimentFailedError,
    HarnessSConnectionError,
    HarnessSError,
    HarnessSTimeoutError,
    RescueFailedError,
    error_of,
)
from .types import (
    EXPERIMENT_TERMINAL_STATES,
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


def _answer(call: Call, res: httpx.Response) -> Any:
    if res.status_code >= 400:
        try:
            body = res.json()
        except ValueError:
            body = None
        raise error_of(res.status_code, body, res.text)
    if call.binary:
        return res.content
    return res.text if call.text else res.json()


#: What each of httpx's timeouts was waiting for.
_TIMED_OUT = {
    httpx.ConnectTimeout: "connecting",
    httpx.ReadTimeout: "waiting for the answer",
    httpx.WriteTimeout: "sending the request",
    httpx.PoolTimeout: "waiting for a free connection",
}


def _reason(exc: httpx.TransportError) -> str:
    """What happened, in words: the socket's own error where the chain holds one (refused, a host
    name that did not resolve, unreachable), else httpx's message; never a bare class name."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused (is `harness-s serve` running?)"
        if isinstance(cause, socket.gaierror):
            return f"its host name did not resolve ({cause.strerror or cause})"
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror[:1].lower() + cause.strerror[1:]
        cause = cause.__cause__ or cause.__context__
    text = str(exc).strip()
    return text or f"httpx gave no reason ({exc.__class__.__name__})"


def _transport_error(call: Call, exc: httpx.TransportError, base_url: str, tries: int = 1) -> HarnessSError:
    """The client's error for a call that got no answer: where to, what happened, how often it was tried."""
    what = f"{call.method} {call.path}"
    tried = f" (tried {tries} times)" if tries > 1 else ""
    if isinstance(exc, httpx.TimeoutException):
        phase = next((v for k, v in _TIMED_OUT.items() if isinstance(exc, k)), "waiting")
        return HarnessSTimeoutError(f"{what}: no answer from {base_url} in time (timed out {phase}){tried}")
    if isinstance(exc, httpx.ConnectError):
        return HarnessSConnectionError(f"{what}: could not connect to {base_url}: {_reason(exc)}{tried}")
    return HarnessSConnectionError(
        f"{what}: the connection to {base_url} failed before an answer: {_reason(exc)}{tried}"
    )


def rescue_finished(status: RescueStatus, fail_fast: bool) -> bool:
    """Whether a wait is over: the rescue no longer runs, or (fail fast) a slot has failed, which
    no retry of the service's will store (the rescue can no longer finish whole)."""
    if fail_fast and status["failed"]:
        raise RescueFailedError(cast(dict[str, Any], status))
    if status["status"] == "failed":
        raise RescueFailedError(cast(dict[str, Any], status))
    return status["status"] != "running"


def experiment_finished(status: ExperimentStatus) -> bool:
    """Whether a run has ended (done, stopped, cancelled); one that failed raises `ExperimentFailedError`."""
    if status["status"] == "failed":
        raise ExperimentFailedError(cast(dict[str, Any], status))
    return status["status"] in EXPERIMENT_TERMINAL_STATES


def experiment_poll_s(poll_s: float, deadline: float | None) -> float:
    """How long to sleep before the next read: `poll_s`, never past the deadline."""
    return poll_s if deadline is None else max(0.0, min(poll_s, deadline - time.monotonic()))


def experiment_timeout(experiment_id: str, status: ExperimentStatus, timeout_s: float | None) -> HarnessSTimeoutError:
    done, total = status["progress"]["done"], status["progress"]["total"]
    return HarnessSTimeoutError(
        f"experiment {experiment_id} still {status['status']} after {timeout_s:g} s ({done}/{total}: "
        f"{status['progress']['label']})",
        EXPERIMENT_TIMEOUT,
    )


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
        self.base_url = base_url.rstrip("/")
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
                    raise _transport_error(call, exc, self.base_url, attempt + 1) from exc
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

    def quote_experiment(self, experiment: ExperimentRequest | dict[str, Any]) -> Quote:
        """What `start_experiment(**experiment)` would cost, before it is asked for."""
        return cast(Quote, self.send(api.quote_experiment(experiment)))

    # --- experiments
    def start_experiment(self, **request: Unpack[ExperimentRequest]) -> ExperimentStatus:
        """Starts a paired experiment (`POST /v1/experiments`, sent once): the run's record as
        accepted (status `queued`, its progress, the quote it was priced at). Fields are the API's
        (`evalSamples`, `budget={"rollouts": ...}`); a refused request is a `HarnessSError`
        (400 VALIDATION_FAILED naming the field, 402 over budget, 429 past the key's active runs)."""
        return cast(ExperimentStatus, self.send(api.start_experiment(request)))

    def experiment(self, experiment_id: str) -> ExperimentStatus:
        """A run's status: `status`, `progress` (`done` of `total`, `label`), usage and cost so far."""
        return cast(ExperimentStatus, self.send(api.experiment(experiment_id)))

    def list_experiments(self, limit: int | None = None, cursor: str | None = None) -> ExperimentPage:
        """A page of the key's own runs, newest first; pass a page's `next` as `cursor` for the next."""
        return cast(ExperimentPage, self.send(api.experiments(limit, cursor)))

    def cancel_experiment(self, experiment_id: str) -> ExperimentStatus:
        """Cancels a run: a queued one ends at once, a running one after its current step; finished
        units are kept. A run already ended is answered as it is (safe to repeat)."""
        return cast(ExperimentStatus, self.send(api.cancel_experiment(experiment_id)))

    def wait_experiment(
        self,
        experiment_id: str,
        poll_s: float = 5.0,
        timeout_s: float | None = None,
        on_progress: Callable[[ExperimentStatus], None] | None = None,
    ) -> ExperimentStatus:
        """Reads the run every `poll_s` until it has ended (done, stopped at its cap, cancelled) and
        returns that status; `on_progress(status)` on each change of status or progress. Raises
        `ExperimentFailedError` (EXPERIMENT_FAILED, the run's error) if it failed, and
        `HarnessSTimeoutError` (EXPERIMENT_TIMEOUT) past `timeout_s` (None: no limit)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        seen: tuple[str, ExperimentProgress] | None = None
        while True:
            status = self.experiment(experiment_id)
            if on_progress is not None and (status["status"], status["progress"]) != seen:
                on_progress(status)
            seen = (status["status"], status["progress"])
            if experiment_finished(status):
                return status
            if deadline is not None and time.monotonic() >= deadline:
                raise experiment_timeout(experiment_id, status, timeout_s)
            time.sleep(experiment_poll_s(poll_s, deadline))

    def experiment_steps(
        self, experiment_id: str, arm: str | None = None, seed: int | None = None
    ) -> list[dict[str, Any]]:
        """Each training step of the run (of one arm, one seed): rollouts so far and every group's outcome."""
        return cast(list[dict[str, Any]], self.send(api.experiment_steps(experiment_id, arm, seed))["steps"])

    def experiment_metrics(self, experiment_id: str) -> dict[str, Any]:
        """Per (arm, seed) results so far, and the run's summary once done."""
        return cast(dict[str, Any], self.send(api.experiment_metrics(experiment_id)))

    def experiment_report(self, experiment_id: str) -> str:
        """The run's markdown report once it has one (done, or stopped with finished units); before
        that a 404 `HarnessSError` whose message says why."""
        return cast(str, self.send(api.experiment_report(experiment_id)))

    def experiment_plots(self, experiment_id: str) -> list[ExperimentPlot]:
        """The run's plots (none until it ends with a report): each file name with its path."""
        return cast(list[ExperimentPlot], self.send(api.experiment_plots(experiment_id))["plots"])

    def experiment_plot(self, experiment_id: str, file: str) -> bytes:
        """One plot as PNG bytes, by the file name the report links (`curves.png`, `utilities.png`)."""
        return cast(bytes, self.send(api.experiment_plot(experiment_id, file)))

    def usage(self, from_day: str | None = None, to_day: str | None = None) -> Usage:
        """The key's metered usage, quota and budget; with both days (YYYY-MM-DD), by UTC day."""
        return cast(Usage, self.send(api.usage(from_day, to_day)))

    def usage_export(self, from_day: str, to_day: str, format: str = "jsonl") -> str:
        return cast(str, self.send(api.usage_export(from_day, to_day, format)))

    def health(self) -> bool:
        return bool(self.send(api.health())["ok"])


#: The name the client had before it was a package of its own.
HarnessSClient = HarnessS
