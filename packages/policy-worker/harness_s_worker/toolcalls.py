"""Tool calls read from generated text, in the format the model was trained on:

- `hermes` (Qwen2.5, Hermes): `<tool_call>{"name": …, "arguments": {…}}</tool_call>`, any number;
- `llama3_json` (Llama 3.1/3.2): the turn is one JSON object `{"name": …, "parameters": {…}}`,
  optionally after `<|python_tag|>`;
- `mistral` (Mistral v0.3): `[TOOL_CALLS] [{"name": …, "arguments": {…}}, …]`.

The arguments are passed on as the exact text the model generated (the span of the JSON value,
never parsed and re-serialised). A malformed call is a parse error (an expected event), never raised.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

PARSERS = ("hermes", "llama3_json", "mistral")
HERMES = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_decoder = json.JSONDecoder()


def parser_for(chat_template: str | None) -> str:
    """The format a chat template teaches, by the markers it contains (hermes when none)."""
    template = chat_template or ""
    if "[TOOL_CALLS]" in template:
        return "mistral"
    if "<|start_header_id|>" in template and "ipython" in template:
        return "llama3_json"
    return "hermes"


def call_id() -> str:
    """Nine alphanumerics (Mistral's templates refuse any other shape; others accept it)."""
    return uuid.uuid4().hex[:9]


def object_spans(text: str, start: int = 0) -> tuple[dict[str, Any], dict[str, str], int]:
    """Parses the JSON object at `start`: (the object, each top-level key's raw value text, end)."""
    i = skip(text, start)
    if i >= len(text) or text[i] != "{":
        raise ValueError("expected a JSON object")
    obj, end = _decoder.raw_decode(text, i)
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object")
    raw: dict[str, str] = {}
    i = skip(text, i + 1)
    while i < end - 1:
        key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        i = skip(text, skip(text, i) + 1)  # past the colon
        _, value_end = _decoder.raw_decode(text, i)
        raw[key] = text[i:value_end]
        i = skip(text, value_end)
        i = skip(text, i + 1) if text[i] == "," else i
    return obj, raw, end


def skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def one_call(obj: dict[str, Any], raw: dict[str, str], args_key: str, index: int) -> dict[str, Any]:
    if not isinstance(obj.get("name"), str) or not isinstance(obj.get(args_key, {}), dict):
        raise ValueError(f'tool call {index} needs {{"name": string, "{args_key}": object}}')
    return {
        "id": call_id(),
        "type": "function",
        "function": {"name": obj["name"], "arguments": raw.get(args_key, "{}")},
    }


def parse_tool_calls(text: str, parser: str = "hermes") -> tuple[str, list[dict[str, Any]] | None, str | None]:
    """(content outside the calls, OpenAI tool_calls or None, parse error or None)."""
    try:
        if parser == "mistral":
            return parse_mistral(text)
        if parser == "llama3_json":
            return parse_llama(text)
        return parse_hermes(text)
    except (ValueError, IndexError) as err:
        return text.strip(), None, str(err)


def parse_hermes(text: str) -> tuple[str, list[dict[str, Any]] | None, str | None]:
    bodies = list(HERMES.finditer(text))
    content = HERMES.sub("", text).strip()
    if not bodies:
        return content, None, ("unterminated <tool_call>" if "<tool_call>" in text else None)
    calls = []
    for i, m in enumerate(bodies):
        try:
            obj, raw, end = object_spans(text, m.start(1))
        except ValueError as err:
            return content, None, f"tool call {i} is not JSON: {err}"
        if skip(text, end) != m.end(1):
            return content, None, f"tool call {i} has text after its JSON object"
        calls.append(one_call(obj, raw, "arguments", i))
    return content, calls, None


def parse_llama(text: str) -> tuple[str, list[dict[str, Any]] | None, str | None]:
    body = text.replace("<|python_tag|>", "").strip()
    if not body.startswith("{"):
        return text.strip(), None, None
    try:
        obj, raw, end = object_spans(body)
    except ValueError as err:
        return text.strip(), None, f"tool call 0 is not JSON: {err}"
    if "name" not in obj:
        return text.strip(), None, None
    return body[end:].strip(), [one_call(obj, raw, "parameters", 0)], None


def parse_mistral(text: str) -> tuple[str, list[dict[str, Any]] | None, str | None]:
    marker = text.find("[TOOL_CALLS]")
    if marker < 0:
        return text.strip(), None, None
    content = text[:marker].strip()
    i = skip(text, marker + len("[TOOL_CALLS]"))
    if i >= len(text) or text[i] != "[":
        return content, None, "[TOOL_CALLS] must be followed by a JSON list"
    calls: list[dict[str, Any]] = []
    i = skip(text, i + 1)
    while i < len(text) and text[i] != "]":
        try:
            obj, raw, i = object_spans(text, i)
        except ValueError as err:
            return content, None, f"tool call {len(calls)} is not JSON: {err}"
        calls.append(one_call(obj, raw, "arguments", len(calls)))
        i = skip(text, i)
        i = skip(text, i + 1) if i < len(text) and text[i] == "," else i
    if i >= len(text):
        return content, None, "unterminated [TOOL_CALLS] list"
    return content, calls, None
