"""The experiment resource through the client (issue 70 item 6): each call's method, path and body
as functions/api/routes/experiments.ts declares them, the status and its progress as the API
answers, a wait that ends at a terminal state and raises a failed run's error, the report as
markdown and a plot as PNG bytes; and a refused connection that says so."""

import asyncio
import json
import socket

import httpx
import pytest

from harness_s_client import (
    AsyncHarnessS,
    ExperimentFailedError,
    HarnessS,
    HarnessSConnectionError,
    HarnessSError,
    HarnessSTimeoutError,
)
from harness_s_client.errors import CONNECTION_FAILED, EXPERIMENT_FAILED, EXPERIMENT_TIMEOUT

#: The first bytes of every PNG file.
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
REPORT = "# Experiment exp_1\n\n| arm | train |\n|---|---|\n| harness-s | 97.6 |\n\n![curves](curves.png)\n"


def status(state: str = "queued", done: int = 0, label: str = "queued", **more: object) -> dict[str, object]:
    """`GET /v1/experiments/{id}` as experimentStatus (packages/core/src/experiment/start.ts) answers."""
    return {
        "id": "exp_1",
        "status": state,
        "request": {"env": "embedded", "arms": ["grpo", "harness-s"], "seeds": [1, 2], "budget": {"rollouts": 5000}},
        "progress": {"done": done, "total": 4, "label": label},
        "attempts": 0 if state == "queued" else 1,
        "cost": {"rollouts": 100 * done, "computeMs": 1000.0 * done, "usd": 0.01 * done},
        "budget": {"rollouts": 5000},
        "quote": {"rollouts": 4200, "chargeUsd": 0.42},
        "actual": None,
        "stopReason": None,
        "error": None,
        "createdAt": 1.0,
        "updatedAt": 2.0 + done,
        **more,
    }


def fake(handler, retries: int = 2) -> HarnessS:
    return HarnessS("http://service", "key", transport=httpx.MockTransport(handler), retries=retries)


def test_each_experiment_call_is_its_route_with_its_body_and_the_answer_as_sent():
    sent: list[tuple[str, str, str, bytes]] = []
    page = {
        "items": [
            {
                "id": "exp_1",
                "status": "running",
                "createdAt": 1.0,
                "updatedAt": 3.0,
                "env": "embedded",
                "model": None,
                "arms": 2,
                "seeds": 2,
                "progress": {"done": 1, "total": 4},
            }
        ],
        "next": "cur2",
    }

    def handler(req: httpx.Request) -> httpx.Response:
        sent.append((req.method, req.url.raw_path.decode().split("?")[0], req.url.query.decode(), req.content))
        path = req.url.path
        if path == "/v1/experiments" and req.method == "POST":
            return httpx.Response(202, json=status())
        if path == "/v1/experiments":
            return httpx.Response(200, json=page)
        if path.endswith("/cancel"):
            return httpx.Response(200, json=status("cancelled", 1, "cancelled", stopReason="cancelled by its key"))
        if path.endswith("/report"):
            return httpx.Response(200, text=REPORT, headers={"content-type": "text/markdown; charset=utf-8"})
        if path.endswith("/plots"):
            return httpx.Response(
                200,
                json={
                    "id": "exp_1",
                    "status": "done",
                    "plots": [{"file": "curves.png", "url": "/v1/experiments/exp_1/plots/curves.png"}],
                },
            )
        if "/plots/" in path:
            return httpx.Response(200, content=PNG, headers={"content-type": "image/png"})
        if path.endswith("/steps"):
            return httpx.Response(200, json={"id": "exp_1", "steps": [{"step": 0, "groups": []}]})
        if path.endswith("/metrics"):
            return httpx.Response(200, json={"id": "exp_1", "status": "running", "results": [], "summary": None})
        return httpx.Response(200, json=status("running", 2, "harness-s seed 2: step 3/10"))

    c = fake(handler)
    started = c.start_experiment(
        env="embedded", arms=["grpo", "harness-s"], seeds=[1, 2], evalSamples=3, budget={"rollouts": 5000}
    )
    assert sent[-1][:2] == ("POST", "/v1/experiments")
    assert json.loads(sent[-1][3]) == {
        "env": "embedded",
        "arms": ["grpo", "harness-s"],
        "seeds": [1, 2],
        "evalSamples": 3,
        "budget": {"rollouts": 5000},
    }
    assert (started["id"], started["status"]) == ("exp_1", "queued")
    assert started["quote"] == {"rollouts": 4200, "chargeUsd": 0.42}
    # The status and its progress come through as the API sent them.
    got = c.experiment("exp_1")
    assert sent[-1][:2] == ("GET", "/v1/experiments/exp_1")
    assert got["progress"] == {"done": 2, "total": 4, "label": "harness-s seed 2: step 3/10"}
    assert got["cost"] == {"rollouts": 200, "computeMs": 2000.0, "usd": 0.02} and got == status(
        "running", 2, "harness-s seed 2: step 3/10"
    )
    assert c.list_experiments() == page and sent[-1][:3] == ("GET", "/v1/experiments", "")
    c.list_experiments(limit=5, cursor="cur2")
    assert sent[-1][:3] == ("GET", "/v1/experiments", "limit=5&cursor=cur2")
    cancelled = c.cancel_experiment("exp_1")
    assert sent[-1][:2] == ("POST", "/v1/experiments/exp_1/cancel") and cancelled["status"] == "cancelled"
    assert c.experiment_steps("exp_1", arm="harness-s", seed=2) == [{"step": 0, "groups": []}]
    assert sent[-1][:3] == ("GET", "/v1/experiments/exp_1/steps", "arm=harness-s&seed=2")
    assert c.experiment_metrics("exp_1")["summary"] is None and sent[-1][1] == "/v1/experiments/exp_1/metrics"
    # The report is the markdown as sent; a plot is the PNG's bytes, unchanged.
    assert c.experiment_report("exp_1") == REPORT and sent[-1][:2] == ("GET", "/v1/experiments/exp_1/report")
    assert c.experiment_plots("exp_1") == [{"file": "curves.png", "url": "/v1/experiments/exp_1/plots/curves.png"}]
    assert sent[-1][1] == "/v1/experiments/exp_1/plots"
    plot = c.experiment_plot("exp_1", "curves.png")
    assert isinstance(plot, bytes) and plot == PNG and sent[-1][:2] == ("GET", "/v1/experiments/exp_1/plots/curves.png")
    # An id (or a file name) is one path segment.
    c.experiment("exp/1")
    assert sent[-1][1] == "/v1/experiments/exp%2F1"
    # The quote of the same request is POST /v1/quotes with {"experiment": ...}.
    sent.clear()
    fake(
        lambda req: sent.append(("POST", req.url.path, "", req.content)) or httpx.Response(200, json={})
    ).quote_experiment({"arms": ["grpo"], "budget": {"rollouts": 10}})
    assert sent[0][1] == "/v1/quotes" and json.loads(sent[0][3]) == {
        "experiment": {"arms": ["grpo"], "budget": {"rollouts": 10}}
    }


def test_a_start_is_sent_once_and_reads_are_repeated_on_a_502():
    calls: list[str] = []

    def handler(req: httpx.Request) -> httpx.Response:
        calls.append(f"{req.method} {req.url.path}")
        if len(calls) == 1 or req.method == "POST":
            return httpx.Response(502, text="bad gateway")
        return httpx.Response(200, json=status("running", 1, "grpo seed 1"))

    c = fake(handler)
    assert c.experiment("exp_1")["progress"]["done"] == 1 and calls == ["GET /v1/experiments/exp_1"] * 2
    with pytest.raises(HarnessSError) as err:
        c.start_experiment(arms=["grpo"])
    assert err.value.status == 502 and calls.count("POST /v1/experiments") == 1


def test_a_refusal_keeps_the_apis_code_and_a_report_not_yet_made_says_why():
    def handler(req: httpx.Request) -> httpx.Response:
        if req.method == "POST":
            return httpx.Response(
                429,
                json={"error": {"code": "CONCURRENCY_LIMIT", "message": "2 experiments already queued or running"}},
            )
        return httpx.Response(
            404, json={"error": {"code": "NOT_FOUND", "message": "experiment exp_1 has no report yet: still running"}}
        )

    c = fake(handler)
    with pytest.raises(HarnessSError) as start:
        c.start_experiment()
    assert (start.value.status, start.value.code) == (429, "CONCURRENCY_LIMIT")
    with pytest.raises(HarnessSError) as report:
        c.experiment_report("exp_1")
    assert report.value.code == "NOT_FOUND" and "still running" in report.value.message


def test_wait_experiment_polls_to_done_and_hears_each_change_of_progress():
    answers = iter(
        [
            status("queued"),
            status("running", 1, "grpo seed 1"),
            status("running", 1, "grpo seed 1"),
            status("running", 3, "harness-s seed 1"),
            status("done", 4, "done"),
        ]
    )
    reads: list[str] = []

    def handler(req: httpx.Request) -> httpx.Response:
        reads.append(f"{req.method} {req.url.path}")
        return httpx.Response(200, json=next(answers))

    heard: list[tuple[str, int]] = []
    end = fake(handler).wait_experiment(
        "exp_1", poll_s=0.01, timeout_s=30, on_progress=lambda s: heard.append((s["status"], s["progress"]["done"]))
    )
    assert end["status"] == "done" and end["progress"] == {"done": 4, "total": 4, "label": "done"}
    assert reads == ["GET /v1/experiments/exp_1"] * 5
    assert heard == [("queued", 0), ("running", 1), ("running", 3), ("done", 4)]


def test_wait_experiment_returns_a_run_stopped_at_its_cap_or_cancelled():
    for ended in (
        status("stopped", 2, "stopped", stopReason="budget cap of 5000 rollouts reached"),
        status("cancelled", 1, "cancelled", stopReason="cancelled by its key"),
    ):
        got = fake(lambda req, ended=ended: httpx.Response(200, json=ended)).wait_experiment("exp_1", poll_s=0.01)
        assert got["status"] == ended["status"] and got["stopReason"] == ended["stopReason"]


def test_wait_experiment_raises_a_failed_runs_error_with_its_code():
    answers = iter(
        [
            status("running", 1, "grpo seed 1"),
            status("failed", 1, "grpo seed 1", error="rollout exp_1/3 did not complete within 60000 ms"),
        ]
    )
    c = fake(lambda req: httpx.Response(200, json=next(answers)))
    with pytest.raises(ExperimentFailedError) as err:
        c.wait_experiment("exp_1", poll_s=0.01, timeout_s=30)
    assert err.value.code == EXPERIMENT_FAILED and err.value.status == 0 and isinstance(err.value, HarnessSError)
    assert "experiment exp_1 failed: rollout exp_1/3 did not complete" in err.value.message
    assert err.value.experiment["status"] == "failed"


def test_wait_experiment_past_its_time_is_an_experiment_timeout():
    c = fake(lambda req: httpx.Response(200, json=status("running", 1, "grpo seed 1")))
    with pytest.raises(HarnessSTimeoutError) as err:
        c.wait_experiment("exp_1", poll_s=0.01, timeout_s=0)
    assert err.value.code == EXPERIMENT_TIMEOUT and "still running" in err.value.message and "1/4" in err.value.message


def test_the_async_client_sends_the_same_experiment_calls():
    calls: list[str] = []
    answers = iter([status("running", 1, "grpo seed 1"), status("done", 4, "done")])

    def handler(req: httpx.Request) -> httpx.Response:
        calls.append(f"{req.method} {req.url.raw_path.decode()}")
        if req.method == "POST":
            return httpx.Response(202, json=status())
        if req.url.path.endswith("/report"):
            return httpx.Response(200, text=REPORT)
        if req.url.path.endswith(".png"):
            return httpx.Response(200, content=PNG)
        return httpx.Response(200, json=next(answers))

    async def go() -> tuple[str, str, bytes]:
        async with AsyncHarnessS("http://service", "key", transport=httpx.MockTransport(handler)) as c:
            started = await c.start_experiment(arms=["grpo", "harness-s"], seeds=[1])
            end = await c.wait_experiment(started["id"], poll_s=0.01)
            return (
                end["status"],
                await c.experiment_report(started["id"]),
                await c.experiment_plot("exp_1", "curves.png"),
            )

    assert asyncio.run(go()) == ("done", REPORT, PNG)
    assert calls == [
        "POST /v1/experiments",
        "GET /v1/experiments/exp_1",
        "GET /v1/experiments/exp_1",
        "GET /v1/experiments/exp_1/report",
        "GET /v1/experiments/exp_1/plots/curves.png",
    ]

    async def failing() -> None:
        ended = status("failed", 0, "queued", error="the pool could not be evolved")
        transport = httpx.MockTransport(lambda req: httpx.Response(200, json=ended))
        async with AsyncHarnessS("http://service", "key", transport=transport) as c:
            await c.wait_experiment("exp_1", poll_s=0.01)

    with pytest.raises(ExperimentFailedError, match="the pool could not be evolved"):
        asyncio.run(failing())


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_refused_connection_says_where_and_what_happened_not_an_exception_class():
    url = f"http://127.0.0.1:{closed_port()}"
    with HarnessS(url, "key", retries=1) as c, pytest.raises(HarnessSConnectionError) as err:
        c.experiment("exp_1")
    message = str(err.value)
    assert err.value.code == CONNECTION_FAILED and err.value.status == 0
    assert f"could not connect to {url}: connection refused (is `harness-s serve` running?)" in message
    assert message.startswith("CONNECTION_FAILED: GET /v1/experiments/exp_1: ") and "(tried 2 times)" in message
    assert "ConnectError" not in message and "Errno" not in message

    async def go() -> None:
        async with AsyncHarnessS(url, "key", retries=0) as c:
            await c.start_experiment()

    with pytest.raises(HarnessSConnectionError) as aerr:
        asyncio.run(go())
    assert f"POST /v1/experiments: could not connect to {url}: connection refused" in str(aerr.value)
    assert "tried" not in str(aerr.value) and "ConnectError" not in str(aerr.value)


def test_no_answer_of_other_kinds_says_what_happened_too():
    def dropped(req: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=req)

    with pytest.raises(HarnessSConnectionError) as err:
        fake(dropped, retries=0).experiment("exp_1")
    assert "the connection to http://service failed before an answer: Server disconnected" in err.value.message

    def slow(req: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("", request=req)

    with pytest.raises(HarnessSTimeoutError) as timeout:
        fake(slow).start_experiment()
    assert (
        timeout.value.message
        == "POST /v1/experiments: no answer from http://service in time (timed out waiting for the answer)"
    )

    def unresolved(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("", request=req) from socket.gaierror(-2, "Name or service not known")

    with pytest.raises(HarnessSConnectionError) as name:
        fake(unresolved, retries=0).health()
    assert name.value.message == (
        "GET /health: could not connect to http://service: its host name did not resolve (Name or service not known)"
    )
