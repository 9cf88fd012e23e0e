"""A sample request sent again with its Idempotency-Key (its reply lost to a proxy's 500 or a
dropped connection) gets the answer already given, and the episode holds that one turn only;
when both copies were sampled, the episode keeps the answer the first to finish gave."""

from conftest import SPEC

MESSAGES = [{"role": "user", "content": "find the answer"}]


def test_a_repeated_keyed_turn_gets_the_same_answer_and_the_episode_one_turn(client):
    client.put("/v2/policies/p", json=SPEC)
    first = {"episode_id": "e1", "messages": MESSAGES, "sampling": {"max_tokens": 6}}
    a = client.post("/v2/policies/p/sample", json=first, headers={"Idempotency-Key": "e1#0"}).json()
    again = client.post("/v2/policies/p/sample", json=first, headers={"Idempotency-Key": "e1#0"}).json()
    assert again == a
    later = {"episode_id": "e1", "append": [{"role": "user", "content": "more"}], "sampling": {"max_tokens": 6}}
    b = client.post("/v2/policies/p/sample", json=later, headers={"Idempotency-Key": "e1#1"}).json()
    b_again = client.post("/v2/policies/p/sample", json=later, headers={"Idempotency-Key": "e1#1"}).json()
    assert b_again == b
    # The episode holds each turn once: its ids are the first prompt, the first completion, the second prompt, the second completion.
    ids = client.policies.get("p").episodes["e1"].ids
    assert ids == a["prompt_ids"] + a["completion"]["ids"] + b["prompt_ids"] + b["completion"]["ids"]
    # Without a key the same append is a new turn (the episode grows).
    client.post("/v2/policies/p/sample", json=later)
    assert len(client.policies.get("p").episodes["e1"].ids) > len(ids)


def test_two_copies_sampled_at_once_leave_the_first_finished_answer_in_the_episode(client):
    client.put("/v2/policies/p", json=SPEC)
    from harness_s_worker.schemas import SampleRequest

    body = SampleRequest(episode_id="e2", messages=MESSAGES, sampling={"max_tokens": 6, "seed": 1})
    episodes, engine = client.policies.episodes, client.policies.engine
    req1, ctx1 = episodes.prepare("p", body, "e2#0")
    req2, ctx2 = episodes.prepare(
        "p", SampleRequest(episode_id="e2", messages=MESSAGES, sampling={"max_tokens": 6, "seed": 2}), "e2#0"
    )
    out2 = episodes.finish(ctx2, engine.submit(req2).result(timeout=60))
    out1 = episodes.finish(ctx1, engine.submit(req1).result(timeout=60))
    assert out1 == out2  # the later finish hands back what the earlier one recorded
    assert client.policies.get("p").episodes["e2"].ids == out2["prompt_ids"] + out2["completion"]["ids"]
