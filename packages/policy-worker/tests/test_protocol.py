import json
import time

from conftest import SPEC, TOOLS, datum_from

from harness_s_worker.toolcalls import parse_tool_calls


def wait(client, uid):
    for _ in range(200):
        job = client.get(f"/v2/updates/{uid}").json()
        if job["status"] in ("done", "failed"):
            return job
        time.sleep(0.02)
    raise AssertionError("update did not finish")


def test_health_needs_no_token_and_everything_else_does(client):
    assert client.get("/healthz", headers={"authorization": ""}).status_code == 200
    assert client.put("/v2/policies/p1", json=SPEC, headers={"authorization": "Bearer wrong"}).status_code == 401


def test_create_is_idempotent_and_a_different_spec_conflicts(client):
    first = client.put("/v2/policies/p1", json=SPEC)
    assert first.status_code == 201 and first.json()["version"] == 0
    assert client.put("/v2/policies/p1", json=SPEC).status_code == 200
    assert client.put("/v2/policies/p1", json={**SPEC, "seed": 2}).status_code == 409


def test_sample_keeps_the_episode_prefix_and_returns_per_token_logprobs(client):
    client.put("/v2/policies/p1", json=SPEC)
    first = client.post(
        "/v2/policies/p1/sample",
        json={
            "episode_id": "e1",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": TOOLS,
            "sampling": {"max_tokens": 8, "seed": 3},
        },
    ).json()
    comp = first["completion"]
    assert len(comp["ids"]) == len(comp["logprobs"]) and all(lp <= 0 for lp in comp["logprobs"])
    assert first["policy_version"] == 0
    second = client.post(
        "/v2/policies/p1/sample",
        json={
            "episode_id": "e1",
            "append": [{"role": "tool", "content": "ok"}],
            "sampling": {"max_tokens": 4, "seed": 4},
        },
    ).json()
    episode = client.policies.policies["p1"].episodes["e1"]
    assert episode.ids == first["prompt_ids"] + comp["ids"] + second["prompt_ids"] + second["completion"]["ids"]
    # The next turn starts with what the template closes a turn with (forced, never sampled), then the tool message's delta.
    chat = client.policies.chat
    forced = chat.forced_after(comp["ids"])
    assert second["prompt_ids"][: len(forced)] == forced
    tool_turn = chat.delta({"role": "assistant", "content": ""}, [{"role": "tool", "content": "ok"}])
    assert second["prompt_ids"][len(forced) :] == tool_turn


def test_replay_rebuilds_an_episode_exactly_and_scores_it_under_other_messages(client):
    # Prepare: a two-turn episode
    client.put("/v2/policies/p1", json=SPEC)
    messages = [{"role": "system", "content": "sibling system text"}, {"role": "user", "content": "hi"}]
    first = client.post(
        "/v2/policies/p1/sample",
        json={"episode_id": "e1", "messages": messages, "tools": TOOLS, "sampling": {"max_tokens": 8, "seed": 3}},
    ).json()
    append = [{"role": "tool", "content": "ok [harness] a note"}]
    second = client.post(
        "/v2/policies/p1/sample", json={"episode_id": "e1", "append": append, "sampling": {"max_tokens": 6, "seed": 4}}
    ).json()
    turns = [
        {"completion_ids": first["completion"]["ids"]},
        {"append": append, "completion_ids": second["completion"]["ids"]},
    ]
    # Act: the same messages, then H0's (no system text, no note)
    same = client.post(
        "/v2/policies/p1/replay", json={"version": {"exact": 0}, "messages": messages, "tools": TOOLS, "turns": turns}
    )
    base_turns = [
        turns[0],
        {"append": [{"role": "tool", "content": "ok"}], "completion_ids": turns[1]["completion_ids"]},
    ]
    base = client.post(
        "/v2/policies/p1/replay", json={"messages": messages[1:], "tools": TOOLS, "turns": base_turns}
    ).json()["turns"]
    # Assess: the same ids and (up to batching) the same log-probabilities; other prompts under H0's messages
    assert same.status_code == 200
    got = same.json()["turns"]
    assert [t["prompt_ids"] for t in got] == [first["prompt_ids"], second["prompt_ids"]]
    for t, s in zip(got, [first, second]):
        assert max(abs(a - b) for a, b in zip(t["logprobs"], s["completion"]["logprobs"])) < 1e-4
    assert base[0]["prompt_ids"] != first["prompt_ids"] and len(base[1]["prompt_ids"]) < len(second["prompt_ids"])
    assert [len(t["logprobs"]) for t in base] == [len(first["completion"]["ids"]), len(second["completion"]["ids"])]
    stale = client.post(
        "/v2/policies/p1/replay", json={"version": {"exact": 3}, "messages": messages, "turns": turns[:1]}
    )
    assert stale.status_code == 409
    bad = client.post("/v2/policies/p1/replay", json={"messages": messages, "turns": [{"completion_ids": [10**7]}]})
    assert bad.status_code == 400 and "outside the vocabulary" in bad.json()["error"]["message"]


def test_sampler_and_trainer_logprobs_agree_on_the_same_weights(client):
    client.put("/v2/policies/p1", json=SPEC)
    s = client.post(
        "/v2/policies/p1/sample",
        json={
            "episode_id": "e",
            "messages": [{"role": "user", "content": "target"}],
            "sampling": {"max_tokens": 16, "seed": 5},
        },
    ).json()
    ids = s["prompt_ids"] + s["completion"]["ids"]
    scored = client.post("/v2/policies/p1/score", json={"sequences": [{"ids": ids}]}).json()["logprobs"][0]
    n = len(s["prompt_ids"])
    diff = max(abs(a - b) for a, b in zip(scored[n:], s["completion"]["logprobs"]))
    assert diff < 1e-4


def test_update_is_an_idempotent_job_and_a_stale_base_is_409(client):
    client.put("/v2/policies/p1", json=SPEC)
    s = client.post(
        "/v2/policies/p1/sample",
        json={
            "episode_id": "e",
            "messages": [{"role": "user", "content": "hi"}],
            "sampling": {"max_tokens": 8, "seed": 1},
        },
    ).json()
    body = {"base_version": 0, "datums": [datum_from(s, 1.0)], "optim": {"lr": 1e-2}}
    first = client.post("/v2/policies/p1/updates", json=body, headers={"Idempotency-Key": "k1"})
    assert first.status_code == 202
    job = wait(client, first.json()["update_id"])
    assert job["status"] == "done" and job["version"] == 1
    assert job["metrics"]["sampler_trainer_logprob_absdiff"] < 1e-4
    assert job["metrics"]["tokens"] == len(s["completion"]["ids"])
    again = client.post("/v2/policies/p1/updates", json=body, headers={"Idempotency-Key": "k1"})
    assert again.json()["update_id"] == first.json()["update_id"]
    assert client.get("/v2/policies/p1").json()["version"] == 1
    stale = client.post("/v2/policies/p1/updates", json=body, headers={"Idempotency-Key": "k2"})
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "STALE_POLICY_VERSION"
    assert (
        client.post(
            "/v2/policies/p1/sample",
            json={"episode_id": "x", "version": {"exact": 0}, "messages": [{"role": "user", "content": "hi"}]},
        ).status_code
        == 409
    )


def test_positive_advantage_raises_the_sampled_tokens_probability_and_negative_lowers_it(client):
    for sign, pid in ((1.0, "up"), (-1.0, "down")):
        client.put(f"/v2/policies/{pid}", json=SPEC)
        s = client.post(
            f"/v2/policies/{pid}/sample",
            json={
                "episode_id": "e",
                "messages": [{"role": "user", "content": "hi"}],
                "sampling": {"max_tokens": 8, "seed": 9},
            },
        ).json()
        d = datum_from(s, sign)
        before = sum(
            client.post(f"/v2/policies/{pid}/score", json={"sequences": [{"ids": d["ids"]}]}).json()["logprobs"][0]
        )
        r = client.post(
            f"/v2/policies/{pid}/updates",
            json={"base_version": 0, "datums": [d], "optim": {"lr": 5e-2, "epochs": 3}, "loss": {"clip_high": 10}},
            headers={"Idempotency-Key": pid},
        )
        wait(client, r.json()["update_id"])
        after = sum(
            client.post(f"/v2/policies/{pid}/score", json={"sequences": [{"ids": d["ids"]}]}).json()["logprobs"][0]
        )
        assert (after - before) * sign > 0


def test_kl_to_the_base_model_is_measured_with_the_adapter_disabled(client):
    client.put("/v2/policies/p1", json=SPEC)
    s = client.post(
        "/v2/policies/p1/sample",
        json={
            "episode_id": "e",
            "messages": [{"role": "user", "content": "hi"}],
            "sampling": {"max_tokens": 8, "seed": 1},
        },
    ).json()
    r = client.post(
        "/v2/policies/p1/updates",
        json={
            "base_version": 0,
            "datums": [datum_from(s, 1.0)],
            "optim": {"lr": 1e-2},
            "loss": {"kl_coef": 0.1, "agg": "sequence-mean"},
        },
        headers={"Idempotency-Key": "kl"},
    )
    job = wait(client, r.json()["update_id"])
    assert job["status"] == "done" and abs(job["metrics"]["kl"]) < 1e-6  # a fresh LoRA (B = 0) equals the base


def test_bad_bodies_are_400_with_issues(client):
    client.put("/v2/policies/p1", json=SPEC)
    bad = client.post(
        "/v2/policies/p1/updates",
        json={
            "base_version": 0,
            "datums": [
                {
                    "sample_id": "s",
                    "group_id": "g",
                    "ids": [1, 2],
                    "loss_mask": [1, 1],
                    "behaviour_logprobs": [0, 0],
                    "advantage": 1,
                }
            ],
            "optim": {"lr": 1e-3},
        },
        headers={"Idempotency-Key": "b"},
    )
    assert bad.status_code == 400
    assert client.post("/v2/policies/p1/sample", json={"episode_id": "e", "messagez": []}).status_code == 400
    assert client.put("/v2/policies/bad%20id", json=SPEC).status_code == 400


def test_delete_frees_the_policy_and_its_files(client, tmp_path):
    client.put("/v2/policies/p1", json=SPEC)
    cp = client.post("/v2/policies/p1/checkpoints").json()
    assert cp["version"] == 0 and (tmp_path / "policies" / "p1" / "v0").exists()
    assert client.delete("/v2/policies/p1").status_code == 200
    assert not (tmp_path / "policies" / "p1").exists()
    assert client.get("/v2/policies/p1").status_code == 404


def test_chat_completions_facade_returns_token_ids_and_logprobs(client):
    client.put("/v2/policies/p1", json=SPEC)
    r = client.post(
        "/v1/chat/completions",
        json={
            "model": "p1@v0",
            "messages": [{"role": "user", "content": "hi"}],
            "tools": TOOLS,
            "max_tokens": 6,
            "seed": 2,
            "logprobs": True,
        },
    )
    assert r.status_code == 200
    body = r.json()
    choice = body["choices"][0]
    assert body["model"] == "p1@v0" and len(choice["token_ids"]) == body["usage"]["completion_tokens"] >= 1
    assert len(choice["logprobs"]["content"]) == len(choice["token_ids"])
    assert (
        body["prompt_token_ids"]
        == client.post(
            "/v2/policies/p1/render",
            json={"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS, "add_generation_prompt": True},
        ).json()["ids"]
    )
    assert (
        client.post(
            "/v1/chat/completions", json={"model": "p1@v3", "messages": [{"role": "user", "content": "hi"}]}
        ).status_code
        == 404
    )
    assert (
        client.post(
            "/v1/chat/completions", json={"model": "nope", "messages": [{"role": "user", "content": "hi"}]}
        ).status_code
        == 404
    )


def test_tool_calls_are_parsed_and_malformed_ones_reported():
    content, calls, err = parse_tool_calls(
        'I will answer. <tool_call>{"name": "submit", "arguments": {"answer": "yes"}}</tool_call>', "hermes"
    )
    assert content == "I will answer." and err is None
    assert calls[0]["function"] == {"name": "submit", "arguments": '{"answer": "yes"}'}
    assert parse_tool_calls("<tool_call>{not json}</tool_call>", "hermes")[2].startswith("tool call 0 is not JSON")
    assert parse_tool_calls("<tool_call>{", "hermes")[2] == "unterminated <tool_call>"
    assert parse_tool_calls('<tool_call>{"arguments": {}}</tool_call>', "hermes")[2].startswith("tool call 0 needs")


def _weights(client, pid):
    p = client.policies.policies[pid]
    return [t.detach().clone() for t in p.optimizer.param_groups[0]["params"]]


def test_non_finite_and_out_of_range_numbers_are_400_naming_the_field(client):
    client.put("/v2/policies/p1", json=SPEC)
    s = client.post(
        "/v2/policies/p1/sample",
        json={
            "episode_id": "e",
            "messages": [{"role": "user", "content": "hi"}],
            "sampling": {"max_tokens": 6, "seed": 1},
        },
    ).json()
    good = datum_from(s, 1.0)
    vocab = client.policies.adapted.vocab_size()
    cases = {
        "advantage": {**good, "advantage": float("nan")},
        "behaviour_logprobs": {**good, "behaviour_logprobs": [float("-inf")] + good["behaviour_logprobs"][1:]},
        "loss_mask": {**good, "loss_mask": [0] + [2] * (len(good["ids"]) - 1)},
        "outside the vocabulary": {**good, "ids": good["ids"][:-1] + [vocab]},
        "same length": {**good, "loss_mask": good["loss_mask"][:-1]},
    }
    for field, datum in cases.items():
        body = json.dumps(
            {"base_version": 0, "datums": [datum], "optim": {"lr": 1e-2}}
        )  # NaN and -Infinity as Python's json writes them
        r = client.post(
            "/v2/policies/p1/updates",
            content=body,
            headers={"Idempotency-Key": field, "content-type": "application/json"},
        )
        assert r.status_code == 400, field
        assert field in str(r.json()["error"]), (field, r.json())
    scored = client.post("/v2/policies/p1/score", json={"sequences": [{"ids": [1, vocab + 5]}]})
    assert scored.status_code == 400 and "outside the vocabulary" in scored.json()["error"]["message"]
    assert client.get("/v2/policies/p1").json()["version"] == 0


def test_an_update_whose_loss_is_not_finite_fails_and_leaves_version_adapter_and_optimizer_untouched(
    client, monkeypatch
):
    from harness_s_worker import ppo as module

    client.put("/v2/policies/p1", json=SPEC)
    s = client.post(
        "/v2/policies/p1/sample",
        json={
            "episode_id": "e",
            "messages": [{"role": "user", "content": "hi"}],
            "sampling": {"max_tokens": 6, "seed": 1},
        },
    ).json()
    body = {"base_version": 0, "datums": [datum_from(s, 1.0)], "optim": {"lr": 5e-2, "epochs": 3}}
    before = _weights(client, "p1")
    real = module.datum_terms
    calls = {"n": 0}

    def poisoned(*args):  # the second epoch's loss turns NaN, after the first one stepped
        calls["n"] += 1
        surr, clip, kl = real(*args)
        return (surr * float("nan") if calls["n"] >= 2 else surr), clip, kl

    monkeypatch.setattr(module, "datum_terms", poisoned)
    job = wait(
        client,
        client.post("/v2/policies/p1/updates", json=body, headers={"Idempotency-Key": "nan"}).json()["update_id"],
    )
    assert job["status"] == "failed" and "not finite" in job["error"]
    assert client.get("/v2/policies/p1").json()["version"] == 0
    assert all(bool((a == b).all()) for a, b in zip(before, _weights(client, "p1")))
    assert client.policies.policies["p1"].optimizer.state_dict()["state"] == {}
    monkeypatch.setattr(module, "datum_terms", real)
    ok = wait(
        client,
        client.post("/v2/policies/p1/updates", json=body, headers={"Idempotency-Key": "after"}).json()["update_id"],
    )
    assert ok["status"] == "done" and ok["version"] == 1
    assert len(ok["metrics"]["epochs"]) == 3
    assert (
        client.post(
            "/v2/policies/p1/sample",
            json={"episode_id": "e2", "messages": [{"role": "user", "content": "hi"}], "sampling": {"max_tokens": 4}},
        ).status_code
        == 200
    )


def test_an_extreme_behaviour_logprob_cannot_poison_the_policy(client):
    client.put("/v2/policies/p1", json=SPEC)
    s = client.post(
        "/v2/policies/p1/sample",
        json={
            "episode_id": "e",
            "messages": [{"role": "user", "content": "hi"}],
            "sampling": {"max_tokens": 6, "seed": 1},
        },
    ).json()
    d = datum_from(s, -1.0)
    d["behaviour_logprobs"] = d["behaviour_logprobs"][:-1] + [-1e4]
    job = wait(
        client,
        client.post(
            "/v2/policies/p1/updates",
            json={"base_version": 0, "datums": [d], "optim": {"lr": 1e-2}},
            headers={"Idempotency-Key": "x"},
        ).json()["update_id"],
    )
    assert job["status"] == "done", job  # the clamped ratio keeps the loss finite: the update applies
    after = client.post(
        "/v2/policies/p1/sample",
        json={
            "episode_id": "e2",
            "messages": [{"role": "user", "content": "hi"}],
            "sampling": {"max_tokens": 6, "seed": 2},
        },
    )
    assert after.status_code == 200
    assert all(lp == lp and lp <= 0 for lp in after.json()["completion"]["logprobs"])
    scored = client.post("/v2/policies/p1/score", json={"sequences": [{"ids": d["ids"]}]})
    assert scored.status_code == 200 and all(lp == lp for lp in scored.json()["logprobs"][0])


def _client(tmp_path, **limits):
    from fastapi.testclient import TestClient

    from harness_s_worker.policies import Limits
    from harness_s_worker.server import build, create_app

    policies, name = build("tiny", tmp_path, "cpu", Limits(**limits))
    c = TestClient(create_app(policies, model_name=name, max_body_bytes=200_000))
    c.policies = policies
    return c


def test_caps_bodies_context_and_base_model_are_4xx_with_a_code_and_the_worker_keeps_answering(tmp_path):
    c = _client(tmp_path, policies=2, episodes_per_policy=2)
    assert c.put("/v2/policies/x", json={**SPEC, "base_model": "Qwen2.5-7B"}).status_code == 400
    assert c.put("/v2/policies/a", json=SPEC).status_code == 201
    assert c.put("/v2/policies/b", json=SPEC).status_code == 201
    third = c.put("/v2/policies/c", json=SPEC)
    assert third.status_code == 429 and third.json()["error"]["code"] == "CAPACITY_EXCEEDED"
    first = {"messages": [{"role": "user", "content": "hi"}], "sampling": {"max_tokens": 2}}
    assert c.post("/v2/policies/a/sample", json={"episode_id": "e1", **first}).status_code == 200
    assert c.post("/v2/policies/a/sample", json={"episode_id": "e2", **first}).status_code == 200
    full = c.post("/v2/policies/a/sample", json={"episode_id": "e3", **first})
    assert full.status_code == 429 and full.json()["error"]["code"] == "CAPACITY_EXCEEDED"
    big = c.post(
        "/v2/policies/b/sample", json={"episode_id": "big", "messages": [{"role": "user", "content": "x" * 300_000}]}
    )
    assert big.status_code == 413 and big.json()["error"]["code"] == "PAYLOAD_TOO_LARGE"
    chunked = c.post(
        "/v2/policies/b/sample",
        content=iter([b'{"episode_id": "c", "messages": [{"role": "user", "content": "', b"x" * 250_000, b'"}]}']),
        headers={"content-type": "application/json"},
    )
    assert chunked.status_code == 413
    long = c.post(
        "/v2/policies/b/sample", json={"episode_id": "long", "messages": [{"role": "user", "content": "word " * 9000}]}
    )
    assert long.status_code == 400 and "context" in long.json()["error"]["message"]
    assert c.get("/healthz").status_code == 200
    assert c.post("/v2/policies/b/sample", json={"episode_id": "ok", **first}).status_code == 200


def test_a_checkpoint_restores_adapter_optimizer_and_version_on_a_fresh_worker(tmp_path):
    first = _client(tmp_path)
    first.put("/v2/policies/p1", json=SPEC)
    s = first.post(
        "/v2/policies/p1/sample",
        json={
            "episode_id": "e",
            "messages": [{"role": "user", "content": "hi"}],
            "sampling": {"max_tokens": 6, "seed": 1},
        },
    ).json()
    done = wait(
        first,
        first.post(
            "/v2/policies/p1/updates",
            json={"base_version": 0, "datums": [datum_from(s, 1.0)], "optim": {"lr": 5e-2}},
            headers={"Idempotency-Key": "u"},
        ).json()["update_id"],
    )
    assert done["version"] == 1
    saved = first.post("/v2/policies/p1/checkpoints").json()
    assert saved["checkpoint"] == "p1/v1"
    probe = {"sequences": [{"ids": s["prompt_ids"] + s["completion"]["ids"]}]}
    expected = first.post("/v2/policies/p1/score", json=probe).json()["logprobs"][0]
    fresh = _client(tmp_path)  # a new worker process on the same state folder
    restored = fresh.put("/v2/policies/p1-again", json={**SPEC, "init_from": "p1/v1"})
    assert restored.status_code == 201 and restored.json()["version"] == 1
    got = fresh.post("/v2/policies/p1-again/score", json=probe).json()["logprobs"][0]
    assert max(abs(a - b) for a, b in zip(got, expected)) < 1e-6
    old, new = (
        first.policies.policies["p1"].optimizer.state_dict(),
        fresh.policies.policies["p1-again"].optimizer.state_dict(),
    )
    assert all(bool((old["state"][k]["exp_avg"] == new["state"][k]["exp_avg"]).all()) for k in old["state"])
    for bad in ("../../etc", "p1/v7", "/tmp"):
        assert fresh.put(f"/v2/policies/bad-{len(bad)}", json={**SPEC, "init_from": bad}).status_code == 400


def test_the_ratio_uses_the_behaviour_logprobs_and_the_clip_stops_what_is_past_it(client):
    # Off-policy by one nat on every token (ratio e > 1 + clip_high): a positive advantage is fully
    # clipped, so nothing moves; on-policy (ratio 1) the same datum moves the adapter. With the
    # ratio fixed to 1, or no clipping, the off-policy update would move it too.
    for pid, shift in (("off", 1.0), ("on", 0.0)):
        # A fresh adapter and a fresh optimizer: AdamW moves nothing on a zero gradient.
        client.put(f"/v2/policies/{pid}", json=SPEC)
        s = client.post(
            f"/v2/policies/{pid}/sample",
            json={
                "episode_id": "e",
                "messages": [{"role": "user", "content": "hi"}],
                "sampling": {"max_tokens": 8, "seed": 4},
            },
        ).json()
        d = datum_from(s, 1.0)
        current = client.post(f"/v2/policies/{pid}/score", json={"sequences": [{"ids": d["ids"]}]}).json()["logprobs"][
            0
        ]
        n = len(s["prompt_ids"])
        d["behaviour_logprobs"] = [0.0] * n + [min(0.0, lp - shift) for lp in current[n:]]
        before = _weights(client, pid)
        job = wait(
            client,
            client.post(
                f"/v2/policies/{pid}/updates",
                json={"base_version": 0, "datums": [d], "optim": {"lr": 5e-2}, "loss": {"clip_high": 0.2}},
                headers={"Idempotency-Key": pid},
            ).json()["update_id"],
        )
        moved = max(float((a - b).abs().max()) for a, b in zip(before, _weights(client, pid)))
        if shift:
            clipped_tokens = sum(1 for lp in current[n:] if lp - shift < 0)
            assert job["metrics"]["clip_fraction"] >= clipped_tokens / len(current[n:]) - 1e-9
            assert moved == 0.0, moved
        else:
            assert job["metrics"]["clip_fraction"] == 0.0
            assert moved > 0.0


def test_the_sampler_returns_the_logprobs_of_the_distribution_it_sampled_from(client):
    # Evaluation samples at other temperatures and top-p report the log-probabilities of the
    # tempered, truncated distribution they were drawn from; computing them from the raw logits
    # (or at another temperature) fails here.
    import torch

    client.put("/v2/policies/p1", json=SPEC)
    policies = client.policies
    for temperature, top_p in ((1.0, 1.0), (0.7, 1.0), (1.6, 1.0), (1.0, 0.8)):
        purpose = "train" if temperature == 1 and top_p == 1 else "eval"
        s = client.post(
            "/v2/policies/p1/sample",
            json={
                "episode_id": f"t{temperature}-{top_p}",
                "messages": [{"role": "user", "content": "hi"}],
                "sampling": {
                    "temperature": temperature,
                    "top_p": top_p,
                    "max_tokens": 12,
                    "seed": 3,
                    "purpose": purpose,
                },
            },
        ).json()
        prefix, ids = s["prompt_ids"], s["completion"]["ids"]
        with torch.no_grad(), policies.adapted.lock:
            policies.adapted.model.set_adapter(policies.policies["p1"].adapter)
            logits = policies.adapted.model(input_ids=torch.tensor([prefix + ids])).logits[0].float()
        expected = [float(nucleus(logits[len(prefix) - 1 + t], temperature, top_p)[tok]) for t, tok in enumerate(ids)]
        assert max(abs(a - b) for a, b in zip(s["completion"]["logprobs"], expected)) < 1e-4, (temperature, top_p)


def nucleus(logits, temperature, top_p):
    """The tempered, top-p-truncated log-distribution, written out independently of the worker's."""
    import torch

    probs = torch.softmax(logits / temperature, dim=-1)
    order = torch.argsort(probs, descending=True)
    keep, mass = [], 0.0
    for i in order.tolist():
        keep.append(i)
        mass += float(probs[i])
        if mass >= top_p:
            break
    out = torch.full_like(probs, float("-inf"))
    out[keep] = torch.log(probs[keep] / probs[keep].sum())
    return out


def test_each_token_is_drawn_from_the_distribution_whose_logprob_is_reported():
    # Same generator state, drawn independently from the reported distribution: the same token.
    # Drawing from another temperature than the one reported fails here.
    import random

    import torch

    from harness_s_worker.sampling import SamplingRule, draw

    logits = torch.randn(2, 50, generator=torch.Generator().manual_seed(0)) * 3
    for temperature, top_p in ((0.5, 1.0), (1.7, 1.0), (1.0, 0.7)):
        for seed in range(40):
            tokens, logprobs = draw(
                logits, [SamplingRule(temperature, top_p)] * 2, [random.Random(seed), random.Random(seed + 1000)]
            )
            for row in range(2):
                reported = nucleus(logits[row], temperature, top_p)
                u = 1.0 - random.Random(seed + 1000 * row).random()
                cdf = reported.exp().cumsum(0)
                again = int((cdf < u * cdf[-1]).sum())  # inverse CDF, written out
                assert tokens[row] == again, (temperature, top_p, seed)
                assert abs(logprobs[row] - float(reported[again])) < 1e-5


def test_a_training_sample_away_from_temperature_1_is_refused(client):
    client.put("/v2/policies/p1", json=SPEC)
    r = client.post(
        "/v2/policies/p1/sample",
        json={"episode_id": "e", "messages": [{"role": "user", "content": "hi"}], "sampling": {"temperature": 0.7}},
    )
    assert r.status_code == 400 and "purpose" in r.json()["error"]["message"]


def test_a_stale_version_409_states_the_version_held_and_the_one_wanted(client):
    client.put("/v2/policies/p1", json=SPEC)
    hi = [{"role": "user", "content": "hi"}]
    sample = client.post("/v2/policies/p1/sample", json={"episode_id": "e", "version": {"exact": 3}, "messages": hi})
    below = client.post("/v2/policies/p1/sample", json={"episode_id": "e", "version": {"min": 2}, "messages": hi})
    s = client.post(
        "/v2/policies/p1/sample", json={"episode_id": "f", "messages": hi, "sampling": {"max_tokens": 4, "seed": 1}}
    ).json()
    update = client.post(
        "/v2/policies/p1/updates",
        json={"base_version": 5, "datums": [datum_from(s, 1.0)], "optim": {"lr": 1e-2}},
        headers={"Idempotency-Key": "k"},
    )
    for res, wanted in [(sample, 3), (below, 2), (update, 5)]:
        assert res.status_code == 409
        assert {k: res.json()["error"][k] for k in ["code", "held_version", "wanted_version"]} == {
            "code": "STALE_POLICY_VERSION",
            "held_version": 0,
            "wanted_version": wanted,
        }
