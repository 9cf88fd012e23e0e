"""Policies on one base model: a LoRA adapter each (peft, one adapter name per policy), their
AdamW state, versions, episodes (token prefixes kept by episode id) and update jobs."""
from __future__ import annotations

import copy
import shutil
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model

from .ppo import Loss, batch_logprobs, datum_terms, datum_weights, micro_batches, token_logprobs
from .sampler import Sampler


class WorkerError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass
class Policy:
    id: str
    spec: dict
    adapter: str
    version: int = 0
    optimizer: torch.optim.Optimizer | None = None
    episodes: dict[str, list[int]] = field(default_factory=dict)
    busy: bool = False


@dataclass
class Job:
    id: str
    policy_id: str
    key: str
    base_version: int
    status: str = "queued"
    version: int | None = None
    metrics: dict | None = None
    error: str | None = None


@dataclass
class Limits:
    """What one worker holds at most; past a cap the request is a 429 `CAPACITY_EXCEEDED`."""

    policies: int = 64
    episodes_per_policy: int = 4096
    jobs: int = 1000


class Policies:
    def __init__(self, model: torch.nn.Module, tokenizer, state_dir: Path, sampler: Sampler, limits: Limits | None = None, model_name: str = "tiny"):
        self.base = model
        self.limits = limits or Limits()
        self.model_name = model_name
        self.tokenizer = tokenizer
        self.model: PeftModel | None = None
        self.state_dir = state_dir
        self.sampler = sampler
        self.policies: dict[str, Policy] = {}
        self.jobs: dict[str, Job] = {}
        self.by_key: dict[tuple[str, str], str] = {}
        self.lock = threading.RLock()

    def vocab_size(self) -> int:
        """Token ids the model has embeddings for (ids at or past it are a 400, never a device assert)."""
        return int(self.base.get_input_embeddings().weight.shape[0])

    def get(self, pid: str) -> Policy:
        p = self.policies.get(pid)
        if p is None:
            raise WorkerError(404, "NOT_FOUND", f"policy {pid!r} not found")
        return p

    def max_context(self) -> int:
        """Tokens one sequence may hold (prompt and completion): the model's position limit."""
        return int(getattr(self.base.config, "max_position_embeddings", 0) or 1 << 30)

    def create(self, pid: str, spec: dict) -> tuple[Policy, bool]:
        with self.lock:
            if spec["base_model"] != self.model_name:
                raise WorkerError(400, "VALIDATION_FAILED", f"base_model: this worker serves {self.model_name!r}, not {spec['base_model']!r}")
            if pid in self.policies:
                if self.policies[pid].spec != spec:
                    raise WorkerError(409, "CONFLICT", f"policy {pid!r} exists with another spec")
                return self.policies[pid], False
            if len(self.policies) >= self.limits.policies:
                raise WorkerError(429, "CAPACITY_EXCEEDED", f"this worker holds {self.limits.policies} policies, its limit; delete one first")
            restore = self._read_checkpoint(spec["init_from"]) if spec.get("init_from") else None
            lora = spec["lora"]
            config = LoraConfig(r=lora["rank"], lora_alpha=lora["alpha"], target_modules=lora["targets"], lora_dropout=0.0)
            adapter = f"p{len(self.policies)}_{uuid.uuid4().hex[:6]}"
            torch.manual_seed(spec.get("seed", 0))
            if self.model is None:
                self.model = get_peft_model(self.base, config, adapter_name=adapter)
            else:
                self.model.add_adapter(adapter, config)
            self.model.set_adapter(adapter)
            params = [p for n, p in self.model.named_parameters() if f".{adapter}." in n]
            for p in params:
                p.requires_grad_(True)
            policy = Policy(pid, spec, adapter, optimizer=torch.optim.AdamW(params, lr=1e-4))
            if restore is not None:
                self._apply_checkpoint(policy, restore)
            self.policies[pid] = policy
            return policy, True

    def delete(self, pid: str) -> None:
        with self.lock:
            p = self.get(pid)
            assert self.model is not None
            self.model.delete_adapter(p.adapter)
            del self.policies[pid]
            shutil.rmtree(self.state_dir / "policies" / pid, ignore_errors=True)
            for k in [k for k in self.by_key if k[0] == pid]:
                self.jobs.pop(self.by_key.pop(k), None)

    def check_version(self, p: Policy, want: dict | None) -> None:
        if want is None:
            return
        if "exact" in want and want["exact"] != p.version:
            raise WorkerError(409, "STALE_POLICY_VERSION", f"policy {p.id} is at version {p.version}, not {want['exact']}")
        if "min" in want and p.version < want["min"]:
            raise WorkerError(409, "STALE_POLICY_VERSION", f"policy {p.id} is at version {p.version}, below {want['min']}")

    def render(self, messages: list[dict], tools: list[dict] | None, generation_prompt: bool) -> list[int]:
        out = self.tokenizer.apply_chat_template(messages, tools=tools or None, add_generation_prompt=generation_prompt, tokenize=True)
        return list(out["input_ids"] if hasattr(out, "keys") else out)

    def sample(self, pid: str, body: dict) -> dict:
        with self.lock:
            p = self.get(pid)
            self.check_version(p, body.get("version"))
            episode = body["episode_id"]
            if episode not in p.episodes and len(p.episodes) >= self.limits.episodes_per_policy:
                raise WorkerError(429, "CAPACITY_EXCEEDED", f"policy {pid} has {self.limits.episodes_per_policy} open episodes, its limit; they close with the next update or DELETE")
            if episode in p.episodes:
                if body.get("messages"):
                    raise WorkerError(400, "VALIDATION_FAILED", f"episode {episode} exists: send `append`, not `messages`")
                prompt = self.render(body.get("append") or [], None, True)
                prefix = p.episodes[episode] + prompt
            else:
                if not body.get("messages"):
                    raise WorkerError(400, "VALIDATION_FAILED", "a new episode needs `messages`")
                prompt = self.render(body["messages"], body.get("tools"), True)
                prefix = prompt
            max_tokens = int((body.get("sampling") or {}).get("max_tokens", 64))
            if len(prefix) + max_tokens > self.max_context():
                raise WorkerError(400, "VALIDATION_FAILED", f"the episode would hold {len(prefix)} + {max_tokens} tokens, past the model's context of {self.max_context()}")
            assert self.model is not None
            self.model.set_adapter(p.adapter)
            ids, logprobs, finish = self.sampler.sample(self.model, prefix, body.get("sampling") or {}, self.tokenizer.eos_token_id)
            p.episodes[episode] = prefix + ids
            return {"policy_version": p.version, "prompt_ids": prompt, "ids": ids, "logprobs": logprobs, "finish_reason": finish}

    def score(self, pid: str, version: dict | None, sequences: list[dict]) -> list[list[float]]:
        with self.lock, torch.no_grad():
            p = self.get(pid)
            self.check_version(p, version)
            assert self.model is not None
            self.model.set_adapter(p.adapter)
            dev = next(self.model.parameters()).device
            return [token_logprobs(self.model, torch.tensor(s["ids"], device=dev)).tolist() for s in sequences]

    def submit_update(self, pid: str, key: str, body: dict) -> tuple[Job, bool]:
        with self.lock:
            p = self.get(pid)
            known = self.by_key.get((pid, key))
            if known is not None:
                return self.jobs[known], False
            if body["base_version"] != p.version:
                raise WorkerError(409, "STALE_POLICY_VERSION", f"update based on version {body['base_version']}, policy {pid} is at {p.version}")
            if p.busy:
                raise WorkerError(409, "UPDATE_IN_PROGRESS", f"policy {pid} is applying another update")
            self._forget_finished_jobs()
            p.busy = True
            job = Job(id=f"upd_{uuid.uuid4().hex[:12]}", policy_id=pid, key=key, base_version=p.version)
            self.jobs[job.id] = job
            self.by_key[(pid, key)] = job.id
        threading.Thread(target=self._run_update, args=(p, job, body), daemon=True).start()
        return job, True

    def _run_update(self, p: Policy, job: Job, body: dict) -> None:
        try:
            job.status = "running"
            with self.lock:
                saved = self._save_state(p)
                try:
                    metrics = self._update(p, body)
                except Exception:
                    self._restore_state(p, saved)
                    raise
                p.version += 1
                p.episodes.clear()
                job.version, job.metrics, job.status = p.version, metrics, "done"
        except Exception as err:  # reported on the job; the policy stays at its version, its adapter and optimizer as they were
            job.status, job.error = "failed", f"{type(err).__name__}: {err}"
        finally:
            p.busy = False

    def _adapter_params(self, p: Policy) -> list[torch.nn.Parameter]:
        assert p.optimizer is not None
        return list(p.optimizer.param_groups[0]["params"])

    def _save_state(self, p: Policy) -> tuple[list[torch.Tensor], dict]:
        """The adapter's weights and the optimizer's state, copied, to put back if the update fails."""
        assert p.optimizer is not None
        return [t.detach().clone() for t in self._adapter_params(p)], copy.deepcopy(p.optimizer.state_dict())

    def _restore_state(self, p: Policy, saved: tuple[list[torch.Tensor], dict]) -> None:
        assert p.optimizer is not None
        weights, optim = saved
        with torch.no_grad():
            for param, w in zip(self._adapter_params(p), weights):
                param.copy_(w)
        p.optimizer.load_state_dict(optim)

    def _update(self, p: Policy, body: dict) -> dict:
        """PPO over the datums, `epochs` times: each epoch accumulates gradients over micro-batches
        of at most `micro_batch_tokens` padded tokens (so memory is one micro-batch's graph, not the
        whole batch's), then takes one optimizer step."""
        assert self.model is not None and p.optimizer is not None
        model = self.model
        model.set_adapter(p.adapter)
        model.train()
        loss_cfg = Loss(**{k: body["loss"][k] for k in ("clip_low", "clip_high", "agg", "kl_coef", "normaliser") if k in body["loss"]})
        optim = body["optim"]
        for g in p.optimizer.param_groups:
            g.update(lr=optim["lr"], betas=tuple(optim.get("betas", (0.9, 0.999))), weight_decay=optim.get("weight_decay", 0.0))
        if optim.get("gradient_checkpointing"):
            model.gradient_checkpointing_enable()
        dev = next(model.parameters()).device
        ids = [torch.tensor(d["ids"], device=dev) for d in body["datums"]]
        masks = [torch.tensor(d["loss_mask"], dtype=torch.float32, device=dev) for d in body["datums"]]
        olds = [torch.tensor(d["behaviour_logprobs"], dtype=torch.float32, device=dev) for d in body["datums"]]
        advantages = [float(d["advantage"]) for d in body["datums"]]
        weights = datum_weights(masks, loss_cfg)
        batches = micro_batches([len(x) for x in ids], int(optim.get("micro_batch_tokens", 8192)))
        refs: list[torch.Tensor | None] = [None] * len(ids)
        if loss_cfg.kl_coef > 0:
            with torch.no_grad(), model.disable_adapter():
                for batch in batches:
                    for i, lp in zip(batch, batch_logprobs(model, [ids[i] for i in batch])):
                        refs[i] = lp
        tokens = float(sum(m.sum() for m in masks))
        per_epoch: list[dict] = []
        try:
            for epoch in range(int(optim.get("epochs", 1))):
                p.optimizer.zero_grad()
                loss_sum = kl_sum = clipped = gap = 0.0
                for batch in batches:
                    total = torch.zeros((), device=dev)
                    for i, new in zip(batch, batch_logprobs(model, [ids[i] for i in batch])):
                        surr, clip, kl = datum_terms(new, olds[i], refs[i], masks[i], advantages[i], loss_cfg)
                        total = total + weights[i] * (surr.sum() + loss_cfg.kl_coef * kl.sum())
                        kl_sum += weights[i] * float(kl.sum())
                        clipped += float(clip.sum())
                        gap += float(((new.detach() - olds[i]).abs() * masks[i]).sum())
                    if not torch.isfinite(total):
                        raise FloatingPointError(f"the loss is not finite ({float(total)}) in epoch {epoch + 1}; nothing was applied")
                    total.backward()
                    loss_sum += float(total.detach())
                grad_norm = torch.nn.utils.clip_grad_norm_(p.optimizer.param_groups[0]["params"], optim.get("max_grad_norm", 1.0))
                if not torch.isfinite(grad_norm):
                    raise FloatingPointError(f"the gradient norm is not finite ({float(grad_norm)}) in epoch {epoch + 1}; nothing was applied")
                p.optimizer.step()
                per_epoch.append({"loss": loss_sum, "clip_fraction": clipped / max(tokens, 1), "kl": kl_sum, "grad_norm": float(grad_norm), "sampler_trainer_logprob_absdiff": gap / max(tokens, 1)})
        finally:
            if optim.get("gradient_checkpointing"):
                model.gradient_checkpointing_disable()
            model.eval()
        mean = {k: sum(e[k] for e in per_epoch) / len(per_epoch) for k in ("loss", "clip_fraction", "kl", "grad_norm")}
        # The sampler-trainer gap is the first epoch's: later epochs train on weights the sampler never had.
        return {**mean, "tokens": int(tokens), "micro_batches": len(batches), "sampler_trainer_logprob_absdiff": per_epoch[0]["sampler_trainer_logprob_absdiff"], "epochs": per_epoch}

    def _forget_finished_jobs(self) -> None:
        """Keeps at most `limits.jobs` jobs: the oldest finished ones go first."""
        finished = [j for j in self.jobs.values() if j.status in ("done", "failed")]
        while len(self.jobs) >= self.limits.jobs and finished:
            job = finished.pop(0)
            self.jobs.pop(job.id, None)
            self.by_key.pop((job.policy_id, job.key), None)
        if len(self.jobs) >= self.limits.jobs:
            raise WorkerError(429, "CAPACITY_EXCEEDED", f"{self.limits.jobs} update jobs are queued or running, the worker's limit")

    def checkpoint(self, pid: str) -> dict:
        """Saves the adapter, its optimizer state and the version under `<state>/policies/<id>/v<n>`;
        `init_from: "<id>/v<n>"` on a new policy (on this worker or one sharing the state folder)
        restores all three, so a unit continues where it stopped."""
        with self.lock:
            p = self.get(pid)
            assert self.model is not None and p.optimizer is not None
            path = self.state_dir / "policies" / pid / f"v{p.version}"
            path.mkdir(parents=True, exist_ok=True)
            weights = {f"{i}": t.detach().cpu() for i, t in enumerate(self._adapter_params(p))}
            torch.save({"version": p.version, "spec": p.spec, "weights": weights, "optimizer": p.optimizer.state_dict()}, path / "state.pt")
            self.model.save_pretrained(str(path), selected_adapters=[p.adapter])
            return {"version": p.version, "path": str(path), "checkpoint": f"{pid}/v{p.version}"}

    def _read_checkpoint(self, ref: str) -> dict:
        root = (self.state_dir / "policies").resolve()
        path = (root / ref / "state.pt").resolve()
        if root not in path.parents or not path.is_file():
            raise WorkerError(400, "VALIDATION_FAILED", f"init_from: no checkpoint {ref!r} in this worker's state folder (as POST …/checkpoints names it: <policy>/v<n>)")
        return torch.load(path, map_location="cpu", weights_only=True)

    def _apply_checkpoint(self, p: Policy, saved: dict) -> None:
        assert p.optimizer is not None
        params = self._adapter_params(p)
        if len(saved["weights"]) != len(params) or saved["spec"].get("lora") != p.spec.get("lora"):
            raise WorkerError(400, "VALIDATION_FAILED", "init_from: the checkpoint's adapter does not match this policy's lora settings")
        with torch.no_grad():
            for i, param in enumerate(params):
                param.copy_(saved["weights"][str(i)].to(param.device))
        p.optimizer.load_state_dict(saved["optimizer"])
        p.version = int(saved["version"])
