"""The verl rescue at the reward step (harness_s_client/verl.py) over a stand-in service (httpx's
MockTransport, as test_hooks.py) and stand-ins of verl's DataProto, agent-loop batch, reward
manager, RayPPOTrainer reward step and DAPO filter (verl_dataproto_standin.py, each restated from
verl b178a3c / verl-recipe 21892b9 by line). verl does not install here; torch and numpy do in the
worker's venv, and these tests are skipped where they do not (the client's own venv)."""

from __future__ import annotations

import json
import warnings
from typing import Any

import httpx
import pytest

torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from verl_dataproto_standin import (  # noqa: E402
    AgentOutput,
    DAPORewardManager,
    DataProto,
    RayPPOTrainer,
    TensorDict,
    agent_loop_batch,
    dapo_step,
    object_column,
)

from harness_s_client import AsyncHarnessS, RescueSettings  # noqa: E402
from harness_s_client.convert import verl_turns  # noqa: E402
from harness_s_client.verl import (  # noqa: E402
    DataProtoRescue,
    RescueRewardFn,
    RescueTrainerMixin,
    VerlGroupRescue,
    rescue_data_proto,
)

PROMPT_LENGTH, RESPONSE_LENGTH, PAD = 6, 5, 99
ANSWER = 7  # a response holding it is correct (DAPO's reward: 1.0, else -1.0)


def row(index: int, prompt: list[int], completion: list[int], reward: float, mask: list[int] | None = None) -> dict:
    return {
        "index": index,
        "harness_id": f"sib-{index % 2 + 1}",
        "decision_id": "dec_1",
        "weight_version": 7,
        "reward": reward,
        "success": reward > 0,
        "finish_reason": "submitted",
        "failure_tags": [],
        "prompt_ids": prompt,
        "completion_ids": completion,
        "logprobs": [-0.5 - i / 10 for i in range(len(completion))],
        "loss_mask": mask if mask is not None else [1] * len(completion),
        "context": "sampled",
        "segmented": False,
    }


#: What each task's rescue returns (the group takes the first 2 rows: one per input).
RESCUED = {
    # Both rows fit; row 1 succeeds.
    "b": [
        row(0, [1, 2], [30, 31, 2], 0.0, mask=[1, 0, 1]),
        row(1, [1, 2, 3], [ANSWER, 2], 1.0),
        row(2, [1], [5], 0.0),
    ],
    # The succeeding row's prompt (8 ids) does not fit prompt_length 6; the one that fits failed.
    "c": [row(0, [1, 2], [30, 2], 0.0), row(1, [1] * 8, [ANSWER, 2], 1.0)],
    # The succeeding row fits; the other's response (7 ids) does not fit response_length 5.
    "d": [row(0, [1, 2, 3, 4], [ANSWER, 2], 1.0), row(1, [1, 2], [5] * 7, 0.0)],
}


class Service:
    """The service's rescue calls, as test_hooks.py fakes them: a pool of 2 siblings, each rescue
    done at once with `RESCUED[task]`'s rows."""

    def __init__(self, awake: Any = None) -> None:
        self.bodies: list[dict] = []
        self.awake = awake  # the policy's server, awake or not, read as each rescue starts
        self.awake_at_start: list[bool] = []

    def __call__(self, req: httpx.Request) -> httpx.Response:
        path = req.url.path
        if path.startswith("/v1/pools/"):
            return httpx.Response(200, json={"id": "pool", "siblings": [{"id": "sib-1"}, {"id": "sib-2"}]})
        if path == "/v1/rescues":
            body = json.loads(req.content)
            self.bodies.append(body)
            self.awake_at_start.append(bool(self.awake and self.awake()))
            task = body["caller"]["task"]["id"]
            return httpx.Response(202, json={"id": f"rsc_{task}", "chosen": ["sib-1", "sib-2"], "expected": 2})
        task = path.split("/")[3].removeprefix("rsc_")
        if path.endswith("/trajectories"):
            return httpx.Response(200, json={"trajectories": RESCUED[task], "next": None})
        job = {"id": f"rsc_{task}", "poolId": "pool", "taskId": task, "chosen": ["sib-1"], "expected": 2}
        spent = {"policyTokens": 20, "policySeconds": 0.5, "environmentSeconds": 0.25}
        status = {"job": job, "status": "done", "completed": 2, "failed": [], "rescued": True, "rollouts": []}
        return httpx.Response(200, json={**status, "spent": spent})

    def tasks(self) -> list[str]:
        return [b["caller"]["task"]["id"] for b in self.bodies]


def settings() -> RescueSettings:
    return RescueSettings(pool_id="pool", environment={"kind": "openenv", "url": "http://env"}, endpoint_id="verl-r0")


def task(t: str) -> dict:
    return {"id": t, "family": "app", "tools": [{"name": "submit", "submit": True}]}


def rescue_of(service: Service) -> DataProtoRescue:
    return DataProtoRescue(
        lambda: AsyncHarnessS("http://service", "key", transport=httpx.MockTransport(service)),
        settings(),
        task_of=lambda fields: task(fields["extra_info"]["task"]),
        weight_version=lambda step: step,
    )


def dapo_extras(response: list[int]) -> dict[str, Any]:
    """DAPO's reward extras for a response (verl/utils/reward_score/math_dapo.py:268-272)."""
    correct = ANSWER in response
    return {"score": 1.0 if correct else -1.0, "acc": correct, "pred": str(response[-1])}


#: uid → task and the two responses its rollouts gave (group a has a success; b, c, d all fail).
GROUPS = {"uid-a": ("a", [[ANSWER, 2], [8, 2]]), "uid-b": ("b", [[8, 2], [9, 3, 2]])}
GROUPS |= {"uid-c": ("c", [[8, 2], [8, 8, 2]]), "uid-d": ("d", [[9, 2], [9]])}


def batch_of(reward_loop: bool, vision: bool = False, groups: dict = GROUPS) -> DataProto:
    """The training batch at `fit()`'s reward step: the agent loop's output (with the reward loop:
    rm_scores and the extras as columns) united with the dataset's columns (ray_trainer.py:1446)."""
    outputs = []
    for uid, (t, responses) in groups.items():
        for response in responses:
            extras = dapo_extras(response) if reward_loop else None
            outputs.append(
                AgentOutput(
                    prompt_ids=[11, 12, 13],
                    response_ids=response,
                    response_mask=[1] * len(response),
                    response_logprobs=[-1.0] * len(response),
                    reward_score=extras["score"] if extras else None,
                    reward_extra_info=extras,
                    kwargs={"raw_prompt": [{"role": "user", "content": f"task {t} ({uid})"}]},
                )
            )
    batch = agent_loop_batch(outputs, PROMPT_LENGTH, RESPONSE_LENGTH, PAD, vision=vision)
    uids = [uid for uid, (_, responses) in groups.items() for _ in responses]
    batch.non_tensor_batch["uid"] = object_column(uids)
    batch.non_tensor_batch["data_source"] = object_column(["app"] * len(uids))
    batch.non_tensor_batch["extra_info"] = object_column([{"task": groups[u][0]} for u in uids])
    batch.meta_info.pop("metrics")
    batch.check_consistency()
    return batch


def snapshot(batch: DataProto) -> tuple[dict, dict]:
    return {k: v.clone() for k, v in batch.batch.items()}, {k: v.copy() for k, v in batch.non_tensor_batch.items()}


def rows_of(batch: DataProto, uid: str) -> list[int]:
    return [i for i, u in enumerate(batch.non_tensor_batch["uid"]) if u == uid]


def as_verl_lays_out(rows: list[dict], vision: bool = False) -> DataProto:
    """The rescued rows as verl's agent loop would have laid them out (the stand-in's own layout)."""
    outputs = [
        AgentOutput(
            prompt_ids=r["prompt_ids"],
            response_ids=r["completion_ids"],
            response_mask=r["loss_mask"],
            response_logprobs=r["logprobs"],
            reward_score=r["reward"],
            kwargs={"raw_prompt": None},
        )
        for r in rows
    ]
    return agent_loop_batch(outputs, PROMPT_LENGTH, RESPONSE_LENGTH, PAD, vision=vision)


WRITTEN = ("prompts", "responses", "response_mask", "input_ids", "attention_mask", "position_ids", "rollout_log_probs")


def assert_row_is(batch: DataProto, i: int, expected: DataProto, j: int, keys: tuple[str, ...] = WRITTEN) -> None:
    for key in keys:
        assert torch.equal(batch.batch[key][i], expected.batch[key][j]), key


def assert_row_untouched(batch: DataProto, before: tuple[dict, dict], i: int, keys: Any = None) -> None:
    tensors, columns = before
    for key in keys or tensors:
        assert torch.equal(batch.batch[key][i], tensors[key][i]), key
    for key, column in columns.items():
        assert batch.non_tensor_batch[key][i] == column[i], key


class Trainer(RescueTrainerMixin, RayPPOTrainer):
    """`class RescueTrainer(RescueTrainerMixin, RayPPOTrainer)` over the stand-in trainer."""


def test_upstream_postprocess_raises_on_rows_mixing_reward_extras():
    """Why rescued rows are not handed to verl's agent-loop postprocess: it takes the reward
    extras' keys from the first row and indexes every row by them (agent_loop.py:773-777)."""
    with_extras = AgentOutput([1], [ANSWER], [1], reward_score=1.0, reward_extra_info=dapo_extras([ANSWER]))
    rescued = AgentOutput([1], [5], [1], reward_score=0.0, kwargs={"raw_prompt": None})
    with_extras.kwargs = {"raw_prompt": None}
    with pytest.raises(KeyError, match="score"):
        agent_loop_batch([with_extras, rescued], PROMPT_LENGTH, RESPONSE_LENGTH, PAD)


def test_the_stand_in_is_as_strict_as_verl():
    batch = batch_of(reward_loop=True)
    with pytest.raises(AssertionError, match="is not equal to batch size"):
        DataProto(batch=batch.batch, non_tensor_batch={"uid": object_column(["x"])})
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        batch.batch["prompts"] = torch.zeros(3, PROMPT_LENGTH)
    other = batch_of(reward_loop=True)
    other.non_tensor_batch["rescued"] = object_column([False] * len(other))
    with pytest.raises(AssertionError):
        DataProto.concat([batch, other])
    with pytest.raises(AssertionError):
        DataProto.concat([other, batch])
    assert isinstance(batch.batch, TensorDict) and len(batch[[0, 2]]) == 2


def test_the_mixin_rescues_all_fail_groups_at_fits_reward_step_with_the_reward_loops_extras():
    trainer = Trainer(pad_token_id=PAD)
    service = Service(awake=lambda: trainer.checkpoint_manager.awake)
    batch = batch_of(reward_loop=True)
    before = snapshot(batch)
    trainer.harness_s_rescue = rescue_of(service)

    metrics = trainer.reward_step(batch)  # fit() from ray_trainer.py:1458 to 1614; no KeyError, consistent

    # Only the all-fail groups went to the service, pinned to the step's weights, each for 2 rows (1 per sibling).
    assert service.tasks() == ["b", "c", "d"]
    assert all(b["caller"]["weightVersion"] == 7 and b["rolloutsPerHarness"] == 1 for b in service.bodies)
    # verl's colocated replicas sleep after generating: woken at the step's weights for the rescue, then put back.
    assert service.awake_at_start == [True] * 3 and trainer.checkpoint_manager.calls == [
        "update_weights",
        "sleep_replicas",
    ]
    outcomes = trainer.harness_s_rescue.outcomes
    assert [(o.task_id, o.kind) for o in outcomes] == [
        ("uid-a", "kept"),
        ("b", "replaced"),
        ("c", "unrescued"),
        ("d", "replaced"),
    ]
    assert "prompt_length 6" in (outcomes[2].reason or "")
    # Every shape and dtype as it was; the rescue metrics reach fit()'s metrics through the actor update.
    for key, tensor in before[0].items():
        assert batch.batch[key].shape == tensor.shape and batch.batch[key].dtype == tensor.dtype, key
    assert metrics["actor/pg_loss"] == 0.375
    assert metrics["rescue/groups_replaced"] == 2.0 and metrics["rescue/groups_unrescued"] == 1.0
    assert metrics["rescue/rows_replaced"] == 3.0 and metrics["rescue/rows_unfit"] == 2.0
    assert metrics["rescue/policy_tokens"] == 60.0 and trainer.harness_s_metrics is None

    a, b, c, d = (rows_of(batch, u) for u in GROUPS)
    for i in a + c + [d[1]]:  # not all-failed, not rescued, or a slot whose rescued row did not fit
        assert_row_untouched(batch, before, i, keys=[k for k in before[0] if k != "token_level_scores"])
    # b: both rescued rows, laid out as verl lays out its own (left-padded prompts, right-padded responses, ...).
    expected = as_verl_lays_out(RESCUED["b"][:2])
    for slot, i in enumerate(b):
        assert_row_is(batch, i, expected, slot, WRITTEN + ("rm_scores",))
    assert batch.batch["prompts"][b[0]].tolist() == [PAD] * 4 + [1, 2]
    assert batch.batch["responses"][b[0]].tolist() == [30, 31, 2, PAD, PAD]
    assert batch.batch["response_mask"][b[0]].tolist() == [1, 0, 1, 0, 0]
    assert batch.batch["position_ids"][b[1]].tolist() == [0, 0, 0, 0, 1, 2, 3, 4, 4, 4, 4]
    assert torch.equal(batch.batch["token_level_scores"], batch.batch["rm_scores"])
    assert batch.batch["token_level_scores"][b].sum(-1).tolist() == [0.0, 1.0]
    # d: its fitting success in the first slot; the slot of the row that did not fit keeps the original.
    assert_row_is(batch, d[0], as_verl_lays_out(RESCUED["d"][:1]), 0, WRITTEN + ("rm_scores",))

    # Reward extras: the rescue's (score = its reward, acc = reward > 0), else the original row's (pred).
    nt = batch.non_tensor_batch
    assert nt["acc"][b].tolist() == [False, True] and nt["acc"][d].tolist() == [True, False]
    assert nt["score"][b].tolist() == [0.0, 1.0] and nt["score"][a].tolist() == [1.0, -1.0]
    assert nt["pred"][b].tolist() == before[1]["pred"][b].tolist()
    assert nt["reward_extra_info"][b[1]] == {"score": 1.0, "acc": True, "pred": before[1]["pred"][b[1]]}
    # The prompt's own columns carried; the rescued rows' turns counted as verl counts them.
    for i in b + [d[0]]:
        assert nt["raw_prompt"][i] == before[1]["raw_prompt"][i] and nt["uid"][i] == before[1]["uid"][i]
        assert nt["multi_modal_inputs"][i] == {}
    assert nt["__num_turns__"][b].tolist() == [verl_turns([1, 0, 1]), verl_turns([1, 1])]
    assert batch.meta_info["global_token_num"] == batch.batch["attention_mask"].sum(-1).tolist()
    assert batch.meta_info["global_token_num"] != before[0]["attention_mask"].sum(-1).tolist()


def test_dapo_filter_keeps_rescued_groups_and_concatenates_batches_through_the_reward_fn():
    """DAPO's recipe: the rescue behind its reward manager (compute_reward at dapo_ray_trainer.py:209),
    extras returned by the reward function (no reward loop), the filter on `acc`, and two generation
    batches concatenated (one with no all-fail group: the same keys)."""
    service = Service()
    trainer = RayPPOTrainer()
    reward_fn = RescueRewardFn(DAPORewardManager(ANSWER), rescue_of(service), step_of=lambda: trainer.global_steps)
    batch = batch_of(reward_loop=False)
    before = snapshot(batch)

    first = dapo_step(batch, reward_fn)
    second = dapo_step(batch_of(reward_loop=False, groups={"uid-e": ("e", [[ANSWER], [3]])}), reward_fn)
    both = DataProto.concat([first, second])

    assert service.tasks() == ["b", "c", "d"]  # the second batch had nothing to rescue
    assert sorted(set(both.non_tensor_batch["uid"])) == ["uid-a", "uid-b", "uid-d", "uid-e"]  # c: no spread
    assert both.non_tensor_batch["acc"].tolist() == [True, False, False, True, True, False, True, False]
    assert both.non_tensor_batch["score"].tolist() == [1.0, -1.0, 0.0, 1.0, 1.0, -1.0, 1.0, -1.0]
    assert both.batch["token_level_scores"].sum(-1).tolist() == both.non_tensor_batch["score"].tolist()
    assert reward_fn.metrics["rescue/rows_unfit"] == 0.0 and reward_fn.metrics["rescue/groups_kept"] == 1.0
    for key, tensor in before[0].items():
        assert batch.batch[key].shape == tensor.shape, key


def test_a_batch_holding_tensors_a_rescued_row_cannot_fill_is_left_as_it_was():
    """e.g. DAPO with use_kl_in_reward computes old and reference log-probabilities before the
    reward (dapo_ray_trainer.py:196-199): a rescued row would carry the original's."""
    service = Service()
    batch = batch_of(reward_loop=True)
    batch.batch["old_log_probs"] = torch.zeros(len(batch), RESPONSE_LENGTH)
    before = snapshot(batch)
    reward, extras = RayPPOTrainer()._compute_or_extract_reward(batch)

    got = rescue_data_proto(batch, reward, extras, rescue_of(service), step=3)

    assert service.bodies == [] and [o.kind for o in got.outcomes] == ["kept", "unrescued", "unrescued", "unrescued"]
    assert "old_log_probs" in (got.outcomes[1].reason or "") and got.metrics["rescue/rows_replaced"] == 0.0
    for i in range(len(batch)):
        assert_row_untouched(batch, before, i)


def test_a_vision_batch_gets_text_position_ids_and_no_images_in_rescued_rows():
    service = Service()
    batch = batch_of(reward_loop=True, vision=True)
    batch.non_tensor_batch["multi_modal_data"] = object_column([{"images": ["<image>"]} for _ in range(len(batch))])
    reward, extras = RayPPOTrainer()._compute_or_extract_reward(batch)

    got = rescue_data_proto(batch, reward, extras, rescue_of(service), step=3, pad_token_id=PAD)

    b = got.written["uid-b"]
    assert batch.batch["position_ids"].shape == (8, 4, PROMPT_LENGTH + RESPONSE_LENGTH)
    expected = as_verl_lays_out(RESCUED["b"][:2], vision=True)
    for slot, i in enumerate(b):
        assert_row_is(batch, i, expected, slot)
    assert [batch.non_tensor_batch["multi_modal_data"][i] for i in b] == [{}, {}]
    assert batch.non_tensor_batch["multi_modal_data"][rows_of(batch, "uid-a")[0]] == {"images": ["<image>"]}


def test_validation_and_remax_baselines_are_handed_on_untouched_and_async_rewards_refused():
    service = Service()
    trainer = Trainer(reward_fn=DAPORewardManager(ANSWER))
    trainer.harness_s_rescue = rescue_of(service)
    batch = batch_of(reward_loop=False)
    reward, _ = trainer._compute_or_extract_reward(batch, reward_fn=trainer.reward_fn, reward_for_val=True)
    # Without rm_scores upstream hands back (summed tensor, extras) even for sum_reward (ray_trainer.py:530-534).
    baseline, _ = trainer._compute_or_extract_reward(batch, reward_fn=trainer.reward_fn, sum_reward=True)
    assert service.bodies == [] and reward.shape == (8, RESPONSE_LENGTH) and baseline.shape == (8,)
    assert trainer.checkpoint_manager.calls == []  # nothing to rescue: the replicas are not woken
    trainer.fit()
    assert trainer.fitted
    refused = Trainer(launch_reward_fn_async=True)
    refused.harness_s_rescue = trainer.harness_s_rescue
    with pytest.raises(ValueError, match="launch_reward_fn_async"):
        refused.fit()


def test_the_agent_loop_output_hook_is_deprecated():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        VerlGroupRescue(AsyncHarnessS("http://service", "key"), settings())
    assert any(issubclass(w.category, DeprecationWarning) and "RescueTrainerMixin" in str(w.message) for w in caught)
