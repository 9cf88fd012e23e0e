"""Every call of the service's API as data (method, path, body, query, whether it is safe to
repeat, how long to wait), built once here and sent by the sync client (`HarnessS`) and the async
one (`AsyncHarnessS`) alike; the answers' shapes are in types.py. Routes: functions/api/routes/*.ts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from .types import CallerRescue, Context, EndpointKind, ExperimentRequest, TokenMode

#: Statuses a repeatable call is sent again on (with a dropped connection): the service or a
#: proxy before it was briefly unavailable. Every other error is final.
RETRYABLE_STATUSES = frozenset({502, 503, 504})
#: The longest a status read may ask the service to hold it (`RESCUE_WAIT.maxSeconds`).
MAX_WAIT_S = 20.0


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: Any = None
    params: dict[str, Any] | None = None
    #: Safe to send again after a dropped connection or a 502/503/504 (reads; writes that replace
    #: by id). Starting a rescue is sent once: a retry could start a second one.
    repeatable: bool = True
    timeout_s: float | None = None
    #: The answer is text (CSV, JSON lines, markdown), not JSON.
    text: bool = False
    #: The answer is bytes as sent (a PNG), not JSON.
    binary: bool = False


def retry_delay(attempt: int) -> float:
    """Seconds before the next try of a repeatable call: 0.1 s doubling, at most 2 s."""
    return min(2.0, 0.1 * 2.0**attempt)


def _id(value: str) -> str:
    return quote(value, safe="")


def register_policy_endpoint(
    id: str,
    kind: EndpointKind,
    url: str,
    policy: str,
    secret_header: tuple[str, str] | None = None,
    mode: TokenMode | None = None,
) -> Call:
    body: dict[str, Any] = {"id": id, "kind": kind, "url": url, "policy": policy}
    if secret_header:
        body["secretHeader"] = {"name": secret_header[0], "value": secret_header[1]}
    if mode:
        body["mode"] = mode
    return Call("POST", "/v1/policy-endpoints", body)


def policy_endpoints() -> Call:
    return Call("GET", "/v1/policy-endpoints")


def policy_endpoint(id: str) -> Call:
    return Call("GET", f"/v1/policy-endpoints/{_id(id)}")


def delete_policy_endpoint(id: str) -> Call:
    return Call("DELETE", f"/v1/policy-endpoints/{_id(id)}")


def rescue_body(
    pool_id: str,
    failure_tags: list[str],
    caller: CallerRescue | dict[str, Any] | None,
    k: int,
    rollouts_per_harness: int,
    harnesses: list[str] | None,
    task_id: str | None,
    mode: str | None = None,
    resample_evidence: dict[str, int] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "poolId": pool_id,
        "failureTags": failure_tags,
        "k": k,
        "rolloutsPerHarness": rollouts_per_harness,
    }
    if mode is not None:
        body["mode"] = mode
    if resample_evidence is not None:
        body["resampleEvidence"] = resample_evidence
    if caller is not None:
        body["caller"] = caller
    if harnesses is not None:
        body["harnesses"] = harnesses
    if task_id is not None:
        body["taskId"] = task_id
    return body


def start_rescue(body: dict[str, Any]) -> Call:
    return Call("POST", "/v1/rescues", body, repeatable=False)


def rescue(rescue_id: str, wait_s: float = 0.0, seen: int = 0) -> Call:
    wait = max(0.0, min(wait_s, MAX_WAIT_S))
    params = {"wait": wait, "seen": seen} if wait > 0 else None
    return Call("GET", f"/v1/rescues/{_id(rescue_id)}", params=params, timeout_s=wait + 30.0 if wait > 0 else None)


def cancel_rescue(rescue_id: str) -> Call:
    return Call("POST", f"/v1/rescues/{_id(rescue_id)}/cancel")


def trajectories(rescue_id: str, context: Context, cursor: int, limit: int) -> Call:
    return Call(
        "GET",
        f"/v1/rescues/{_id(rescue_id)}/trajectories",
        params={"context": context, "cursor": cursor, "limit": limit},
    )


def route(
    pool_id: str, task: dict[str, Any], failure_tags: list[str], k: int | None, include_base: bool | None
) -> Call:
    body: dict[str, Any] = {"poolId": pool_id, "task": task, "failureTags": failure_tags}
    if k is not None:
        body["k"] = k
    if include_base is not None:
        body["includeBase"] = include_base
    # A route votes (metered ballots): sent once, as a rescue is.
    return Call("POST", "/v1/route", body, repeatable=False)


def decision(id: str) -> Call:
    return Call("GET", f"/v1/decisions/{_id(id)}")


def quote_rescue(body: dict[str, Any]) -> Call:
    return Call("POST", "/v1/quotes", {"rescue": body})


def quote_experiment(body: ExperimentRequest | dict[str, Any]) -> Call:
    return Call("POST", "/v1/quotes", {"experiment": body})


def start_experiment(body: ExperimentRequest) -> Call:
    # Starts a run (queued, metered, one of the key's active slots): sent once, as a rescue is.
    return Call("POST", "/v1/experiments", body, repeatable=False)


def experiment(experiment_id: str) -> Call:
    return Call("GET", f"/v1/experiments/{_id(experiment_id)}")


def experiments(limit: int | None, cursor: str | None) -> Call:
    params = {k: v for k, v in (("limit", limit), ("cursor", cursor)) if v is not None}
    return Call("GET", "/v1/experiments", params=params or None)


def cancel_experiment(experiment_id: str) -> Call:
    # A run already ended answers as it is; a second cancel changes nothing: safe to repeat.
    return Call("POST", f"/v1/experiments/{_id(experiment_id)}/cancel")


def experiment_steps(experiment_id: str, arm: str | None, seed: int | None) -> Call:
    params = {k: v for k, v in (("arm", arm), ("seed", seed)) if v is not None}
    return Call("GET", f"/v1/experiments/{_id(experiment_id)}/steps", params=params or None)


def experiment_metrics(experiment_id: str) -> Call:
    return Call("GET", f"/v1/experiments/{_id(experiment_id)}/metrics")


def experiment_report(experiment_id: str) -> Call:
    return Call("GET", f"/v1/experiments/{_id(experiment_id)}/report", text=True)


def experiment_plots(experiment_id: str) -> Call:
    return Call("GET", f"/v1/experiments/{_id(experiment_id)}/plots")


def experiment_plot(experiment_id: str, file: str) -> Call:
    return Call("GET", f"/v1/experiments/{_id(experiment_id)}/plots/{_id(file)}", binary=True)


def usage(from_day: str | None, to_day: str | None) -> Call:
    params = {"from": from_day, "to": to_day} if from_day is not None and to_day is not None else None
    return Call("GET", "/v1/usage", params=params)


def usage_export(from_day: str, to_day: str, format: str) -> Call:
    return Call("GET", "/v1/usage/export", params={"from": from_day, "to": to_day, "format": format}, text=True)


def pools() -> Call:
    return Call("GET", "/v1/pools")


def pool(pool_id: str) -> Call:
    return Call("GET", f"/v1/pools/{_id(pool_id)}")


def evolve_pool(request: dict[str, Any]) -> Call:
    return Call("POST", "/v1/pools", {"evolve": request})


def pool_evolution(evolution_id: str) -> Call:
    return Call("GET", f"/v1/pools/evolutions/{_id(evolution_id)}")


def profiles(pool_id: str) -> Call:
    return Call("GET", "/v1/profiles", params={"poolId": pool_id})


def report_evidence(pool_id: str, outcomes: list[dict[str, Any]]) -> Call:
    # Applied once per outcome id: safe to repeat.
    return Call("POST", "/v1/profiles/evidence", {"poolId": pool_id, "outcomes": outcomes})


def health() -> Call:
    return Call("GET", "/health")
