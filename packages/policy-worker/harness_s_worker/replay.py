"""An episode's ids rebuilt from its messages and sampled completions, exactly as sampling would
have built them turn by turn (first render, then for each later turn the forced end-of-turn ids
and the template's delta after the assistant turn that was generated). Used by the warm start
(supervised ids from text conversations) and by rescue in H0's context (the same completions
under H0's messages)."""

from __future__ import annotations

from typing import Any

# Tokenizers are typed Any: transformers types their outputs as a union of every shape.
from .chat import ChatFormat, assistant_message
from .schemas import ReplayTurn
from .toolcalls import parse_tool_calls


class Turns:
    def __init__(self, chat: ChatFormat, tokenizer: Any, tool_parser: str) -> None:
        self.chat = chat
        self.tokenizer = tokenizer
        self.tool_parser = tool_parser

    def after(self, ids: list[int]) -> dict[str, Any]:
        """What a sampled turn leaves: its text, parsed calls, the assistant message the next delta
        follows, and the forced end-of-turn ids the next prompt starts with."""
        text = self.tokenizer.decode([t for t in ids if t not in self.chat.eos_ids], skip_special_tokens=False)
        content, calls, parse_error = parse_tool_calls(text, self.tool_parser)
        return {
            "text": text,
            "content": content,
            "calls": calls,
            "parse_error": parse_error,
            "assistant": assistant_message(content, calls),
            "forced": self.chat.forced_after(ids),
        }

    def prompts(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, turns: list[ReplayTurn]
    ) -> list[list[int]]:
        """Each turn's prompt ids (`append` is ignored on the first turn)."""
        out: list[list[int]] = []
        previous: dict[str, Any] | None = None
        for i, turn in enumerate(turns):
            if i == 0:
                out.append(self.chat.first(messages, tools))
            else:
                assert previous is not None
                out.append(previous["forced"] + self.chat.delta(previous["assistant"], turn.append or []))
            previous = self.after(turn.completion_ids)
        return out
