"""Selective harness rescue inside a TRL `GRPOTrainer`: `rescue_rollout_func(...)` is a
`rollout_func`. For each group of the batch it runs the task under H0 with the trainer's own
model (served from this process at the trainer's step, `harness_s_worker.live`) in the caller's
environment, scores the rows with the trainer's reward functions, and for each group where every
row fails asks the service for a rescue under the routed siblings, at the same weights, and puts
the rescued rows in the group's place when some of them succeed (else the failed group stays: it
carries no advantage either way). Rows are handed to TRL as the service returned them: ids,
log-probabilities and `env_mask` (0 on environment text and every harness insertion); with
`context="base"`, the rows are H0's rendering with H0's re-scores beside the sampled
log-probabilities (`base_logprobs`). A rescue the service fails (a slot with its code) is logged
with that code and the group stays. The rescue metrics of each batch (groups kept / replaced /
unrescued, rescues, rollouts, spend, harnesses chosen) go to the trainer's own log (`rescue/…`,
beside TRL's metrics: W&B, TensorBoard, `trainer.state.log_history`).

Serving the trainer's model in-process needs the policy worker's package (`harness_s_worker`,
installed with `harness-s-policy-worker`); the rest of the client does not.

    func = rescue_rollout_func(client, pool_id="embedded", task_of=tasks.__getitem__,
                               environment={"kind": "openenv", "url": "http://127.0.0.1:8000"})
    trainer = GRPOTrainer(model=model, reward_funcs=[environment_reward], rollout_func=func, ...)
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import secrets
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .client import HarnessS
from .convert import Trajectory, to_trl, trl_extras
from .errors import HarnessSError
from .groups import (
    GroupOutcome,
    all_fail,
    failure_tags,
    log,
    rank_endpoint_id,
    rescue_metrics,
    rows_per_harness,
    spent_of,
)
from .types import Context

__all__ = ["GroupOutcome", "RescueRolloutFunc", "environment_reward", "rescue_rollout_func"]


def environment_reward(completions: list[Any], env_reward: list[float], **_: Any) -> list[float]:
    """A TRL reward function: the environment's own reward of each row (its submit step's). Takes
    every extra `to_trl` and `rescue_rollout_func` hand on (`TRL_EXTRAS`)."""
    return [float(r) for r in env_reward]


def log_to_trainer(trainer: Any, metrics: dict[str, float]) -> None:
    """Adds `metrics` to the trainer's own log: TRL averages its `_metrics` over each logging
    interval into `trainer.log` (W&B, TensorBoard, `state.log_history`); a trainer without them is
    logged to directly."""
    store = getattr(trainer, "_metrics", None)
    mode = "train" if getattr(trainer.model, "training", True) else "eval"
    if isinstance(store, dict) and mode in store:
        for key, value in metrics.items():
            store[mode][key].append(value)
    else:
        trainer.log(metrics)


class RescueRolloutFunc:
    """A TRL `rollout_func` with selective harness rescue (see the module's text). `outcomes` keeps
    what became of every group; `close()` stops the trainer's policy endpoint."""

    def __init__(
        self,
        client: HarnessS,
        pool_id: str,
        task_of: Callable[[Any], dict[str, Any]],
        environment: dict[str, Any],
        system: str = "",
        max_tokens: int = 256,
        k: int = 2,
        endpoint_id: str | None = None,
        fail_at_or_below: float = 0.0,
        timeout_s: float = 600.0,
        budget: dict[str, float] | None = None,
        context: Context = "sampled",
        mode: str = "router",
    ) -> None:
        self.client, self.pool_id, self.task_of, self.environment = client, pool_id, task_of, environment
        self.system, self.max_tokens, self.k = system, max_tokens, k
        #: Each data-parallel rank's own (`trl-trainer-r<rank>` under torch.distributed).
        self.endpoint_id = endpoint_id or rank_endpoint_id("trl-trainer")
        self.fail_at_or_below, self.timeout_s = fail_at_or_below, timeout_s
        #: Each run's budget (`policyTokens`, `environmentSeconds`), as the service holds it.
        self.budget = budget
        #: "sampled": rows as the policy saw them; "base": H0's rendering, H0's re-scores beside.
        self.context: Context = context
        #: "router": the Top-k; "adaptive": the service chooses siblings, H0 again or nothing per group.
        self.mode = mode
        self.resamples = {"attempts": 0, "successes": 0}
        self.endpoint: Any = None
        self.base_harness: str | None = None
        self.siblings = 0
        self.outcomes: list[GroupOutcome] = []

    def close(self) -> None:
        """Stops the trainer's policy endpoint and removes its state folder."""
        if self.endpoint is None:
            return
        self.endpoint.close()
        state = getattr(getattr(self.endpoint, "policies", None), "state_dir", None)
        if (
            isinstance(state, Path)
            and state.parent == Path(tempfile.gettempdir())
            and state.name.startswith("harness-s-live-")
        ):
            shutil.rmtree(state, ignore_errors=True)
        self.endpoint = None

    def _serve(self, trainer: Any) -> int:
        """The trainer's model served at its global step (started and registered on first use)."""
        step = int(trainer.state.global_step)
        if self.endpoint is None:
            serve_live = importlib.import_module("harness_s_worker.live").serve_live
            token = secrets.token_urlsafe(24)
            model = trainer.accelerator.unwrap_model(trainer.model)
            self.endpoint = serve_live(
                model,
                trainer.processing_class,
                policy_id="trainer",
                version=step,
                model_name=self.endpoint_id,
                token=token,
            )
            self.client.register_policy_endpoint(
                self.endpoint_id,
                "protocol-v2",
                self.endpoint.url,
                "trainer",
                secret_header=("authorization", f"Bearer {token}"),
            )
            pool = self.client.pool(self.pool_id)
            self.base_harness, self.siblings = str(pool["base"]["id"]), len(pool["siblings"])
        else:
            self.endpoint.advance(step)
        return step

    def _caller(self, task: dict[str, Any], step: int) -> dict[str, Any]:
        caller = {
            "endpoint": self.endpoint_id,
            "environment": self.environment,
            "task": task,
            "system": self.system,
            "maxTokens": self.max_tokens,
            "weightVersion": step,
        }
        return {**caller, "budget": self.budget} if self.budget else caller

    def _rows(self, rescue_id: str, step: int, context: Context) -> list[Trajectory]:
        rows = self.client.trajectories(rescue_id, context)
        stale = [r.index for r in rows if r.weight_version != step]
        if stale:
            raise RuntimeError(
                f"rescue {rescue_id}: rows {stale} were sampled at another weight version than step {step}"
            )
        return rows

    def _base_group(self, started: Any, step: int) -> list[Trajectory]:
        """A base run's rows (H0: the same in either context, so its re-scores are its log-probabilities)."""
        self.client.wait(started["id"], timeout_s=self.timeout_s)
        rows = self._rows(started["id"], step, "sampled")
        return [replace(r, base_logprobs=r.logprobs) for r in rows] if self.context == "base" else rows

    def _rescue(self, outcome: GroupOutcome, started: dict[str, Any], step: int, size: int) -> list[Trajectory] | None:
        """The rescue's first `size` rows, or None when the service failed it (its code kept, logged, the rescue cancelled)."""
        outcome.adaptive = started.get("adaptive")
        outcome.option = outcome.adaptive["option"] if outcome.adaptive else None
        if "id" not in started:  # adaptive chose to spend nothing: the group stays
            outcome.reason = "adaptive: no option expected a success"
            return None
        outcome.rescue_id, outcome.chosen = started["id"], list(started.get("chosen") or [])
        try:
            outcome.spent = spent_of(self.client.wait(started["id"], timeout_s=self.timeout_s))
            rows = self._rows(started["id"], step, self.context)
            outcome.rollouts = len(rows)
            return rows[:size]
        except HarnessSError as err:
            outcome.code, outcome.reason = err.code, f"rescue {started['id']}: {err.code}: {err.message}"
            rescue = getattr(err, "rescue", None)
            outcome.spent = spent_of(rescue) if isinstance(rescue, dict) else outcome.spent
            try:
                self.client.cancel(started["id"])
            except HarnessSError:
                pass
            log.warning(
                "group %d (task %s): %s; the group stays as it was", outcome.group, outcome.task_id, outcome.reason
            )
            return None

    def _rewards(self, trainer: Any, prompts: list[Any], rows: list[Trajectory], rescued: bool) -> list[float]:
        """The trainer's reward functions over the rows, weighted as the trainer weighs them."""
        torch = sys.modules.get("torch")
        decoded = trainer.processing_class.batch_decode([r.completion_ids for r in rows], skip_special_tokens=True)
        completions: list[Any] = (
            [[{"role": "assistant", "content": c}] for c in decoded] if isinstance(prompts[0], list) else decoded
        )
        extra = trl_extras(rows, rescued)
        total = [0.0] * len(rows)
        for func, weight in zip(trainer.reward_funcs, trainer.reward_weights.tolist(), strict=True):
            if torch is not None and isinstance(func, torch.nn.Module):
                raise TypeError(
                    "rescue_rollout_func scores groups with callable reward functions; a reward model is not supported"
                )
            out = func(
                prompts=prompts,
                completions=completions,
                completion_ids=[r.completion_ids for r in rows],
                trainer_state=trainer.state,
                log_extra=_ignore,
                log_metric=_ignore,
                **extra,
            )
            if inspect.iscoroutine(out):
                out = asyncio.run(out)
            total = [t + weight * (0.0 if v is None else float(v)) for t, v in zip(total, out, strict=True)]
        return total

    def _generate(
        self, groups: list[list[Any]], trainer: Any, size: int
    ) -> tuple[list[list[Trajectory]], list[GroupOutcome]]:
        step = self._serve(trainer)
        tasks = [self.task_of(g[0]) for g in groups]
        harnesses = [str(self.base_harness)]
        base = [
            self.client.start_rescue(
                self.pool_id, [], self._caller(t, step), rollouts_per_harness=size, harnesses=harnesses
            )
            for t in tasks
        ]
        chosen = [self._base_group(s, step) for s in base]  # no group to train on without them: a failure is raised
        outcomes = [
            GroupOutcome(step, i, str(tasks[i]["id"]), "kept", base[i]["id"], rows=chosen[i])
            for i in range(len(groups))
        ]
        failed = [
            i
            for i, rows in enumerate(chosen)
            if all_fail(self._rewards(trainer, groups[i], rows, False), self.fail_at_or_below)
        ]
        per = rows_per_harness(size, self.k, self.siblings)  # every routed sibling runs; the first `size` rows stand in
        started: dict[int, dict[str, Any]] = {}
        for i in failed:  # every rescue started before any is waited on: they run side by side
            outcomes[i].kind = "unrescued"
            try:
                extra: dict[str, Any] = (
                    {"mode": self.mode, "resample_evidence": dict(self.resamples)} if self.mode == "adaptive" else {}
                )
                started[i] = dict(
                    self.client.start_rescue(
                        self.pool_id,
                        failure_tags(chosen[i]),
                        self._caller(tasks[i], step),
                        k=self.k,
                        rollouts_per_harness=per,
                        **extra,
                    )
                )
            except HarnessSError as err:
                outcomes[i].code, outcomes[i].reason = err.code, f"{err.code}: {err.message}"
                log.warning(
                    "group %d (task %s): the rescue was refused: %s; the group stays as it was",
                    i,
                    tasks[i]["id"],
                    outcomes[i].reason,
                )
        for i, run in started.items():
            rows = self._rescue(outcomes[i], run, step, size)
            rewards = self._rewards(trainer, groups[i], rows, True) if rows else []
            if outcomes[i].option == "resample":
                self.resamples["attempts"] += len(rewards)
                self.resamples["successes"] += sum(1 for r in rewards if r > self.fail_at_or_below)
            if rows is not None and len(rows) == size and not all_fail(rewards, self.fail_at_or_below):
                outcomes[i].kind = "replaced"
                chosen[i] = outcomes[i].rows = rows
        return chosen, outcomes

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        size = trainer.num_generations if trainer.model.training else trainer.num_generations_eval
        if len(prompts) % size:
            raise ValueError(f"rollout_func got {len(prompts)} prompts, not whole groups of {size}")
        groups = [prompts[i : i + size] for i in range(0, len(prompts), size)]
        model = trainer.accelerator.unwrap_model(trainer.model)
        was_training = model.training
        model.eval()
        try:
            chosen, outcomes = self._generate(groups, trainer, size)
        finally:
            model.train(was_training)
        self.outcomes.extend(outcomes)
        log_to_trainer(trainer, rescue_metrics(outcomes))
        rows = [r for group in chosen for r in group]
        return to_trl(rows, [o.kind == "replaced" for o, group in zip(outcomes, chosen, strict=True) for _ in group])


def _ignore(*_: Any, **__: Any) -> None:
    return None


def rescue_rollout_func(
    client: HarnessS,
    pool_id: str,
    task_of: Callable[[Any], dict[str, Any]],
    environment: dict[str, Any],
    **options: Any,
) -> RescueRolloutFunc:
    """A TRL `rollout_func` with selective harness rescue; `task_of(prompt)` gives the prompt's task
    as the service takes it (`id`, `family`, `tags`, `instruction`, `tools`, `reset`). Options:
    `system`, `max_tokens`, `k`, `endpoint_id` (default per rank), `fail_at_or_below`, `timeout_s`,
    `budget`, `context` ("sampled" | "base"), `mode` ("router" | "adaptive": the service spends each
    rescue's rollouts under the Top-k, under H0 again, or not at all; see `GroupOutcome.option`)."""
    return RescueRolloutFunc(client, pool_id, task_of, environment, **options)
