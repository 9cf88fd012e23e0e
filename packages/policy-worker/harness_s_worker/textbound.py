"""How much text a request may carry before anything renders or tokenises it.

No token covers more than `token_bytes` bytes of text, so a text of more than `room × token_bytes`
bytes cannot become `room` tokens or fewer: it is refused by its length alone (400
`CONTEXT_TOO_LONG`), before the chat template renders it or the tokenizer reads it. An 8 MB user
message otherwise took 22 s of CPU and 2.2 GB to be found 6.7M tokens long against a 4,096-token
context, holding the lock every other sample needed. `token_bytes` is read once per tokenizer from
its vocabulary: the longest token in bytes (a byte-level BPE's token text is one character per
byte), times how much the tokenizer's normaliser can shrink text before the vocabulary sees it.
What is counted is every string value a request's messages and tools carry, rendered by the
template or not (keys are not counted); whitespace an added token strips around itself is counted
too. Without a vocabulary to read, or with a normaliser that can delete text, `token_bytes` is
`FALLBACK_TOKEN_BYTES`."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .errors import WorkerError

#: Bytes per token assumed when the vocabulary cannot bound them (no real vocabulary comes near it).
FALLBACK_TOKEN_BYTES = 1024

Spec = dict[str, Any]


def replaced(spec: Spec) -> float | None:
    """A `Replace` normaliser: by a text at least as long, nothing shrinks; by a shorter one, the
    ratio; by nothing, or a pattern that is a regular expression, no bound."""
    pattern, content = (spec.get("pattern") or {}).get("String"), spec.get("content")
    if not isinstance(pattern, str) or not isinstance(content, str) or not content:
        return None
    return max(1.0, len(pattern.encode()) / len(content.encode()))


def sequence(spec: Spec) -> float | None:
    factors = [shrink_of(s) for s in spec.get("normalizers") or []]
    if any(f is None for f in factors):
        return None
    out = 1.0
    for f in factors:
        out *= f or 1.0
    return out


#: How many times fewer bytes each kind of normaliser can leave than it is given. Unicode
#: normalisation: a 4-byte mathematical letter becomes a 1-byte one under NFKC (the Kelvin sign,
#: 3 bytes, becomes "K" even under NFC); lowercasing: the Kelvin sign becomes "k". A kind not
#: listed here (Strip, StripAccents, BertNormalizer, Precompiled: each can delete text) has no bound.
SHRINK: dict[str, Callable[[Spec], float | None]] = {
    "NFC": lambda _: 4.0,
    "NFD": lambda _: 4.0,
    "NFKC": lambda _: 4.0,
    "NFKD": lambda _: 4.0,
    "Lowercase": lambda _: 3.0,
    "Prepend": lambda _: 1.0,
    "ByteLevel": lambda _: 1.0,
    "Replace": replaced,
    "Sequence": sequence,
}


def shrink_of(spec: Spec | None) -> float | None:
    if spec is None:
        return 1.0
    kind = SHRINK.get(str(spec.get("type")))
    return kind(spec) if kind else None


def byte_level(spec: Spec | None) -> bool:
    """Whether a pre-tokenizer maps each byte to one character (GPT-2's byte-level BPE)."""
    if spec is None:
        return False
    return spec.get("type") == "ByteLevel" or any(byte_level(s) for s in spec.get("pretokenizers") or [])


def vocabulary_texts(model: Spec) -> list[str]:
    vocab = model.get("vocab")
    if isinstance(vocab, dict):  # BPE, WordPiece, WordLevel
        return [str(t) for t in vocab]
    if isinstance(vocab, list):  # Unigram: [piece, score] pairs
        return [str(p[0]) for p in vocab if isinstance(p, list) and p]
    return []


def longest_token_bytes(tokenizer: Any) -> int:
    """The most bytes of text one token can stand for (`FALLBACK_TOKEN_BYTES` when unknown)."""
    try:
        spec = json.loads(tokenizer.backend_tokenizer.to_str())
    except (AttributeError, TypeError, ValueError):  # not a fast tokenizer: no vocabulary to read
        return FALLBACK_TOKEN_BYTES
    shrink = shrink_of(spec.get("normalizer"))
    texts = vocabulary_texts(spec.get("model") or {})
    if shrink is None or not texts:
        return FALLBACK_TOKEN_BYTES
    length: Callable[[str], int] = (
        len if byte_level(spec.get("pre_tokenizer")) else (lambda t: len(t.encode("utf-8", "surrogatepass")))
    )
    longest = max(map(length, texts))
    added = max(
        (len(str(t.get("content", "")).encode("utf-8", "surrogatepass")) for t in spec.get("added_tokens") or []),
        default=0,
    )
    return max(1, int(max(longest, added) * shrink + 0.999))


def text_bytes(value: Any, stop: int) -> int:
    """The UTF-8 bytes of the string values in a JSON value (keys not counted), counted until
    past `stop`: the walk ends there, so what it costs is bounded by `stop`, not by the value."""
    total, stack = 0, [value]
    while stack and total <= stop:
        item = stack.pop()
        if isinstance(item, str):
            # A string of more code points than the rest of the budget is over it in any encoding.
            total += (
                len(item) if item.isascii() or len(item) > stop - total else len(item.encode("utf-8", "surrogatepass"))
            )
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return total


class TextBound:
    """One tokenizer's bound: a text of more than `room × token_bytes` bytes needs more than `room` tokens."""

    def __init__(self, tokenizer: Any, context: int) -> None:
        self.token_bytes = longest_token_bytes(tokenizer)
        self.context = context

    def limit(self, room: int) -> int:
        return max(0, room) * self.token_bytes

    def check(self, what: str, value: Any, room: int) -> None:
        """Refuses `value` when its text cannot fit in `room` tokens (negative: no room at all)."""
        limit = self.limit(room)
        if room < 0 or text_bytes(value, limit) > limit:
            raise WorkerError(
                400,
                "CONTEXT_TOO_LONG",
                f"{what}: more than {limit} bytes of text, which cannot fit in the {max(0, room)} tokens left of the model's context of {self.context} (no token of this tokenizer is over {self.token_bytes} bytes)",
            )

    def check_rendered(self, text: str) -> None:
        """A render's text past the whole context's bound is never tokenised (a template that repeats a message)."""
        self.check("the rendered conversation", text, self.context)
