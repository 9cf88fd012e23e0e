"""The base model and its LoRA adapters (peft): one *published* adapter per policy, which
sampling and scoring read, and a *training* copy its optimiser owns. Every forward pass and every
change to the adapters holds `lock`; the sampling engine calls the model through this object, so a
policy created later is still the same model."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from typing import Any, cast

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import PreTrainedTokenizerBase


def eos_ids_of(model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase) -> frozenset[int]:
    """Every end-of-turn id: the generation config's (one id or several) and the tokenizer's."""
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = set(configured if isinstance(configured, list) else [configured] if configured is not None else [])
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return frozenset(int(i) for i in ids)


def delete_adapters(model: PeftModel, *names: str) -> None:
    """Deletes adapters without peft's warning that the active one is gone: every use of the
    model sets the adapter it needs first (`active_adapter` is read, never remembered)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Adapter .* was active which is now deleted", category=UserWarning)
        for name in names:
            model.delete_adapter(name)


class AdaptedModel:
    def __init__(self, base: torch.nn.Module) -> None:
        self.base = base
        self.model: PeftModel | None = None
        self.lock = threading.Lock()

    def __call__(self, **kwargs: Any) -> Any:
        assert self.model is not None
        return self.model(**kwargs)

    def parameters(self) -> Iterator[torch.nn.Parameter]:
        return self.base.parameters()

    @property
    def peft(self) -> PeftModel:
        """The adapted model (made with the first policy)."""
        assert self.model is not None
        return self.model

    def activate(self, adapter: str) -> None:
        """Makes `adapter` the active one (a no-op when it is: peft's switch walks every module)."""
        assert self.model is not None
        if self.model.active_adapter != adapter:
            self.model.set_adapter(adapter)

    def vocab_size(self) -> int:
        """Token ids the model has embeddings for (ids at or past it are a 400, never a device assert)."""
        return int(cast(Any, self.base).get_input_embeddings().weight.shape[0])

    def max_context(self) -> int:
        """Tokens one sequence may hold (prompt and completion): the model's position limit."""
        return int(getattr(self.base.config, "max_position_embeddings", 0) or 1 << 30)

    def adapter_params(self, adapter: str) -> list[torch.nn.Parameter]:
        assert self.model is not None
        return [p for n, p in self.model.named_parameters() if f".{adapter}." in n]

    def copy_adapter(self, source: str, target: str) -> None:
        with torch.no_grad():
            for s, t in zip(self.adapter_params(source), self.adapter_params(target), strict=True):
                t.copy_(s)

    def unmatched_targets(self, targets: list[str]) -> list[str]:
        """The LoRA targets no module of the base model answers to (peft matches a module by its
        full name or its last parts), so a policy never silently adapts fewer modules than asked."""
        names = [n for n, _ in self.base.named_modules()]
        return [t for t in targets if not any(n == t or n.endswith(f".{t}") for n in names)]

    def linear_names(self) -> list[str]:
        """The distinct last names of the base model's linear modules (what LoRA targets name)."""
        return sorted({n.rsplit(".", 1)[-1] for n, m in self.base.named_modules() if isinstance(m, torch.nn.Linear)})

    def add_pair(self, adapter: str, config: LoraConfig, seed: int) -> list[torch.nn.Parameter]:
        """Adds `adapter` and its training copy `<adapter>t` (the copy starts equal); the copy's
        parameters, for its optimiser. The caller holds `lock`."""
        torch.manual_seed(seed)
        if self.model is None:
            self.model = get_peft_model(self.base, config, adapter_name=adapter)
        else:
            self.model.add_adapter(adapter, config)
        self.model.add_adapter(f"{adapter}t", config)
        self.copy_adapter(adapter, f"{adapter}t")
        return self.adapter_params(f"{adapter}t")

    def delete(self, *names: str) -> None:
        """Deletes adapters (the caller holds `lock`)."""
        delete_adapters(self.peft, *names)
