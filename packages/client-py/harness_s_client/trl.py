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

What TRL hands a `rollout_func`, as read in trl 1.13.0 (`trl/trainer/grpo_trainer.py`):
`_generate_and_score_completions(inputs)` takes this process's dataset rows, one per completion
(each prompt repeated `num_generations` times by `RepeatSampler`, `trl/trainer/utils.py:702`),
makes `prompts = [x["prompt"] for x in inputs]` (:2361) and `_generate` calls
`rollout_func(copy.deepcopy(prompts), trainer)` (:2229, :2241): the prompts only. It keeps
`prompt_ids`, `completion_ids`, `logprobs` and pops `env_mask` (:2295); every other key is
merged, row by row, into `inputs` (:2767), over a dataset column of the same name, and
`_calculate_rewards` passes each reward function every key of `inputs` but `prompt`,
`completion`, `completion_ids` (:1641), with `trainer_state`, `log_extra`, `log_metric` (:1645).

- Dataset columns. The wrapper scores groups itself (to find the all-fail ones) before TRL does,
  so its reward calls must carry the columns too (`def acc(completions, solution, **kw)`). The
  rows are read from `inputs` in the caller's frame (`_generate_and_score_completions`, in the
  prompts' order; checked against them), or from `columns_of(prompt)` when given. A rescued row
  replaces its group's row in place, so it keeps its prompt's columns, and TRL scores it with
  them as it scores any row.
- Several processes. Each process calls `rollout_func` with its own slice (`len(prompts)` rows,
  the same on every process); `_calculate_rewards` gathers the rewards (:1738) and groups them
  by `num_generations` over the processes' slices in process order (:2791), then takes back its
  slice (`process_index * len(prompts)`, :2839). A group may lie across processes (per-process
  rows × `steps_per_generation` need not be a multiple of `num_generations`: the sampler's
  docstring, GPU 0 `0 0 1`, GPU 1 `1 2 2`, :1266-1270). So every process gathers all the prompts
  (accelerate's `gather_object`, as TRL's own vLLM server mode does, `trl/generation/
  vllm_generation.py:594`), cuts the whole batch into groups, and group `g` is run and scored
  (H0, the all-fail decision, the rescue) once, by process `g % num_processes` with its own
  endpoint; the groups' results are gathered to every process (an all-gather: each group has
  one owner, so it is the owners' broadcast), and each process returns exactly its own rows in
  its own order. The rescue metrics are logged once, by the main process, for the whole batch;
  `outcomes` holds every group of the batch on every process. A failure on one process is
  gathered and raised on all (no process is left waiting in a collective); the others wait in
  that gather for the slowest, within the process group's timeout (`ddp_timeout`, 30 minutes).
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
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
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
        columns_of: Callable[[Any], dict[str, Any]] | None = None,
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
        #: The dataset columns of a prompt's row, where TRL's own rows cannot be read (see the module's text).
        self.columns_of = columns_of
        self._warned_columns = False
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

    def _rewards(
        self, trainer: Any, prompts: list[Any], columns: list[dict[str, Any]], rows: list[Trajectory], rescued: bool
    ) -> list[float]:
        """The trainer's reward functions over the rows, weighted as the trainer weighs them, called
        as TRL calls them (`_calculate_rewards`, grpo_trainer.py:1641-1651 in trl 1.13.0): each
        dataset column of the rows' prompt (all but prompt, completion, completion_ids), under the
        extras the rows carry (TRL merges those over a column of the same name, :2767)."""
        torch = sys.modules.get("torch")
        decoded = trainer.processing_class.batch_decode([r.completion_ids for r in rows], skip_special_tokens=True)
        completions: list[Any] = (
            [[{"role": "assistant", "content": c}] for c in decoded] if isinstance(prompts[0], list) else decoded
        )
        keys = [k for k in (columns[0] if columns else {}) if k not in _NOT_COLUMNS]
        extra: dict[str, Any] = {k: [c.get(k) for c in columns[: len(rows)]] for k in keys}
        extra.update(trl_extras(rows, rescued))
        total = [0.0] * len(rows)
        for func, weight in zip(trainer.reward_funcs, trainer.reward_weights.tolist(), strict=True):
            if torch is not None and isinstance(func, torch.nn.Module):
                raise TypeError(
                    "rescue_rollout_func scores groups with callable reward functions; a reward model is not supported"
                )
            out = func(
                prompts=prompts[: len(rows)],
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
        self, groups: list[_Group], trainer: Any, size: int
    ) -> tuple[list[list[Trajectory]], list[GroupOutcome]]:
        """Runs each group under H0, scores it, and rescues the all-fail ones (each group's
        `GroupOutcome.group` is its index in the whole batch, over every process)."""
        if not groups:
            return [], []
        step = self._serve(trainer)
        tasks = [self.task_of(g.prompts[0]) for g in groups]
        harnesses = [str(self.base_harness)]
        base = [
            self.client.start_rescue(
                self.pool_id, [], self._caller(t, step), rollouts_per_harness=size, harnesses=harnesses
            )
            for t in tasks
        ]
        chosen = [self._base_group(s, step) for s in base]  # no group to train on without them: a failure is raised
        outcomes = [
            GroupOutcome(step, g.index, str(tasks[i]["id"]), "kept", base[i]["id"], rows=chosen[i])
            for i, g in enumerate(groups)
        ]
        failed = [
            i
            for i, rows in enumerate(chosen)
            if all_fail(
                self._rewards(trainer, groups[i].prompts, groups[i].columns, rows, False), self.fail_at_or_below
            )
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
                    groups[i].index,
                    tasks[i]["id"],
                    outcomes[i].reason,
                )
        for i, run in started.items():
            rows = self._rescue(outcomes[i], run, step, size)
            rewards = self._rewards(trainer, groups[i].prompts, groups[i].columns, rows, True) if rows else []
            if outcomes[i].option == "resample":
                self.resamples["attempts"] += len(rewards)
                self.resamples["successes"] += sum(1 for r in rewards if r > self.fail_at_or_below)
            if rows is not None and len(rows) == size and not all_fail(rewards, self.fail_at_or_below):
                outcomes[i].kind = "replaced"
                chosen[i] = outcomes[i].rows = rows
        return chosen, outcomes

    def _columns(self, prompts: list[Any], trainer: Any) -> list[dict[str, Any]]:
        """Each prompt's dataset row (its columns), as TRL's reward functions get them: from
        `columns_of` when given, else TRL's own `inputs`, read from the frame of
        `_generate_and_score_completions` that called this rollout_func (trl 1.13.0,
        grpo_trainer.py:2347-2458: `prompts = [x["prompt"] for x in inputs]`, then
        `_generate(prompts)` → `rollout_func(prompts, self)`; the frame's `inputs` are the rows of
        these prompts, in their order, checked here). Neither: no columns (warned once)."""
        if self.columns_of is not None:
            return [dict(self.columns_of(p)) for p in prompts]
        inputs: Any = None
        frame: FrameType | None = sys._getframe(1)
        try:
            while frame is not None:
                if frame.f_code.co_name == "_generate_and_score_completions" and frame.f_locals.get("self") is trainer:
                    inputs = frame.f_locals.get("inputs")
                    break
                frame = frame.f_back
        finally:
            del frame
        if (
            isinstance(inputs, list)
            and len(inputs) == len(prompts)
            and all(isinstance(x, dict) for x in inputs)
            and (
                getattr(trainer, "environments", None)  # an environment's reset() may extend the prompt
                or all(x.get("prompt") == p for x, p in zip(inputs, prompts, strict=True))
            )
        ):
            return [{k: v for k, v in x.items() if k not in _NOT_COLUMNS} for x in inputs]
        if not self._warned_columns:
            self._warned_columns = True
            log.warning(
                "rescue_rollout_func: the dataset rows of the prompts were not found (TRL's "
                "_generate_and_score_completions is not the caller); reward functions get no dataset columns "
                "from the wrapper: pass columns_of=lambda prompt: {...}"
            )
        return [{} for _ in prompts]

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        size = trainer.num_generations if trainer.model.training else trainer.num_generations_eval
        accelerator = trainer.accelerator
        world = int(getattr(accelerator, "num_processes", 1))
        me = int(getattr(accelerator, "process_index", 0))
        columns = self._columns(prompts, trainer)
        local = list(zip(prompts, columns, strict=True))
        # Every process's rows, in process order (TRL's order for grouping rewards, :2791).
        slices: list[list[tuple[Any, dict[str, Any]]]] = _gather([local]) if world > 1 else [local]
        everyone = [row for part in slices for row in part]
        if len(everyone) % size:
            raise ValueError(
                f"rollout_func got {len(everyone)} prompts over {world} processes, not whole groups of {size}"
            )
        groups = [
            _Group(
                g,
                [p for p, _ in everyone[g * size : (g + 1) * size]],
                [c for _, c in everyone[g * size : (g + 1) * size]],
            )
            for g in range(len(everyone) // size)
        ]
        for g in groups if not getattr(trainer, "environments", None) else []:  # a reset() may extend a prompt
            if any(p != g.prompts[0] for p in g.prompts):
                raise ValueError(
                    f"rollout_func: group {g.index} holds different prompts: TRL's RepeatSampler order was not kept"
                )
        mine = [g for g in groups if g.index % world == me]  # each group run once, by one process
        model = accelerator.unwrap_model(trainer.model)
        was_training = model.training
        model.eval()
        try:
            result: tuple[list[list[Trajectory]], list[GroupOutcome]] | BaseException = self._generate(
                mine, trainer, size
            )
        except Exception as err:
            if world == 1:
                raise
            result = err
        finally:
            model.train(was_training)
        if world > 1:  # every process gets every group's rows; a failure anywhere is raised everywhere
            payload: tuple[int, Any] = (
                (me, f"{type(result).__name__}: {result}")
                if isinstance(result, BaseException)
                else (me, [(o.group, rows, o) for rows, o in zip(*result, strict=True)])
            )
            gathered: list[tuple[int, Any]] = _gather([payload])
            failed = [(r, p) for r, p in gathered if isinstance(p, str)]
            if failed:
                message = "; ".join(f"process {r}: {p}" for r, p in failed)
                if isinstance(result, BaseException):
                    raise RuntimeError(f"rescue_rollout_func failed ({message})") from result
                raise RuntimeError(f"rescue_rollout_func failed on another process ({message})")
            done = sorted((item for _, items in gathered for item in items), key=lambda item: item[0])
            chosen, outcomes = [rows for _, rows, _ in done], [o for _, _, o in done]
        else:
            assert not isinstance(result, BaseException)
            chosen, outcomes = result
        if [o.group for o in outcomes] != [g.index for g in groups]:
            raise RuntimeError("rescue_rollout_func: the groups gathered are not the batch's groups")
        for o, group in zip(outcomes, chosen, strict=True):  # TRL takes one row per completion
            if len(group) != size:
                raise RuntimeError(f"rescue_rollout_func: group {o.group} has {len(group)} rows, not {size}")
        self.outcomes.extend(outcomes)
        if getattr(accelerator, "is_main_process", True):  # once for the whole batch
            log_to_trainer(trainer, rescue_metrics(outcomes))
        rows = [r for group in chosen for r in group]
        flags = [o.kind == "replaced" for o, group in zip(outcomes, chosen, strict=True) for _ in group]
        start = sum(len(part) for part in slices[:me])  # this process's rows, in its own order
        return to_trl(rows[start : start + len(prompts)], flags[start : start + len(prompts)])


@dataclass
class _Group:
    """One group of the whole batch: its index (over every process), its prompts and their dataset columns."""

    index: int
    prompts: list[Any]
    columns: list[dict[str, Any]]


#: The keys of TRL's dataset rows that are not passed to reward functions as columns (grpo_trainer.py:1641).
_NOT_COLUMNS = ("prompt", "completion", "completion_ids")


def _gather(obj: list[Any]) -> list[Any]:
    """accelerate's `gather_object`: every process's list, concatenated in process order, on every process."""
    return importlib.import_module("accelerate.utils").gather_object(obj)  # type: ignore[no-any-return]


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
    rescue's rollouts under the Top-k, under H0 again, or not at all; see `GroupOutcome.option`),
    `columns_of(prompt)` (a prompt's dataset columns for the reward functions, where TRL's own rows
    cannot be read)."""
    return RescueRolloutFunc(client, pool_id, task_of, environment, **options)
