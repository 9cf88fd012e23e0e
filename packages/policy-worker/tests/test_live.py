"""A trainer's live model served over protocol v2 (`live.serve_live`): sampled and scored with the
weights as they are now, its version moved only by the trainer, nothing added to the model and
nothing trained or created through the endpoint."""

import httpx
import torch

from harness_s_worker.live import serve_live
from harness_s_worker.tiny import build_tiny

MESSAGES = [{"role": "user", "content": "find the answer"}]


def test_the_live_model_is_sampled_and_scored_as_it_is_and_its_version_is_the_trainers():
    model, tokenizer = build_tiny(0)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    endpoint = serve_live(model, tokenizer, policy_id="trainer", version=3, model_name="tiny")
    try:
        http = httpx.Client(base_url=endpoint.url, timeout=30)
        state = http.get("/v2/policies/trainer").json()
        assert (state["version"], state["capabilities"]["updates"], state["capabilities"]["checkpoints"]) == (
            3,
            False,
            False,
        )
        sample = http.post(
            "/v2/policies/trainer/sample",
            json={
                "episode_id": "e1",
                "version": {"exact": 3},
                "messages": MESSAGES,
                "sampling": {"max_tokens": 8, "seed": 1},
            },
        ).json()
        ids = sample["prompt_ids"] + sample["completion"]["ids"]
        # The returned log-probabilities are the model's own for these ids, computed here by hand.
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids])).logits[0].double().log_softmax(-1)
        own = [float(logits[i - 1, t]) for i, t in enumerate(ids) if i >= len(sample["prompt_ids"])]
        assert max(abs(a - b) for a, b in zip(own, sample["completion"]["logprobs"])) < 1e-4
        scored = http.post("/v2/policies/trainer/score", json={"sequences": [{"ids": ids}]}).json()["logprobs"][0]
        assert max(abs(a - b) for a, b in zip(scored[len(sample["prompt_ids"]) :], own)) < 1e-4

        # The trainer steps: the old version is refused, the episode is closed.
        endpoint.advance(4)
        stale = http.post(
            "/v2/policies/trainer/sample", json={"episode_id": "e2", "version": {"exact": 3}, "messages": MESSAGES}
        )
        assert (stale.status_code, stale.json()["error"]["code"]) == (409, "STALE_POLICY_VERSION")
        again = http.post(
            "/v2/policies/trainer/sample",
            json={"episode_id": "e1", "version": {"exact": 4}, "append": [{"role": "user", "content": "more"}]},
        )
        assert again.status_code == 404 or again.json()["error"]["code"] in {"NOT_FOUND", "VALIDATION_FAILED"}

        # Nothing is created, trained, checkpointed or deleted through it.
        for method, path, body in [
            ("PUT", "/v2/policies/other", {"base_model": "tiny"}),
            ("DELETE", "/v2/policies/trainer", None),
            ("POST", "/v2/policies/trainer/checkpoints", None),
        ]:
            res = http.request(method, path, json=body)
            assert (res.status_code, res.json()["error"]["code"]) == (409, "NOT_TRAINED_HERE"), path
        update = {
            "datums": [
                {
                    "sample_id": "s",
                    "group_id": "g",
                    "ids": ids,
                    "loss_mask": [0] * len(ids),
                    "behaviour_logprobs": [0.0] * len(ids),
                    "advantage": 1.0,
                }
            ],
            "base_version": 4,
            "optim": {"lr": 1e-3},
        }
        res = http.post("/v2/policies/trainer/updates", json=update, headers={"Idempotency-Key": "u1"})
        assert (res.status_code, res.json()["error"]["code"]) == (409, "NOT_TRAINED_HERE")
    finally:
        endpoint.close()
    # The model is the trainer's still: no adapter modules, the same weights, gradients on.
    assert {n for n, _ in model.named_parameters()} == set(before)
    assert all(torch.equal(p, before[n]) and p.requires_grad for n, p in model.named_parameters())
