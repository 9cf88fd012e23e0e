"""A tiny causal LM built offline: a byte-level BPE trained here and a 2-layer Llama (~100k
parameters). For tests and CPU runs; real weights load through `load_model(path)` instead."""

from __future__ import annotations

from typing import cast

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SPECIALS = ["<pad>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]

# ChatML with tools: each message is self-contained, so a later turn is rendered on its own and
# appended to the episode's token prefix (the prefix is never re-rendered).
CHAT_TEMPLATE = (
    "{%- if tools -%}<|im_start|>system\nTools: {{ tools | tojson }}<|im_end|>\n{%- endif -%}"
    "{%- for m in messages -%}<|im_start|>{{ m['role'] }}\n"
    "{%- if m['content'] %}{{ m['content'] }}{% endif -%}"
    "{%- if m.get('tool_calls') %}{% for c in m['tool_calls'] %}<tool_call>{{ c['function'] | tojson }}</tool_call>{% endfor %}{% endif -%}"
    "<|im_end|>\n{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_start|>assistant\n{%- endif -%}"
)

CORPUS = [
    "You are an agent. Call a tool or answer.",
    '<tool_call>{"name": "submit", "arguments": {"answer": "yes"}}</tool_call>',
    '<tool_call>{"name": "list_items", "arguments": {"page": 1}}</tool_call>',
    "The result has 3 items; more pages follow. Error: unauthorized. Done.",
    "user assistant tool system Tools: name arguments description parameters type object string",
    "target yes no maybe alpha beta gamma delta 0 1 2 3 4 5 6 7 8 9",
] * 20


def build_tokenizer(
    specials: list[str] = SPECIALS,
    eos: str = "<|im_end|>",
    template: str = CHAT_TEMPLATE,
    bos: str | None = None,
    pad: str = "<pad>",
) -> PreTrainedTokenizerFast:
    """A byte-level BPE over `CORPUS` with `specials` as special tokens (tests build one per model
    family this way, with that family's own chat template and end-of-turn tokens)."""
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token=pad, eos_token=eos, **({"bos_token": bos} if bos else {})
    )
    fast.chat_template = template
    return fast


def build_tiny(
    seed: int = 0, tokenizer: PreTrainedTokenizerFast | None = None, eos_ids: list[int] | None = None
) -> tuple[LlamaForCausalLM, PreTrainedTokenizerFast]:
    """The tiny model and its tokenizer (ours unless one is given); the same seed gives the same weights."""
    tokenizer = tokenizer or build_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=4096,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = eos_ids or tokenizer.eos_token_id
    return model, tokenizer


def load_model(path: str, device: str) -> tuple[torch.nn.Module, PreTrainedTokenizerFast]:
    """Any causal LM in Hugging Face format from a directory (the same path on a GPU host)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = cast(PreTrainedTokenizerFast, AutoTokenizer.from_pretrained(path))
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    model = cast(torch.nn.Module, AutoModelForCausalLM.from_pretrained(path, dtype=dtype))
    model.to(device)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer
