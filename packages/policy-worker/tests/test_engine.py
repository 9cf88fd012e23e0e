"""The batched sampler: many episodes at once, cached prefixes, eviction, and sampling beside an update."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from conftest import SPEC, datum_from
from fastapi.testclient import TestClient

from harness_s_worker import updates as updates_module
from harness_s_worker.policies import Limits
from harness_s_worker.schemas import SampleRequest
from harness_s_worker.server import build, create_app

FIRST = {"messages": [{"role": "user", "content": "say yes"}], "sampling": {"max_tokens": 12}}


def scored(client, pid, ids):
    return client.post(f"/v2/policies/{pid}/score", json={"sequences": [{"ids": ids}]}).json()["logprobs"][0]


def gap(client, pid, prompt_before, turn):
    ids = prompt_before + turn["prompt_ids"] + turn["completion"]["ids"]
    n = len(prompt_before) + len(turn["prompt_ids"])
    return max(abs(a - b) for a, b in zip(scored(client, pid, ids)[n:], turn["completion"]["logprobs"]))


def test_thirty_two_concurrent_episodes_are_batched_and_each_reports_its_own_logprobs(client):
    client.put("/v2/policies/p1", json=SPEC)
    steps_before = client.policies.engine.steps
    with ThreadPoolExecutor(32) as pool:
        turns = list(
            pool.map(
                lambda i: client.post(
                    "/v2/policies/p1/sample",
                    json={"episode_id": f"e{i}", **FIRST, "sampling": {"max_tokens": 12, "seed": i}},
                ).json(),
                range(32),
            )
        )
    tokens = sum(len(t["completion"]["ids"]) for t in turns)
    # Far fewer decoding steps than tokens: sequences shared their steps.
    assert client.policies.engine.steps - steps_before < tokens / 4, (
        client.policies.engine.steps - steps_before,
        tokens,
    )
    assert max(gap(client, "p1", [], t) for t in turns) < 1e-4


def test_the_same_seed_draws_the_same_turn_alone_or_in_a_crowd(client):
    client.put("/v2/policies/p1", json=SPEC)
    alone = client.post(
        "/v2/policies/p1/sample", json={"episode_id": "alone", **FIRST, "sampling": {"max_tokens": 12, "seed": 7}}
    ).json()
    with ThreadPoolExecutor(16) as pool:
        crowd = list(
            pool.map(
                lambda i: client.post(
                    "/v2/policies/p1/sample",
                    json={
                        "episode_id": f"c{i}",
                        **FIRST,
                        "sampling": {"max_tokens": 12, "seed": 7 if i == 5 else 100 + i},
                    },
                ).json(),
                range(16),
            )
        )
    assert crowd[5]["completion"]["ids"] == alone["completion"]["ids"]


def test_a_later_turn_reuses_the_cached_prefix_and_an_evicted_one_is_pre_filled_again(tmp_path):
    for cache_mb, expect_hit in ((64, True), (0, False)):
        policies, name = build("tiny", tmp_path / str(cache_mb), "cpu", Limits(cache_mb=cache_mb))
        with TestClient(create_app(policies, model_name=name)) as c:
            c.put("/v2/policies/p1", json=SPEC)
            first = c.post(
                "/v2/policies/p1/sample", json={"episode_id": "e", **FIRST, "sampling": {"max_tokens": 8, "seed": 1}}
            ).json()
            hits = policies.engine.kv.hits
            second = c.post(
                "/v2/policies/p1/sample",
                json={
                    "episode_id": "e",
                    "append": [{"role": "tool", "content": "ok"}],
                    "sampling": {"max_tokens": 8, "seed": 2},
                },
            ).json()
            assert (policies.engine.kv.hits > hits) == expect_hit
            assert gap(c, "p1", first["prompt_ids"] + first["completion"]["ids"], second) < 1e-4


def test_sampling_goes_on_at_the_published_version_while_an_update_runs(client, monkeypatch):
    client.put("/v2/policies/p1", json=SPEC)
    s = client.post(
        "/v2/policies/p1/sample", json={"episode_id": "e", **FIRST, "sampling": {"max_tokens": 8, "seed": 1}}
    ).json()
    ids = s["prompt_ids"] + s["completion"]["ids"]
    datum = datum_from(s, 1.0)
    reached, release = threading.Event(), threading.Event()
    real = updates_module.micro_batch

    def held(*args):  # the update stops between two micro-batches, holding no lock
        real(*args)
        reached.set()
        assert release.wait(10)

    monkeypatch.setattr(updates_module, "micro_batch", held)
    before = scored(client, "p1", ids)
    uid = client.post(
        "/v2/policies/p1/updates",
        json={"base_version": 0, "datums": [datum], "optim": {"lr": 5e-2}},
        headers={"Idempotency-Key": "u"},
    ).json()["update_id"]
    assert reached.wait(10)
    during = client.post(
        "/v2/policies/p1/sample", json={"episode_id": "during", **FIRST, "sampling": {"max_tokens": 4, "seed": 2}}
    )
    assert during.status_code == 200 and during.json()["policy_version"] == 0
    assert client.get(f"/v2/updates/{uid}").json()["status"] == "running"
    assert scored(client, "p1", ids) == before  # the published adapter has not moved
    release.set()
    for _ in range(500):
        job = client.get(f"/v2/updates/{uid}").json()
        if job["status"] != "running":
            break
        threading.Event().wait(0.01)
    assert job["status"] == "done" and job["version"] == 1
    assert scored(client, "p1", ids) != before
    assert client.policies.policies["p1"].episodes == {}  # the episodes closed with the publish


def test_a_sample_past_its_deadline_is_a_503_and_the_worker_keeps_answering(tmp_path):
    policies, name = build("tiny", tmp_path, "cpu", Limits(sample_timeout_s=0.0))
    with TestClient(create_app(policies, model_name=name)) as c:
        c.put("/v2/policies/p1", json=SPEC)
        late = c.post("/v2/policies/p1/sample", json={"episode_id": "e", **FIRST})
        assert late.status_code == 503 and late.json()["error"]["code"] == "SAMPLE_TIMEOUT"
        policies.limits.sample_timeout_s = 30
        assert c.post("/v2/policies/p1/sample", json={"episode_id": "f", **FIRST}).status_code == 200


def test_closing_an_episode_frees_its_ids_and_cache_and_is_idempotent(client):
    client.put("/v2/policies/p1", json=SPEC)
    client.post("/v2/policies/p1/sample", json={"episode_id": "e", **FIRST, "sampling": {"max_tokens": 4, "seed": 1}})
    kv = client.policies.engine.kv
    assert "p1/e" in kv.entries and client.get("/v2/policies/p1").json()["open_episodes"] == 1
    assert client.delete("/v2/policies/p1/episodes/e").json() == {"closed": True}
    assert "p1/e" not in kv.entries and kv.used == sum(size for _, _, size in kv.entries.values())
    assert client.get("/v2/policies/p1").json()["open_episodes"] == 0
    assert client.delete("/v2/policies/p1/episodes/e").json() == {"closed": False}


def test_new_episodes_with_one_prompt_are_pre_filled_once_and_each_draws_its_own_turn(client):
    client.put("/v2/policies/p1", json=SPEC)
    policies = client.policies
    prefills, rows = policies.engine.prefills, policies.engine.prefilled_rows
    prepared = [
        policies.episodes.prepare(
            "p1",
            SampleRequest.model_validate({"episode_id": f"g{i}", **FIRST, "sampling": {"max_tokens": 12, "seed": i}}),
        )
        for i in range(6)
    ]
    futures = [policies.engine.submit(request) for request, _ in prepared]
    turns = [policies.episodes.finish(context, f.result(timeout=30)) for (_, context), f in zip(prepared, futures)]
    assert (policies.engine.prefills - prefills, policies.engine.prefilled_rows - rows) == (
        1,
        1,
    )  # one forward pass, one row, shared by six
    assert len({tuple(t["completion"]["ids"]) for t in turns}) > 1
    assert max(gap(client, "p1", [], t) for t in turns) < 1e-4


def test_prompts_of_different_lengths_are_pre_filled_one_shape_per_pass_on_cpu_and_each_keeps_its_own_logprobs(
    client, monkeypatch
):
    from harness_s_worker import engine

    monkeypatch.setattr(engine, "PER_SHAPE_FROM", 0)  # these prompts are short: one pass per shape all the same
    client.put("/v2/policies/p1", json=SPEC)
    policies = client.policies
    prefills, rows = policies.engine.prefills, policies.engine.prefilled_rows
    asks = ["say yes", "say yes please", "say yes please, now and then", "say no"]  # "say no": the shape of "say yes"
    prepared = [
        policies.episodes.prepare(
            "p1",
            SampleRequest.model_validate(
                {
                    "episode_id": f"d{i}",
                    "messages": [{"role": "user", "content": ask}],
                    "sampling": {"max_tokens": 12, "seed": i},
                }
            ),
        )
        for i, ask in enumerate(asks)
    ]
    futures = [policies.engine.submit(request) for request, _ in prepared]
    turns = [policies.episodes.finish(context, f.result(timeout=30)) for (_, context), f in zip(prepared, futures)]
    assert len({len(t["prompt_ids"]) for t in turns}) == 3
    # One joining batch, three shapes: three unpadded forward passes (the masked path costs four times the CPU), four rows.
    assert (policies.engine.prefills - prefills, policies.engine.prefilled_rows - rows) == (3, 4)
    assert max(gap(client, "p1", [], t) for t in turns) < 1e-4


def test_long_context_batches_decode_in_growing_buffers_with_the_same_logprobs(client, monkeypatch):
    from harness_s_worker import engine

    monkeypatch.setattr(engine, "GROW_FROM", 0)  # every batch on growing buffers (past their room, too)
    client.put("/v2/policies/p1", json=SPEC)
    with ThreadPoolExecutor(8) as pool:
        turns = list(
            pool.map(
                lambda i: client.post(
                    "/v2/policies/p1/sample",
                    json={"episode_id": f"g{i}", **FIRST, "sampling": {"max_tokens": 160 + 10 * i, "seed": i}},
                ).json(),
                range(8),
            )
        )
    assert any(len(t["completion"]["ids"]) > 128 for t in turns)  # grew past the first buffer's room
    assert max(gap(client, "p1", [], t) for t in turns) < 1e-4


def test_each_turn_reports_its_share_of_device_time_and_a_batch_never_counts_it_twice(client):
    client.put("/v2/policies/p1", json=SPEC)
    policies = client.policies
    prepared = [
        policies.episodes.prepare(
            "p1",
            SampleRequest.model_validate({"episode_id": f"d{i}", **FIRST, "sampling": {"max_tokens": 16, "seed": i}}),
        )
        for i in range(6)
    ]
    started = time.perf_counter()
    futures = [policies.engine.submit(request) for request, _ in prepared]
    turns = [policies.episodes.finish(context, f.result(timeout=30)) for (_, context), f in zip(prepared, futures)]
    wall_ms = (time.perf_counter() - started) * 1000
    device = [t["usage"]["device_ms"] for t in turns]
    assert all(d > 0 for d in device)
    assert sum(device) <= wall_ms  # shares of the passes the batch ran, not each turn's own wall time
    assert sum(device) > 0.3 * wall_ms  # and most of the time the batch took
