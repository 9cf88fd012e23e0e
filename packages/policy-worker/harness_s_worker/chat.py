"""Turn ids from a model's own chat template, rendered so that an episode's ids only ever grow.

- The first turn is the template's render of the messages with the generation prompt.
- A later turn's ids are the *delta* the template adds for the new messages: the render of
  (a short fixed conversation ending in the previous assistant turn + the new messages, with the
  generation prompt) minus the render of that conversation alone. A template's once-per-
  conversation parts (a default system block, a date header, a BOS) are in both renders and so
  never repeated; grouping rules between adjacent messages (Qwen's tool responses) still apply.
- After each sampled turn the template's end-of-turn text is appended as forced tokens (mask 0
  when trained): the rest of it after a stop token (ChatML's newline), or all of it after a turn
  cut at `max_tokens`, so the next turn always starts where the template would have it.
- `prefix_stable` says whether the template renders a whole probe conversation as the turns
  concatenate; a template that is not (one that moves the system message into the last user turn,
  as Mistral v0.3's does, or drops earlier reasoning) still works by the delta rule above — the
  ids trained are the ids the episode holds — but its full render of the conversation differs.
"""

from __future__ import annotations

import json
from typing import Any

# Tokenizers are typed Any: transformers types their outputs as a union of every shape.
from .errors import WorkerError
from .textbound import TextBound

# Texts no real turn contains: the fixed conversation's parts, and a turn's content to locate.
PROBE_SYSTEM = "\u2063SYSTEM\u2063"
PROBE_USER = "\u2063USER\u2063"
SENTINEL = "\u2063ASSISTANT\u2063"


class ChatFormat:
    def __init__(self, tokenizer: Any, eos_ids: frozenset[int], bound: TextBound | None = None) -> None:
        self.tokenizer = tokenizer
        self.eos_ids = eos_ids
        #: The worker's bound on text by its bytes: a render past it is refused, never tokenised.
        self.bound = bound
        self.turn_tail = self._turn_tail()
        self.tail_ids = self._encode(self.turn_tail)
        self.prefix_stable, self.stability_note = self._probe()

    def _render(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, generation_prompt: bool = False
    ) -> str:
        try:
            return str(
                self.tokenizer.apply_chat_template(
                    messages, tools=tools or None, add_generation_prompt=generation_prompt, tokenize=False
                )
            )
        except Exception as err:  # the template's own checks (role order, tool-call ids, …)
            raise WorkerError(
                400, "VALIDATION_FAILED", f"messages: the model's chat template refused them: {err}"
            ) from err

    def _encode(self, text: str) -> list[int]:
        if self.bound is not None:
            self.bound.check_rendered(text)
        # The ids alone: no attention mask or type ids, a list of as many again each.
        return (
            list(
                self.tokenizer(
                    text, add_special_tokens=False, return_attention_mask=False, return_token_type_ids=False
                )["input_ids"]
            )
            if text
            else []
        )

    def whole(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, generation_prompt: bool
    ) -> list[int]:
        """The template's render of these messages, as ids (`/render`)."""
        return self._encode(self._render(messages, tools, generation_prompt))

    def first(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> list[int]:
        """The first turn: the whole conversation so far, with the generation prompt."""
        return self.whole(messages, tools, True)

    def delta(self, previous_assistant: dict[str, Any], messages: list[dict[str, Any]]) -> list[int]:
        """The ids the template adds for `messages` after an assistant turn (see the module's rule)."""
        messages = with_call_ids(previous_assistant, messages)
        # Without the system message second: a template that moves it into the last user turn
        # (Mistral v0.3) is prefix-stable on a conversation that has none.
        for head in ([{"role": "system", "content": PROBE_SYSTEM}], []):
            base = [*head, {"role": "user", "content": PROBE_USER}, previous_assistant]
            before = self._render(base)
            after = self._render(base + messages, generation_prompt=True)
            added = after[len(before) :]
            # A template may move a part of the fixed conversation into the new turn (Mistral puts
            # the system message into the last user turn): that base is not usable.
            if after.startswith(before) and PROBE_SYSTEM not in added and PROBE_USER not in added:
                return self._encode(added)
        # A template that rewrites earlier turns whatever the base: the new messages rendered alone.
        return self._encode(self._render(messages, generation_prompt=True))

    def forced_after(self, completion: list[int]) -> list[int]:
        """End-of-turn ids the template puts after a turn's content, that the sampler did not emit."""
        if completion and completion[-1] in self.eos_ids:
            tail = self.tail_ids
            return tail[1:] if tail and tail[0] in self.eos_ids else []
        return self.tail_ids

    def _turn_tail(self) -> str:
        text = self._render(
            [
                {"role": "system", "content": PROBE_SYSTEM},
                {"role": "user", "content": PROBE_USER},
                {"role": "assistant", "content": SENTINEL},
            ]
        )
        return text[text.rindex(SENTINEL) + len(SENTINEL) :] if SENTINEL in text else ""

    def _probe(self) -> tuple[bool, str]:
        """Renders a probe conversation whole and turn by turn, and compares the two."""
        call = {"id": "call00001", "type": "function", "function": {"name": "lookup", "arguments": {"q": "x"}}}
        turns: list[list[dict[str, Any]]] = [
            [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Find x."}],
            [{"role": "assistant", "content": "", "tool_calls": [call]}],
            [{"role": "tool", "tool_call_id": "call00001", "content": "x is 1"}],
            [{"role": "assistant", "content": "It is 1."}],
            [{"role": "user", "content": "Thanks."}],
        ]
        try:
            whole = self._render([m for t in turns for m in t], generation_prompt=True)
            text = self._render(turns[0], generation_prompt=True)
            for i in range(1, len(turns), 2):
                assistant = turns[i][0]
                content = self._render([*turns[0], assistant])[len(self._render(turns[0], generation_prompt=True)) :]
                text += content
                text += self.tokenizer.decode(self.delta(assistant, turns[i + 1]), skip_special_tokens=False)
        except WorkerError as err:  # a template that refuses the probe (e.g. strict role rules)
            return False, f"the probe conversation could not be rendered: {err}"
        if text == whole:
            return True, "turn-by-turn renders concatenate to the whole conversation's render"
        return (
            False,
            "the template re-renders earlier turns when one is added; episodes use the delta rule (their ids are what was trained)",
        )

    def describe(self) -> dict[str, Any]:
        return {"prefix_stable": self.prefix_stable, "note": self.stability_note, "turn_tail": self.turn_tail}


def with_call_ids(previous_assistant: dict[str, Any], messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool messages without a `tool_call_id` get the previous turn's call ids in order (templates
    such as Mistral's refuse a tool message without one)."""
    ids = [c.get("id") for c in previous_assistant.get("tool_calls") or [] if c.get("id")]
    out = []
    for m in messages:
        if m.get("role") == "tool" and "tool_call_id" not in m and ids:
            m = {**m, "tool_call_id": ids.pop(0) if len(ids) > 1 else ids[0]}
        out.append(m)
    return out


def assistant_message(content: str, calls: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The assistant turn as a template expects it (arguments as objects where they parse)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["function"]["name"], "arguments": loads_or_text(c["function"]["arguments"])},
            }
            for c in calls
        ]
    return message


def loads_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
