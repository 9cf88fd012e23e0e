"""Selective harness rescue in verl, at the reward step of the trainer's `fit()`: the one place a
verl trainer holds whole groups with their rewards. verl has no rollout-filter hook (DAPO's
`filter_groups` is inline code in the recipe's `fit()`); what exists, at volcengine/verl b178a3c:

- `RayPPOTrainer._compute_or_extract_reward(batch, reward_fn, reward_for_val, sum_reward)`
  (verl/trainer/ppo/ray_trainer.py:480), which `fit()` calls for the training batch at
  ray_trainer.py:1482, after generation (1446), balancing (1455) and `global_token_num` (1458),
  before the old log-probabilities (1502), `token_level_scores` (1552) and the advantages (1586).
  `RescueTrainerMixin` overrides it: `class RescueTrainer(RescueTrainerMixin, RayPPOTrainer)`.
- the trainer's `reward_fn` (a reward manager, `reward_fn(data, return_dict=True)`,
  verl/trainer/ppo/reward.py:189), which DAPO's recipe calls through `compute_reward(new_batch,
  self.reward_fn)` right before its filter (verl-recipe 21892b9, dapo/dapo_ray_trainer.py:209,
  filter at 229-268). `RescueRewardFn` wraps it: the rescued groups reach DAPO's filter with
  their spread of rewards.

Both call `rescue_data_proto` on verl's `DataProto` (verl/protocol.py:329): it finds the groups
by `non_tensor_batch["uid"]` whose every row failed (the row's reward: the sum of its reward
tensor row), sends each to the service (your endpoint, your environment, the pool's routed
siblings), and writes the rescued rows into the group's rows in place, laid out as verl's agent
loop lays out its own (agent_loop.py:521-640, 732-806): prompts left-padded to the batch's prompt length,
responses right-padded to its response length, `attention_mask`, `position_ids`, `response_mask`
(the loss mask), `input_ids` = prompt + response, `rollout_log_probs` the sampled log-probabilities,
the reward on the last response id. Every shape stays as it was. A rescued row whose prompt or
response does not fit is left out and counted (`rescue/rows_unfit`); its slot keeps the original
row. Non-tensor columns keep the original row's values (`raw_prompt`, `uid`, `data_source`,
`reward_model`, ...) except `multi_modal_data` and `multi_modal_inputs` ({} for a rescued row),
`__num_turns__`, and each reward extra (`acc`, `score`, ...: the rescue's value, else the original
row's). No column is added (DAPO concatenates batches and requires the same keys). verl, torch
and numpy are never imported here unless a rescue runs (they are verl's own dependencies).

    class RescueTrainer(RescueTrainerMixin, RayPPOTrainer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.harness_s_rescue = DataProtoRescue(lambda: AsyncHarnessS(url, key), settings, task_of=task_of)

`VerlGroupRescue` (groups of `AgentLoopOutput`s) is deprecated: verl has no hook that hands a
trainer such groups (each `AgentLoopWorker` gets a `chunk()` of the batch, agent_loop.py:961-966)."""

from __future__ import annotations

import asyncio
import importlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from .aio import AsyncHarnessS
from .convert import Trajectory, to_verl, verl_output_class, verl_turns
from .groups import UNTAGGED, AsyncGroupRescuer, GroupOutcome, RescueSettings, all_fail, log, rescue_metrics
from .types import CallerTask

# --- the rescue at the reward step (DataProto) ---------------------------------------------------

#: Per-row tensors of the batch a rescued row is written into (agent_loop.py:735-759 makes them;
#: `rm_scores` when the reward loop scored the rows, agent_loop.py:761-767).
WRITTEN = (
    "prompts",
    "responses",
    "response_mask",
    "input_ids",
    "attention_mask",
    "position_ids",
    "rollout_log_probs",
    "rm_scores",
)
#: Per-row tensors a rescued row keeps from the row it replaces: REMAX's greedy baseline of the
#: same prompt (ray_trainer.py:1441).
KEPT = ("reward_baselines",)
#: What a rescued row must be written into.
REQUIRED = ("prompts", "responses", "attention_mask", "input_ids", "position_ids")
#: Non-tensor columns a rescued row gets empty: it carries no image (agent_loop.py:642-649 reads
#: `multi_modal_data` when a processor is set; the trainer reads `multi_modal_inputs`, ray_trainer.py:1461).
EMPTY_DICT_COLUMNS = ("multi_modal_data", "multi_modal_inputs")
#: Trajectory fields a reward extra of the same name takes for a rescued row.
ROW_FIELDS = ("reward", "success", "harness_id", "finish_reason", "weight_version", "decision_id")


def _modules() -> tuple[Any, Any]:
    return importlib.import_module("torch"), importlib.import_module("numpy")


@dataclass
class RescuedBatch:
    """What `rescue_data_proto` did: the reward tensor and reward extras to hand on (the rescued
    rows' written in), each group's outcome, the metrics for verl's metrics dict, and the batch
    rows each uid's rescued rows were written to."""

    reward_tensor: Any
    reward_extra_info: dict[str, list[Any]]
    outcomes: list[GroupOutcome]
    metrics: dict[str, float] = field(default_factory=dict)
    written: dict[str, list[int]] = field(default_factory=dict)


class DataProtoRescue:
    """How to rescue a verl batch: `connect()` makes the async client (one per call: each call runs
    its own event loop), `task_of(row)` gives a group's task as the service takes it from its first
    row's non-tensor fields (`data_source`, `extra_info`, `raw_prompt`, ...); `weight_version(step)`
    and `served_model(step)` pin the rescue to the weights your rollout serves at that step
    (required for vLLM and SGLang endpoints); `score(rows)` gives the rescued rows your reward
    (default: the environment's); `extras(row)` the reward extras of a rescued row by name (default:
    `score` = its reward, `acc` = reward above `fail_at_or_below`, a `Trajectory` field of the same
    name, else the original row's value); `failure_tags(rows)` routes the rescue (default: the rows'
    `failure_tags` extra or column, else untagged)."""

    def __init__(
        self,
        connect: Callable[[], AsyncHarnessS],
        settings: RescueSettings,
        task_of: Callable[[dict[str, Any]], CallerTask | dict[str, Any]],
        weight_version: Callable[[int], int | None] | None = None,
        served_model: Callable[[int], str | None] | None = None,
        score: Callable[[list[Trajectory]], Sequence[float]] | None = None,
        extras: Callable[[Trajectory], dict[str, Any]] | None = None,
        failure_tags: Callable[[list[dict[str, Any]]], list[str]] | None = None,
    ) -> None:
        self.connect, self.settings, self.task_of = connect, settings, task_of
        self.weight_version, self.served_model = weight_version, served_model
        self.score, self.extras, self.failure_tags = score, extras, failure_tags
        self.siblings: int | None = None
        self.resamples = {"attempts": 0, "successes": 0}
        self.outcomes: list[GroupOutcome] = []

    def __call__(
        self,
        batch: Any,
        reward_tensor: Any,
        reward_extra_info: dict[str, Any] | None = None,
        *,
        step: int,
        pad_token_id: int | None = None,
        serving: Callable[[], AbstractContextManager[Any]] | None = None,
    ) -> RescuedBatch:
        """`rescue_data_proto` from synchronous code (verl's `fit()`), on an event loop of its own;
        inside `serving()` (your policy's server awake) when some group goes to the service."""

        async def run() -> RescuedBatch:
            async with self.connect() as client:
                return await self.arescue(
                    batch, reward_tensor, reward_extra_info, client, step=step, pad_token_id=pad_token_id
                )

        if serving is not None and self.pending(batch, reward_tensor):
            with serving():
                return asyncio.run(run())
        return asyncio.run(run())

    def pending(self, batch: Any, reward_tensor: Any) -> int:
        """How many of the batch's groups would go to the service (all failed, and the batch can take their rows)."""
        _, failed, unfillable = _plan(batch, reward_tensor, self.settings.fail_at_or_below)
        return 0 if unfillable else len(failed)

    async def arescue(
        self,
        batch: Any,
        reward_tensor: Any,
        reward_extra_info: dict[str, Any] | None,
        client: AsyncHarnessS,
        *,
        step: int,
        pad_token_id: int | None = None,
    ) -> RescuedBatch:
        """The same, from a running event loop, over your client."""
        torch, np = _modules()
        s = self.settings
        nt = batch.non_tensor_batch
        extra_info = {k: list(v) for k, v in (reward_extra_info or {}).items()}
        groups, failed_uids, unfillable = _plan(batch, reward_tensor, s.fail_at_or_below)
        outcomes = [GroupOutcome(step, g, uid, "kept") for g, uid in enumerate(groups)]
        failed = [(o, groups[o.task_id]) for o in outcomes if o.task_id in failed_uids]
        if failed and unfillable:
            reason = (
                f"the batch holds per-row tensors a rescued row cannot be written into, or lacks some: {unfillable}"
            )
            log.warning("rescue skipped for %d all-fail groups: %s; the groups stay as they were", len(failed), reason)
            for o, _ in failed:
                o.kind, o.reason = "unrescued", reason
            failed = []
        version = self.weight_version(step) if self.weight_version else None
        served = self.served_model(step) if self.served_model else None
        rescuer = AsyncGroupRescuer(client, s, self.score)
        rescuer.siblings, rescuer.resamples = self.siblings, self.resamples
        calls = []
        for o, rows in failed:
            fields = [{k: v[i] for k, v in nt.items()} for i in rows]
            task = self.task_of(fields[0])
            o.task_id = str(task["id"])
            tags = self.failure_tags(fields) if self.failure_tags else _tags(rows, nt, extra_info)
            calls.append(rescuer.rescue(o, task, tags or [UNTAGGED], len(rows), version, served))
        await asyncio.gather(*calls)
        self.siblings = rescuer.siblings

        prompt_len, response_len = int(batch.batch["prompts"].shape[1]), int(batch.batch["responses"].shape[1])
        placed: list[tuple[int, Trajectory]] = []
        written: dict[str, list[int]] = {}
        unfit = 0
        for o, rows in failed:
            if o.kind != "replaced":
                continue
            fits = [r for r in o.rows if 0 < len(r.completion_ids) <= response_len and len(r.prompt_ids) <= prompt_len]
            if len(fits) < len(o.rows):
                unfit += len(o.rows) - len(fits)
                log.warning(
                    "group %d (task %s): %d rescued rows do not fit prompt_length %d / response_length %d and are left out",
                    o.group,
                    o.task_id,
                    len(o.rows) - len(fits),
                    prompt_len,
                    response_len,
                )
            if all_fail([r.reward for r in fits], s.fail_at_or_below):
                o.kind = "unrescued"
                o.reason = (
                    f"no rescued row that fits prompt_length {prompt_len} / response_length {response_len} succeeded"
                )
                continue
            uid = str(nt["uid"][rows[0]])
            written[uid] = rows[: len(fits)]
            placed.extend(zip(rows, fits, strict=False))

        pad = pad_token_id if pad_token_id is not None else _pad_of(batch)
        reward_tensor = _write_tensors(torch, batch, reward_tensor, placed, prompt_len, response_len, pad)
        _write_columns(np, batch, extra_info, placed, self.extras, s.fail_at_or_below)
        if placed:
            _refresh_meta(torch, batch)
        metrics = rescue_metrics(outcomes)
        metrics["rescue/rows_replaced"] = float(len(placed))
        metrics["rescue/rows_unfit"] = float(unfit)
        self.outcomes.extend(outcomes)
        return RescuedBatch(reward_tensor, extra_info, outcomes, metrics, written)


def _plan(batch: Any, reward_tensor: Any, fail_at_or_below: float) -> tuple[dict[str, list[int]], set[str], list[str]]:
    """The batch's groups (uid → rows, in the batch's order), the uids whose every row failed (the
    row's reward: the sum of its reward tensor row), and the per-row tensors a rescued row could not
    be written into (or that a row needs and the batch lacks)."""
    nt = batch.non_tensor_batch
    if "uid" not in nt:
        raise ValueError(
            "rescue_data_proto needs the batch's uid column (RayPPOTrainer.fit sets it, ray_trainer.py:1375)"
        )
    if reward_tensor.dim() != 2 or reward_tensor.shape[0] != len(batch):
        raise ValueError(f"reward_tensor must be (batch, response_length), got {tuple(reward_tensor.shape)}")
    scores = reward_tensor.sum(dim=-1).tolist()
    groups: dict[str, list[int]] = {}
    for i, uid in enumerate(nt["uid"]):
        groups.setdefault(str(uid), []).append(i)
    failed = {uid for uid, rows in groups.items() if all_fail([scores[i] for i in rows], fail_at_or_below)}
    keys = set(batch.batch.keys())
    return groups, failed, sorted(keys - set(WRITTEN) - set(KEPT)) + sorted(set(REQUIRED) - keys)


def rescue_data_proto(
    batch: Any,
    reward_tensor: Any,
    reward_extra_info: dict[str, Any] | None,
    rescue: DataProtoRescue,
    *,
    step: int,
    pad_token_id: int | None = None,
) -> RescuedBatch:
    """Rescues the all-fail groups of a verl `DataProto` after its rewards (see the module's
    text): the batch's rows are rewritten in place; hand on the returned `reward_tensor` and
    `reward_extra_info` where the trainer hands on its own."""
    return rescue(batch, reward_tensor, reward_extra_info, step=step, pad_token_id=pad_token_id)


def _tags(rows: list[int], nt: dict[str, Any], extra_info: dict[str, list[Any]]) -> list[str]:
    column = extra_info.get("failure_tags") or (list(nt["failure_tags"]) if "failure_tags" in nt else None)
    tags = [str(t) for i in rows for t in ((column[i] if column is not None else None) or [])]
    return list(dict.fromkeys(tags))[:50] or [UNTAGGED]


def _pad_of(batch: Any) -> int:
    """The tokenizer's pad id as the batch shows it (a left-padded prompt's first id), else 0."""
    mask, ids = batch.batch["attention_mask"], batch.batch["input_ids"]
    at = (mask == 0).nonzero()
    return int(ids[at[0][0], at[0][1]]) if len(at) else 0


def _positions(torch: Any, mask: list[int], shape: tuple[int, ...]) -> Any:
    """verl's position ids for a text row: `compute_position_id_with_mask` (verl/utils/model.py:226)
    where they are (batch, length); with a processor (batch, channels, length) each channel holds the
    text positions with 1 at padding (agent_loop.py:694-698, and Qwen2-VL's rope index of a row
    without images, verl/models/transformers/qwen2_vl.py:153-157)."""
    m = torch.tensor(mask)
    if len(shape) == 1:  # (length,): a row of a (batch, length) tensor
        return torch.clip(torch.cumsum(m, dim=-1) - 1, min=0)
    pos = torch.ones(len(mask), dtype=torch.long)
    pos[m.bool()] = torch.arange(int(m.sum()))
    return pos.unsqueeze(0).expand(shape[0], -1)  # (channels, length)


def _write_tensors(
    torch: Any,
    batch: Any,
    reward_tensor: Any,
    placed: list[tuple[int, Trajectory]],
    prompt_len: int,
    response_len: int,
    pad: int,
) -> Any:
    """The rescued rows into the batch's tensors (each cloned, written, set back) and the reward
    tensor, laid out as agent_loop.py:521-640 lays out its own rows."""
    if not placed:
        return reward_tensor
    out = {k: batch.batch[k].clone() for k in WRITTEN if k in batch.batch.keys()}
    reward = reward_tensor.clone()
    for i, row in placed:
        p, c = row.prompt_ids, row.completion_ids
        left, right = prompt_len - len(p), response_len - len(c)
        prompt = [pad] * left + p  # left-padded (agent_loop.py:546-556)
        response = c + [pad] * right  # right-padded (agent_loop.py:558-568)
        mask = [0] * left + [1] * (len(p) + len(c)) + [0] * right  # agent_loop.py:586
        values: dict[str, list[Any]] = {
            "prompts": prompt,
            "responses": response,
            "input_ids": prompt + response,  # agent_loop.py:587
            "attention_mask": mask,
            "response_mask": row.loss_mask
            + [0] * right,  # agent_loop.py:570-578, 585: the mask times the attention mask
            "rollout_log_probs": row.logprobs + [0.0] * right,  # agent_loop.py:580-583
        }
        for key, value in values.items():
            if key in out:
                out[key][i] = torch.tensor(value, dtype=out[key].dtype)
        out["position_ids"][i] = _positions(torch, mask, tuple(out["position_ids"].shape[1:])).to(
            out["position_ids"].dtype
        )
        scores = [0.0] * response_len
        scores[len(c) - 1] = float(row.reward)  # on the last response id (agent_loop.py:761-767)
        reward[i] = torch.tensor(scores, dtype=reward.dtype)
        if "rm_scores" in out:
            out["rm_scores"][i] = torch.tensor(scores, dtype=out["rm_scores"].dtype)
    for key, tensor in out.items():
        batch.batch[key] = tensor
    return reward


def _extra(
    key: str,
    row: Trajectory,
    original: Any,
    given: dict[str, Any],
    fail_at_or_below: float,
) -> Any:
    if key in given:
        return given[key]
    if key == "score":
        return float(row.reward)
    if key == "acc":
        won = row.reward > fail_at_or_below
        return float(won) if isinstance(original, float) and not isinstance(original, bool) else won
    if key in ROW_FIELDS:
        return getattr(row, key)
    return original


def _column(np: Any, old: Any, values: list[Any]) -> Any:
    """A non-tensor column with new values: object columns stay object (agent_loop.py:786-793),
    others are made as verl makes them, `np.array(values)` (agent_loop.py:777, ray_trainer.py:1555)."""
    if old.dtype == object:
        arr = np.empty(len(values), dtype=object)
        arr[:] = values
        return arr
    return np.array(values)


def _write_columns(
    np: Any,
    batch: Any,
    extra_info: dict[str, list[Any]],
    placed: list[tuple[int, Trajectory]],
    extras: Callable[[Trajectory], dict[str, Any]] | None,
    fail_at_or_below: float,
) -> None:
    """Each reward extra (in the returned dict and, where the reward loop put it, in the batch),
    `__num_turns__`, the empty multi-modal columns and the reward loop's `reward_extra_info` dicts."""
    if not placed:
        return
    nt = batch.non_tensor_batch
    reward_keys = set(extra_info) | {k for k in batch.meta_info.get("reward_extra_keys", []) if k in nt}
    given = {i: (extras(row) if extras else {}) for i, row in placed}
    for key in sorted(reward_keys):
        if key in extra_info:
            column = extra_info[key]
            for i, row in placed:
                column[i] = _extra(key, row, column[i], given[i], fail_at_or_below)
        if key in nt:
            values = list(nt[key])
            for i, row in placed:
                values[i] = _extra(key, row, values[i], given[i], fail_at_or_below)
            nt[key] = _column(np, nt[key], values)
    updates: dict[str, Callable[[int, Trajectory, Any], Any]] = {
        "__num_turns__": lambda i, row, old: verl_turns(row.loss_mask),
        "reward_extra_info": lambda i, row, old: {
            k: _extra(k, row, v, given[i], fail_at_or_below) for k, v in (old or {}).items()
        },
        **{k: (lambda i, row, old: {}) for k in EMPTY_DICT_COLUMNS},
    }
    for key, make in updates.items():
        if key in nt:
            values = list(nt[key])
            for i, row in placed:
                values[i] = make(i, row, values[i])
            nt[key] = _column(np, nt[key], values)


def _refresh_meta(torch: Any, batch: Any) -> None:
    """What `fit()` derived from the rows before the reward step, derived again: `global_token_num`
    (ray_trainer.py:1458) and `images_seqlens` (ray_trainer.py:1460-1465), where present."""
    meta = batch.meta_info
    if "global_token_num" in meta:
        meta["global_token_num"] = torch.sum(batch.batch["attention_mask"], dim=-1).tolist()
    if "images_seqlens" in meta and "multi_modal_inputs" in batch.non_tensor_batch:
        seqlens: list[Any] = []
        for inputs in batch.non_tensor_batch["multi_modal_inputs"]:
            if "image_grid_thw" in inputs.keys():
                seqlens.extend(inputs["images_seqlens"].tolist())
        meta["images_seqlens"] = seqlens


# --- where verl calls it -------------------------------------------------------------------------


class RescueTrainerMixin:
    """Rescue in `RayPPOTrainer.fit()`: `class RescueTrainer(RescueTrainerMixin, RayPPOTrainer)`
    with `self.harness_s_rescue` set (a `DataProtoRescue`). It overrides
    `_compute_or_extract_reward` (ray_trainer.py:480), which `fit()` calls for the training batch
    at ray_trainer.py:1482 (validation passes `reward_for_val=True`, ray_trainer.py:631, and REMAX's
    baseline `sum_reward=True`, ray_trainer.py:1432: both are handed on untouched), and
    `_update_actor` (ray_trainer.py:1235), whose metrics `fit()` logs (ray_trainer.py:1607-1614):
    the step's rescue metrics join them. `fit()` refuses `reward_model.launch_reward_fn_async`
    (that path, ray_trainer.py:1477-1481, never calls `_compute_or_extract_reward`)."""

    harness_s_rescue: DataProtoRescue | None = None
    #: The last training step's rescue metrics, until `_update_actor` logs them.
    harness_s_metrics: dict[str, float] | None = None
    #: RayPPOTrainer's own (ray_trainer.py:269, 271, 1320).
    config: Any
    tokenizer: Any
    global_steps: int

    def fit(self) -> Any:
        if self.harness_s_rescue is not None and self.config.reward_model.get("launch_reward_fn_async", False):
            raise ValueError(
                "RescueTrainerMixin: reward_model.launch_reward_fn_async computes rewards where the rescue cannot "
                "reach the batch (ray_trainer.py:1477); set it to False"
            )
        return super().fit()  # type: ignore[misc]

    def _compute_or_extract_reward(
        self, batch: Any, reward_fn: Any = None, reward_for_val: bool = False, sum_reward: bool = False
    ) -> Any:
        out = super()._compute_or_extract_reward(  # type: ignore[misc]
            batch, reward_fn=reward_fn, reward_for_val=reward_for_val, sum_reward=sum_reward
        )
        if reward_for_val or sum_reward or self.harness_s_rescue is None:
            return out
        reward_tensor, reward_extra_info = out
        got = self.harness_s_rescue(
            batch,
            reward_tensor,
            reward_extra_info,
            step=int(self.global_steps),
            pad_token_id=getattr(self.tokenizer, "pad_token_id", None),
            serving=self._harness_s_serving,
        )
        self.harness_s_metrics = got.metrics
        return got.reward_tensor, got.reward_extra_info

    @contextmanager
    def _harness_s_serving(self) -> Iterator[None]:
        """verl's colocated rollout replicas, awake at the step's weights while the rescue samples
        them: `fit()` puts them to sleep after generating (ray_trainer.py:1397); the `naive`
        checkpoint backend's `update_weights` wakes them with the actor's weights and
        `sleep_replicas` frees them again (verl/checkpoint_engine/base.py:370-384), as `fit()` does
        around a checkpoint (ray_trainer.py:1652-1655). Other backends keep their replicas awake."""
        manager = getattr(self, "checkpoint_manager", None)
        if manager is None or getattr(manager, "backend", None) != "naive":
            yield
            return
        manager.update_weights()
        try:
            yield
        finally:
            manager.sleep_replicas()

    def _update_actor(self, batch: Any) -> Any:
        output = super()._update_actor(batch)  # type: ignore[misc]
        if self.harness_s_metrics:
            metrics = output.meta_info.setdefault("metrics", {})
            metrics.update({k: [v] for k, v in self.harness_s_metrics.items()})  # reduce_metrics takes lists
            self.harness_s_metrics = None
        return output


class RescueRewardFn:
    """Your reward manager with the rescue behind it, for a `fit()` that calls verl's
    `compute_reward(batch, self.reward_fn)` itself: DAPO's recipe (dapo_ray_trainer.py:209, before
    its `filter_groups` at 229-268), so a rescued group reaches the filter with its spread of
    rewards. `trainer.reward_fn = RescueRewardFn(trainer.reward_fn, rescue, step_of=lambda:
    trainer.global_steps)`. A batch without a uid column (DAPO's REMAX baseline,
    dapo_ray_trainer.py:175, before the uid is set at 187) is scored and handed on untouched.
    `metrics` holds the last call's rescue metrics: DAPO's `fit()` has no place to take them
    (its actor update is `self.actor_rollout_wg.update_actor`, dapo_ray_trainer.py:343).
    `serving()`, where given, is entered while a rescue samples your policy (DAPO's `fit()` makes
    no checkpoint-manager call of its own to wake or sleep the replicas)."""

    def __init__(
        self,
        reward_fn: Any,
        rescue: DataProtoRescue,
        step_of: Callable[[], int],
        pad_token_id: int | None = None,
        serving: Callable[[], AbstractContextManager[Any]] | None = None,
    ) -> None:
        self.reward_fn, self.rescue, self.step_of, self.pad_token_id = reward_fn, rescue, step_of, pad_token_id
        self.serving = serving
        self.metrics: dict[str, float] = {}

    def __call__(self, data: Any, return_dict: bool = False) -> Any:
        result = self.reward_fn(data, return_dict=True)
        if "uid" in data.non_tensor_batch:
            got = self.rescue(
                data,
                result["reward_tensor"],
                result.get("reward_extra_info", {}),
                step=self.step_of(),
                pad_token_id=self.pad_token_id,
                serving=self.serving,
            )
            self.metrics = got.metrics
            result = {**result, "reward_tensor": got.reward_tensor, "reward_extra_info": got.reward_extra_info}
        return result if return_dict else result["reward_tensor"]


# --- deprecated: groups of AgentLoopOutputs ------------------------------------------------------


@dataclass
class VerlGroup:
    """Deprecated with `VerlGroupRescue`. One prompt's rollouts: its uid, its task as the service
    takes it, verl's outputs (objects or dicts with `reward_score`), and their rewards when not in the outputs."""

    uid: str
    task: CallerTask | dict[str, Any]
    outputs: list[Any]
    rewards: list[float] | None = None
    #: What the failed rollouts did wrong (routes the rescue); default: each output's
    #: `extra_fields["failure_tags"]`, else untagged.
    failure_tags: list[str] | None = None


@dataclass
class VerlFiltered:
    """Each group's outputs, in the groups' order (the same count per group: one row per input),
    what became of each, and the rescue metrics for verl's metrics dict."""

    outputs: list[list[Any]]
    outcomes: list[GroupOutcome]
    metrics: dict[str, float] = field(default_factory=dict)


def _field(output: Any, name: str) -> Any:
    return output.get(name) if isinstance(output, dict) else getattr(output, name, None)


def _rewards(group: VerlGroup) -> list[float]:
    if group.rewards is not None:
        return [float(r) for r in group.rewards]
    scores = [_field(o, "reward_score") for o in group.outputs]
    if any(s is None for s in scores):
        raise ValueError(f"group {group.uid}: outputs without reward_score; pass the group's rewards")
    return [float(s) for s in scores]


def _group_tags(group: VerlGroup) -> list[str]:
    if group.failure_tags is not None:
        return group.failure_tags or [UNTAGGED]
    tags = [t for o in group.outputs for t in ((_field(o, "extra_fields") or {}).get("failure_tags") or [])]
    return list(dict.fromkeys(tags))[:50] or [UNTAGGED]


class VerlGroupRescue:
    """Deprecated: use `RescueTrainerMixin` (or `RescueRewardFn`, `rescue_data_proto`). It takes
    groups of `AgentLoopOutput`s, which verl never hands a trainer (outputs exist only inside an
    `AgentLoopWorker`, over a `chunk()` of the batch that may split a group, agent_loop.py:961-968),
    and its rows, spliced into a batch by verl's `_postprocess` beside original ones, break it
    (reward extras taken from the first row and indexed in every row, agent_loop.py:774-777;
    `multi_modal_data.get` on None with a processor, agent_loop.py:648). Kept for the converters'
    checks; `output_cls` builds each rescued row (default: verl's `AgentLoopOutput` where
    installed, else the fields as a dict); `score(rows)` gives the rescued rows your reward."""

    def __init__(
        self,
        client: AsyncHarnessS,
        settings: RescueSettings,
        output_cls: Callable[..., Any] | None = None,
        score: Callable[[list[Trajectory]], Sequence[float]] | None = None,
    ) -> None:
        warnings.warn(
            "VerlGroupRescue is deprecated: verl has no hook that hands it groups of AgentLoopOutputs; "
            "use harness_s_client.verl.RescueTrainerMixin (docs/trainers.md, verl)",
            DeprecationWarning,
            stacklevel=2,
        )
        self.rescuer = AsyncGroupRescuer(client, settings, score)
        self.settings = settings
        self.output_cls = output_cls if output_cls is not None else verl_output_class()
        self.outcomes: list[GroupOutcome] = []

    def output(self, row: Trajectory) -> Any:
        fields = to_verl(row)
        return self.output_cls(**fields) if self.output_cls is not None else fields

    async def __call__(
        self, groups: Sequence[VerlGroup], step: int, weight_version: int | None = None, served_model: str | None = None
    ) -> VerlFiltered:
        outcomes = [GroupOutcome(step, i, str(g.task["id"]), "kept") for i, g in enumerate(groups)]
        failed = [i for i, g in enumerate(groups) if all_fail(_rewards(g), self.settings.fail_at_or_below)]
        await asyncio.gather(
            *(
                self.rescuer.rescue(
                    outcomes[i],
                    groups[i].task,
                    _group_tags(groups[i]),
                    len(groups[i].outputs),
                    weight_version,
                    served_model,
                )
                for i in failed
            )
        )
        outputs = [
            [self.output(r) for r in o.rows] if o.kind == "replaced" else list(g.outputs)
            for g, o in zip(groups, outcomes, strict=True)
        ]
        self.outcomes.extend(outcomes)
        return VerlFiltered(outputs, outcomes, rescue_metrics(outcomes))
