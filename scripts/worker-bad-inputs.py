"""Sends every kind of bad input to a fresh policy worker (tiny model) and prints, per case, the
status and code it answered, how long /healthz then took, and the worker's RSS: no 500, no wedge,
memory bounded. Run with the worker's venv:
`packages/policy-worker/.venv/bin/python scripts/worker-bad-inputs.py`."""

from __future__ import annotations

import json
import math
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "packages" / "policy-worker"))
from harness_s_worker.bench import SPEC, start_worker  # noqa: E402

FIRST = {"messages": [{"role": "user", "content": "say yes"}], "sampling": {"max_tokens": 4}}


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def update(http: httpx.Client, datum: dict[str, Any], key: str) -> httpx.Response:
    """An update of policy p with one datum (NaN and infinities sent as JSON's extensions), under idempotency `key`."""
    body = json.dumps({"base_version": 0, "datums": [datum], "optim": {"lr": 1e-3}}, allow_nan=True)
    return http.post(
        "/v2/policies/p/updates",
        content=body,
        headers={"Idempotency-Key": key, "content-type": "application/json"},
    )


def many_episodes(http: httpx.Client) -> httpx.Response | None:
    """Opens 4,200 episodes on policy p, past the worker's cap: the first answer that is not 200 (else the last)."""
    last = None
    for i in range(4200):
        last = http.post("/v2/policies/p/sample", json={"episode_id": f"many{i}", **FIRST})
        if last.status_code != 200:
            return last
    return last


def concurrent_update(http: httpx.Client, good: dict[str, Any]) -> httpx.Response:
    """A second update of a fresh policy q sent while a slow first one (64 long datums, 8 epochs) runs."""
    http.put("/v2/policies/q", json=SPEC)
    slow = {
        **good,
        "ids": good["ids"] * 40,
        "loss_mask": good["loss_mask"] * 40,
        "behaviour_logprobs": good["behaviour_logprobs"] * 40,
    }
    slow["loss_mask"][0] = 0
    body = {"base_version": 0, "datums": [slow] * 64, "optim": {"lr": 1e-3, "epochs": 8}}
    threading.Thread(
        target=lambda: http.post("/v2/policies/q/updates", json=body, headers={"Idempotency-Key": "a"}),
        daemon=True,
    ).start()
    time.sleep(0.3)
    return http.post("/v2/policies/q/updates", json=body, headers={"Idempotency-Key": "b"})


def bad_inputs(http: httpx.Client, good: dict[str, Any], ids: list[int]) -> dict[str, Callable[[], Any]]:
    """Each case by name: a request (or requests) of bad input, from `good`, a datum the worker accepts."""
    return {
        "NaN advantage": lambda: update(http, {**good, "advantage": math.nan}, "nan"),
        "-Infinity behaviour log-probability": lambda: update(
            http, {**good, "behaviour_logprobs": [-math.inf] + good["behaviour_logprobs"][1:]}, "inf"
        ),
        "behaviour log-probability -1e4 (finite: accepted, ratio clamped)": lambda: update(
            http, {**good, "behaviour_logprobs": good["behaviour_logprobs"][:-1] + [-1e4]}, "big"
        ),
        "mask value 2": lambda: update(http, {**good, "loss_mask": [0] + [2] * (len(ids) - 1)}, "mask"),
        "token id = vocabulary size": lambda: update(http, {**good, "ids": ids[:-1] + [10**6]}, "vocab"),
        "lengths disagree": lambda: update(http, {**good, "loss_mask": good["loss_mask"][:-1]}, "len"),
        "1 MB prompt (past the context)": lambda: http.post(
            "/v2/policies/p/sample",
            json={"episode_id": "big", "messages": [{"role": "user", "content": "word " * 200_000}]},
        ),
        "100 MB body": lambda: http.post(
            "/v2/policies/p/sample", content=b"x" * (100 << 20), headers={"content-type": "application/json"}
        ),
        "4,200 open episodes (cap 4,096)": lambda: many_episodes(http),
        "base_model not served": lambda: http.put("/v2/policies/x", json={**SPEC, "base_model": "Qwen2.5-7B"}),
        "wrong temperature for a training sample": lambda: http.post(
            "/v2/policies/p/sample",
            json={"episode_id": "t", "messages": FIRST["messages"], "sampling": {"temperature": 0.7}},
        ),
        "init_from outside the state folder": lambda: http.put(
            "/v2/policies/y", json={**SPEC, "init_from": "../../etc"}
        ),
        "unknown policy": lambda: http.post("/v2/policies/nope/sample", json={"episode_id": "e", **FIRST}),
        "stale version": lambda: http.post(
            "/v2/policies/p/sample", json={"episode_id": "v", **FIRST, "version": {"exact": 7}}
        ),
        "a second update while one runs": lambda: concurrent_update(http, good),
        "messages on an open episode": lambda: (
            http.post("/v2/policies/q/sample", json={"episode_id": "open", **FIRST}),
            http.post("/v2/policies/q/sample", json={"episode_id": "open", **FIRST}),
        )[1],
    }


def main() -> None:
    worker, http = start_worker("tiny", "cpu", None, flags=())  # the worker's default limits
    rows = []
    try:
        http.put("/v2/policies/p", json=SPEC).raise_for_status()
        s = http.post("/v2/policies/p/sample", json={"episode_id": "e0", **FIRST}).json()
        ids = s["prompt_ids"] + s["completion"]["ids"]
        good = {
            "sample_id": "s",
            "group_id": "g",
            "ids": ids,
            "loss_mask": [0] * len(s["prompt_ids"]) + [1] * len(s["completion"]["ids"]),
            "behaviour_logprobs": [0.0] * len(s["prompt_ids"]) + s["completion"]["logprobs"],
            "advantage": 1.0,
        }
        for name, case in bad_inputs(http, good, ids).items():
            r = case()
            code = (
                r.json().get("error", {}).get("code", "-")
                if r.headers.get("content-type", "").startswith("application/json")
                else "-"
            )
            t0 = time.perf_counter()
            alive = http.get("/healthz").status_code
            rows.append(
                (
                    name,
                    r.status_code,
                    code,
                    alive,
                    round((time.perf_counter() - t0) * 1000, 1),
                    round(rss_mb(worker.pid), 1),
                )
            )
    finally:
        worker.terminate()
        worker.wait(30)
    print("| input | status | code | /healthz after | its latency (ms) | worker RSS (MB) |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(x) for x in row) + " |")


if __name__ == "__main__":
    main()
