"""The warm start's data as the worker reads it: conversations of the embedded initial policy
(written by `packages/cli/src/suite-lm/warm-start.ts`), the tokenizer trained on their text, and
their supervised ids built exactly as sampling builds them."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from .chat import ChatFormat
from .replay import Turns
from .schemas import ReplayTurn
from .tiny import CHAT_TEMPLATE, SPECIALS


class Call(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] = {}


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    append: list[dict[str, Any]] | None = None
    call: Call
    # The embedded policy's log-probability of the call, and whether the turn showed a hint.
    logprob: float | None = None
    hinted: bool = False


class Conversation(BaseModel):
    """One episode of the embedded policy as text: what a token policy would have been sent, and
    the tool call it made at each turn (written out as the chat template writes a call)."""

    model_config = ConfigDict(extra="allow")
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    turns: list[Turn] = Field(min_length=1)


def completion_text(call: Call, renderer: Any) -> str:
    """A tool call as the chat template writes an assistant turn holding it, without the
    end-of-turn text: what the model must generate to make that call. `renderer` is any
    tokenizer carrying the template (the text does not depend on its vocabulary)."""
    head = [{"role": "user", "content": "."}]
    before = renderer.apply_chat_template(head, add_generation_prompt=True, tokenize=False)
    assistant = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": call.model_dump()}],
    }
    after = renderer.apply_chat_template([*head, assistant], tokenize=False)
    text = after[len(before) :]
    return str(text[: text.rindex(str(renderer.eos_token))])


def corpus(conversations: list[Conversation], renderer: Any) -> list[str]:
    """The texts the tokenizer learns from: every message, tool list and tool call."""
    texts = ["system", "user", "assistant", "tool", "Tools: "]
    for c in conversations:
        texts += [str(m.get("content") or "") for m in c.messages]
        if c.tools:
            texts.append(json.dumps(c.tools, ensure_ascii=False))
        for t in c.turns:
            texts += [str(m.get("content") or "") for m in t.append or []]
            texts.append(completion_text(t.call, renderer))
    return texts


def train_tokenizer(texts: list[str], vocab_size: int, tool_names: list[str]) -> PreTrainedTokenizerFast:
    """Byte-level BPE without the word-splitting regex, so merges span the suite's recurring
    phrases (a whole tool call becomes a few tokens), except that each tool name is a piece of
    its own: the name in a hint ("suggested next tool: login") and in a call is then the same
    token, which the model can copy."""
    tok = Tokenizer(models.BPE(unk_token=None))
    names = "|".join(re.escape(n) for n in sorted(tool_names, key=len, reverse=True))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.pre_tokenizer = (
        pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(rf"\b(?:{names})\b"), behavior="isolated"), byte_level])
        if names
        else byte_level
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<|im_end|>")
    fast.chat_template = CHAT_TEMPLATE
    return fast


def examples(
    conversations: list[Conversation], tokenizer: Any, hinted_weight: float = 1.0
) -> list[tuple[list[int], list[float]]]:
    """(ids, weights) per conversation: the prompts as sampling builds them (weight 0) and each
    completion's canonical ids with the end-of-turn token (weight 1, or `hinted_weight` on a
    hinted turn; each turn's completion is one positive run, in turn order)."""
    eos = tokenizer.eos_token_id
    turns = Turns(ChatFormat(tokenizer, frozenset([eos])), tokenizer, "hermes")
    out = []
    for c in conversations:
        completions = [
            tokenizer(completion_text(t.call, tokenizer), add_special_tokens=False)["input_ids"] + [eos]
            for t in c.turns
        ]
        prompts = turns.prompts(
            c.messages,
            c.tools,
            [ReplayTurn(append=t.append, completion_ids=ids) for t, ids in zip(c.turns, completions, strict=True)],
        )
        ids, mask = [], []
        for prompt, completion, turn in zip(prompts, completions, c.turns, strict=True):
            ids += prompt + completion
            mask += [0.0] * len(prompt) + [hinted_weight if turn.hinted else 1.0] * len(completion)
        out.append((ids, mask))
    return out
