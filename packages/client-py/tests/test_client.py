"""The Python client of the service (issue 31, item 6): typed calls, safe retries, pagination, and
the rows converted to TRL's, verl's and SkyRL's shapes with nothing re-tokenised."""

import httpx
import pytest

from harness_s_client import HarnessSClient, HarnessSError, Trajectory, to_skyrl, to_trl, to_verl

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
}


def test_rows_convert_to_each_trainer_shape_unchanged():
    row = Trajectory.from_json(ROW)
    trl = to_trl([row, row])
    assert trl["completion_ids"] == [ROW["completion_ids"]] * 2 and trl["env_mask"] == [ROW["loss_mask"]] * 2 and trl["logprobs"] == [ROW["logprobs"]] * 2
    verl = to_verl(row)
    assert (verl["response_ids"], verl["response_mask"], verl["response_logprobs"], verl["reward_score"], verl["num_turns"]) == ([7, 8, 9, 10, 11], [1, 1, 0, 0, 1], ROW["logprobs"], 1.0, 2)
    skyrl = to_skyrl([row])
    assert skyrl["loss_masks"] == [[1, 1, 0, 0, 1]] and skyrl["stop_reasons"] == ["stop"] and skyrl["trajectory_ids"] == ["dec_1#0"]
    with pytest.raises(ValueError, match="differ in length"):
        Trajectory.from_json({**ROW, "logprobs": [0.0]})
    with pytest.raises(ValueError, match="other than 0 and 1"):
        Trajectory.from_json({**ROW, "loss_mask": [1, 2, 0, 0, 1]})


def fake(handler):
    return HarnessSClient("http://service", "key", transport=httpx.MockTransport(handler), retries=2)


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
        return httpx.Response(200, json={"trajectories": [{**ROW, "index": cursor}], "next": cursor + 1 if cursor < 2 else None})

    client = fake(handler)
    rows = client.trajectories("rsc_1")
    assert [r.index for r in rows] == [0, 1, 2]
    assert sum("cursor=0" in c for c in calls) == 2  # the 503 was asked again
    with pytest.raises(HarnessSError) as err:
        client.start_rescue("p", ["x"], {"endpoint": "e"})
    assert err.value.code == "STORE_UNAVAILABLE" and sum(c.startswith("POST") for c in calls) == 1


def test_an_error_keeps_its_code_and_a_4xx_is_not_repeated():
    calls = []

    def handler(req: httpx.Request) -> httpx.Response:
        calls.append(req.url.path)
        return httpx.Response(400, json={"error": {"code": "URL_NOT_ALLOWED", "message": "http://10.0.0.1: private"}})

    with pytest.raises(HarnessSError) as err:
        fake(handler).register_policy_endpoint("e", "protocol-v2", "http://10.0.0.1", "p")
    assert (err.value.status, err.value.code, len(calls)) == (400, "URL_NOT_ALLOWED", 1)


def test_wait_follows_a_rescue_slot_by_slot_with_long_polls_and_cancel_is_one_call():
    seen_params: list[tuple[str, str]] = []
    finished = iter([1, 3, 4])

    def handler(req: httpx.Request) -> httpx.Response:
        if req.method == "POST":
            return httpx.Response(200, json={"status": "cancelled", "completed": 1, "failed": []})
        seen_params.append((req.url.params["wait"], req.url.params["seen"]))
        n = next(finished)
        return httpx.Response(200, json={"status": "done" if n == 4 else "running", "completed": n, "failed": []})

    client = fake(handler)
    heard: list[int] = []
    status = client.wait("rsc_1", timeout_s=60, on_progress=lambda s: heard.append(s["completed"]))
    assert status["status"] == "done" and heard == [1, 3, 4]
    # Each read asks the service to hold it (at most 20 s) until past the slots already seen.
    assert [seen for _, seen in seen_params] == ["0", "1", "3"] and all(float(w) == 20.0 for w, _ in seen_params)
    assert client.cancel("rsc_1")["status"] == "cancelled"
