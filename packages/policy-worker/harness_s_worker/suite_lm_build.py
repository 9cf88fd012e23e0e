"""Builds the suite LM from a recipe and its warm-start conversations (see `suite_lm`)."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from .adapters import eos_ids_of
from .sft import VALIDATION_EVERY, following_loss, imitation_gap, log, supervised
from .suite_lm_recipe import SIZES, Recipe
from .tiny import build_tokenizer
from .warm_start import Conversation, corpus, examples, train_tokenizer


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
    conversations = [
        Conversation.model_validate_json(line) for line in data_bytes.decode().splitlines() if line.strip()
    ]
    tool_names = sorted({t["function"]["name"] for c in conversations for t in c.tools or []})
    tokenizer = train_tokenizer(corpus(conversations, build_tokenizer()), recipe.vocab_size, tool_names)
    model = new_model(recipe, tokenizer)
    data = examples(conversations, tokenizer, recipe.hinted_weight)
    longest = max(len(ids) for ids, _ in data)
    if longest > recipe.context:
        raise ValueError(
            f"a warm-start conversation holds {longest} tokens, past the recipe's context of {recipe.context}"
        )
    instructs = {i for i, c in enumerate(conversations) if (c.model_extra or {}).get("source") == "instruct"}
    held = [i for i in range(len(data)) if i % VALIDATION_EVERY == 0]
    train = [i for i in range(len(data)) if i % VALIDATION_EVERY != 0]
    instruct_losses = (
        supervised(
            model,
            [data[i] for i in train if i in instructs],
            seed=recipe.seed,
            epochs=recipe.instruct_epochs,
            lr=recipe.lr,
            batch_tokens=recipe.batch_tokens,
        )
        if instructs
        else []
    )
    losses = supervised(
        model,
        [data[i] for i in train],
        seed=recipe.seed,
        epochs=recipe.epochs,
        lr=recipe.lr,
        batch_tokens=recipe.batch_tokens,
    )
    imitated = [i for i in held if i not in instructs]
    gap = imitation_gap(model, [data[i] for i in imitated], [conversations[i] for i in imitated])
    following = following_loss(model, [data[i] for i in held if i in instructs])
    log(
        f"suite-lm: instruction following on {following['turns']} held-back turns: {following['nats_per_turn']} nats/turn"
    )
    log(
        f"suite-lm: imitation gap on {gap['turns']} held-back turns: {gap['nats_per_turn']} nats/turn ({gap['nats_per_hinted_turn']} on {gap['hinted_turns']} hinted turns)"
    )
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
