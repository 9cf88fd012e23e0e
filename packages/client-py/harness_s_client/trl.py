"""Selective harness rescue inside a TRL `GRPOTrainer`: `rescue_rollout_func(...)` is a
`rollout_func`. For each group of the batch it runs the task under H0 with the trainer's own
model (served from this process at the trainer's step, `harness_s_worker.live`) in the caller's
environment, scores the rows with the trainer's reward functions, and for each group where every
row fails asks the service for a rescue under the routed siblings, at the same weights, and puts
the rescued rows in the group's place when some of them succeed (else the failed group stays: it
carries no advantage either way). Rows are handed to TRL as the service returned them: ids,
log-probabilities and `env_mask` (0 on environment text and every harness insertion).

    func = rescue_rollout_func(client, pool_id="embedded", task_of=tasks.__getitem__,
                               environment={"kind": "openenv", "url": "http://127.0.0.1:8000"})
    trainer = GRPOTrainer(model=model, reward_funcs=[environment_reward], rollout_func=func, ...)
"""

from __future__ import annotations

import asyncio
import inspect
import secrets
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .client import HarnessSClient
from .convert import Trajectory

#: Failure tag sent when the failed rows carry none (the router still ranks by the task).
UNTAGGED = "no-success"


@dataclass
class GroupOutcome:
    """What became of one group of one batch (`kept`: it did not all fail; `replaced`: the rescued
    rows stand in its place; `unrescued`: the rescued rows failed too, or the rescue did not finish
    whole (`reason`), and the group stays)."""

    step: int
    group: int
    task_id: str
    kind: Literal["kept", "replaced", "unrescued"]
    base_run: str
    rescue_id: str | None = None
    rows: list[Trajectory] = field(default_factory=list)
    #: Why a rescue did not finish whole (its group then stays), if it did not.
    reason: str | None = None


def environment_reward(completions: list[Any], env_reward: list[float], **_: Any) -> list[float]:
    """A TRL reward function: the environment's own reward of each row (its submit step's)."""
    return [float(r) for r in env_reward]


def _failure_tags(rows: list[Trajectory]) -> list[str]:
    counts = Counter(tag for r in rows for tag in r.failure_tags)
    return [t for t, _ in counts.most_common(50)] or [UNTAGGED]


class RescueRolloutFunc:
    """A TRL `rollout_func` with selective harness rescue (see the module's text). `outcomes` keeps
    what became of every group; `close()` stops the trainer's policy endpoint."""

    def __init__(
        self,
        client: HarnessSClient,
        pool_id: str,
        task_of: Callable[[Any], dict[str, Any]],
        environment: dict[str, Any],
        system: str = "",
        max_tokens: int = 256,
        k: int = 2,
        endpoint_id: str = "trl-trainer",
        fail_at_or_below: float = 0.0,
        timeout_s: float = 600.0,
        budget: dict[str, float] | None = None,
    ) -> None:
        self.client, self.pool_id, self.task_of, self.environment = client, pool_id, task_of, environment
        self.system, self.max_tokens, self.k, self.endpoint_id = system, max_tokens, k, endpoint_id
        self.fail_at_or_below, self.timeout_s = fail_at_or_below, timeout_s
        #: Each run's budget (`policyTokens`, `environmentSeconds`), as the service holds it.
        self.budget = budget
        self.endpoint: Any = None
        self.base_harness: str | None = None
        self.siblings = 0
        self.outcomes: list[GroupOutcome] = []

    def close(self) -> None:
        if self.endpoint is not None:
            self.endpoint.close()
            self.endpoint = None

    def _serve(self, trainer: Any) -> int:
        """The trainer's model served at its global step (started and registered on first use)."""
        step = int(trainer.state.global_step)
        if self.endpoint is None:
            from harness_s_worker.live import serve_live

            token = secrets.token_urlsafe(24)
            model = trainer.accelerator.unwrap_model(trainer.model)
            self.endpoint = serve_live(model, trainer.processing_class, policy_id="trainer", version=step, model_name=self.endpoint_id, token=token)
            self.client.register_policy_endpoint(self.endpoint_id, "protocol-v2", self.endpoint.url, "trainer", secret_header=("authorization", f"Bearer {token}"))
            pool = self.client.pool(self.pool_id)
            self.base_harness, self.siblings = str(pool["base"]["id"]), len(pool["siblings"])
        else:
            self.endpoint.advance(step)
        return step

    def _caller(self, task: dict[str, Any], step: int) -> dict[str, Any]:
        caller = {"endpoint": self.endpoint_id, "environment": self.environment, "task": task, "system": self.system, "maxTokens": self.max_tokens, "weightVersion": step}
        return {**caller, "budget": self.budget} if self.budget else caller

    def _run(self, started: list[dict[str, Any]], step: int) -> list[list[Trajectory] | str]:
        """Each started run's rows in index order once it has finished (every row at `step`), or
        why it did not finish whole (a slot failed: the environment went away, the budget ran out)."""
        out: list[list[Trajectory] | str] = []
        for s in started:
            status = self.client.wait(s["id"], timeout_s=self.timeout_s)
            if status["status"] != "done":
                out.append(f"rescue {s['id']} ended {status['status']}: {status.get('failed')}")
                continue
            rows = self.client.trajectories(s["id"])
            stale = [r.index for r in rows if r.weight_version != step]
            if stale:
                raise RuntimeError(f"rescue {s['id']}: rows {stale} were sampled at another weight version than step {step}")
            out.append(rows)
        return out

    def _rewards(self, trainer: Any, prompts: list[Any], rows: list[Trajectory], rescued: bool) -> list[float]:
        """The trainer's reward functions over the rows, weighted as the trainer weighs them."""
        import torch

        decoded = trainer.processing_class.batch_decode([r.completion_ids for r in rows], skip_special_tokens=True)
        completions: list[Any] = [[{"role": "assistant", "content": c}] for c in decoded] if isinstance(prompts[0], list) else decoded
        extra = _extra(rows, rescued)
        total = [0.0] * len(rows)
        for func, weight in zip(trainer.reward_funcs, trainer.reward_weights.tolist(), strict=True):
            if isinstance(func, torch.nn.Module):
                raise TypeError("rescue_rollout_func scores groups with callable reward functions; a reward model is not supported")
            out = func(prompts=prompts, completions=completions, completion_ids=[r.completion_ids for r in rows], trainer_state=trainer.state, log_extra=_ignore, log_metric=_ignore, **extra)
            if inspect.iscoroutine(out):
                out = asyncio.run(out)
            total = [t + weight * (0.0 if v is None else float(v)) for t, v in zip(total, out, strict=True)]
        return total

    def _all_fail(self, rewards: list[float]) -> bool:
        return all(r <= self.fail_at_or_below for r in rewards)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        size = trainer.num_generations if trainer.model.training else trainer.num_generations_eval
        if len(prompts) % size:
            raise ValueError(f"rollout_func got {len(prompts)} prompts, not whole groups of {size}")
        groups = [prompts[i : i + size] for i in range(0, len(prompts), size)]
        model = trainer.accelerator.unwrap_model(trainer.model)
        was_training = model.training
        model.eval()
        try:
            step = self._serve(trainer)
            tasks = [self.task_of(g[0]) for g in groups]
            base = [self.client.start_rescue(self.pool_id, [], self._caller(t, step), rollouts_per_harness=size, harnesses=[str(self.base_harness)]) for t in tasks]
            chosen: list[list[Trajectory]] = []
            for run in self._run(base, step):
                if isinstance(run, str):  # no group to train on: the trainer's batch cannot be filled
                    raise RuntimeError(f"the base group's {run}")
                chosen.append(run)
            failed = [i for i, rows in enumerate(chosen) if self._all_fail(self._rewards(trainer, groups[i], rows, False))]
            outcomes = {i: GroupOutcome(step, i, str(tasks[i]["id"]), "kept", base[i]["id"], rows=chosen[i]) for i in range(len(groups))}
            per = -(-size // min(self.k, self.siblings))  # every routed sibling runs; the first `size` rows stand in
            rescues = [self.client.start_rescue(self.pool_id, _failure_tags(chosen[i]), self._caller(tasks[i], step), k=self.k, rollouts_per_harness=per) for i in failed]
            for i, started, run in zip(failed, rescues, self._run(rescues, step), strict=True):
                outcomes[i].kind, outcomes[i].rescue_id = "unrescued", started["id"]
                if isinstance(run, str):  # the failed group stays; why is kept with it
                    outcomes[i].reason = run
                    continue
                rows = run[:size]
                if not self._all_fail(self._rewards(trainer, groups[i], rows, True)):
                    outcomes[i].kind = "replaced"
                    chosen[i] = outcomes[i].rows = rows
        finally:
            model.train(was_training)
        self.outcomes.extend(outcomes[i] for i in range(len(groups)))
        rows = [r for i in range(len(groups)) for r in chosen[i]]
        flags = [outcomes[i].kind == "replaced" for i in range(len(groups)) for _ in chosen[i]]
        return {
            "prompt_ids": [r.prompt_ids for r in rows],
            "completion_ids": [r.completion_ids for r in rows],
            "logprobs": [r.logprobs for r in rows],
            "env_mask": [r.loss_mask for r in rows],
            **_extra(rows, flags),
        }


def _extra(rows: list[Trajectory], rescued: bool | list[bool]) -> dict[str, list[Any]]:
    """The row fields TRL hands on to the reward functions."""
    flags = rescued if isinstance(rescued, list) else [rescued] * len(rows)
    return {
        "env_reward": [r.reward for r in rows],
        "harness_id": [r.harness_id for r in rows],
        "rescued": flags,
        "weight_version": [r.weight_version for r in rows],
    }


def _ignore(*_: Any, **__: Any) -> None:
    return None


def rescue_rollout_func(
    client: HarnessSClient,
    pool_id: str,
    task_of: Callable[[Any], dict[str, Any]],
    environment: dict[str, Any],
    **options: Any,
) -> RescueRolloutFunc:
    """A TRL `rollout_func` with selective harness rescue; `task_of(prompt)` gives the prompt's task
    as the service takes it (`id`, `family`, `tags`, `instruction`, `tools`, `reset`)."""
    return RescueRolloutFunc(client, pool_id, task_of, environment, **options)
