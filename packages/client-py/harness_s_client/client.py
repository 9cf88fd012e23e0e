"""The Harness-S service's HTTP API for a trainer: typed calls, each bounded in time, the ones that
are safe to repeat (reads, and registering an endpoint: it replaces by id) repeated on a dropped
connection or a 502/503/504; starting a rescue is sent once (a retry could start a second one)."""

from __future__ import annotations

import time
from typing import Any

import httpx

from .convert import Trajectory

RETRYABLE = {502, 503, 504}


class HarnessSError(Exception):
    """The service refused or failed a call: its stable `code`, HTTP `status` and message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


class HarnessSClient:
    def __init__(self, base_url: str, api_key: str, timeout_s: float = 30.0, retries: int = 3, transport: httpx.BaseTransport | None = None) -> None:
        self.http = httpx.Client(base_url=base_url.rstrip("/"), headers={"authorization": f"Bearer {api_key}"}, timeout=timeout_s, transport=transport)
        self.retries = retries

    def close(self) -> None:
        self.http.close()

    def _call(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None, repeatable: bool = True, timeout_s: float | None = None) -> Any:
        for attempt in range(self.retries + 1 if repeatable else 1):
            try:
                res = self.http.request(method, path, json=body, params=params, timeout=timeout_s if timeout_s is not None else httpx.USE_CLIENT_DEFAULT)
            except httpx.TransportError:
                if not repeatable or attempt == self.retries:
                    raise
                time.sleep(min(2.0, 0.1 * 2**attempt))
                continue
            if res.status_code in RETRYABLE and repeatable and attempt < self.retries:
                time.sleep(min(2.0, 0.1 * 2**attempt))
                continue
            if res.status_code >= 400:
                try:
                    err = res.json()["error"]
                    raise HarnessSError(res.status_code, str(err.get("code", "UNKNOWN")), str(err.get("message", "")))
                except (ValueError, KeyError, TypeError):
                    raise HarnessSError(res.status_code, "UNKNOWN", res.text[:200]) from None
            return res.json()
        raise AssertionError("unreachable")

    def register_policy_endpoint(self, id: str, kind: str, url: str, policy: str, secret_header: tuple[str, str] | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"id": id, "kind": kind, "url": url, "policy": policy}
        if secret_header:
            body["secretHeader"] = {"name": secret_header[0], "value": secret_header[1]}
        result: dict[str, Any] = self._call("POST", "/v1/policy-endpoints", body)
        return result

    def pool(self, pool_id: str) -> dict[str, Any]:
        """A harness pool: its base harness H0 (`base`) and its siblings."""
        result: dict[str, Any] = self._call("GET", f"/v1/pools/{pool_id}")
        return result

    def start_rescue(self, pool_id: str, failure_tags: list[str], caller: dict[str, Any], k: int = 2, rollouts_per_harness: int = 2, harnesses: list[str] | None = None) -> dict[str, Any]:
        """Routes an all-fail group of the caller's task to its Top-k siblings and starts their rollouts
        (sent once); with `harnesses`, runs exactly those harnesses of the pool instead (no routing)."""
        body: dict[str, Any] = {"poolId": pool_id, "failureTags": failure_tags, "k": k, "rolloutsPerHarness": rollouts_per_harness, "caller": caller}
        if harnesses is not None:
            body["harnesses"] = harnesses
        result: dict[str, Any] = self._call("POST", "/v1/rescues", body, repeatable=False)
        return result

    def rescue(self, rescue_id: str, wait_s: float = 0.0, seen: int = 0) -> dict[str, Any]:
        """A rescue's status; with `wait_s` (at most 20), once more than `seen` slots have finished
        or it is no longer running (the service holds the request: no polling loop here)."""
        wait = min(wait_s, 20.0)
        params = {"wait": wait, "seen": seen} if wait > 0 else None
        result: dict[str, Any] = self._call("GET", f"/v1/rescues/{rescue_id}", params=params, timeout_s=wait + 30.0 if wait > 0 else None)
        return result

    def wait(self, rescue_id: str, timeout_s: float = 600.0, on_progress: Any = None) -> dict[str, Any]:
        """The rescue's status once it is no longer running (TimeoutError past `timeout_s`), following
        it slot by slot; `on_progress(status)` hears of each slot that finishes."""
        deadline = time.monotonic() + timeout_s
        seen = 0
        while True:
            left = deadline - time.monotonic()
            status = self.rescue(rescue_id, wait_s=max(0.0, min(20.0, left)), seen=seen)
            finished = status["completed"] + len(status["failed"])
            if finished > seen and on_progress is not None:
                on_progress(status)
            seen = finished
            if status["status"] != "running":
                return status
            if time.monotonic() >= deadline:
                raise TimeoutError(f"rescue {rescue_id} still running after {timeout_s:g} s")

    def cancel(self, rescue_id: str) -> dict[str, Any]:
        """Cancels a rescue: slots not started never run, running ones finish and are kept (safe to repeat)."""
        result: dict[str, Any] = self._call("POST", f"/v1/rescues/{rescue_id}/cancel")
        return result

    def trajectories(self, rescue_id: str, context: str = "sampled", page: int = 64) -> list[Trajectory]:
        """Every token row of a caller rescue, page by page, in rollout order."""
        rows: list[Trajectory] = []
        cursor: int | None = 0
        while cursor is not None:
            got = self._call("GET", f"/v1/rescues/{rescue_id}/trajectories", params={"context": context, "cursor": cursor, "limit": page})
            rows.extend(Trajectory.from_json(t) for t in got["trajectories"])
            cursor = got["next"]
        return rows
