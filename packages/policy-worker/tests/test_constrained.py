"""Constrained tool calls: every turn is one call of an offered tool with arguments that fit its
schema; the log-probability reported is the model's distribution renormalised over the allowed
tokens; the trainer and the replay score that same distribution."""

import json

import pytest
import torch
from conftest import SPEC, datum_from
from test_protocol import wait

from harness_s_worker.constrained import TokenTexts, ToolGrammar, allowed_rows, call_pattern

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "list_items",
            "parameters": {
                "type": "object",
                "properties": {
                    "page": {"type": "integer"},
                    "order": {"type": "string", "enum": ["asc", "desc"]},
                    "all": {"type": "boolean"},
                },
                "required": ["page"],
            },
        },
    },
    {"type": "function", "function": {"name": "submit", "parameters": {"type": "object", "properties": {}}}},
]


def fits(call):
    """An independent reading of one call against TOOLS' schemas."""
    name, args = call["function"]["name"], json.loads(call["function"]["arguments"])
    if name == "submit":
        return args == {}
    return (
        isinstance(args.get("page"), int)
        and set(args) <= {"page", "order", "all"}
        and args.get("order", "asc") in ("asc", "desc")
        and isinstance(args.get("all", True), bool)
    )


def test_the_grammar_takes_each_tool_with_fitting_arguments_and_nothing_else():
    import regex

    pattern = regex.compile(call_pattern(TOOLS, "hermes"))
    good = [
        '<tool_call>{"name": "submit", "arguments": {}}</tool_call>',
        '<tool_call>{"name": "list_items", "arguments": {"page": 2}}</tool_call>',
        '<tool_call>{"name": "list_items", "arguments": {"page": -1, "order": "desc", "all": true}}</tool_call>',
        '<tool_call>\n{"name": "list_items", "arguments": {"page": 0, "all": false}}\n</tool_call>',
    ]
    bad = [
        '<tool_call>{"name": "delete", "arguments": {}}</tool_call>',  # not offered
        '<tool_call>{"name": "list_items", "arguments": {}}</tool_call>',  # page is required
        '<tool_call>{"name": "list_items", "arguments": {"page": "2"}}</tool_call>',  # not an integer
        '<tool_call>{"name": "list_items", "arguments": {"page": 1, "order": "up"}}</tool_call>',  # outside the enum
        '<tool_call>{"name": "submit", "arguments": {"x": 1}}</tool_call>',  # no such property
        'Sure. <tool_call>{"name": "submit", "arguments": {}}</tool_call>',  # text around the call
    ]
    assert all(pattern.fullmatch(t) for t in good)
    assert not any(pattern.fullmatch(t) for t in bad)
    for fmt, text in (
        ("llama3_json", '{"name": "submit", "parameters": {}}'),
        ("mistral", '[TOOL_CALLS] [{"name": "submit", "arguments": {}}]'),
    ):
        assert regex.compile(call_pattern(TOOLS, fmt)).fullmatch(text), fmt


def test_the_allowed_tokens_are_exactly_those_that_keep_a_match_possible(client):
    # Every vocabulary id checked one by one (no trie) against the same rule.
    import regex

    tok = client.policies.tokenizer
    texts = TokenTexts(tok)
    grammar = ToolGrammar(TOOLS, "hermes", texts, client.policies.eos_ids, len(tok))
    pattern = regex.compile(call_pattern(TOOLS, "hermes"))
    for prefix in [
        "",
        "<tool_call>",
        '<tool_call>{"name": "li',
        '<tool_call>{"name": "list_items", "arguments": {"page": 1',
        '<tool_call>{"name": "submit", "arguments": {}}</tool_call>',
    ]:
        ids = tok(prefix, add_special_tokens=False)["input_ids"] if prefix else []
        assert texts.text(ids) == prefix
        got = set(grammar.allowed(ids).nonzero().squeeze(1).tolist())
        done = pattern.fullmatch(prefix) is not None
        expected = (
            set(client.policies.eos_ids)
            if done
            else {i for i, t in enumerate(texts.texts) if t is not None and pattern.fullmatch(prefix + t, partial=True)}
        )
        assert got == expected and got, prefix


def sample(client, episode, seed, constrained=True, **extra):
    body = {
        "episode_id": episode,
        "messages": [{"role": "user", "content": "list the items"}],
        "tools": TOOLS,
        "sampling": {"max_tokens": 48, "seed": seed},
        **extra,
    }
    if constrained:
        body["constrain_tool_calls"] = True
    r = client.post("/v2/policies/p1/sample", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_every_constrained_turn_is_one_call_that_fits_and_reports_the_renormalised_logprob(client):
    # An untrained model: unconstrained it writes no call; constrained, every turn is one. The
    # log-probabilities are checked against the raw logits renormalised over the allowed tokens
    # (sampling without the mask, or reporting the raw log-softmax, fails here).
    client.put("/v2/policies/p1", json=SPEC)
    policies = client.policies
    free = [sample(client, f"f{seed}", seed, constrained=False) for seed in range(4)]
    assert not any(s["completion"].get("tool_calls") for s in free)
    grammar = policies.grammars.grammar(TOOLS)
    below_one = 0
    for seed in range(8):
        s = sample(client, f"c{seed}", seed)
        comp = s["completion"]
        assert "parse_error" not in comp and comp["finish_reason"] == "stop"
        assert len(comp["tool_calls"]) == 1 and fits(comp["tool_calls"][0]), comp["text"]
        prefix, ids = s["prompt_ids"], comp["ids"]
        with torch.no_grad(), policies.adapted.lock:
            policies.adapted.model.set_adapter(policies.policies["p1"].adapter)
            logits = policies.adapted.model(input_ids=torch.tensor([prefix + ids])).logits[0].float()
        for t, tok in enumerate(ids):
            row = logits[len(prefix) - 1 + t]
            allowed = grammar.allowed(ids[:t])
            expected = float(row[tok] - torch.logsumexp(row[allowed], 0))
            assert abs(comp["logprobs"][t] - expected) < 1e-4, (seed, t)
            below_one += int(float(torch.logsumexp(torch.log_softmax(row, 0)[allowed], 0)) < -1e-3)
    assert below_one > 0  # the constraint removed mass somewhere: renormalising mattered


def test_the_trainer_and_the_replay_score_the_constrained_distribution(client):
    # The same datum with its constraint: the sampler-trainer gap is ~0; without it (the trainer
    # scoring unconstrained logits) the gap is the mass the constraint removed, far from 0.
    client.put("/v2/policies/p1", json=SPEC)
    first = sample(client, "e", 11)
    second = client.post(
        "/v2/policies/p1/sample",
        json={
            "episode_id": "e",
            "append": [{"role": "tool", "content": "3 items"}],
            "sampling": {"max_tokens": 48, "seed": 12},
        },
    ).json()
    assert len(second["completion"]["tool_calls"]) == 1  # the episode's later turns stay constrained
    one, two = datum_from(first, 0.0), datum_from(second, 0.0)
    datum = {
        **one,
        "ids": one["ids"] + two["ids"],
        "loss_mask": one["loss_mask"] + two["loss_mask"],
        "behaviour_logprobs": one["behaviour_logprobs"] + two["behaviour_logprobs"],
    }

    def gap(d, version):
        job = client.post(
            "/v2/policies/p1/updates",
            headers={"Idempotency-Key": f"k{version}"},
            json={"base_version": version, "datums": [d], "optim": {"lr": 1e-12}},
        ).json()
        done = wait(client, job["update_id"])
        assert done["status"] == "done", done
        return done["metrics"]["sampler_trainer_logprob_absdiff"]

    constrained_gap = gap({**datum, "constraint": {"tools": TOOLS}}, 0)
    unconstrained_gap = gap(datum, 1)  # lr 1e-12: the weights are the sampler's still
    assert constrained_gap < 1e-4 < 0.05 < unconstrained_gap
    # The replay under the same messages, with and without the constraint.
    messages = [{"role": "user", "content": "list the items"}]
    turns = [
        {"completion_ids": first["completion"]["ids"]},
        {"append": [{"role": "tool", "content": "3 items"}], "completion_ids": second["completion"]["ids"]},
    ]
    for flag, close in ((True, True), (False, False)):
        got = client.post(
            "/v2/policies/p1/replay",
            json={"messages": messages, "tools": TOOLS, "turns": turns, "constrain_tool_calls": flag},
        ).json()["turns"]
        diff = max(
            abs(a - b) for t, s in zip(got, [first, second]) for a, b in zip(t["logprobs"], s["completion"]["logprobs"])
        )
        assert (diff < 1e-4) == close, (flag, diff)


def test_allowed_rows_restart_the_grammar_at_each_sampled_run(client):
    tok = client.policies.tokenizer
    grammar = client.policies.grammars.grammar(TOOLS)
    call = tok('<tool_call>{"name": "submit", "arguments": {}}</tool_call>', add_special_tokens=False)["input_ids"]
    ids = [5, 6, *call, 7, 8, *call]
    mask = [0, 0, *[1] * len(call), 0, 0, *[1] * len(call)]
    rows = allowed_rows(grammar, ids, mask)
    assert sorted(rows) == [t for t, m in enumerate(mask) if m]
    assert torch.equal(rows[2], rows[4 + len(call)])  # both runs start from an empty completion


@pytest.mark.parametrize(
    "body, message",
    [
        (
            {"episode_id": "x", "messages": [{"role": "user", "content": "hi"}], "constrain_tool_calls": True},
            "needs `tools`",
        ),
    ],
)
def test_a_constraint_without_tools_or_on_a_free_episode_is_400(client, body, message):
    client.put("/v2/policies/p1", json=SPEC)
    r = client.post("/v2/policies/p1/sample", json=body)
    assert r.status_code == 400 and message in r.json()["error"]["message"]
    sample(client, "free", 1, constrained=False)
    later = client.post(
        "/v2/policies/p1/sample",
        json={"episode_id": "free", "append": [{"role": "tool", "content": "ok"}], "constrain_tool_calls": True},
    )
    assert later.status_code == 400 and "not started with constrain_tool_calls" in later.json()["error"]["message"]
    replay = client.post(
        "/v2/policies/p1/replay",
        json={
            "messages": [{"role": "user", "content": "hi"}],
            "turns": [{"completion_ids": [5]}],
            "constrain_tool_calls": True,
        },
    )
    assert replay.status_code == 400 and "needs the tools" in replay.json()["error"]["message"]
