"""Update jobs: PPO on a policy's training copy, micro-batch by micro-batch (each holding the
model lock only for its own forward and backward, so sampling goes on between them), published
when every epoch has applied. A failed update (an error, a loss or gradient that is not finite)
puts the copy and the optimizer back as they were: the version and the published adapter never
moved."""

from __future__ import annotations

import copy
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from . import ppo
from .constrained import allowed_rows
from .errors import WorkerError, stale_version
from .policies import Policies, Policy
from .schemas import Datum, UpdateRequest

if TYPE_CHECKING:
    from peft import PeftModel


@dataclass
class Job:
    id: str
    policy_id: str
    key: str
    base_version: int
    status: str = "queued"
    version: int | None = None
    metrics: dict[str, Any] | None = None
    error: str | None = None
    finished: threading.Event = field(default_factory=threading.Event, repr=False)


class Updates:
    def __init__(self, policies: Policies):
        self.policies = policies
        self.jobs: dict[str, Job] = {}
        self.by_key: dict[tuple[str, str], str] = {}
        self.stopping = False

    def drain(self, timeout_s: float, log: Callable[[str], None]) -> None:
        """The worker is stopping: new updates are refused (503), and each accepted one is waited
        for (at most `timeout_s` in all) and logged as it ends; one still running then is logged
        as abandoned (its policy stays at the version it had: nothing half-applied is published)."""
        with self.policies.lock:
            self.stopping = True
            pending = [j for j in self.jobs.values() if j.status in ("queued", "running")]
        if pending:
            log(f"policy worker: stopping; waiting up to {timeout_s:g} s for {len(pending)} accepted update(s)")
        deadline = time.monotonic() + timeout_s
        for job in pending:
            if job.finished.wait(max(0.0, deadline - time.monotonic())):
                log(
                    f"policy worker: update {job.id} of {job.policy_id} {job.status}"
                    + (f" (now v{job.version})" if job.version is not None else f": {job.error}")
                )
            else:
                log(
                    f"policy worker: update {job.id} of {job.policy_id} abandoned after {timeout_s:g} s; the policy stays at v{job.base_version}"
                )

    def get(self, uid: str) -> Job:
        job = self.jobs.get(uid)
        if job is None:
            raise WorkerError(404, "NOT_FOUND", f"update {uid!r} not found")
        return job

    def forget_policy(self, pid: str) -> None:
        with self.policies.lock:
            for k in [k for k in self.by_key if k[0] == pid]:
                self.jobs.pop(self.by_key.pop(k), None)

    def submit(self, pid: str, key: str, body: UpdateRequest) -> tuple[Job, bool]:
        with self.policies.lock:
            p = self.policies.get(pid)
            known = self.by_key.get((pid, key))
            if known is not None:
                return self.jobs[known], False
            if self.stopping:
                raise WorkerError(
                    503, "STOPPING", "the worker is stopping: send the update to the worker that replaces it"
                )
            if body.base_version != p.version:
                raise stale_version(
                    p.version,
                    body.base_version,
                    f"update based on version {body.base_version}, policy {pid} is at {p.version}",
                )
            if p.busy:
                raise WorkerError(409, "UPDATE_IN_PROGRESS", f"policy {pid} is applying another update")
            self._forget_finished()
            p.busy = True
            job = Job(id=f"upd_{uuid.uuid4().hex[:12]}", policy_id=pid, key=key, base_version=p.version)
            self.jobs[job.id] = job
            self.by_key[(pid, key)] = job.id
        threading.Thread(target=self._run, args=(p, job, body), daemon=True, name=f"update-{pid}").start()
        return job, True

    def _run(self, p: Policy, job: Job, body: UpdateRequest) -> None:
        policies = self.policies
        try:
            job.status = "running"
            saved = copy.deepcopy(p.optim().state_dict())
            try:
                started = time.perf_counter()
                metrics = {**train(policies, p, body), "device_ms": round((time.perf_counter() - started) * 1000, 3)}
            except Exception:
                with policies.adapted.lock:
                    policies.adapted.copy_adapter(p.adapter, p.train_adapter)
                p.optim().load_state_dict(saved)
                raise
            policies.engine.barrier(p.adapter, lambda: policies.publish(p)).result()
            job.version, job.metrics, job.status = p.version, metrics, "done"
        except (
            Exception
        ) as err:  # reported on the job; the policy stays at its version, its adapter and optimizer as they were
            job.status, job.error = "failed", f"{type(err).__name__}: {err}"
        finally:
            p.busy = False
            job.finished.set()

    def _forget_finished(self) -> None:
        """Keeps at most `limits.jobs` jobs: the oldest finished ones go first."""
        limit = self.policies.limits.jobs
        finished = [j for j in self.jobs.values() if j.status in ("done", "failed")]
        while len(self.jobs) >= limit and finished:
            job = finished.pop(0)
            self.jobs.pop(job.id, None)
            self.by_key.pop((job.policy_id, job.key), None)
        if len(self.jobs) >= limit:
            raise WorkerError(
                429, "CAPACITY_EXCEEDED", f"{limit} update jobs are queued or running, the worker's limit"
            )


def train(policies: Policies, p: Policy, body: UpdateRequest) -> dict[str, Any]:
    """PPO over the datums, `epochs` times: each epoch accumulates gradients over micro-batches of
    at most `micro_batch_tokens` padded tokens (memory is one micro-batch's graph), then steps."""
    model = policies.adapted.model
    assert model is not None and p.optimizer is not None
    loss = body.loss
    loss_cfg = ppo.Loss(
        clip_low=loss.clip_low, clip_high=loss.clip_high, agg=loss.agg, kl_coef=loss.kl_coef, normaliser=loss.normaliser
    )
    optim = body.optim
    for g in p.optimizer.param_groups:
        g.update(lr=optim.lr, betas=tuple(optim.betas), weight_decay=optim.weight_decay)
    params = p.optimizer.param_groups[0]["params"]
    dev = next(policies.adapted.base.parameters()).device
    datums = body.datums
    ids = [torch.tensor(d.ids, device=dev) for d in datums]
    masks = [torch.tensor(d.loss_mask, dtype=torch.float32, device=dev) for d in datums]
    olds = [torch.tensor(d.behaviour_logprobs, dtype=torch.float32, device=dev) for d in datums]
    advantages = datum_advantages(datums, dev)
    # Turns sampled under the tool-call constraint are scored under it: the same renormalised distribution.
    allowed = [
        allowed_rows(policies.grammars.grammar(d.constraint.tools), d.ids, list(d.loss_mask)) if d.constraint else None
        for d in datums
    ]
    weights = ppo.datum_weights(masks, loss_cfg)
    batches = ppo.micro_batches([len(x) for x in ids], optim.micro_batch_tokens)
    refs: list[torch.Tensor | None] = [None] * len(ids)
    if loss_cfg.kl_coef > 0:
        refs = reference_logprobs(policies, model, batches, ids, allowed)
    tokens = float(sum(m.sum() for m in masks))
    per_epoch: list[dict[str, Any]] = []
    for epoch in range(optim.epochs):
        p.optimizer.zero_grad()
        sums = {"loss": 0.0, "kl": 0.0, "clipped": 0.0, "gap": 0.0}
        for batch in batches:
            micro_batch(
                policies,
                p,
                batch,
                ids,
                masks,
                olds,
                refs,
                advantages,
                weights,
                loss_cfg,
                optim.gradient_checkpointing,
                sums,
                epoch,
                allowed,
            )
        grad_norm = torch.nn.utils.clip_grad_norm_(params, optim.max_grad_norm)
        if not torch.isfinite(grad_norm):
            raise FloatingPointError(
                f"the gradient norm is not finite ({float(grad_norm)}) in epoch {epoch + 1}; nothing was applied"
            )
        with policies.adapted.lock:
            p.optimizer.step()
        per_epoch.append(epoch_metrics(sums, tokens, grad_norm))
    mean = {k: sum(e[k] for e in per_epoch) / len(per_epoch) for k in ("loss", "clip_fraction", "kl", "grad_norm")}
    # The sampler-trainer gap is the first epoch's: later epochs score weights the sampler never had.
    return {
        **mean,
        "tokens": int(tokens),
        "micro_batches": len(batches),
        "sampler_trainer_logprob_absdiff": per_epoch[0]["sampler_trainer_logprob_absdiff"],
        "epochs": per_epoch,
    }


def datum_advantages(datums: list[Datum], dev: torch.device) -> list[float | torch.Tensor]:
    """Each datum's advantage; a row with token weights trains each token on its weighted advantage (the surrogate is
    linear in it)."""
    return [
        float(d.advantage)
        if d.token_weights is None
        else float(d.advantage) * torch.tensor(d.token_weights, dtype=torch.float32, device=dev)
        for d in datums
    ]


def reference_logprobs(
    policies: Policies,
    model: PeftModel,
    batches: list[list[int]],
    ids: list[torch.Tensor],
    allowed: list[ppo.Allowed | None],
) -> list[torch.Tensor | None]:
    """Each datum's log-probabilities under the base model (the adapter disabled), micro-batch by micro-batch: the
    reference the KL term is measured against."""
    refs: list[torch.Tensor | None] = [None] * len(ids)
    for batch in batches:
        with policies.adapted.lock, torch.no_grad(), model.disable_adapter():
            for i, lp in zip(
                batch, ppo.batch_logprobs(model, [ids[i] for i in batch], [allowed[i] for i in batch]), strict=True
            ):
                refs[i] = lp
    return refs


def epoch_metrics(sums: dict[str, Any], tokens: float, grad_norm: torch.Tensor) -> dict[str, Any]:
    """One epoch's metrics: its loss and KL, the share of tokens clipped, the gradient norm and the mean gap between
    the sampler's and the trainer's log-probabilities."""
    return {
        "loss": sums["loss"],
        "clip_fraction": sums["clipped"] / max(tokens, 1),
        "kl": sums["kl"],
        "grad_norm": float(grad_norm),
        "sampler_trainer_logprob_absdiff": sums["gap"] / max(tokens, 1),
    }


def micro_batch(
    policies: Policies,
    p: Policy,
    batch: list[int],
    ids: list[torch.Tensor],
    masks: list[torch.Tensor],
    olds: list[torch.Tensor],
    refs: list[torch.Tensor | None],
    advantages: list[float | torch.Tensor],
    weights: list[float],
    loss_cfg: ppo.Loss,
    checkpointing: bool,
    sums: dict[str, Any],
    epoch: int,
    allowed: list[ppo.Allowed | None],
) -> None:
    """One micro-batch's forward and backward on the training copy, holding the model lock for
    just this long (decoding steps run between micro-batches)."""
    with policies.adapted.lock:
        model = policies.adapted.peft
        policies.adapted.activate(p.train_adapter)
        for param in p.optim().param_groups[0]["params"]:
            param.requires_grad_(True)
        model.train()
        if checkpointing:
            model.gradient_checkpointing_enable()
        try:
            total = torch.zeros((), device=ids[0].device)
            for i, new in zip(
                batch, ppo.batch_logprobs(model, [ids[i] for i in batch], [allowed[i] for i in batch]), strict=True
            ):
                surr, clip, kl = ppo.datum_terms(new, olds[i], refs[i], masks[i], advantages[i], loss_cfg)
                total = total + ppo.datum_loss(surr, kl, weights[i], loss_cfg)
                sums["kl"] += weights[i] * float(kl.detach().sum())
                sums["clipped"] += float(clip.sum())
                sums["gap"] += float(((new.detach() - olds[i]).abs() * masks[i]).sum())
            if not torch.isfinite(total):
                raise FloatingPointError(
                    f"the loss is not finite ({float(total)}) in epoch {epoch + 1}; nothing was applied"
                )
            total.backward()
            sums["loss"] += float(total.detach())
        finally:
            if checkpointing:
                model.gradient_checkpointing_disable()
            model.eval()
