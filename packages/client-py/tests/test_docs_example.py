"""docs/trainers.md's "Experiments from Python" block, run as written against a stand-in service
(httpx's MockTransport in place of `harness-s serve`): its calls exist with the arguments it
passes, in the order it makes them, and it writes the report and the plots it says it does."""

import re
from pathlib import Path

import httpx
import pytest

import harness_s_client
from harness_s_client import HarnessS

DOC = Path(__file__).resolve().parents[3] / "docs" / "trainers.md"
MARK = "<!-- packages/client-py/tests/test_docs_example.py runs this block as written"
PNG = b"\x89PNG\r\n\x1a\n-plot-"


def doc_block() -> str:
    text = DOC.read_text(encoding="utf8")
    found = re.search(re.escape(MARK) + r"[^\n]*-->\n```python\n(.*?)\n```", text, re.S)
    assert found, f"no python block after {MARK!r} in {DOC}"
    return found.group(1)


def status(state: str, done: int, label: str) -> dict[str, object]:
    return {
        "id": "exp_1",
        "status": state,
        "request": {},
        "progress": {"done": done, "total": 6, "label": label},
        "attempts": 1,
        "cost": {"rollouts": 400 * done, "computeMs": 0.0, "usd": 0.0},
        "budget": {"rollouts": 5000},
        "quote": None,
        "actual": None,
        "stopReason": None,
        "error": None,
        "createdAt": 1.0,
        "updatedAt": 2.0,
    }


@pytest.mark.skipif(not DOC.is_file(), reason="docs/trainers.md is not beside this checkout of the client")
def test_the_docs_experiment_example_runs_as_written(tmp_path, monkeypatch, capsys):
    calls: list[str] = []
    reads = iter([status("running", 2, "seed 1 harness-s step 2/3"), status("done", 6, "done")])

    def handler(req: httpx.Request) -> httpx.Response:
        calls.append(f"{req.method} {req.url.path}")
        path = req.url.path
        if path == "/v1/quotes":
            return httpx.Response(200, json={"rollouts": 2467, "chargeUsd": 0.0})
        if path == "/v1/experiments":
            return httpx.Response(202, json=status("queued", 0, "queued"))
        if path.endswith("/report"):
            return httpx.Response(200, text="# Harness-S embedded experiment\n")
        if path.endswith("/plots"):
            files = ["curves.png", "utilities.png"]
            return httpx.Response(
                200, json={"id": "exp_1", "status": "done", "plots": [{"file": f, "url": f"{path}/{f}"} for f in files]}
            )
        if path.endswith(".png"):
            return httpx.Response(200, content=PNG)
        return httpx.Response(200, json=next(reads))

    class StandIn(HarnessS):
        def __init__(self, base_url: str, api_key: str) -> None:
            assert (base_url, api_key) == ("http://127.0.0.1:18787", "test-key-123")
            super().__init__(base_url, api_key, transport=httpx.MockTransport(handler))

    slept: list[float] = []
    monkeypatch.setattr(harness_s_client, "HarnessS", StandIn)
    monkeypatch.setattr(harness_s_client.client.time, "sleep", slept.append)
    monkeypatch.chdir(tmp_path)
    exec(compile(doc_block(), str(DOC), "exec"), {"__name__": "__main__"})
    assert slept == [2]  # one poll_s between the two reads
    assert calls == [
        "POST /v1/quotes",
        "POST /v1/experiments",
        "GET /v1/experiments/exp_1",
        "GET /v1/experiments/exp_1",
        "GET /v1/experiments/exp_1/report",
        "GET /v1/experiments/exp_1/plots",
        "GET /v1/experiments/exp_1/plots/curves.png",
        "GET /v1/experiments/exp_1/plots/utilities.png",
    ]
    assert capsys.readouterr().out.splitlines() == [
        "quoted: 2467 rollouts",
        "running 2/6 seed 1 harness-s step 2/3",
        "done 6/6 done",
        "done 2400 rollouts",
    ]
    assert (tmp_path / "report.md").read_text().startswith("# Harness-S")
    assert (tmp_path / "curves.png").read_bytes() == PNG and (tmp_path / "utilities.png").read_bytes() == PNG
