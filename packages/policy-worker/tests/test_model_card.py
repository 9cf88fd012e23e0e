from conftest import SPEC

from harness_s_worker.model_card import template_family
from harness_s_worker.tiny import CHAT_TEMPLATE


def test_healthz_says_the_base_models_size_context_and_template_family_and_no_adapter_counts(client):
    before = client.get("/healthz").json()["base"]
    expected = sum(p.numel() for p in client.policies.adapted.base.parameters())
    assert before == {"parameters": expected, "context": 4096, "chat_template": "chatml"}
    assert client.put("/v2/policies/p1", json=SPEC).status_code == 201
    assert client.get("/healthz").json()["base"] == before


def test_template_families_by_their_markers():
    assert template_family(CHAT_TEMPLATE) == "chatml"
    assert template_family("<|start_header_id|>{{ role }}<|end_header_id|><|im_start|>") == "llama3"
    assert template_family("[INST] {{ content }} [/INST]") == "mistral"
    assert template_family("<start_of_turn>user") == "gemma"
    assert template_family(None) == "other"


def test_a_served_name_is_the_models_name_for_policies_and_healthz(tmp_path):
    from fastapi.testclient import TestClient

    from harness_s_worker.server import build, create_app

    policies, name = build("tiny", tmp_path, "cpu", served_name="a")
    with TestClient(create_app(policies, model_name=name)) as c:
        assert c.get("/healthz").json()["model"] == "a"
        assert c.put("/v2/policies/p1", json={**SPEC, "base_model": "a"}).status_code == 201
        assert c.put("/v2/policies/p2", json=SPEC).status_code == 400


def test_healthz_counts_every_token_sampled(client):
    """`sampler.tokens` is what the stack's /metrics turns into the worker's tokens/s."""
    assert client.get("/healthz").json()["sampler"]["tokens"] == 0
    assert client.put("/v2/policies/p1", json=SPEC).status_code == 201
    drawn = 0
    for seed in (3, 4):
        body = {
            "episode_id": f"e{seed}",
            "messages": [{"role": "user", "content": "hi"}],
            "sampling": {"max_tokens": 6, "seed": seed},
        }
        drawn += len(client.post("/v2/policies/p1/sample", json=body).json()["completion"]["ids"])
    assert drawn > 0
    assert client.get("/healthz").json()["sampler"]["tokens"] == drawn
