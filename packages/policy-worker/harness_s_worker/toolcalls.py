"""Tool calls read from generated text: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`.
A malformed call is reported as a parse error (an expected event), never raised."""
from __future__ import annotations

import json
import re

CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def parse_tool_calls(text: str, call_id_prefix: str) -> tuple[str, list[dict] | None, str | None]:
    """(content outside the calls, OpenAI tool_calls or None, parse error or None)."""
    bodies = CALL.findall(text)
    content = CALL.sub("", text).strip()
    if not bodies:
        if "<tool_call>" in text:
            return content, None, "unterminated <tool_call>"
        return content, None, None
    calls = []
    for i, body in enumerate(bodies):
        try:
            parsed = json.loads(body)
        except json.JSONDecodeError as err:
            return content, None, f"tool call {i} is not JSON: {err.msg}"
        if not isinstance(parsed, dict) or not isinstance(parsed.get("name"), str) or not isinstance(parsed.get("arguments", {}), dict):
            return content, None, f'tool call {i} needs {{"name": string, "arguments": object}}'
        # The arguments are passed on as the model wrote them, not re-serialised.
        raw_args = json.dumps(parsed.get("arguments", {}))
        calls.append({"id": f"{call_id_prefix}-{i}", "type": "function", "function": {"name": parsed["name"], "arguments": raw_args}})
    return content, calls, None
