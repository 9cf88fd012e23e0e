"""The policies one worker holds, on one base model: create, look up, delete, check a requested
version, score and replay at the published version, publish a trained copy. The model and its
adapters are `adapters.AdaptedModel`; sampling turn by turn is `episodes.Episodes`; update jobs
are `updates.Updates`; checkpoints are `checkpoints`. Each policy has two LoRA adapters: the
*published* one, which sampling and scoring read, and a *training* copy its AdamW optimiser owns;
an update trains the copy while sampling goes on, then publishes between decoding steps."""

from __future__ import annotations

import shutil
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from peft import LoraConfig
from transformers import PreTrainedTokenizerBase

from .adapters import AdaptedModel, eos_ids_of
from .chat import ChatFormat
from .checkpoints import apply_checkpoint, read_checkpoint, save_checkpoint
from .constrained import Grammars, allowed_rows
from .engine import Engine
from .episodes import Episode, Episodes
from .errors import WorkerError, stale_version
from .limits import Limits
from .ppo import Allowed
from .replay import Turns
from .schemas import CreatePolicy, ReplayTurn, Version
from .textbound import TextBound
from .toolcalls import parser_for


@dataclass
class Policy:
    id: str
    spec: CreatePolicy
    adapter: str
    train_adapter: str
    version: int = 0
    optimizer: torch.optim.Optimizer | None = None
    episodes: dict[str, Episode] = field(default_factory=dict)
    busy: bool = False

    def optim(self) -> torch.optim.Optimizer:
        """The optimiser (made with the policy; None only while it is being created)."""
        assert self.optimizer is not None
        return self.optimizer


class Policies:
    #: Whether this worker trains its policies (updates, checkpoints); see `live.LivePolicies`.
    trainable = True

    def __init__(
        self,
        model: torch.nn.Module,
        tokenizer: PreTrainedTokenizerBase,
        state_dir: Path,
        limits: Limits | None = None,
        model_name: str = "tiny",
        tool_parser: str | None = None,
        adapted: AdaptedModel | None = None,
    ):
        self.adapted = adapted or AdaptedModel(model)
        self.limits = limits or Limits()
        self.model_name = model_name
        self.tokenizer = tokenizer
        self.eos_ids = eos_ids_of(model, tokenizer)
        self.bound = TextBound(tokenizer, self.adapted.max_context())
        self.chat = ChatFormat(tokenizer, self.eos_ids, self.bound)
        self.tool_parser = tool_parser or parser_for(getattr(tokenizer, "chat_template", None))
        self.turns = Turns(self.chat, tokenizer, self.tool_parser)
        self.grammars = Grammars(
            tokenizer,
            self.tool_parser,
            self.eos_ids,
            int(getattr(getattr(model, "config", None), "vocab_size", 0) or len(tokenizer)),
        )
        self.state_dir = state_dir
        self.policies: dict[str, Policy] = {}
        self.lock = threading.RLock()  # the table above and each policy's fields
        self.engine = Engine(
            self.adapted, self.adapted.lock, self.adapted.activate, cache_bytes=self.limits.cache_mb << 20
        )
        self.episodes = Episodes(
            self,
            self.lock,
            self.engine,
            self.grammars,
            self.chat,
            self.turns,
            self.eos_ids,
            self.limits,
            self.adapted.max_context(),
            self.bound,
        )

    def checkpoint(self, pid: str) -> dict[str, Any]:
        """Saves the policy's published adapter, optimizer state and version (see `checkpoints`)."""
        with self.lock:
            return save_checkpoint(self.get(pid), self.adapted, self.state_dir)

    def find(self, pid: str) -> Policy | None:
        return self.policies.get(pid)

    def get(self, pid: str) -> Policy:
        p = self.policies.get(pid)
        if p is None:
            raise WorkerError(404, "NOT_FOUND", f"policy {pid!r} not found")
        return p

    def create(self, pid: str, spec: CreatePolicy) -> tuple[Policy, bool]:

        with self.lock:
            if spec.base_model != self.model_name:
                raise WorkerError(
                    400,
                    "VALIDATION_FAILED",
                    f"base_model: this worker serves {self.model_name!r}, not {spec.base_model!r}",
                )
            if pid in self.policies:
                if self.policies[pid].spec != spec:
                    raise WorkerError(409, "CONFLICT", f"policy {pid!r} exists with another spec")
                return self.policies[pid], False
            if len(self.policies) >= self.limits.policies:
                raise WorkerError(
                    429,
                    "CAPACITY_EXCEEDED",
                    f"this worker holds {self.limits.policies} policies, its limit; delete one first",
                )
            unmatched = self.adapted.unmatched_targets(spec.lora.targets)
            if unmatched:
                raise WorkerError(
                    400,
                    "VALIDATION_FAILED",
                    f"lora.targets: {', '.join(unmatched)} name no module of {self.model_name!r} (its linear modules: {', '.join(self.adapted.linear_names())})",
                )
            restore = read_checkpoint(self.state_dir, spec.init_from) if spec.init_from else None
            config = LoraConfig(
                r=spec.lora.rank,
                lora_alpha=spec.lora.alpha,  # type: ignore[arg-type]  # peft annotates int; it scales by alpha / r as a float
                target_modules=spec.lora.targets,
                lora_dropout=0.0,
            )
            adapter = f"a{uuid.uuid4().hex[:8]}"
            with self.adapted.lock:
                params = self.adapted.add_pair(adapter, config, spec.seed)
                policy = Policy(pid, spec, adapter, f"{adapter}t", optimizer=torch.optim.AdamW(params, lr=1e-4))
                try:
                    if restore is not None:
                        apply_checkpoint(self.adapted, policy, restore)
                except Exception:
                    self.adapted.delete(adapter, f"{adapter}t")
                    raise
                self.adapted.peft.eval()
            self.policies[pid] = policy
            return policy, True

    def delete(self, pid: str) -> None:
        with self.lock:
            p = self.get(pid)
            del self.policies[pid]

        def drop() -> None:
            with self.adapted.lock:
                self.adapted.delete(p.adapter, p.train_adapter)
            self.engine.forget(f"{pid}/")

        self.engine.barrier(p.adapter, drop).result()
        shutil.rmtree(self.state_dir / "policies" / pid, ignore_errors=True)

    def check_version(self, p: Policy, want: Version | None) -> None:
        if want is None:
            return
        if want.exact is not None and want.exact != p.version:
            raise stale_version(p.version, want.exact, f"policy {p.id} is at version {p.version}, not {want.exact}")
        if want.min is not None and p.version < want.min:
            raise stale_version(p.version, want.min, f"policy {p.id} is at version {p.version}, below {want.min}")

    def score(
        self, pid: str, version: Version | None, sequences: list[list[int]], allowed: list[Allowed | None] | None = None
    ) -> list[list[float]]:
        from .ppo import batch_logprobs, micro_batches

        with self.lock:
            p = self.get(pid)
            self.check_version(p, version)
        dev = next(self.adapted.parameters()).device
        ids = [torch.tensor(s, device=dev) for s in sequences]
        out: list[list[float]] = [[] for _ in ids]
        for batch in micro_batches([len(x) for x in ids], 8192):
            with self.adapted.lock, torch.no_grad():
                self.adapted.activate(p.adapter)
                for i, lp in zip(
                    batch,
                    batch_logprobs(
                        self.adapted.peft, [ids[i] for i in batch], [allowed[i] for i in batch] if allowed else None
                    ),
                    strict=True,
                ):
                    out[i] = lp.tolist()
        return out

    def replay(
        self,
        pid: str,
        version: Version | None,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        turns: list[ReplayTurn],
        constrained: bool = False,
    ) -> list[dict[str, Any]]:
        """Each turn's prompt ids as sampling would have built them under `messages` (see
        `replay.Turns`), and its completion's log-probabilities there at the published version
        (under the tool-call constraint when the turns were sampled under it)."""
        if constrained and not tools:
            raise WorkerError(
                400, "VALIDATION_FAILED", "constrain_tool_calls needs the tools the turns were constrained to"
            )
        sampled = sum(len(t.completion_ids) for t in turns)
        self.bound.check(
            "messages, tools and appends",
            [messages, tools, [t.append for t in turns]],
            self.adapted.max_context() - sampled,
        )
        prompts = self.turns.prompts(messages, tools, turns)
        ids = [t for prompt, turn in zip(prompts, turns, strict=True) for t in (*prompt, *turn.completion_ids)]
        if len(ids) > self.adapted.max_context():
            raise WorkerError(
                400,
                "CONTEXT_TOO_LONG",
                f"the replayed episode holds {len(ids)} tokens, past the model's context of {self.adapted.max_context()}",
            )
        mask = [
            m
            for prompt, turn in zip(prompts, turns, strict=True)
            for m in (*[0] * len(prompt), *[1] * len(turn.completion_ids))
        ]
        allowed: list[Allowed | None] | None = (
            [allowed_rows(self.grammars.grammar(tools or []), ids, mask)] if constrained else None
        )
        logprobs = self.score(pid, version, [ids], allowed)[0]
        out, at = [], 0
        for prompt, turn in zip(prompts, turns, strict=True):
            at += len(prompt)
            out.append({"prompt_ids": prompt, "logprobs": logprobs[at : at + len(turn.completion_ids)]})
            at += len(turn.completion_ids)
        return out

    def publish(self, p: Policy) -> None:
        """The trained copy becomes the published adapter, the version moves and the episodes close."""
        with self.lock, self.adapted.lock:
            self.adapted.copy_adapter(p.train_adapter, p.adapter)
            p.version += 1
            p.episodes.clear()
        self.engine.forget(f"{p.id}/")
