"""The suite LM: a small Llama-architecture model with a tokenizer trained on the suite's text,
warm-started by supervised training on conversations of the embedded initial policy, built
deterministically from a recipe and cached under `<cache>/suite-lm-<hash>` (the hash covers the
recipe and the conversations). The worker serves the folder like any Hugging Face model:
`python -m harness_s_worker.launch --model <cache>/suite-lm-<hash>`.

`python -m harness_s_worker.suite_lm --recipe recipe.json --data warm.jsonl --cache-dir DIR`
prints `{"path", "hash", "cached", ...}`; progress goes to stderr."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from .adapters import eos_ids_of
from .sft import VALIDATION_EVERY, following_loss, imitation_gap, log, supervised
from .threads import set_threads
from .tiny import build_tokenizer
from .warm_start import Conversation, corpus, examples, train_tokenizer

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
    # Epochs on the instruction-following conversations alone before the warm start (0: none).
    instruct_epochs: int = Field(0, ge=0, le=100)


def recipe_hash(recipe: Recipe, data: bytes) -> str:
    body = json.dumps({"recipe": recipe.model_dump(), "data": hashlib.sha256(data).hexdigest(), "format": 1}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def size_parameters(size: str) -> int:
    """Parameters of a size's transformer blocks (embeddings aside): enough to tell small from large."""
    hidden, layers, _heads, intermediate = SIZES[size]
    return layers * (4 * hidden * hidden + 3 * hidden * intermediate)


def weights_hash(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


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


def build(recipe: Recipe, data_bytes: bytes, out: Path) -> dict[str, Any]:
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
    instructs = {i for i, c in enumerate(conversations) if (c.model_extra or {}).get("source") == "instruct"}
    held = [i for i in range(len(data)) if i % VALIDATION_EVERY == 0]
    train = [i for i in range(len(data)) if i % VALIDATION_EVERY != 0]
    instruct_losses = (
        supervised(model, [data[i] for i in train if i in instructs], seed=recipe.seed, epochs=recipe.instruct_epochs, lr=recipe.lr, batch_tokens=recipe.batch_tokens) if instructs else []
    )
    losses = supervised(model, [data[i] for i in train], seed=recipe.seed, epochs=recipe.epochs, lr=recipe.lr, batch_tokens=recipe.batch_tokens)
    imitated = [i for i in held if i not in instructs]
    gap = imitation_gap(model, [data[i] for i in imitated], [conversations[i] for i in imitated])
    following = following_loss(model, [data[i] for i in held if i in instructs])
    log(f"suite-lm: instruction following on {following['turns']} held-back turns: {following['nats_per_turn']} nats/turn")
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
        "instruct": {
            "conversations": len(instructs),
            "tokens": sum(len(data[i][0]) for i in instructs),
            "losses": instruct_losses,
            "nats_per_turn": following["nats_per_turn"],
            "above_half": following["above_half"],
            "turns": following["turns"],
        },
        "weights_sha256": weights_hash(model),
        "eos_ids": sorted(eos_ids_of(model, tokenizer)),
        "seconds": round(time.time() - started, 1),
    }
    (out / "suite-lm.json").write_text(json.dumps(record, indent=2))
    return record


def build_cached(recipe: Recipe, data_bytes: bytes, cache_dir: Path) -> dict[str, Any]:
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
    ap.add_argument("--threads", type=int, default=None, help="torch's CPU threads (default: 1 under 20M parameters, else torch's)")
    args = ap.parse_args()
    recipe = Recipe.model_validate_json(args.recipe.read_text())
    set_threads(size_parameters(recipe.size), "cpu", args.threads)
    print(json.dumps(build_cached(recipe, args.data.read_bytes(), args.cache_dir)))


if __name__ == "__main__":
    main()
