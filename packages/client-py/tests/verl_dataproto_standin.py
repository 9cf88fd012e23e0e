"""Stand-ins of what the verl rescue (harness_s_client/verl.py) relies on, restated from the sources
at the commits read (verl does not install here; torch and numpy do, in the worker's venv):

- verl: volcengine/verl@b178a3cd56f58b2d502255daba591e92833930a7 ("b178a3c" below)
- DAPO's recipe: verl-project/verl-recipe@21892b9276936efab5375c3f6b8415e472ef7118 (verl's
  `recipe` submodule at b178a3c; "recipe 21892b9" below)

Each behaviour names the line it restates. Where upstream is strict in a way that is inconvenient
for the rescue, so is the stand-in: a tensor set into the batch must have the batch's length, every
non-tensor column must be a numpy array of the batch's length, concatenated batches must have the
same keys, and the agent loop's `_postprocess` takes the reward extras' keys from the first row and
indexes every row by them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

# --- tensordict.TensorDict, as verl's DataProto uses it (verl/protocol.py:35, 329-339) -----------


class TensorDict:
    """The batch of a DataProto: tensors sharing the leading batch dimension. `td[key]` is the
    stored tensor itself; setting a key whose leading dimension is not the batch size raises (as
    tensordict does); indexing by rows gives a new TensorDict (verl/protocol.py:671-677, 720)."""

    def __init__(self, source: dict[str, torch.Tensor], batch_size: Any) -> None:
        self.batch_size = torch.Size(batch_size if isinstance(batch_size, tuple | list) else (batch_size,))
        self._data: dict[str, torch.Tensor] = {}
        for key, value in source.items():
            self[key] = value

    def __getitem__(self, item: Any) -> Any:
        if isinstance(item, str):
            return self._data[item]
        rows = {k: v[item] for k, v in self._data.items()}
        n = next(iter(rows.values())).shape[0] if rows else 0
        return TensorDict(rows, batch_size=(n,))

    def __setitem__(self, key: str, value: torch.Tensor) -> None:
        if tuple(value.shape[: len(self.batch_size)]) != tuple(self.batch_size):
            raise RuntimeError(f"batch dimension mismatch for {key}: {tuple(value.shape)} vs {tuple(self.batch_size)}")
        self._data[key] = value

    def __contains__(self, key: str) -> bool:  # `"rollout_log_probs" in batch.batch` (ray_trainer.py:1571)
        return key in self._data

    def keys(self) -> Any:
        return self._data.keys()

    def items(self) -> Any:
        return self._data.items()

    def pop(self, key: str) -> torch.Tensor:
        return self._data.pop(key)


# --- verl.protocol.DataProto (verl/protocol.py, b178a3c) -----------------------------------------


def list_of_dict_to_dict_of_list(list_of_dict: list[dict]) -> dict[str, list]:
    """verl/protocol.py:201-211: the first dict's keys; a later dict's key the first lacks fails."""
    if len(list_of_dict) == 0:
        return {}
    output: dict[str, list] = {key: [] for key in list_of_dict[0]}
    for data in list_of_dict:
        for key, item in data.items():
            assert key in output
            output[key].append(item)
    return output


@dataclass
class DataProto:
    batch: TensorDict | None = None
    non_tensor_batch: dict[str, np.ndarray] = field(default_factory=dict)
    meta_info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:  # verl/protocol.py:341-343
        self.check_consistency()

    def check_consistency(self) -> None:
        """verl/protocol.py:465-489: every non-tensor column a numpy array of the batch's length."""
        if self.batch is not None:
            assert len(self.batch.batch_size) == 1, "only support num_batch_dims=1"
        for key, val in self.non_tensor_batch.items():
            assert isinstance(val, np.ndarray), f"{key=}: {type(val)=}"
        if self.batch is not None and len(self.non_tensor_batch) != 0:
            batch_size = self.batch.batch_size[0]
            for key, val in self.non_tensor_batch.items():
                assert val.shape[0] == batch_size, (
                    f"key {key} length {len(val)} is not equal to batch size {batch_size}"
                )

    def __len__(self) -> int:  # verl/protocol.py:345-352
        if self.batch is not None:
            return self.batch.batch_size[0]
        if self.non_tensor_batch:
            return next(iter(self.non_tensor_batch.values())).shape[0]
        return 0

    def __getitem__(self, item: Any) -> Any:
        """verl/protocol.py:354-386: a slice → `slice`, a list / array / tensor → `select_idxs`."""
        if isinstance(item, slice):
            return self.slice(item.start, item.stop, item.step)
        if isinstance(item, list | np.ndarray | torch.Tensor):
            return self.select_idxs(item)
        raise TypeError(f"Indexing with {type(item)} is not supported here")

    def select_idxs(self, idxs: Any) -> DataProto:
        """verl/protocol.py:646-684: a list becomes an int32 (or bool) tensor; rows of every tensor
        and every non-tensor column; the same meta_info."""
        if isinstance(idxs, list):
            idxs = torch.tensor(idxs)
            if idxs.dtype != torch.bool:
                idxs = idxs.type(torch.int32)
        if isinstance(idxs, np.ndarray):
            idxs_np, idxs_torch = idxs, torch.from_numpy(idxs)
        else:
            idxs_torch, idxs_np = idxs, idxs.detach().cpu().numpy()
        batch_size = int(idxs_np.sum()) if idxs_np.dtype == bool else idxs_np.shape[0]
        selected = None
        if self.batch is not None:
            selected = TensorDict({k: t[idxs_torch] for k, t in self.batch.items()}, batch_size=(batch_size,))
        non_tensor = {k: v[idxs_np] for k, v in self.non_tensor_batch.items()}
        return type(self)(batch=selected, non_tensor_batch=non_tensor, meta_info=self.meta_info)

    def slice(self, start: Any = None, end: Any = None, step: Any = None) -> DataProto:  # verl/protocol.py:686-730
        s = slice(start, end, step)
        batch = self.batch[s] if self.batch is not None else None
        return type(self)(
            batch=batch, non_tensor_batch={k: v[s] for k, v in self.non_tensor_batch.items()}, meta_info=self.meta_info
        )

    @staticmethod
    def concat(data: list[DataProto]) -> DataProto:
        """verl/protocol.py:928-972: `torch.cat` of the TensorDicts (the same keys, or tensordict
        raises), the non-tensor columns by the first batch's keys (protocol.py:201-211; a key the
        others lack leaves its column short and the consistency check fails), meta_info merged with
        equal values for each non-metric key."""
        keys = set(data[0].batch.keys()) if data[0].batch is not None else set()
        for d in data[1:]:
            if d.batch is not None and set(d.batch.keys()) != keys:
                raise KeyError(f"concat: tensor keys differ: {sorted(keys ^ set(d.batch.keys()))}")
        new_batch = None
        if data[0].batch is not None:
            new_batch = TensorDict(
                {k: torch.cat([d.batch[k] for d in data], dim=0) for k in keys},
                batch_size=(sum(d.batch.batch_size[0] for d in data),),
            )
        non_tensor = list_of_dict_to_dict_of_list([d.non_tensor_batch for d in data])
        non_tensor = {k: np.concatenate(v, axis=0) for k, v in non_tensor.items()}
        merged: dict[str, Any] = {}
        metrics: list[Any] = []
        for d in data:
            for k, v in d.meta_info.items():
                if k == "metrics":
                    if v is not None:
                        metrics.extend(v if isinstance(v, list) else [v])
                elif k in merged:
                    assert merged[k] == v, f"Conflicting values for meta_info key '{k}'"
                else:
                    merged[k] = v
        if metrics:
            merged["metrics"] = list_of_dict_to_dict_of_list(metrics)
        return type(data[0])(batch=new_batch, non_tensor_batch=non_tensor, meta_info=merged)


# --- the agent loop's batch (verl/experimental/agent_loop/agent_loop.py, b178a3c) ----------------


@dataclass
class AgentOutput:
    """One agent loop's output, the fields `_agent_loop_postprocess` and `_postprocess` read
    (agent_loop.py:133-156, 521-640): unpadded ids, the response (loss) mask, log-probabilities,
    the reward loop's score and extras, the prompt's non-tensor fields (`kwargs`)."""

    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    response_logprobs: list[float] | None = None
    reward_score: float | None = None
    reward_extra_info: dict[str, Any] | None = None
    num_turns: int = 2
    multi_modal_data: dict[str, Any] | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)


def _pad(ids: list[int], length: int, pad: int, side: str) -> tuple[list[int], list[int]]:
    """`tokenizer.pad(..., padding="max_length")` on one row: the ids and their attention mask."""
    n = length - len(ids)
    if n < 0:
        raise ValueError(f"{len(ids)} ids do not fit {length}")  # tokenizer.pad would not truncate either
    return (
        ([pad] * n + ids, [0] * n + [1] * len(ids)) if side == "left" else (ids + [pad] * n, [1] * len(ids) + [0] * n)
    )


def agent_loop_batch(
    outputs: list[AgentOutput], prompt_length: int, response_length: int, pad: int, vision: bool = False
) -> DataProto:
    """`AgentLoopWorker._postprocess` over each output's `_agent_loop_postprocess`:
    prompts left-padded to prompt_length (agent_loop.py:546-556), responses and the response mask
    right-padded to response_length (558-578), the response mask times the response's attention
    mask (585), log-probabilities padded with 0.0 (580-583), attention mask and input ids the
    concatenations (586-587), position ids `compute_position_id_with_mask` without a processor
    (679-680, verl/utils/model.py:226-227) or (1, 4, length) with one (686-698: text positions with 1
    at padding; a row without images gets the same in the 3 rope channels,
    verl/models/transformers/qwen2_vl.py:153-157), `raw_prompt` into extra_fields (523);
    then `rm_scores` with the score on the last response id when every row has one (761-767), the
    reward extras' keys from the FIRST row, every row indexed by them (773-777: a row without
    them raises KeyError), `multi_modal_inputs` ({} without a processor, 644-646; 779-782), the
    extra_fields as object columns (785-793), `reward_extra_keys` in meta_info with rm_scores (795-800)."""
    rows: dict[str, list[Any]] = defaultdict(list)
    for o in outputs:
        prompt, prompt_mask = _pad(o.prompt_ids, prompt_length, pad, "left")
        response, response_attention = _pad(o.response_ids, response_length, pad, "right")
        mask_padded, _ = _pad(o.response_mask, response_length, pad, "right")
        attention = prompt_mask + response_attention
        rows["prompts"].append(prompt)
        rows["responses"].append(response)
        rows["response_mask"].append([m * a for m, a in zip(mask_padded, response_attention)])
        rows["input_ids"].append(prompt + response)
        rows["attention_mask"].append(attention)
        mask = torch.tensor(attention)
        if vision:
            text = torch.ones(len(attention), dtype=torch.long)
            text[mask.bool()] = torch.arange(int(mask.sum()))
            rows["position_ids"].append(text.unsqueeze(0).expand(4, -1).tolist())
        else:
            rows["position_ids"].append(torch.clip(torch.cumsum(mask, dim=-1) - 1, min=0).tolist())
        if o.response_logprobs is not None:
            rows["rollout_log_probs"].append(o.response_logprobs + [0.0] * (response_length - len(o.response_logprobs)))
    tensors = {k: torch.tensor(v) for k, v in rows.items() if k != "rollout_log_probs"}
    if rows["rollout_log_probs"]:
        tensors["rollout_log_probs"] = torch.tensor(rows["rollout_log_probs"])
    batch = TensorDict(tensors, batch_size=len(outputs))
    scores = [o.reward_score for o in outputs]
    if all(s is not None for s in scores):
        last = batch["attention_mask"][:, prompt_length:].sum(dim=1) - 1
        rm_scores = torch.zeros_like(batch["response_mask"], dtype=torch.float32)
        rm_scores[torch.arange(len(outputs)), last] = torch.tensor(scores, dtype=torch.float32)
        batch["rm_scores"] = rm_scores
    non_tensor: dict[str, np.ndarray] = {"__num_turns__": np.array([o.num_turns for o in outputs], dtype=np.int32)}
    extras = [o.reward_extra_info or {} for o in outputs]
    reward_extra_keys = list(extras[0].keys())
    for key in reward_extra_keys:
        non_tensor[key] = np.array([info[key] for info in extras])
    mm = np.empty(len(outputs), dtype=object)
    mm[:] = [{} for _ in outputs]
    non_tensor["multi_modal_inputs"] = mm
    fields: list[dict[str, Any]] = []
    for o in outputs:
        f = {"raw_prompt": o.kwargs["raw_prompt"]}  # agent_loop.py:523 reads kwargs["raw_prompt"]
        if o.reward_extra_info is not None:
            f["reward_extra_info"] = o.reward_extra_info  # agent_loop.py:730
        fields.append(f)
    for key in {k for f in fields for k in f}:
        arr = np.empty(len(outputs), dtype=object)
        arr[:] = [f.get(key) for f in fields]
        non_tensor[key] = arr
    meta = {"metrics": [{} for _ in outputs]}
    if "rm_scores" in batch:
        meta["reward_extra_keys"] = reward_extra_keys
    return DataProto(batch=batch, non_tensor_batch=non_tensor, meta_info=meta)


def object_column(values: list[Any]) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    arr[:] = values
    return arr


# --- a reward manager: DAPO's (verl/workers/reward_manager/dapo.py, b178a3c) --------------------


class DAPORewardManager:
    """`DAPORewardManager.__call__` (dapo.py:53-148): rm_scores when present (the reward loop's,
    verl/workers/reward_manager/abstract.py:64-70, extras from `reward_extra_keys`), else each row's
    score on its last valid response id (127) with `score`, `acc`, `pred` extras
    (verl/utils/reward_score/math_dapo.py:262-272: 1.0 correct, -1.0 not). Here a row is correct
    when its response holds `answer`."""

    def __init__(self, answer: int) -> None:
        self.answer = answer

    def __call__(self, data: DataProto, return_dict: bool = False) -> Any:
        if "rm_scores" in data.batch:
            keys = data.meta_info.get("reward_extra_keys", [])
            extra = {key: data.non_tensor_batch[key] for key in keys}
            return {"reward_tensor": data.batch["rm_scores"], "reward_extra_info": extra} if return_dict else None
        reward_tensor = torch.zeros_like(data.batch["responses"], dtype=torch.float32)
        extra_info: dict[str, list[Any]] = defaultdict(list)
        prompt_length = data.batch["prompts"].shape[-1]
        for i in range(len(data)):
            valid = int(data.batch["attention_mask"][i, prompt_length:].sum())
            response = data.batch["responses"][i, :valid].tolist()
            correct = self.answer in response
            score = 1.0 if correct else -1.0
            extra_info["score"].append(score)
            extra_info["acc"].append(correct)
            extra_info["pred"].append(str(response[-1]))
            reward_tensor[i, valid - 1] = score
        return {"reward_tensor": reward_tensor, "reward_extra_info": extra_info} if return_dict else reward_tensor


def compute_reward(data: DataProto, reward_fn: Any) -> tuple[torch.Tensor, dict[str, Any]]:
    """verl/trainer/ppo/reward.py:179-197 (the fallback on an exception left out: it calls the reward function again)."""
    result = reward_fn(data, return_dict=True)
    return result["reward_tensor"], result.get("reward_extra_info", {})


# --- RayPPOTrainer's reward step (verl/trainer/ppo/ray_trainer.py, b178a3c) ---------------------


class Config(dict):
    """An OmegaConf-like config: attribute access and `.get` (what the mixin reads)."""

    def __getattr__(self, name: str) -> Any:
        return self[name]


class CheckpointManager:
    """`CheckpointEngineManager` (verl/checkpoint_engine/base.py:370-384): with the `naive` backend
    (rollout colocated with the trainer) `sleep_replicas` frees the replicas and `update_weights`
    loads the trainer's weights into them, awake; other backends never sleep them."""

    def __init__(self, backend: str = "naive") -> None:
        self.backend = backend
        self.awake = backend != "naive"
        self.calls: list[str] = []

    def sleep_replicas(self) -> None:
        self.calls.append("sleep_replicas")
        if self.backend == "naive":
            self.awake = False

    def update_weights(self) -> None:
        self.calls.append("update_weights")
        self.awake = True


class RayPPOTrainer:
    """The parts of `RayPPOTrainer` the mixin overrides or relies on."""

    def __init__(self, reward_fn: Any = None, pad_token_id: int = 0, launch_reward_fn_async: bool = False) -> None:
        self.reward_fn = reward_fn  # ray_trainer.py:272
        self.tokenizer = type("Tokenizer", (), {"pad_token_id": pad_token_id})()  # ray_trainer.py:269
        self.config = Config(reward_model=Config(launch_reward_fn_async=launch_reward_fn_async))
        self.global_steps = 7
        self.fitted = False
        # init_workers makes it and sleeps the replicas (ray_trainer.py:919-926); fit() generates, then sleeps them (1397).
        self.checkpoint_manager = CheckpointManager()

    def fit(self) -> None:
        self.fitted = True

    def _compute_or_extract_reward(
        self, batch: DataProto, reward_fn: Any = None, reward_for_val: bool = False, sum_reward: bool = False
    ) -> Any:
        """ray_trainer.py:480-534."""
        if "rm_scores" in batch.batch.keys():
            reward_tensor = batch.batch["rm_scores"]
            if sum_reward:
                reward_tensor = reward_tensor.sum(dim=-1)
            if not reward_for_val and sum_reward:
                return reward_tensor
            reward_extra_keys = batch.meta_info.get("reward_extra_keys", [])
            extra = {key: batch.non_tensor_batch[key] for key in reward_extra_keys} if reward_extra_keys else {}
            return reward_tensor, extra
        if reward_fn is None:
            raise ValueError("reward_fn must be provided when rm_scores is not available.")
        if reward_for_val:
            result = reward_fn(batch, return_dict=True)
            reward_tensor = result["reward_tensor"]
            if sum_reward:
                reward_tensor = reward_tensor.sum(dim=-1)
            return reward_tensor, result.get("reward_extra_info", {})
        reward_tensor, extra = compute_reward(batch, reward_fn)
        if sum_reward:
            reward_tensor = reward_tensor.sum(dim=-1)
        return reward_tensor, extra

    def _update_actor(self, batch: DataProto) -> DataProto:
        """ray_trainer.py:1235-1270: a DataProto whose meta_info["metrics"] `fit()` reduces (1613)."""
        return DataProto(meta_info={"metrics": {"actor/pg_loss": [0.5, 0.25]}})

    def reward_step(self, batch: DataProto) -> dict[str, Any]:
        """The training step of `fit()` from the batch's meta (1458-1465) through the reward
        (1482-1484), the scores and extras put into the batch (1552-1555), to the actor update's
        metrics (1604-1614, `reduce_metrics`: the mean of each list, verl/utils/metric/utils.py:49-57)."""
        batch.meta_info["global_token_num"] = torch.sum(batch.batch["attention_mask"], dim=-1).tolist()
        seqlens: list[Any] = []
        for multi_modal_input in batch.non_tensor_batch["multi_modal_inputs"]:
            if "image_grid_thw" not in multi_modal_input.keys():
                continue
            seqlens.extend(multi_modal_input["images_seqlens"].tolist())
        batch.meta_info["images_seqlens"] = seqlens
        reward_tensor, reward_extra_infos_dict = self._compute_or_extract_reward(
            batch, reward_fn=self.reward_fn, reward_for_val=False
        )
        batch.batch["token_level_scores"] = reward_tensor
        if reward_extra_infos_dict:
            batch.non_tensor_batch.update({k: np.array(v) for k, v in reward_extra_infos_dict.items()})
        batch.check_consistency()
        actor_output = self._update_actor(batch)
        return {k: float(np.mean(v)) for k, v in actor_output.meta_info["metrics"].items()}


# --- DAPO's filter (verl-recipe 21892b9, dapo/dapo_ray_trainer.py) ------------------------------


def dapo_step(new_batch: DataProto, reward_fn: Any, metric_name: str = "acc") -> DataProto:
    """dapo_ray_trainer.py:209-267: the reward (209), `token_level_scores` (211), the extras into the
    batch (213-216), `token_level_rewards` (226), then `filter_groups`: keep the uids whose metric
    has spread (or a single row) and select their rows."""
    reward_tensor, reward_extra_infos_dict = compute_reward(new_batch, reward_fn)
    new_batch.batch["token_level_scores"] = reward_tensor
    if reward_extra_infos_dict:
        new_batch.non_tensor_batch.update({k: np.array(v) for k, v in reward_extra_infos_dict.items()})
    new_batch.batch["token_level_rewards"] = new_batch.batch["token_level_scores"]
    if metric_name == "seq_reward":
        new_batch.non_tensor_batch["seq_reward"] = new_batch.batch["token_level_scores"].sum(dim=-1).numpy()
    vals: dict[Any, list[Any]] = defaultdict(list)
    for uid, metric_val in zip(new_batch.non_tensor_batch["uid"], new_batch.non_tensor_batch[metric_name], strict=True):
        vals[uid].append(metric_val)
    kept = [uid for uid, v in vals.items() if np.std(v) > 0 or len(v) == 1]
    idxs = [i for i, uid in enumerate(new_batch.non_tensor_batch["uid"]) if uid in kept]
    return new_batch[idxs]
