"""Constrained tool calls: a turn's completion must be exactly one call of a tool the request
offers, with arguments that fit that tool's JSON schema, in the model's tool-call format. The
grammar is a regular expression over the completion's text; at each step the allowed tokens are
those whose text keeps it a prefix of a match (found by walking a trie of the vocabulary's token
texts), and once it matches in full only an end-of-turn token is allowed.

The sampler draws from the model's distribution renormalised over the allowed tokens and reports
that log-probability; the trainer scores the same renormalised distribution (`allowed_rows` gives
it the masks of a datum's sampled positions), so the ratio an update takes is between the same two
distributions it was drawn from. The masks depend only on the tools, the format and the turn's
completion so far, never on the prompt: a turn replayed under another context keeps them."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Any

import regex  # type: ignore[import-untyped]  # (no stubs; a dependency of transformers, pinned here)
import torch

# Strings (outside an enum) are bounded, so a turn cannot run on inside one.
STRING_LIMIT = 256
# Nested objects and arrays in a schema followed to this depth; deeper, any scalar.
DEPTH_LIMIT = 3
# Optional properties a schema may list and still be spelled out; past it, only the required ones.
OPTIONAL_LIMIT = 6
PREFIX_CACHE = 4096

WS = r"[ \n]?"
STRING = rf'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{{4}}){{0,{STRING_LIMIT}}}"'
INTEGER = r"-?(?:0|[1-9][0-9]{0,17})"
NUMBER = rf"{INTEGER}(?:\.[0-9]{{1,17}})?(?:[eE][+-]?[0-9]{{1,3}})?"
SCALAR = f"(?:{STRING}|{NUMBER}|true|false|null)"


def value(schema: Any, depth: int = 0) -> str:
    """The regular expression of a JSON value that fits `schema` (a subset of JSON Schema)."""
    if not isinstance(schema, dict) or depth > DEPTH_LIMIT:
        return SCALAR
    if "enum" in schema:
        return "(?:" + "|".join(regex.escape(json.dumps(v, ensure_ascii=False)) for v in schema["enum"]) + ")"
    if "const" in schema:
        return str(regex.escape(json.dumps(schema["const"], ensure_ascii=False)))
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return "(?:" + "|".join(value(s, depth + 1) for s in schema[key]) + ")"
    kind = schema.get("type")
    if isinstance(kind, list):
        return "(?:" + "|".join(value({**schema, "type": k}, depth) for k in kind) + ")"
    if kind == "object":
        return obj(schema, depth + 1)
    if kind == "array":
        item = value(schema.get("items"), depth + 1)
        return rf"\[{WS}(?:{item}(?:,{WS}{item}){{0,63}})?{WS}\]"
    return {"string": STRING, "integer": INTEGER, "number": NUMBER, "boolean": "(?:true|false)", "null": "null"}.get(
        str(kind), SCALAR
    )


def obj(schema: dict[str, Any], depth: int = 0) -> str:
    """An object with the schema's properties in their declared order: required ones always,
    optional ones each present or not (with the commas that makes)."""
    raw = schema.get("properties")
    props: dict[str, Any] = raw if isinstance(raw, dict) else {}
    required = set(schema.get("required") or [])
    optional = sum(1 for p in props if p not in required)
    keys = [k for k in props if k in required or optional <= OPTIONAL_LIMIT]

    def seq(i: int, emitted: bool) -> str:
        if i == len(keys):
            return ""
        key = keys[i]
        pair = (
            ("," + WS if emitted else "")
            + regex.escape(json.dumps(key, ensure_ascii=False))
            + ":"
            + WS
            + value(props[key], depth)
            + seq(i + 1, True)
        )
        return pair if key in required else f"(?:{pair}|{seq(i + 1, emitted)})"

    return r"\{" + WS + seq(0, False) + WS + r"\}"


def call_pattern(tools: list[dict[str, Any]], parser: str) -> str:
    """One call of one of `tools`, written as `parser`'s format writes it."""
    args_key = "parameters" if parser == "llama3_json" else "arguments"
    calls = []
    for t in tools:
        fn = t.get("function", t)
        name = regex.escape(json.dumps(str(fn.get("name")), ensure_ascii=False))
        params = (
            fn.get("parameters") if isinstance(fn.get("parameters"), dict) else {"type": "object", "properties": {}}
        )
        calls.append(r"\{" + WS + '"name":' + WS + name + "," + WS + f'"{args_key}":' + WS + obj(params) + WS + r"\}")
    one = "(?:" + "|".join(calls) + ")"
    if parser == "mistral":
        return rf"\[TOOL_CALLS\]{WS}\[{one}\]"
    if parser == "llama3_json":
        return rf"(?:<\|python_tag\|>)?{one}"
    return rf"<tool_call>{WS}{one}{WS}</tool_call>"


class TokenTexts:
    """Each token id's text as it reads inside a decoded sequence, and a trie over those texts."""

    def __init__(self, tokenizer: Any) -> None:
        pieces = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        self.texts: list[str | None] = []
        for i, piece in enumerate(pieces):
            text = tokenizer.decode([i], skip_special_tokens=False, clean_up_tokenization_spaces=False)
            if isinstance(piece, str) and piece.startswith("\u2581") and not text.startswith(" "):
                text = " " + text  # a sentencepiece word start decodes without its space alone
            self.texts.append(None if not text or "\ufffd" in text else text)
        self.trie: dict[str, Any] = {}
        for i, text in enumerate(self.texts):
            if text is None:
                continue
            node = self.trie
            for ch in text:
                node = node.setdefault(ch, {})
            node.setdefault("", []).append(i)

    def text(self, ids: list[int]) -> str | None:
        parts = [self.texts[i] if 0 <= i < len(self.texts) else None for i in ids]
        return None if any(p is None for p in parts) else "".join(p for p in parts if p is not None)


class ToolGrammar:
    """The allowed next tokens of a constrained turn, by the completion's ids so far."""

    def __init__(
        self, tools: list[dict[str, Any]], parser: str, texts: TokenTexts, eos_ids: frozenset[int], vocab: int
    ) -> None:
        self.pattern = regex.compile(call_pattern(tools, parser), regex.DOTALL)
        self.texts = texts
        self.eos = sorted(eos_ids)
        self.vocab = vocab
        self.cache: OrderedDict[str, torch.Tensor] = OrderedDict()

    def allowed(self, completion: list[int]) -> torch.Tensor:
        """A bool row over the vocabulary: the tokens that may follow `completion` (never empty:
        a completion off the grammar, which only an unconstrained turn can be, may only end)."""
        text = self.texts.text(completion)
        if text is None:
            return self._only_eos()
        hit = self.cache.get(text)
        if hit is not None:
            self.cache.move_to_end(text)
            return hit
        row = torch.zeros(self.vocab, dtype=torch.bool)
        if self.pattern.fullmatch(text):
            row[self.eos] = True
        elif self.pattern.fullmatch(text, partial=True):
            ids = self._walk(text)
            if ids:
                row[ids] = True
        if not row.any():
            row[self.eos] = True
        self.cache[text] = row
        if len(self.cache) > PREFIX_CACHE:
            self.cache.popitem(last=False)
        return row

    def _walk(self, text: str) -> list[int]:
        out: list[int] = []
        stack: list[tuple[dict[str, Any], str]] = [(self.texts.trie, text)]
        while stack:
            node, prefix = stack.pop()
            for ch, child in node.items():
                if ch == "":
                    out.extend(i for i in child if i < self.vocab)
                    continue
                candidate = prefix + ch
                if self.pattern.fullmatch(candidate, partial=True):
                    stack.append((child, candidate))
        return out

    def _only_eos(self) -> torch.Tensor:
        row = torch.zeros(self.vocab, dtype=torch.bool)
        row[self.eos] = True
        return row


def allowed_rows(grammar: ToolGrammar, ids: list[int], mask: list[int]) -> dict[int, torch.Tensor]:
    """For each position of a datum a constrained sampler drew (mask 1), the tokens that were
    allowed there: each run of mask-1 positions is one turn's completion, from its first token."""
    rows: dict[int, torch.Tensor] = {}
    start: int | None = None
    for t, m in enumerate(mask):
        if not m:
            start = None
            continue
        if start is None:
            start = t
        rows[t] = grammar.allowed(ids[start:t])
    return rows


GRAMMARS = 64


class Grammars:
    """One model's grammars by tool list (the token texts are read once, on first use)."""

    def __init__(self, tokenizer: Any, parser: str, eos_ids: frozenset[int], vocab: int) -> None:
        self.tokenizer = tokenizer
        self.parser = parser
        self.eos_ids = eos_ids
        self.vocab = vocab
        self._texts: TokenTexts | None = None
        self._by_tools: OrderedDict[str, ToolGrammar] = OrderedDict()
        self._lock = threading.Lock()

    def grammar(self, tools: list[dict[str, Any]]) -> ToolGrammar:
        # Its own lock (sampling builds grammars outside the policy table's lock, updates beside it).
        with self._lock:
            key = json.dumps(tools, sort_keys=True)
            hit = self._by_tools.get(key)
            if hit is not None:
                self._by_tools.move_to_end(key)
                return hit
            if self._texts is None:
                self._texts = TokenTexts(self.tokenizer)
            made = ToolGrammar(tools, self.parser, self._texts, self.eos_ids, self.vocab)
            self._by_tools[key] = made
            if len(self._by_tools) > GRAMMARS:
                self._by_tools.popitem(last=False)
            return made
