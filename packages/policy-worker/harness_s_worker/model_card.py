"""What the worker says about the base model it serves (`GET /healthz`'s `base`): its parameters,
its context and its chat template's family, read from the loaded model and tokenizer, so that a
caller (`harness-s serve --models`) never parses a model folder itself."""

from __future__ import annotations

from typing import Any

#: A chat template's family by the markers it writes, the first that matches.
TEMPLATE_FAMILIES = (
    ("llama3", "<|start_header_id|>"),
    ("chatml", "<|im_start|>"),
    ("mistral", "[INST]"),
    ("gemma", "<start_of_turn>"),
)


def template_family(template: str | None) -> str:
    """`chatml`, `llama3`, `mistral`, `gemma`, or `other` (no template, or one of none of these)."""
    return next((family for family, marker in TEMPLATE_FAMILIES if marker in (template or "")), "other")


def model_card(base: Any, tokenizer: Any, context: int) -> dict[str, Any]:
    """The served model's parameters (the base model's own: its policies' LoRA weights, injected into it, are not counted), context in tokens and template family."""
    parameters = sum(p.numel() for name, p in base.named_parameters() if "lora_" not in name)
    return {
        "parameters": parameters,
        "context": context,
        "chat_template": template_family(getattr(tokenizer, "chat_template", None)),
    }
