"""Turn rendering against the chat templates of three real model families (tests/templates)."""

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from harness_s_worker.adapters import eos_ids_of
from harness_s_worker.chat import ChatFormat
from harness_s_worker.policies import Policies
from harness_s_worker.server import create_app
from harness_s_worker.tiny import build_tiny, build_tokenizer
from harness_s_worker.toolcalls import parse_tool_calls, parser_for

HERE = Path(__file__).parent / "templates"
FAMILIES = json.loads((HERE / "families.json").read_text())
CALL = {"id": "abcdefghi", "type": "function", "function": {"name": "lookup", "arguments": {"q": "x"}}}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "find",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]


def family(name: str):
    f = FAMILIES[name]
    tok = build_tokenizer(f["specials"], f["eos"], (HERE / f["template"]).read_text(), f.get("bos"), f["pad"])
    model, _ = build_tiny(0, tok, [tok.convert_tokens_to_ids(t) for t in f["generation_eos"]])
    return f, tok, model


def text(tok, ids):
    return tok.decode(ids, skip_special_tokens=False)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_eos_of_the_generation_config_ends_a_turn_and_the_parser_is_read_from_the_template(name):
    f, tok, model = family(name)
    assert eos_ids_of(model, tok) == frozenset(tok.convert_tokens_to_ids(t) for t in f["generation_eos"])
    assert parser_for(tok.chat_template) == f["parser"]


def test_qwen_tool_responses_get_no_second_system_block_and_a_stop_is_followed_by_the_newline():
    _, tok, model = family("qwen2.5")
    chat = ChatFormat(tok, eos_ids_of(model, tok))
    delta = text(
        tok,
        chat.delta(
            {"role": "assistant", "content": "", "tool_calls": [CALL]},
            [{"role": "tool", "content": "x is 1"}, {"role": "tool", "content": "y is 2"}],
        ),
    )
    assert (
        delta
        == "<|im_start|>user\n<tool_response>\nx is 1\n</tool_response>\n<tool_response>\ny is 2\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )
    assert "You are Qwen" not in delta
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    assert text(tok, chat.forced_after([5, im_end])) == "\n"  # after a stop: the rest of the turn's end
    assert text(tok, chat.forced_after([5, 6])) == "<|im_end|>\n"  # after a cut turn: the whole of it, forced
    assert chat.prefix_stable, chat.stability_note


def test_llama_tool_results_are_ipython_turns_and_every_stop_token_closes_the_turn():
    _, tok, model = family("llama3.2")
    chat = ChatFormat(tok, eos_ids_of(model, tok))
    delta = text(
        tok,
        chat.delta({"role": "assistant", "content": "", "tool_calls": [CALL]}, [{"role": "tool", "content": "x is 1"}]),
    )
    # (The published template JSON-quotes string tool results: a string "is iterable" in Jinja.)
    assert (
        delta
        == '<|start_header_id|>ipython<|end_header_id|>\n\n"x is 1"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n'
    )
    assert "<|begin_of_text|>" not in delta and "Cutting Knowledge" not in delta
    for stop in ("<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"):
        assert chat.forced_after([5, tok.convert_tokens_to_ids(stop)]) == []
    assert text(tok, chat.forced_after([5, 6])) == "<|eot_id|>"
    assert chat.prefix_stable, chat.stability_note


def test_mistral_is_reported_not_prefix_stable_and_its_turns_still_extend_the_episode():
    _, tok, model = family("mistral-v0.3")
    chat = ChatFormat(tok, eos_ids_of(model, tok))
    # v0.3 moves the system message into the last user turn: a whole render differs from the turns.
    assert not chat.prefix_stable
    delta = text(
        tok,
        chat.delta({"role": "assistant", "content": "", "tool_calls": [CALL]}, [{"role": "tool", "content": "x is 1"}]),
    )
    assert delta == '[TOOL_RESULTS] {"content": x is 1, "call_id": "abcdefghi"}[/TOOL_RESULTS]'
    user = text(tok, chat.delta({"role": "assistant", "content": "ok"}, [{"role": "user", "content": "next"}]))
    assert user == "[INST] next[/INST]" and "<s>" not in user
    assert text(tok, chat.forced_after([5, 6])) == "</s>"


@pytest.mark.parametrize("name", list(FAMILIES))
def test_a_two_turn_episode_through_the_worker_holds_exactly_the_ids_it_returned(name, tmp_path):
    _, tok, model = family(name)
    policies = Policies(model.eval(), tok, tmp_path, model_name="tiny")
    with TestClient(create_app(policies)) as c:
        c.put("/v2/policies/p", json={"base_model": "tiny", "seed": 1})
        first = c.post(
            "/v2/policies/p/sample",
            json={
                "episode_id": "e",
                "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Find x."}],
                "tools": TOOLS,
                "sampling": {"max_tokens": 6, "seed": 1},
            },
        ).json()
        second = c.post(
            "/v2/policies/p/sample",
            json={
                "episode_id": "e",
                "append": [{"role": "user", "content": "Go on."}],
                "sampling": {"max_tokens": 6, "seed": 2},
            },
        )
        assert second.status_code == 200, second.json()
        second = second.json()
        held = policies.policies["p"].episodes["e"].ids
        assert (
            held
            == first["prompt_ids"] + first["completion"]["ids"] + second["prompt_ids"] + second["completion"]["ids"]
        )
        forced = policies.chat.forced_after(first["completion"]["ids"])
        assert second["prompt_ids"][: len(forced)] == forced
        state = c.get("/v2/policies/p").json()
        assert state["tokenizer"]["eos_ids"] == sorted(policies.eos_ids) and "prefix_stable" in state["template"]
        # Every id the worker answers is below the vocabulary it states (a caller checks replies against it).
        vocab = state["tokenizer"]["vocab_size"]
        assert vocab == policies.adapted.vocab_size() and max(held) < vocab


def test_each_parser_keeps_the_argument_text_as_generated():
    hermes = parse_tool_calls(
        'ok <tool_call>\n{"name": "f", "arguments": {"a":  1, "b": [1,2]}}\n</tool_call>', "hermes"
    )
    assert hermes[1][0]["function"] == {"name": "f", "arguments": '{"a":  1, "b": [1,2]}'} and hermes[0] == "ok"
    llama = parse_tool_calls('<|python_tag|>{"name": "f", "parameters": {"q":"x"}}', "llama3_json")
    assert llama[1][0]["function"] == {"name": "f", "arguments": '{"q":"x"}'}
    assert parse_tool_calls("plain answer", "llama3_json") == ("plain answer", None, None)
    mistral = parse_tool_calls(
        '[TOOL_CALLS] [{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {}}]', "mistral"
    )
    assert [c["function"]["name"] for c in mistral[1]] == ["f", "g"] and mistral[1][0]["function"][
        "arguments"
    ] == '{"a": 1}'
    assert all(len(c["id"]) == 9 and c["id"].isalnum() for c in mistral[1])
    assert (
        parse_tool_calls('[TOOL_CALLS] [{"name": "f", "arguments": {"a": 1}}', "mistral")[2]
        == "unterminated [TOOL_CALLS] list"
    )
    assert "not JSON" in parse_tool_calls("<tool_call>{oops}</tool_call>", "hermes")[2]
    assert "needs" in parse_tool_calls('<tool_call>{"arguments": {}}</tool_call>', "hermes")[2]
