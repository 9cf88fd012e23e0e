"""The worker's façade in vLLM's and SGLang's wire formats (harness_s_worker/vllm_wire.py and
sglang_wire.py name the upstream files and commits read): each route's fields as upstream spells
them, the ids sampled re-scoring at the worker's own protocol-v2 `/score` to the log-probabilities
returned, model names that carry the version, and a chat template that is not append-only."""

from pathlib import Path

import pytest
from conftest import SPEC, TOOLS
from fastapi.testclient import TestClient

from harness_s_worker import launch
from harness_s_worker.server import build, create_app

THINKING = (Path(__file__).parent / "templates" / "thinking-chatml.jinja").read_text()
HI = [{"role": "user", "content": "list the items"}]
CHAT_CHOICE = {"index", "message", "logprobs", "finish_reason", "stop_reason", "token_ids"}
CHAT_REPLY = {
    "id",
    "object",
    "created",
    "model",
    "choices",
    "service_tier",
    "system_fingerprint",
    "usage",
    "prompt_logprobs",
    "prompt_token_ids",
    "kv_transfer_params",
}
USAGE = {"prompt_tokens", "total_tokens", "completion_tokens", "prompt_tokens_details"}


def worker(tmp_path, template=None, chat_prompts="episode"):
    policies, name = build("tiny", tmp_path, "cpu", chat_template=template)
    c = TestClient(create_app(policies, token="t0k", model_name=name, chat_prompts=chat_prompts))
    c.headers["authorization"] = "Bearer t0k"
    c.policies = policies
    return c


@pytest.fixture()
def client(tmp_path):
    with worker(tmp_path) as c:
        assert c.put("/v2/policies/p1", json=SPEC).status_code == 201
        yield c


def rescored(client, prompt, ids, model="p1"):
    """The worker's own log-probabilities of `ids` after `prompt` (protocol v2 `/score`)."""
    scored = client.post(f"/v2/policies/{model}/score", json={"sequences": [{"ids": prompt + ids}]}).json()["logprobs"][
        0
    ]
    return scored[len(prompt) :]


def close(a, b):
    return len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b)) < 1e-4


def said(reply):
    """The assistant message a chat reply gave, as a client sends it back."""
    m = reply["choices"][0]["message"]
    return {"role": "assistant", "content": m["content"], "tool_calls": m["tool_calls"]}


def not_found(name):
    return {
        "error": {
            "message": f"The model `{name}` does not exist.",
            "type": "NotFoundError",
            "param": "model",
            "code": 404,
        }
    }


def test_vllm_chat_returns_prompt_and_completion_ids_and_logprobs_that_rescore(client):
    body = {
        "model": "p1@v0",
        "messages": HI,
        "tools": TOOLS,
        "max_tokens": 8,
        "seed": 3,
        "logprobs": True,
        "return_token_ids": True,
    }
    r = client.post("/v1/chat/completions", json=body).json()
    choice = r["choices"][0]
    assert set(r) == CHAT_REPLY and CHAT_CHOICE <= set(choice) and set(r["usage"]) == USAGE
    assert r["model"] == "p1@v0" and r["object"] == "chat.completion" and choice["message"]["role"] == "assistant"
    entries = choice["logprobs"]["content"]
    assert [set(e) for e in entries] == [{"token", "logprob", "bytes", "top_logprobs"}] * len(choice["token_ids"])
    assert all(e["top_logprobs"] == [] for e in entries)
    tokenized = client.post("/tokenize", json={"model": "p1", "messages": HI, "tools": TOOLS}).json()["tokens"]
    assert r["prompt_token_ids"] == tokenized
    assert close([e["logprob"] for e in entries], rescored(client, r["prompt_token_ids"], choice["token_ids"]))
    assert r["usage"]["prompt_tokens"] == len(r["prompt_token_ids"]) and r["usage"]["completion_tokens"] == len(
        choice["token_ids"]
    )
    # `return_tokens_as_token_ids`: each token spelled token_id:<id>; a plain name is echoed as sent.
    again = client.post("/v1/chat/completions", json={**body, "model": "p1", "return_tokens_as_token_ids": True}).json()
    assert again["model"] == "p1"
    assert [e["token"] for e in again["choices"][0]["logprobs"]["content"]] == [
        f"token_id:{t}" for t in again["choices"][0]["token_ids"]
    ]
    # Only the sampled token's log-probability is served.
    assert client.post("/v1/chat/completions", json={**body, "top_logprobs": 2}).status_code == 400


def test_vllm_chat_continues_a_conversation_its_prompt_ids_extending_the_earlier_turn(client):
    first = client.post(
        "/v1/chat/completions", json={"model": "p1", "messages": HI, "max_tokens": 6, "seed": 1, "logprobs": True}
    ).json()
    messages = [*HI, said(first), {"role": "user", "content": "and the next page"}]
    second = client.post(
        "/v1/chat/completions", json={"model": "p1", "messages": messages, "max_tokens": 6, "seed": 2, "logprobs": True}
    ).json()
    before = first["prompt_token_ids"] + first["choices"][0]["token_ids"]
    assert second["prompt_token_ids"][: len(before)] == before and len(second["prompt_token_ids"]) > len(before)
    choice = second["choices"][0]
    assert close(
        [e["logprob"] for e in choice["logprobs"]["content"]],
        rescored(client, second["prompt_token_ids"], choice["token_ids"]),
    )


def test_vllm_completions_sample_id_prompts_with_completions_style_logprobs(client):
    prompt = client.post("/tokenize", json={"messages": HI}).json()["tokens"]
    body = {
        "model": "p1",
        "prompt": prompt,
        "max_tokens": 8,
        "seed": 5,
        "logprobs": 0,
        "return_token_ids": True,
        "skip_special_tokens": False,
        "add_special_tokens": False,
        "an_unknown_field": 1,
    }
    r = client.post("/v1/completions", json=body).json()
    assert set(r) == {
        "id",
        "object",
        "created",
        "model",
        "choices",
        "service_tier",
        "system_fingerprint",
        "usage",
        "kv_transfer_params",
    }
    assert r["object"] == "text_completion" and r["model"] == "p1" and r["id"].startswith("cmpl-")
    (choice,) = r["choices"]
    assert set(choice) == {
        "index",
        "text",
        "logprobs",
        "finish_reason",
        "stop_reason",
        "token_ids",
        "prompt_logprobs",
        "prompt_token_ids",
    }
    assert choice["prompt_token_ids"] == prompt and choice["finish_reason"] in ("stop", "length")
    lp = choice["logprobs"]
    assert set(lp) == {"text_offset", "token_logprobs", "tokens", "top_logprobs"} and len(lp["tokens"]) == len(
        choice["token_ids"]
    )
    assert lp["top_logprobs"] == [{t: v} for t, v in zip(lp["tokens"], lp["token_logprobs"])]
    assert close(lp["token_logprobs"], rescored(client, prompt, choice["token_ids"]))
    # The same seed samples the same ids; without return_token_ids, none are returned (as vLLM).
    same = client.post("/v1/completions", json={**body, "return_token_ids": None}).json()["choices"][0]
    assert (
        same["token_ids"] is None
        and same["prompt_token_ids"] is None
        and same["logprobs"]["token_logprobs"] == lp["token_logprobs"]
    )
    # A list of prompts: one choice each, in order.
    two = client.post("/v1/completions", json={**body, "prompt": [prompt, prompt[:3]]}).json()
    assert [c["index"] for c in two["choices"]] == [0, 1] and two["choices"][1]["prompt_token_ids"] == prompt[:3]
    # What is not served is refused, in vLLM's error shape.
    for bad in ({"logprobs": 21}, {"n": 2}, {"stream": True}, {"frequency_penalty": 0.5}, {"stop": ["x"]}):
        refused = client.post("/v1/completions", json={**body, **bad})
        assert refused.status_code == 400 and set(refused.json()["error"]) == {"message", "type", "param", "code"}, bad


def test_vllm_logprobs_above_zero_add_the_most_likely_alternatives_at_the_version_sampled(client):
    prompt = client.post("/tokenize", json={"messages": HI}).json()["tokens"]
    body = {"model": "p1", "prompt": prompt, "max_tokens": 4, "seed": 9, "logprobs": 2, "return_token_ids": True}
    choice = client.post("/v1/completions", json=body).json()["choices"][0]
    lp = choice["logprobs"]
    for token, value, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"]):
        assert list(top)[0] == token and top[token] == value and 2 <= len(top) <= 3
    # An alternative's log-probability is the model's for that id at that position (re-scored in its place).
    as_ids = client.post("/v1/completions", json={**body, "return_tokens_as_token_ids": True}).json()["choices"][0][
        "logprobs"
    ]["top_logprobs"]
    for i, top in enumerate(as_ids):
        for key, value in list(top.items())[1:]:
            alt = int(key.removeprefix("token_id:"))
            assert abs(rescored(client, prompt + choice["token_ids"][:i], [alt])[0] - value) < 1e-4
    generated = client.post(
        "/inference/v1/generate",
        json={"model": "p1", "token_ids": prompt, "sampling_params": {"max_tokens": 4, "seed": 9, "logprobs": 2}},
    ).json()
    content = generated["choices"][0]["logprobs"]["content"]
    assert generated["choices"][0]["token_ids"] == choice["token_ids"]
    assert all(len(e["top_logprobs"]) == 2 and e["top_logprobs"][0]["token"] == e["token"] for e in content)
    assert all(e["top_logprobs"][1]["logprob"] >= e2["logprob"] for e in content for e2 in e["top_logprobs"][1:])


def test_vllm_completions_prompt_logprobs_rescore_each_prompt_id_in_place(client):
    prompt = client.post("/tokenize", json={"messages": HI}).json()["tokens"]
    body = {
        "model": "p1@v0",
        "prompt": prompt,
        "max_tokens": 2,
        "seed": 3,
        "prompt_logprobs": 2,
        "return_token_ids": True,
    }
    choice = client.post("/v1/completions", json=body).json()["choices"][0]
    entries = choice["prompt_logprobs"]
    # One entry per prompt id: null for the first (nothing predicts it), then the id itself first.
    assert len(entries) == len(prompt) and entries[0] is None and choice["prompt_token_ids"] == prompt
    assert [list(e)[0] for e in entries[1:]] == [str(t) for t in prompt[1:]]
    assert all(set(v) == {"logprob", "rank", "decoded_token"} for e in entries[1:] for v in e.values())
    # Each prompt id's log-probability is the worker's own score of it after the ids before it.
    assert close(
        [e[str(t)]["logprob"] for e, t in zip(entries[1:], prompt[1:])], rescored(client, prompt[:1], prompt[1:])
    )
    decode = client.policies.tokenizer.decode
    for i, e in enumerate(entries[1:], 1):
        own = e[str(prompt[i])]
        tops = sorted((v["rank"], int(k), v["logprob"]) for k, v in e.items() if v["rank"] <= 2)
        # The 2 most likely ids (ranks 1 and 2), the id itself once more where it is not among them.
        assert (
            [r for r, _, _ in tops] == [1, 2] and len(e) in (2, 3) and tops[0][2] >= tops[1][2] >= own["logprob"] - 1e-6
        )
        assert (own["rank"] == 1) == (tops[0][1] == prompt[i]) and own["rank"] >= 1
        assert all(v["decoded_token"] == decode([int(k)]) for k, v in e.items())
    # An alternative's log-probability is the model's for that id in that place.
    _, alt, value = min((v["rank"], int(k), v["logprob"]) for k, v in entries[3].items())
    assert abs(rescored(client, prompt[:3], [alt])[0] - value) < 1e-4
    # prompt_logprobs 0: the prompt id only; a sample still happens (max_tokens stays >= 1).
    zero = client.post("/v1/completions", json={**body, "prompt_logprobs": 0}).json()["choices"][0]
    assert [list(e) for e in zero["prompt_logprobs"][1:]] == [[str(t)] for t in prompt[1:]] and zero["token_ids"]
    # A list of prompts: each choice scores its own prompt; without prompt_logprobs, none (as vLLM).
    two = client.post("/v1/completions", json={**body, "prompt": [prompt, prompt[:3]]}).json()["choices"]
    assert [len(c["prompt_logprobs"]) for c in two] == [len(prompt), 3]
    plain = client.post("/v1/completions", json={k: v for k, v in body.items() if k != "prompt_logprobs"}).json()
    assert plain["choices"][0]["prompt_logprobs"] is None
    # Below -1, or more than vLLM's default max_logprobs (20; -1 is the whole vocabulary): vLLM's 400.
    for bad in (-2, -1, 21):
        refused = client.post("/v1/completions", json={**body, "prompt_logprobs": bad})
        assert refused.status_code == 400 and refused.json()["error"]["param"] == "prompt_logprobs", bad


def test_sglang_generate_input_token_logprobs_from_logprob_start_len_rescore(client):
    prompt = client.post("/tokenize", json={"messages": HI}).json()["tokens"]
    body = {
        "input_ids": prompt,
        "lora_path": "p1@v0",
        "return_logprob": True,
        "logprob_start_len": 0,
        "sampling_params": {"max_new_tokens": 2, "sampling_seed": 4},
    }
    triples = client.post("/generate", json=body).json()["meta_info"]["input_token_logprobs"]
    # Every input id from position 0: [logprob, id, null], the first id's logprob null.
    assert [t[1] for t in triples] == prompt and triples[0] == [None, prompt[0], None]
    assert all(t[2] is None for t in triples)
    assert close([t[0] for t in triples[1:]], rescored(client, prompt[:1], prompt[1:]))
    # From position 3: the ids from 3 on, the first one null (SGLang does not score it), texts on request.
    later = client.post("/generate", json={**body, "logprob_start_len": 3, "return_text_in_logprobs": True}).json()
    triples = later["meta_info"]["input_token_logprobs"]
    assert [t[1] for t in triples] == prompt[3:] and triples[0][0] is None
    assert close([t[0] for t in triples[1:]], rescored(client, prompt[:4], prompt[4:]))
    assert [t[2] for t in triples] == [client.policies.tokenizer.decode([t]) for t in prompt[3:]]
    # A batch: each prompt's own ids; -1 (the default): output logprobs only.
    batch = client.post("/generate", json={**body, "input_ids": [prompt, prompt[:3]]}).json()
    assert [[t[1] for t in b["meta_info"]["input_token_logprobs"]] for b in batch] == [prompt, prompt[:3]]
    assert (
        client.post("/generate", json={**body, "logprob_start_len": -1}).json()["meta_info"]["input_token_logprobs"]
        == []
    )
    # A start past the input is SGLang's 400; without return_logprob the start is not read (as SGLang).
    past = client.post("/generate", json={**body, "logprob_start_len": len(prompt)})
    assert past.status_code == 400 and past.json()["error"]["message"].startswith(
        f"req.logprob_start_len={len(prompt)} is higher than the number of input tokens"
    )
    assert client.post("/generate", json={**body, "logprob_start_len": -2}).status_code == 400
    assert client.post("/generate", json={**body, "return_logprob": False, "logprob_start_len": 999}).status_code == 200


def test_sglang_v1_detokenize_answers_text_and_vllm_keeps_detokenize(client):
    ids = client.post("/tokenize", json={"messages": HI}).json()["tokens"]
    decode = client.policies.tokenizer.decode
    assert client.post("/v1/detokenize", json={"model": "any", "tokens": ids}).json() == {
        "text": decode(ids, skip_special_tokens=True)
    }
    kept = client.post("/v1/detokenize", json={"tokens": [ids, ids[:2]], "skip_special_tokens": False}).json()
    assert kept == {"text": [decode(ids), decode(ids[:2])]} and "<|im_start|>" in kept["text"][0]
    assert client.post("/v1/detokenize", json={"tokens": []}).json() == {"text": ""}
    # One path, two servers: /detokenize stays vLLM's (`prompt`, special tokens kept).
    assert client.post("/detokenize", json={"tokens": ids}).json() == {"prompt": decode(ids)}
    refused = client.post("/v1/detokenize", json={"tokens": [10**6]})
    assert refused.status_code == 400 and set(refused.json()) == {"object", "message", "type", "param", "code"}


def test_sglang_chat_flags_put_prompt_ids_and_meta_info_in_each_choice(client):
    body = {
        "model": "p1",
        "messages": HI,
        "max_tokens": 4,
        "seed": 2,
        "logprobs": True,
        "return_prompt_token_ids": True,
        "return_meta_info": True,
    }
    r = client.post("/v1/chat/completions", json=body).json()
    choice, meta = r["choices"][0], r["choices"][0]["meta_info"]
    tokenized = client.post("/tokenize", json={"model": "p1", "messages": HI}).json()["tokens"]
    # SGLang's choice-level ids, beside vLLM's top-level prompt_token_ids (one route serves both).
    assert choice["prompt_token_ids"] == r["prompt_token_ids"] == tokenized and set(r) == CHAT_REPLY
    assert meta["weight_version"] == "0" and meta["id"] == r["id"] and meta["prompt_tokens"] == len(tokenized)
    assert meta["completion_tokens"] == len(choice["token_ids"]) and meta["finish_reason"]["type"] in ("stop", "length")
    out = meta["output_token_logprobs"]
    assert [t[1] for t in out] == choice["token_ids"] and all(isinstance(t[2], str) for t in out)
    assert close([t[0] for t in out], rescored(client, tokenized, choice["token_ids"]))
    # A continued conversation: the choice's prompt is the whole prompt, the earlier turn included.
    messages = [*HI, said(r), {"role": "user", "content": "and the next page"}]
    again = client.post("/v1/chat/completions", json={**body, "messages": messages}).json()
    assert again["choices"][0]["prompt_token_ids"] == again["prompt_token_ids"]
    assert len(again["prompt_token_ids"]) > len(r["prompt_token_ids"]) + len(choice["token_ids"])
    # return_token_ids (SGLang): token_ids and prompt_token_ids in each choice; no flag: neither SGLang field.
    ids_only = {k: v for k, v in body.items() if not k.startswith("return_")} | {"return_token_ids": True}
    both = client.post("/v1/chat/completions", json=ids_only).json()["choices"][0]
    assert both["prompt_token_ids"] and both["token_ids"] and "meta_info" not in both
    plain = client.post("/v1/chat/completions", json={"model": "p1", "messages": HI, "max_tokens": 2}).json()
    assert not {"prompt_token_ids", "meta_info"} & set(plain["choices"][0])
    # The version sampled, after an update published version 1.
    client.policies.publish(client.policies.get("p1"))
    assert client.post("/v1/chat/completions", json=body).json()["choices"][0]["meta_info"]["weight_version"] == "1"


def test_vllm_tokenize_renders_messages_or_tokenises_a_prompt(client):
    r = client.post("/tokenize", json={"model": "p1@v0", "messages": HI, "return_token_strs": True})
    assert r.status_code == 200 and set(r.json()) == {"count", "max_model_len", "tokens", "token_strs"}
    body = r.json()
    assert body["count"] == len(body["tokens"]) and body["max_model_len"] == client.policies.adapted.max_context()
    assert (
        body["tokens"]
        == client.post("/v2/policies/p1/render", json={"messages": HI, "add_generation_prompt": True}).json()["ids"]
    )
    assert len(body["token_strs"]) == body["count"]
    bare = client.post("/tokenize", json={"messages": HI, "add_generation_prompt": False}).json()
    assert (
        body["tokens"][: bare["count"]] == bare["tokens"]
        and bare["count"] < body["count"]
        and bare["token_strs"] is None
    )
    text = client.post("/tokenize", json={"prompt": "list the items"}).json()
    assert text["tokens"] == client.policies.tokenizer("list the items")["input_ids"]
    assert client.post("/detokenize", json={"model": "p1", "tokens": body["tokens"]}).json() == {
        "prompt": client.policies.tokenizer.decode(body["tokens"])
    }
    assert "<|im_start|>" in client.post("/detokenize", json={"tokens": body["tokens"]}).json()["prompt"]
    # An assistant's tool-call arguments reach the template as objects, as vLLM hands them over.
    call = {"id": "c1", "type": "function", "function": {"name": "submit", "arguments": '{"answer": "yes"}'}}
    turns = [*HI, {"role": "assistant", "content": "", "tool_calls": [call]}]
    rendered = client.post("/tokenize", json={"messages": turns, "add_generation_prompt": False}).json()["tokens"]
    assert '{"answer": "yes"}' in client.policies.tokenizer.decode(
        rendered
    ) and '\\"answer' not in client.policies.tokenizer.decode(rendered)
    assert client.post("/tokenize", json={"model": "p1@v4", "messages": HI}).json() == not_found("p1@v4")


def test_vllm_generate_is_tokens_in_tokens_out(client):
    prompt = client.post("/tokenize", json={"messages": HI}).json()["tokens"]
    sampling = {
        "max_tokens": 8,
        "seed": 7,
        "logprobs": 0,
        "temperature": 1.0,
        "top_p": 1.0,
        "skip_special_tokens": False,
    }
    body = {"model": "p1@v0", "token_ids": prompt, "request_id": "r1", "sampling_params": sampling}
    r = client.post("/inference/v1/generate", json=body).json()
    assert set(r) == {"request_id", "choices", "prompt_logprobs", "kv_transfer_params"}
    (choice,) = r["choices"]
    assert set(choice) == {"index", "logprobs", "finish_reason", "token_ids"} and choice["finish_reason"] in (
        "stop",
        "length",
    )
    content = choice["logprobs"]["content"]
    assert [e["token"] for e in content] == [f"token_id:{t}" for t in choice["token_ids"]]
    assert all(e["top_logprobs"] == [{"token": e["token"], "logprob": e["logprob"], "bytes": None}] for e in content)
    assert close([e["logprob"] for e in content], rescored(client, prompt, choice["token_ids"]))
    # The same sample through /v1/completions (the same seed and rule): the same ids.
    same = client.post(
        "/v1/completions", json={"model": "p1", "prompt": prompt, "max_tokens": 8, "seed": 7, "return_token_ids": True}
    ).json()
    assert same["choices"][0]["token_ids"] == choice["token_ids"]
    without = client.post("/inference/v1/generate", json={**body, "sampling_params": {"max_tokens": 4}}).json()[
        "choices"
    ][0]
    assert without["logprobs"] is None and len(without["token_ids"]) <= 4
    assert (
        client.post(
            "/inference/v1/generate", json={**body, "sampling_params": {"max_tokens": 4, "nonsense": 1}}
        ).status_code
        == 400
    )
    assert (
        client.post(
            "/inference/v1/generate", json={**body, "sampling_params": {"max_tokens": 4, "top_k": 5}}
        ).status_code
        == 400
    )


def test_sglang_generate_returns_output_ids_and_logprob_triples_that_rescore(client):
    prompt = client.post("/tokenize", json={"messages": HI}).json()["tokens"]
    sampling = {"max_new_tokens": 8, "temperature": 1.0, "top_p": 1.0, "sampling_seed": 4, "skip_special_tokens": False}
    body = {"input_ids": prompt, "lora_path": "p1@v0", "rid": "r9", "return_logprob": True, "sampling_params": sampling}
    r = client.post("/generate", json=body).json()
    assert set(r) == {"text", "output_ids", "meta_info"}
    meta = r["meta_info"]
    expected = {
        "id",
        "finish_reason",
        "prompt_tokens",
        "weight_version",
        "num_retractions",
        "input_token_logprobs",
        "output_token_logprobs",
        "output_token_logprobs_length",
    }
    assert expected | {"reasoning_tokens", "completion_tokens", "cached_tokens", "e2e_latency"} == set(meta)
    assert (
        meta["id"] == "r9"
        and meta["prompt_tokens"] == len(prompt)
        and meta["completion_tokens"] == len(r["output_ids"])
        and meta["weight_version"] == "0"
    )
    finish = meta["finish_reason"]
    assert finish in (
        {"type": "stop", "matched": r["output_ids"][-1]},
        {"type": "length", "length": len(r["output_ids"])},
    )
    triples = meta["output_token_logprobs"]
    assert [t[1] for t in triples] == r["output_ids"] and all(t[2] is None for t in triples)
    assert close([t[0] for t in triples], rescored(client, prompt, r["output_ids"]))
    texts = client.post("/generate", json={**body, "return_text_in_logprobs": True}).json()["meta_info"][
        "output_token_logprobs"
    ]
    assert all(isinstance(t[2], str) for t in texts)
    # A batch of prompts: a list of outputs; a plain policy name samples its current version.
    batch = client.post("/generate", json={**body, "input_ids": [prompt, prompt[:3]], "lora_path": "p1"}).json()
    assert [b["meta_info"]["id"] for b in batch] == ["r9_0", "r9_1"] and batch[1]["meta_info"]["prompt_tokens"] == 3
    assert (
        client.post("/generate", json={**body, "sampling_params": {"max_new_tokens": 4, "bogus": 1}}).status_code == 400
    )
    refused = client.post("/generate", json={**body, "lora_path": "p1@v2"})
    assert refused.status_code == 400 and refused.json()["error"]["message"].startswith(
        "The following requested LoRA adapters are not loaded: p1@v2"
    )
    # Without lora_path, the one model served: the worker's one policy; with two, a name is needed.
    unnamed = {k: v for k, v in body.items() if k != "lora_path"}
    assert client.post("/generate", json=unnamed).json()["output_ids"] == r["output_ids"]
    client.put("/v2/policies/p2", json=SPEC)
    assert client.post("/generate", json=unnamed).status_code == 400


def test_a_name_pins_the_version_and_a_version_the_worker_no_longer_holds_is_not_served(client):
    prompt = client.post("/tokenize", json={"messages": HI}).json()["tokens"]
    p = client.policies.get("p1")
    client.policies.publish(p)  # an update published version 1
    assert p.version == 1
    gone = {
        "chat": client.post("/v1/chat/completions", json={"model": "p1@v0", "messages": HI}),
        "completions": client.post("/v1/completions", json={"model": "p1@v0", "prompt": prompt}),
        "generate": client.post(
            "/inference/v1/generate", json={"model": "p1@v0", "token_ids": prompt, "sampling_params": {}}
        ),
        "tokenize": client.post("/tokenize", json={"model": "p1@v0", "prompt": "x"}),
    }
    assert {k: (r.status_code, r.json()) for k, r in gone.items()} == {k: (404, not_found("p1@v0")) for k in gone}
    assert client.post("/v1/completions", json={"model": "nope", "prompt": prompt}).json() == not_found("nope")
    now = client.post(
        "/v1/completions",
        json={"model": "p1@v1", "prompt": prompt, "max_tokens": 4, "logprobs": 0, "return_token_ids": True},
    ).json()
    assert now["model"] == "p1@v1"
    assert close(
        now["choices"][0]["logprobs"]["token_logprobs"], rescored(client, prompt, now["choices"][0]["token_ids"])
    )
    assert (
        client.post("/generate", json={"input_ids": prompt, "lora_path": "p1"}).json()["meta_info"]["weight_version"]
        == "1"
    )


def test_a_template_that_is_not_append_only_breaks_the_prefix_of_a_whole_render_and_of_render_mode(tmp_path):
    with worker(tmp_path, THINKING, chat_prompts="render") as c:
        c.put("/v2/policies/p1", json=SPEC)
        assert c.get("/v2/policies/p1").json()["template"]["prefix_stable"] is False
        first = c.post(
            "/v1/chat/completions", json={"model": "p1", "messages": HI, "max_tokens": 6, "seed": 1, "logprobs": True}
        ).json()
        assert c.policies.tokenizer.decode(first["prompt_token_ids"]).endswith("<|im_start|>assistant\n<think>\n")
        before = first["prompt_token_ids"] + first["choices"][0]["token_ids"]
        messages = [*HI, said(first), {"role": "user", "content": "next"}]
        whole = c.post("/tokenize", json={"model": "p1", "messages": messages}).json()["tokens"]
        second = c.post(
            "/v1/chat/completions",
            json={"model": "p1", "messages": messages, "max_tokens": 6, "seed": 2, "logprobs": True},
        ).json()
        # As vLLM renders it, the later prompt is the whole render and does not extend the earlier ids.
        assert second["prompt_token_ids"] == whole and whole[: len(before)] != before
        choice = second["choices"][0]
        assert close(
            [e["logprob"] for e in choice["logprobs"]["content"]],
            rescored(c, second["prompt_token_ids"], choice["token_ids"]),
        )
        assert not c.policies.get("p1").episodes  # render mode keeps no episode


def test_the_episode_mode_keeps_a_non_append_only_conversation_append_only(tmp_path):
    with worker(tmp_path, THINKING) as c:
        c.put("/v2/policies/p1", json=SPEC)
        first = c.post("/v1/chat/completions", json={"model": "p1", "messages": HI, "max_tokens": 6, "seed": 1}).json()
        messages = [*HI, said(first), {"role": "user", "content": "next"}]
        second = c.post(
            "/v1/chat/completions", json={"model": "p1", "messages": messages, "max_tokens": 6, "seed": 2}
        ).json()
        before = first["prompt_token_ids"] + first["choices"][0]["token_ids"]
        assert second["prompt_token_ids"][: len(before)] == before


def test_the_launcher_refuses_a_chat_template_file_that_does_not_exist(tmp_path, capsys):
    ap = launch.parser()
    args = ap.parse_args(
        ["--port", "0", "--chat-template", str(tmp_path / "missing.jinja"), "--chat-prompts", "render"]
    )
    with pytest.raises(SystemExit) as exit_:
        launch.checked_serve(ap, args)
    assert exit_.value.code == 2 and "--chat-template" in capsys.readouterr().err
