"""Issue 30, items 16-19: what a careless or hostile caller sends the worker, and how it stops."""

import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from conftest import SPEC, datum_from

from harness_s_worker import launch

HI = [{"role": "user", "content": "hi"}]


def finite(values):
    return all(isinstance(v, float) and math.isfinite(v) for v in values)


def test_extreme_temperatures_and_nuclei_give_finite_logprobs(client):
    client.put("/v2/policies/p1", json=SPEC)
    for i, (temperature, top_p) in enumerate([(1e-300, 1.0), (1.0, 1e-300), (5e-324, 1e-300), (0.3, 0.05)]):
        sampling = {"max_tokens": 6, "seed": i, "temperature": temperature, "top_p": top_p, "purpose": "eval"}
        out = client.post("/v2/policies/p1/sample", json={"episode_id": f"e{i}", "messages": HI, "sampling": sampling})
        assert out.status_code == 200, out.text
        assert finite(out.json()["completion"]["logprobs"]), (temperature, top_p, out.json()["completion"]["logprobs"])
    # Variant: the chat façade at a vanishing temperature.
    chat = client.post(
        "/v1/chat/completions",
        json={"model": "p1", "messages": HI, "temperature": 1e-300, "logprobs": True, "max_tokens": 6},
    )
    assert chat.status_code == 200
    assert finite([t["logprob"] for t in chat.json()["choices"][0]["logprobs"]["content"]])


def test_bad_init_from_and_lora_targets_are_400_naming_the_field(client):
    for bad in ["p1\x00/v1", "x" * 5000, "p1", "p1/v1/../../x"]:
        res = client.put("/v2/policies/b1", json={**SPEC, "init_from": bad})
        assert res.status_code == 400, (bad[:20], res.status_code)
    nope = client.put("/v2/policies/b2", json={**SPEC, "lora": {**SPEC["lora"], "targets": ["nope_proj"]}})
    assert nope.status_code == 400
    assert "nope_proj" in nope.json()["error"]["message"] and "q_proj" in nope.json()["error"]["message"]
    # Variant: one good target and one that matches nothing is still refused (never adapts fewer modules than asked).
    half = client.put("/v2/policies/b3", json={**SPEC, "lora": {**SPEC["lora"], "targets": ["q_proj", "qq_proj"]}})
    assert half.status_code == 400
    assert (
        client.put("/v2/policies/b4", json={**SPEC, "lora": {**SPEC["lora"], "targets": ["q\x00"]}}).status_code == 400
    )
    assert client.get("/healthz").json()["policies"] == 0


def test_what_is_not_honoured_is_refused(client):
    client.put("/v2/policies/p1", json=SPEC)
    both = client.post(
        "/v2/policies/p1/sample", json={"episode_id": "e", "messages": HI, "append": [{"role": "tool", "content": "x"}]}
    )
    assert both.status_code == 400
    neither = client.post("/v2/policies/p1/sample", json={"episode_id": "e2"})
    assert neither.status_code == 400
    for model in ["p1@vX", "p1@v", "p1@v1.5"]:
        assert client.post("/v1/chat/completions", json={"model": model, "messages": HI}).status_code == 400, model
    # Variant: a version the policy is not at is a model the worker does not serve (vLLM's 404), never served at the version it is at.
    stale = client.post("/v1/chat/completions", json={"model": "p1@v3", "messages": HI})
    assert stale.status_code == 404 and stale.json()["error"] == {
        "message": "The model `p1@v3` does not exist.",
        "type": "NotFoundError",
        "param": "model",
        "code": 404,
    }
    assert client.post("/v1/chat/completions", json={"model": "p1@v0", "messages": HI}).status_code == 200


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(state: Path, port: int) -> subprocess.Popen:
    args = [
        sys.executable,
        "-m",
        "harness_s_worker.launch",
        "--model",
        "tiny",
        "--port",
        str(port),
        "--state-dir",
        str(state),
    ]
    return subprocess.Popen(
        args, stderr=subprocess.PIPE, text=True, env={**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    )


def ready(url: str, proc: subprocess.Popen) -> None:
    for _ in range(300):
        try:
            if httpx.get(f"{url}/healthz").json()["pid"] == proc.pid:
                return
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.1)
    raise AssertionError("the worker did not start")


def test_sigterm_drains_an_accepted_update_with_log_lines_and_a_restart_restores_the_saved_policies(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start(tmp_path, port)
    try:
        ready(url, proc)
        http = httpx.Client(base_url=url, timeout=30)
        http.put("/v2/policies/p1", json=SPEC)
        s = http.post(
            "/v2/policies/p1/sample", json={"episode_id": "e", "messages": HI, "sampling": {"max_tokens": 8, "seed": 1}}
        ).json()
        assert http.post("/v2/policies/p1/checkpoints").json()["checkpoint"] == "p1/v0"
        # An update long enough to be running when the signal comes (many epochs over many datums).
        body = {
            "base_version": 0,
            "datums": [datum_from(s, 1.0, f"s{i}") for i in range(64)],
            "optim": {"lr": 1e-3, "epochs": 16, "micro_batch_tokens": 64},
        }
        job = http.post("/v2/policies/p1/updates", json=body, headers={"Idempotency-Key": "long"}).json()
        time.sleep(0.5)
        assert http.get(f"/v2/updates/{job['update_id']}").json()["status"] == "running"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=90)
        # uvicorn re-raises the signal it handled once it has shut down: the exit status says SIGTERM.
        assert proc.returncode in (0, -signal.SIGTERM), err
        # Still running when the worker stopped (it waited for it), not done before: said by the log, not by a time (the
        # update ended within 0.5 s of the signal on a fast machine).
        assert "waiting up to" in err and "for 1 accepted update(s)" in err, err
        assert f"update {job['update_id']} of p1 done (now v1)" in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
    # Restarted on the same folder: the policy is there at its newest checkpoint, with its spec.
    again = start(tmp_path, port)
    try:
        ready(url, again)
        assert httpx.get(f"{url}/healthz").json()["policies"] == 1
        assert httpx.put(f"{url}/v2/policies/p1", json=SPEC).status_code == 200
        assert httpx.get(f"{url}/v2/policies/p1").json()["version"] == 0
    finally:
        again.terminate()
        again.communicate(timeout=30)


def worker_main(monkeypatch, capsys, *argv):
    """The worker's `main` in this process, as `python -m harness_s_worker.launch ARGV` runs it: a
    usage error exits before anything is served (and an exception other than the exit fails the
    test, as a traceback would), without a process of its own importing torch again."""
    monkeypatch.setattr(sys, "argv", ["harness_s_worker.launch", *argv])
    interval = sys.getswitchinterval()
    try:
        with pytest.raises(SystemExit) as exited:
            launch.main()
    finally:
        sys.setswitchinterval(interval)
    return exited.value.code, capsys.readouterr().err


def test_a_bad_model_folder_or_a_port_in_use_is_a_usage_error_not_a_traceback(tmp_path, monkeypatch, capsys):
    code, err = worker_main(monkeypatch, capsys, "--model", str(tmp_path / "nope"))
    assert code == 2 and "no such folder" in err
    (tmp_path / "empty").mkdir()
    code, err = worker_main(monkeypatch, capsys, "--model", str(tmp_path / "empty"), "--state-dir", str(tmp_path / "s"))
    assert code == 2 and "cannot be loaded" in err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = worker_main(monkeypatch, capsys, "--model", "tiny", "--port", str(port))
    assert code == 2 and "in use" in err


def test_a_usage_error_is_said_before_torch_is_imported(tmp_path):
    """The launcher checks its arguments first: a bad folder or a port in use costs no torch import."""
    probe = "import runpy, sys\ntry:\n    runpy.run_module('harness_s_worker.launch', run_name='__main__')\nexcept SystemExit as e:\n    print(e.code, 'torch' in sys.modules)\n"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for argv in (["--model", str(tmp_path / "nope")], ["--port", str(port)]):
            out = subprocess.run(
                [sys.executable, "-c", probe, *argv],
                capture_output=True,
                text=True,
                timeout=60,
                cwd=Path(__file__).parents[1],
            )
            assert out.stdout.split() == ["2", "False"], (argv, out.stdout, out.stderr)


def test_each_route_takes_only_the_body_it_can_use_and_score_refuses_a_sequence_past_the_context(client):
    """Issue 67 item 12: a non-text route's body is bounded by what the route can use at this
    model's context (a 59 MB score held the event loop 8-11 s); /score checks each sequence
    against the context as /replay does."""
    from harness_s_worker.schemas import SCORE_CONTEXTS
    from harness_s_worker.server import OTHER_BYTES, score_body_bytes

    assert client.put("/v2/policies/p1", json=SPEC).status_code == 201
    context = client.policies.adapted.max_context()
    too_big = score_body_bytes(context) + 1
    refused = client.post("/v2/policies/p1/score", content=b" " * too_big, headers={"content-type": "application/json"})
    assert (refused.status_code, refused.json()["error"]["code"]) == (413, "PAYLOAD_TOO_LARGE")
    assert too_big < 64 << 20  # well under the old 64 MiB
    put = client.put("/v2/policies/p2", content=b" " * (OTHER_BYTES + 1), headers={"content-type": "application/json"})
    assert put.status_code == 413
    long = client.post(
        "/v2/policies/p1/score", json={"version": {"exact": 0}, "sequences": [{"ids": [1] * (context + 1)}]}
    )
    assert (long.status_code, long.json()["error"]["code"]) == (400, "CONTEXT_TOO_LONG")
    many = client.post(
        "/v2/policies/p1/score",
        json={"version": {"exact": 0}, "sequences": [{"ids": [1] * context}] * (SCORE_CONTEXTS + 1)},
    )
    assert (many.status_code, many.json()["error"]["code"]) in {(400, "VALIDATION_FAILED"), (413, "PAYLOAD_TOO_LARGE")}
    ok = client.post("/v2/policies/p1/score", json={"version": {"exact": 0}, "sequences": [{"ids": [1, 2, 3]}]})
    assert ok.status_code == 200
