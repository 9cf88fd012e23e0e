"""The Python client of the service: typed calls, safe retries, pagination, typed errors with the
service's codes, a wait that stops at the first failed slot, and the async client sending the
same calls."""

import asyncio
import time

import httpx
import pytest

from harness_s_client import (
    AsyncHarnessS,
    HarnessS,
    HarnessSConnectionError,
    HarnessSError,
    HarnessSTimeoutError,
    RescueFailedError,
)
from harness_s_client.errors import CONNECTION_FAILED, RESCUE_TIMEOUT

ROW = {
    "index": 0,
    "harness_id": "sib-a",
    "decision_id": "dec_1",
    "weight_version": 3,
    "reward": 1.0,
    "success": True,
    "finish_reason": "submitted",
    "failure_tags": [],
    "prompt_ids": [1, 2, 3],
    "completion_ids": [7, 8, 9, 10, 11],
    "logprobs": [-0.5, -0.25, 0.0, 0.0, -1.0],
    "loss_mask": [1, 1, 0, 0, 1],
    "context": "sampled",
    "segmented": False,
}
STATUS = {
    "job": {"id": "rsc_1", "poolId": "p", "taskId": "t", "chosen": ["a"], "expected": 4},
    "rescued": False,
    "spent": {"policyTokens": 0, "policySeconds": 0, "environmentSeconds": 0},
    "rollouts": [],
}


def fake(handler):
    return HarnessS("http://service", "key", transport=httpx.MockTransport(handler), retries=2)


def test_reads_are_repeated_on_a_503_and_follow_pages_and_a_rescue_is_started_once():
    calls: list[str] = []

    def handler(req: httpx.Request) -> httpx.Response:
        calls.append(f"{req.method} {req.url.path}?{req.url.query.decode()}")
        assert req.headers["authorization"] == "Bearer key"
        if req.method == "POST":
            return httpx.Response(503, json={"error": {"code": "STORE_UNAVAILABLE", "message": "retry later"}})
        if len([c for c in calls if "cursor=0" in c]) == 1 and "cursor=0" in calls[-1]:
            return httpx.Response(503, json={"error": {"code": "STORE_UNAVAILABLE", "message": "retry later"}})
        cursor = int(req.url.params["cursor"])
        return httpx.Response(
            200, json={"trajectories": [{**ROW, "index": cursor}], "next": cursor + 1 if cursor < 2 else None}
        )

    client = fake(handler)
    rows = client.trajectories("rsc_1")
    assert [r.index for r in rows] == [0, 1, 2]
    assert sum("cursor=0" in c for c in calls) == 2  # the 503 was asked again
    with pytest.raises(HarnessSError) as err:
        client.start_rescue("p", ["x"], {"endpoint": "e"})
    assert err.value.code == "STORE_UNAVAILABLE" and sum(c.startswith("POST") for c in calls) == 1


def test_an_error_keeps_its_code_status_and_details_and_a_4xx_is_not_repeated():
    calls = []

    def handler(req: httpx.Request) -> httpx.Response:
        calls.append(req.url.path)
        return httpx.Response(
            409,
            json={
                "error": {
                    "code": "STALE_POLICY_VERSION",
                    "message": "held 2, wanted 1",
                    "heldVersion": 2,
                    "wantedVersion": 1,
                }
            },
        )

    with pytest.raises(HarnessSError) as err:
        fake(handler).register_policy_endpoint("e", "protocol-v2", "http://10.0.0.1", "p")
    assert (err.value.status, err.value.code, err.value.message, len(calls)) == (
        409,
        "STALE_POLICY_VERSION",
        "held 2, wanted 1",
        1,
    )
    assert err.value.details == {"heldVersion": 2, "wantedVersion": 1}


def test_no_answer_is_a_connection_error_with_its_code_after_the_retries():
    calls = []

    def handler(req: httpx.Request) -> httpx.Response:
        calls.append(req.url.path)
        raise httpx.ConnectError("connection refused", request=req)

    with pytest.raises(HarnessSConnectionError) as err:
        fake(handler).pool("embedded")
    assert (
        err.value.code == CONNECTION_FAILED
        and err.value.status == 0
        and len(calls) == 3
        and isinstance(err.value, HarnessSError)
    )

    def slow(req: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=req)

    with pytest.raises(HarnessSTimeoutError) as timeout:
        fake(slow).start_rescue("p", ["x"])
    assert timeout.value.code == "TIMEOUT" and isinstance(timeout.value, TimeoutError)


def test_wait_follows_a_rescue_slot_by_slot_with_long_polls_and_cancel_is_one_call():
    seen_params: list[tuple[str, str]] = []
    finished = iter([1, 3, 4])

    def handler(req: httpx.Request) -> httpx.Response:
        if req.method == "POST":
            return httpx.Response(200, json={**STATUS, "status": "cancelled", "completed": 1, "failed": []})
        seen_params.append((req.url.params["wait"], req.url.params["seen"]))
        n = next(finished)
        return httpx.Response(
            200, json={**STATUS, "status": "done" if n == 4 else "running", "completed": n, "failed": []}
        )

    client = fake(handler)
    heard: list[int] = []
    status = client.wait("rsc_1", timeout_s=60, on_progress=lambda s: heard.append(s["completed"]))
    assert status["status"] == "done" and heard == [1, 3, 4]
    # Each read asks the service to hold it (at most 20 s) until past the slots already seen.
    assert [seen for _, seen in seen_params] == ["0", "1", "3"] and all(float(w) == 20.0 for w, _ in seen_params)
    assert client.cancel("rsc_1")["status"] == "cancelled"


def test_wait_raises_the_services_code_at_the_first_failed_slot_not_a_timeout():
    reads = []

    def handler(req: httpx.Request) -> httpx.Response:
        reads.append(1)
        failed = (
            [
                {
                    "index": 2,
                    "code": "STALE_POLICY_VERSION",
                    "reason": "the endpoint holds version 1; the rescue samples 0",
                }
            ]
            if len(reads) > 1
            else []
        )
        return httpx.Response(200, json={**STATUS, "status": "running", "completed": 1, "failed": failed})

    started = time.monotonic()
    with pytest.raises(RescueFailedError) as err:
        fake(handler).wait("rsc_1", timeout_s=600)
    assert err.value.code == "STALE_POLICY_VERSION" and "version 1" in err.value.message and len(reads) == 2
    assert time.monotonic() - started < 5 and isinstance(err.value, HarnessSError)
    # Without fail_fast it follows the rescue to its end, and a failed end still raises the code.
    ends = iter(["running", "failed"])
    failing = fake(
        lambda req: httpx.Response(
            200,
            json={
                **STATUS,
                "status": next(ends),
                "completed": 3,
                "failed": [{"index": 0, "code": "BUDGET_EXCEEDED", "reason": "spent"}],
            },
        )
    )
    with pytest.raises(RescueFailedError, match="BUDGET_EXCEEDED"):
        failing.wait("rsc_1", fail_fast=False)


def test_wait_past_its_time_is_a_rescue_timeout():
    client = fake(lambda req: httpx.Response(200, json={**STATUS, "status": "running", "completed": 0, "failed": []}))
    with pytest.raises(HarnessSTimeoutError) as err:
        client.wait("rsc_1", timeout_s=0)
    assert err.value.code == RESCUE_TIMEOUT


def test_every_resource_the_docs_name_is_one_call_each():
    sent: list[tuple[str, str, bytes]] = []
    raw: list[bytes] = []
    answers = {
        "/v1/pools": {"pools": [{"id": "embedded", "version": "v1", "siblings": 4}]},
        "/v1/profiles": {"poolId": "embedded", "profiles": {"h0": {}}},
        "/v1/profiles/evidence": {"queued": 2},
        "/v1/quotes": {"rollouts": 4, "usage": {}, "costOfGoods": {}, "chargeUsd": 0.01, "basis": {}},
        "/v1/usage": {
            "keyId": "k",
            "usage": {"rollouts": 3},
            "requestQuota": None,
            "budgetUsd": None,
            "activeExperiments": 0,
        },
        "/v1/route": {"id": "dec_1", "chosen": ["a"]},
        "/v1/policy-endpoints": {"endpoints": []},
        "/health": {"ok": True},
    }

    def handler(req: httpx.Request) -> httpx.Response:
        sent.append((req.method, req.url.path, req.content))
        raw.append(req.url.raw_path)
        if req.url.path == "/v1/usage/export":
            return httpx.Response(200, text='{"day":"2026-01-01"}\n')
        return httpx.Response(200, json=answers.get(req.url.path, {}))

    c = fake(handler)
    assert (
        c.pools()[0]["siblings"] == 4
        and "h0" in c.profiles("embedded")
        and c.report_evidence("embedded", [{"id": "o1"}, {"id": "o2"}]) == 2
    )
    assert (
        c.quote_rescue("embedded", ["x"], k=2, rollouts_per_harness=2)["rollouts"] == 4
        and c.quote_experiment({"arms": []})["chargeUsd"] == 0.01
    )
    assert c.usage()["usage"] == {"rollouts": 3} and c.usage_export("2026-01-01", "2026-01-02").startswith('{"day"')
    assert (
        c.route("embedded", {"id": "t", "family": "app"}, ["no-commit"], k=2)["chosen"] == ["a"]
        and c.policy_endpoints() == []
        and c.health()
    )
    c.delete_policy_endpoint("mine/1")
    assert raw[-1] == b"/v1/policy-endpoints/mine%2F1"  # an id is one path segment
    assert b'"rescue"' in next(body for m, p, body in sent if p == "/v1/quotes")
    c.evolve_pool({"endpoint": "mine", "devTasks": []})
    assert sent[-1][:2] == ("POST", "/v1/pools") and b'"evolve"' in sent[-1][2]
    c.pool_evolution("ev/1")
    assert raw[-1] == b"/v1/pools/evolutions/ev%2F1"


def test_the_async_client_sends_the_same_calls():
    calls: list[str] = []

    async def run() -> None:
        def handler(req: httpx.Request) -> httpx.Response:
            calls.append(f"{req.method} {req.url.path}")
            if req.url.path.endswith("/trajectories"):
                if len([c for c in calls if c.endswith("/trajectories")]) == 1:
                    return httpx.Response(502, text="bad gateway")
                return httpx.Response(200, json={"trajectories": [ROW], "next": None})
            if req.method == "POST":
                return httpx.Response(202, json={"id": "rsc_1", "chosen": ["a"], "expected": 1})
            return httpx.Response(200, json={**STATUS, "status": "done", "completed": 1, "failed": []})

        async with AsyncHarnessS("http://service", "key", transport=httpx.MockTransport(handler)) as client:
            started = await client.start_rescue("p", ["x"], {"endpoint": "e"})
            status = await client.wait(started["id"])
            rows = await client.trajectories(started["id"])
        assert status["status"] == "done" and rows[0].completion_ids == ROW["completion_ids"]

    asyncio.run(run())
    assert calls == [
        "POST /v1/rescues",
        "GET /v1/rescues/rsc_1",
        "GET /v1/rescues/rsc_1/trajectories",
        "GET /v1/rescues/rsc_1/trajectories",
    ]


def test_an_adaptive_rescue_passes_its_mode_and_evidence_and_a_choice_of_nothing_starts_nothing():
    # Issue 59 item 2: the verl/SkyRL rescuer asks in mode "adaptive" with what its resamples found;
    # an answer without an id (expected 0) leaves the group as it was, its option recorded.
    from harness_s_client.groups import AsyncGroupRescuer, GroupOutcome, RescueSettings, rescue_metrics

    bodies: list[dict] = []

    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path.startswith("/v1/pools/"):
            return httpx.Response(200, json={"siblings": [{"id": "a"}, {"id": "b"}]})
        assert req.method == "POST" and req.url.path == "/v1/rescues"
        bodies.append(__import__("json").loads(req.content))
        return httpx.Response(
            200,
            json={
                "chosen": [],
                "expected": 0,
                "adaptive": {"option": "none", "reason": "below-floor", "estimates": [], "allocation": {}, "spend": 0},
            },
        )

    async def go() -> GroupOutcome:
        settings = RescueSettings(
            pool_id="p", environment={"kind": "builtin", "id": "embedded"}, endpoint_id="e", mode="adaptive"
        )
        async with AsyncHarnessS("http://service", "key", transport=httpx.MockTransport(handler)) as client:
            rescuer = AsyncGroupRescuer(client, settings)
            rescuer.resamples = {"attempts": 8, "successes": 3}
            return await rescuer.rescue(GroupOutcome(1, 0, "t", "kept"), {"id": "t"}, ["x"], 4)

    outcome = asyncio.run(go())
    assert bodies[0]["mode"] == "adaptive"
    assert bodies[0]["resampleEvidence"] == {"attempts": 8, "successes": 3}
    assert (outcome.kind, outcome.option, outcome.rescue_id) == ("unrescued", "none", None)
    assert rescue_metrics([outcome])["rescue/option/none"] == 1.0
