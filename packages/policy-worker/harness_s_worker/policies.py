"""Policies on one base model. Each policy has two LoRA adapters (peft): the *published* one,
which `sample` and `score` read, and a *training* copy its AdamW optimizer owns; an update
trains the copy while sampling goes on at the published version, then publishes (copies the
trained weights over) between decoding steps. Episodes keep their ids by episode id."""

from __future__ import annotations

import shutil
import threading
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import PreTrainedTokenizerBase

from .chat import ChatFormat
from .engine import Engine, Request
from .errors import WorkerError
from .replay import Turns
from .sampling import SamplingRule
from .toolcalls import parser_for


@dataclass
class Episode:
    ids: list[int]
    assistant: dict[str, Any] | None = None
    forced: list[int] = field(default_factory=list)


@dataclass
class Policy:
    id: str
    spec: dict[str, Any]
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


@dataclass
class Limits:
    """What one worker holds at most; past a cap the request is a 429 `CAPACITY_EXCEEDED`."""

    policies: int = 64
    episodes_per_policy: int = 4096
    jobs: int = 1000
    cache_mb: int = 1024
    sample_timeout_s: float = 300.0


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


class Policies:
    def __init__(self, model: torch.nn.Module, tokenizer: PreTrainedTokenizerBase, state_dir: Path, limits: Limits | None = None, model_name: str = "tiny", tool_parser: str | None = None):
        self.base = model
        self.limits = limits or Limits()
        self.model_name = model_name
        self.tokenizer = tokenizer
        self.eos_ids = eos_ids_of(model, tokenizer)
        self.chat = ChatFormat(tokenizer, self.eos_ids)
        self.tool_parser = tool_parser or parser_for(getattr(tokenizer, "chat_template", None))
        self.turns = Turns(self.chat, tokenizer, self.tool_parser)
        self.model: PeftModel | None = None
        self.state_dir = state_dir
        self.policies: dict[str, Policy] = {}
        self.lock = threading.RLock()  # the tables above
        self.model_lock = threading.Lock()  # every forward pass and every change to the adapters
        self.engine = Engine(self, self.model_lock, self._activate, cache_bytes=self.limits.cache_mb << 20)

    # The engine calls the model through these, so a policy created later is still the same model.
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

    def _activate(self, adapter: str) -> None:
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

    def get(self, pid: str) -> Policy:
        p = self.policies.get(pid)
        if p is None:
            raise WorkerError(404, "NOT_FOUND", f"policy {pid!r} not found")
        return p

    def adapter_params(self, adapter: str) -> list[torch.nn.Parameter]:
        assert self.model is not None
        return [p for n, p in self.model.named_parameters() if f".{adapter}." in n]

    def copy_adapter(self, source: str, target: str) -> None:
        with torch.no_grad():
            for s, t in zip(self.adapter_params(source), self.adapter_params(target), strict=True):
                t.copy_(s)

    def create(self, pid: str, spec: dict[str, Any]) -> tuple[Policy, bool]:
        from .checkpoints import apply_checkpoint, read_checkpoint

        with self.lock:
            if spec["base_model"] != self.model_name:
                raise WorkerError(400, "VALIDATION_FAILED", f"base_model: this worker serves {self.model_name!r}, not {spec['base_model']!r}")
            if pid in self.policies:
                if self.policies[pid].spec != spec:
                    raise WorkerError(409, "CONFLICT", f"policy {pid!r} exists with another spec")
                return self.policies[pid], False
            if len(self.policies) >= self.limits.policies:
                raise WorkerError(429, "CAPACITY_EXCEEDED", f"this worker holds {self.limits.policies} policies, its limit; delete one first")
            restore = read_checkpoint(self.state_dir, spec["init_from"]) if spec.get("init_from") else None
            lora = spec["lora"]
            config = LoraConfig(r=lora["rank"], lora_alpha=lora["alpha"], target_modules=lora["targets"], lora_dropout=0.0)
            adapter = f"a{uuid.uuid4().hex[:8]}"
            with self.model_lock:
                torch.manual_seed(spec.get("seed", 0))
                if self.model is None:
                    self.model = get_peft_model(self.base, config, adapter_name=adapter)
                else:
                    self.model.add_adapter(adapter, config)
                self.model.add_adapter(f"{adapter}t", config)
                self.copy_adapter(adapter, f"{adapter}t")
                params = self.adapter_params(f"{adapter}t")
                policy = Policy(pid, spec, adapter, f"{adapter}t", optimizer=torch.optim.AdamW(params, lr=1e-4))
                try:
                    if restore is not None:
                        apply_checkpoint(self, policy, restore)
                except Exception:
                    delete_adapters(self.model, adapter, f"{adapter}t")
                    raise
                self.model.eval()
            self.policies[pid] = policy
            return policy, True

    def delete(self, pid: str) -> None:
        with self.lock:
            p = self.get(pid)
            del self.policies[pid]

        def drop() -> None:
            with self.model_lock:
                assert self.model is not None
                delete_adapters(self.model, p.adapter, p.train_adapter)
            self.engine.forget(f"{pid}/")

        self.engine.barrier(p.adapter, drop).result()
        shutil.rmtree(self.state_dir / "policies" / pid, ignore_errors=True)

    def check_version(self, p: Policy, want: dict[str, Any] | None) -> None:
        if want is None:
            return
        if "exact" in want and want["exact"] != p.version:
            raise WorkerError(409, "STALE_POLICY_VERSION", f"policy {p.id} is at version {p.version}, not {want['exact']}")
        if "min" in want and p.version < want["min"]:
            raise WorkerError(409, "STALE_POLICY_VERSION", f"policy {p.id} is at version {p.version}, below {want['min']}")

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, generation_prompt: bool) -> list[int]:
        return self.chat.whole(messages, tools, generation_prompt)

    def prepare(self, pid: str, body: dict[str, Any]) -> tuple[Request, dict[str, Any]]:
        """Checks a sample request and builds its engine request (no model work)."""
        with self.lock:
            p = self.get(pid)
            self.check_version(p, body.get("version"))
            sampling = body.get("sampling") or {}
            rule = SamplingRule(float(sampling.get("temperature", 1.0)), float(sampling.get("top_p", 1.0)))
            if sampling.get("purpose", "train") == "train" and not rule.exact:
                raise WorkerError(
                    400,
                    "VALIDATION_FAILED",
                    'sampling: a training sample ("purpose": "train", the default) is drawn at temperature 1 and top_p 1, so its log-probabilities are the ones an update scores; send "purpose": "eval" to sample otherwise',
                )
            episode_id = body["episode_id"]
            episode = p.episodes.get(episode_id)
            if episode is None and len(p.episodes) >= self.limits.episodes_per_policy:
                raise WorkerError(429, "CAPACITY_EXCEEDED", f"policy {pid} has {self.limits.episodes_per_policy} open episodes, its limit; they close with the next update or DELETE")
            if episode is not None:
                if body.get("messages"):
                    raise WorkerError(400, "VALIDATION_FAILED", f"episode {episode_id} exists: send `append`, not `messages`")
                prompt = episode.forced + self.chat.delta(episode.assistant or {"role": "assistant", "content": ""}, body.get("append") or [])
                prefix = episode.ids + prompt
            else:
                if not body.get("messages"):
                    raise WorkerError(400, "VALIDATION_FAILED", "a new episode needs `messages`")
                prompt = self.chat.first(body["messages"], body.get("tools"))
                prefix = prompt
            max_tokens = int(sampling.get("max_tokens", 64))
            if len(prefix) + max_tokens > self.max_context():
                raise WorkerError(400, "VALIDATION_FAILED", f"the episode would hold {len(prefix)} + {max_tokens} tokens, past the model's context of {self.max_context()}")
            context = {"policy": p, "episode_id": episode_id, "prompt": prompt, "prefix": prefix, "version": p.version, "want": body.get("version")}

            def admit() -> None:  # on the scheduler thread, when the sequence starts
                with self.lock:
                    if self.policies.get(pid) is not p:
                        raise WorkerError(404, "NOT_FOUND", f"policy {pid!r} not found")
                    self.check_version(p, context["want"])
                    context["version"] = p.version

            request = Request(p.adapter, f"{pid}/{episode_id}", prefix, rule, max_tokens, self.eos_ids, sampling.get("seed"), admit=admit)
            return request, context

    def finish(self, context: dict[str, Any], result: tuple[list[int], list[float], str]) -> dict[str, Any]:
        """Records the turn in its episode and returns the completion (text, tool calls)."""
        ids, logprobs, finish = result
        turn = self.turns.after(ids)
        p: Policy = context["policy"]
        with self.lock:
            if p.version == context["version"]:  # an update published meanwhile closed the episode
                p.episodes[context["episode_id"]] = Episode(context["prefix"] + ids, turn["assistant"], turn["forced"])
        completion = {"ids": ids, "logprobs": logprobs, "text": turn["text"], "finish_reason": finish, "content": turn["content"]}
        if turn["calls"] is not None:
            completion["tool_calls"] = turn["calls"]
        if turn["parse_error"] is not None:
            completion["parse_error"] = turn["parse_error"]
        return {"policy_version": context["version"], "prompt_ids": context["prompt"], "completion": completion}

    def sample(self, pid: str, body: dict[str, Any]) -> dict[str, Any]:
        """One turn, blocking (tests, the bench); the HTTP server awaits the engine instead."""
        request, context = self.prepare(pid, body)
        return self.finish(context, self.engine.submit(request).result(timeout=self.limits.sample_timeout_s))

    def score(self, pid: str, version: dict[str, Any] | None, sequences: list[dict[str, Any]]) -> list[list[float]]:
        from .ppo import batch_logprobs, micro_batches

        with self.lock:
            p = self.get(pid)
            self.check_version(p, version)
        dev = next(self.base.parameters()).device
        ids = [torch.tensor(s["ids"], device=dev) for s in sequences]
        out: list[list[float]] = [[] for _ in ids]
        for batch in micro_batches([len(x) for x in ids], 8192):
            with self.model_lock, torch.no_grad():
                self._activate(p.adapter)
                for i, lp in zip(batch, batch_logprobs(self.peft, [ids[i] for i in batch]), strict=True):
                    out[i] = lp.tolist()
        return out

    def replay(self, pid: str, version: dict[str, Any] | None, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each turn's prompt ids as sampling would have built them under `messages` (see
        `replay.Turns`), and its completion's log-probabilities there at the published version."""
        prompts = self.turns.prompts(messages, tools, turns)
        ids = [t for prompt, turn in zip(prompts, turns, strict=True) for t in (*prompt, *turn["completion_ids"])]
        if len(ids) > self.max_context():
            raise WorkerError(400, "VALIDATION_FAILED", f"the replayed episode holds {len(ids)} tokens, past the model's context of {self.max_context()}")
        logprobs = self.score(pid, version, [{"ids": ids}])[0]
        out, at = [], 0
        for prompt, turn in zip(prompts, turns, strict=True):
            at += len(prompt)
            out.append({"prompt_ids": prompt, "logprobs": logprobs[at : at + len(turn["completion_ids"])]})
            at += len(turn["completion_ids"])
        return out

    def close_episode(self, pid: str, episode_id: str) -> bool:
        """Forgets an episode's ids and cache; False when it was not open (closing is idempotent)."""
        with self.lock:
            closed = self.get(pid).episodes.pop(episode_id, None) is not None
        self.engine.forget_key(f"{pid}/{episode_id}")
        return closed

    def publish(self, p: Policy) -> None:
        """The trained copy becomes the published adapter, the version moves and the episodes close."""
        with self.lock, self.model_lock:
            self.copy_adapter(p.train_adapter, p.adapter)
            p.version += 1
            p.episodes.clear()
        self.engine.forget(f"{p.id}/")
