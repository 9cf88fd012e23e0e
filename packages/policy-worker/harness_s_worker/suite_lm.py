"""The suite LM: a small Llama-architecture model with a tokenizer trained on the suite's text,
warm-started by supervised training on conversations of the embedded initial policy, built
deterministically from a recipe and cached under `<cache>/suite-lm-<hash>` (the hash covers the
recipe and the conversations). The worker serves the folder like any Hugging Face model:
`python -m harness_s_worker.server --model <cache>/suite-lm-<hash>`.

`python -m harness_s_worker.suite_lm --recipe recipe.json --data warm.jsonl --cache-dir DIR`
prints `{"path", "hash", "cached", ...}`; progress goes to stderr."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import re
import shutil
import sys
import time
from pathlib import Path

import torch
from pydantic import BaseModel, ConfigDict, Field
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from .chat import ChatFormat
from .policies import eos_ids_of
from .replay import Turns
from .tiny import CHAT_TEMPLATE, SPECIALS, build_tokenizer

SIZES = {
    # name: (hidden, layers, heads, intermediate)
    "toy": (32, 1, 2, 64),
    "small": (128, 4, 4, 384),
    "base": (256, 6, 8, 768),
    "large": (512, 8, 8, 1536),
}


class Recipe(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    seed: int = 0
    size: str = Field("small", pattern="^(" + "|".join(SIZES) + ")$")
    vocab_size: int = Field(1024, ge=300, le=65536)
    context: int = Field(2048, ge=128, le=32768)
    epochs: int = Field(3, ge=0, le=100)
    lr: float = Field(3e-3, gt=0, le=1)
    batch_tokens: int = Field(16384, ge=256)
    # Loss weight of a hinted turn's call (1: as any other). Weighting turns changes which states
    # the model spends its capacity on, not the distribution it imitates in each.
    hinted_weight: float = Field(1.0, ge=0, le=100)


class Call(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict = {}


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    append: list[dict] | None = None
    call: Call
    # The embedded policy's log-probability of the call, and whether the turn showed a hint.
    logprob: float | None = None
    hinted: bool = False


class Conversation(BaseModel):
    """One episode of the embedded policy as text: what a token policy would have been sent, and
    the tool call it made at each turn (written out as the chat template writes a call)."""

    model_config = ConfigDict(extra="allow")
    messages: list[dict] = Field(min_length=1)
    tools: list[dict] | None = None
    turns: list[Turn] = Field(min_length=1)


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def recipe_hash(recipe: Recipe, data: bytes) -> str:
    body = json.dumps({"recipe": recipe.model_dump(), "data": hashlib.sha256(data).hexdigest(), "format": 1}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def weights_hash(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def completion_text(call: Call, renderer) -> str:
    """A tool call as the chat template writes an assistant turn holding it, without the
    end-of-turn text: what the model must generate to make that call. `renderer` is any
    tokenizer carrying the template (the text does not depend on its vocabulary)."""
    head = [{"role": "user", "content": "."}]
    before = renderer.apply_chat_template(head, add_generation_prompt=True, tokenize=False)
    assistant = {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": call.model_dump()}]}
    after = renderer.apply_chat_template([*head, assistant], tokenize=False)
    text = after[len(before) :]
    return text[: text.rindex(renderer.eos_token)]


def corpus(conversations: list[Conversation], renderer) -> list[str]:
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
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(rf"\b(?:{names})\b"), behavior="isolated"), byte_level]) if names else byte_level
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<|im_end|>")
    fast.chat_template = CHAT_TEMPLATE
    return fast


def new_model(recipe: Recipe, tokenizer: PreTrainedTokenizerFast) -> LlamaForCausalLM:
    hidden, layers, heads, intermediate = SIZES[recipe.size]
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=recipe.context,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=False,
    )
    torch.manual_seed(recipe.seed)
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def examples(conversations: list[Conversation], tokenizer, hinted_weight: float = 1.0) -> list[tuple[list[int], list[float]]]:
    """(ids, weights) per conversation: the prompts as sampling builds them (weight 0) and each
    completion's canonical ids with the end-of-turn token (weight 1, or `hinted_weight` on a
    hinted turn; each turn's completion is one positive run, in turn order)."""
    eos = tokenizer.eos_token_id
    turns = Turns(ChatFormat(tokenizer, frozenset([eos])), tokenizer, "hermes")
    out = []
    for c in conversations:
        completions = [tokenizer(completion_text(t.call, tokenizer), add_special_tokens=False)["input_ids"] + [eos] for t in c.turns]
        prompts = turns.prompts(c.messages, c.tools, [{"append": t.append, "completion_ids": ids} for t, ids in zip(c.turns, completions, strict=True)])
        ids, mask = [], []
        for prompt, completion, turn in zip(prompts, completions, c.turns, strict=True):
            ids += prompt + completion
            mask += [0.0] * len(prompt) + [hinted_weight if turn.hinted else 1.0] * len(completion)
        out.append((ids, mask))
    return out


def supervised(model: LlamaForCausalLM, data: list[tuple[list[int], list[int]]], recipe: Recipe) -> list[float]:
    """Cross-entropy on the completions, AdamW with a cosine schedule, batches packed by a token
    budget in a seeded order; returns the mean loss of each epoch."""
    order_rng = random.Random(recipe.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=recipe.lr, weight_decay=0.0)
    by_length = sorted(range(len(data)), key=lambda i: len(data[i][0]))
    batches, current, longest = [], [], 0
    for i in by_length:
        n = len(data[i][0])
        if current and max(longest, n) * (len(current) + 1) > recipe.batch_tokens:
            batches.append(current)
            current, longest = [], 0
        current.append(i)
        longest = max(longest, n)
    if current:
        batches.append(current)
    total = max(1, recipe.epochs * len(batches))
    losses, step, started = [], 0, time.time()
    model.train()
    for epoch in range(recipe.epochs):
        order = list(range(len(batches)))
        order_rng.shuffle(order)
        summed, count = 0.0, 0
        for b in order:
            batch = [data[i] for i in batches[b]]
            width = max(len(ids) for ids, _ in batch)
            ids = torch.zeros(len(batch), width, dtype=torch.long)
            weights = torch.zeros(len(batch), width)
            attention = torch.zeros(len(batch), width, dtype=torch.long)
            for r, (seq, mask) in enumerate(batch):
                ids[r, : len(seq)] = torch.tensor(seq)
                attention[r, : len(seq)] = 1
                weights[r, : len(seq)] = torch.tensor(mask)
            for group in optimizer.param_groups:
                group["lr"] = recipe.lr * 0.5 * (1 + math.cos(math.pi * step / total))
            logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
            token_loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1), reduction="none")
            w = weights[:, 1:].reshape(-1)
            loss = (token_loss * w).sum() / w.sum().clamp(min=1e-9)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            step += 1
            summed += float(loss.detach()) * len(batch)
            count += len(batch)
        losses.append(summed / max(count, 1))
        log(f"suite-lm: epoch {epoch + 1}/{recipe.epochs} loss {losses[-1]:.4f} ({time.time() - started:.0f} s)")
    model.eval()
    return losses


VALIDATION_EVERY = 20


@torch.no_grad()
def imitation_gap(model, data: list[tuple[list[int], list[int]]], conversations: list[Conversation]) -> dict:
    """On held-back conversations: the model's negative log-likelihood of each call minus the
    embedded policy's (−log p of the same call), in nats per turn — a cross-entropy minus an
    entropy, so an estimate of the KL from the embedded policy to the model (an upper bound: the
    model's other spellings of a call are not counted) — overall and on hinted turns."""
    model.eval()
    gaps: list[float] = []
    hinted: list[float] = []
    for (ids, mask), c in zip(data, conversations, strict=True):
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].float()
        token_lp = torch.log_softmax(logits, -1).gather(-1, torch.tensor(ids[1:]).unsqueeze(-1)).squeeze(-1)
        runs, current = [], 0.0
        for i in range(1, len(ids)):
            if mask[i]:
                current += float(token_lp[i - 1])
                if i + 1 == len(ids) or not mask[i + 1]:
                    runs.append(current)
                    current = 0.0
        for lp, turn in zip(runs, c.turns, strict=True):
            if turn.logprob is None:
                continue
            gap = turn.logprob - lp
            gaps.append(gap)
            if turn.hinted:
                hinted.append(gap)
    mean = lambda xs: round(sum(xs) / len(xs), 4) if xs else None  # noqa: E731
    return {"turns": len(gaps), "nats_per_turn": mean(gaps), "hinted_turns": len(hinted), "nats_per_hinted_turn": mean(hinted)}


def build(recipe: Recipe, data_bytes: bytes, out: Path) -> dict:
    """Builds the model into `out` (a fresh folder) and returns its build record."""
    started = time.time()
    conversations = [Conversation.model_validate_json(line) for line in data_bytes.decode().splitlines() if line.strip()]
    tool_names = sorted({t["function"]["name"] for c in conversations for t in c.tools or []})
    tokenizer = train_tokenizer(corpus(conversations, build_tokenizer()), recipe.vocab_size, tool_names)
    model = new_model(recipe, tokenizer)
    data = examples(conversations, tokenizer, recipe.hinted_weight)
    longest = max(len(ids) for ids, _ in data)
    if longest > recipe.context:
        raise ValueError(f"a warm-start conversation holds {longest} tokens, past the recipe's context of {recipe.context}")
    held = [i for i in range(len(data)) if i % VALIDATION_EVERY == 0]
    train = [data[i] for i in range(len(data)) if i % VALIDATION_EVERY != 0]
    losses = supervised(model, train, recipe)
    gap = imitation_gap(model, [data[i] for i in held], [conversations[i] for i in held])
    log(f"suite-lm: imitation gap on {gap['turns']} held-back turns: {gap['nats_per_turn']} nats/turn ({gap['nats_per_hinted_turn']} on {gap['hinted_turns']} hinted turns)")
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    record = {
        "recipe": recipe.model_dump(),
        "parameters": sum(p.numel() for p in model.parameters()),
        "vocab": len(tokenizer),
        "conversations": len(conversations),
        "tokens": sum(len(ids) for ids, _ in data),
        "trained_tokens": sum(sum(1 for w in m if w > 0) for _, m in data),
        "longest": longest,
        "losses": losses,
        "imitation_gap": gap,
        "weights_sha256": weights_hash(model),
        "eos_ids": sorted(eos_ids_of(model, tokenizer)),
        "seconds": round(time.time() - started, 1),
    }
    (out / "suite-lm.json").write_text(json.dumps(record, indent=2))
    return record


def build_cached(recipe: Recipe, data_bytes: bytes, cache_dir: Path) -> dict:
    """The cached model for this recipe and data, built first when missing (atomically: a
    crashed build leaves no folder that looks finished)."""
    key = recipe_hash(recipe, data_bytes)
    final = cache_dir / f"suite-lm-{key}"
    if (final / "suite-lm.json").exists():
        return {"path": str(final), "hash": key, "cached": True, **json.loads((final / "suite-lm.json").read_text())}
    cache_dir.mkdir(parents=True, exist_ok=True)
    work = cache_dir / f".building-{key}-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        record = build(recipe, data_bytes, work)
        shutil.rmtree(final, ignore_errors=True)
        work.rename(final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"path": str(final), "hash": key, "cached": False, **record}


def main() -> None:
    ap = argparse.ArgumentParser(description="Build (or find cached) the suite LM")
    ap.add_argument("--recipe", type=Path, required=True, help="the recipe as JSON (see Recipe)")
    ap.add_argument("--data", type=Path, required=True, help="warm-start conversations, one JSON object per line")
    ap.add_argument("--cache-dir", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=None)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    recipe = Recipe.model_validate_json(args.recipe.read_text())
    print(json.dumps(build_cached(recipe, args.data.read_bytes(), args.cache_dir)))


if __name__ == "__main__":
    main()
