"""The converters against the frameworks' types as declared at the commits read (framework_types.py
cites them): verl's AgentLoopOutput and SkyRL's GeneratorOutput accept the rows with no field
dropped, TRL's reward helpers take to_trl's extras, and a base row carries both log-probability
arrays. verl and SkyRL are never imported by the package: the stand-ins sit where its optional
imports look."""

import copy
import inspect

import pytest
from framework_types import AgentLoopOutput, GeneratorOutput, TrajectoryID, check_generator_output
from pydantic import ValidationError

from harness_s_client import TRL_EXTRAS, Trajectory, to_skyrl, to_trl, to_verl, verl_turns
from harness_s_client.convert import SkyRLOutput, VerlOutput, pair_rows, verl_output_class
from harness_s_client.trl import environment_reward

ROW = {
    "index": 0,
    "harness_id": "sib-a",
    "decision_id": "dec_1",
    "weight_version": 3,
    "reward": 1,
    "success": True,
    "finish_reason": "submitted",
    "failure_tags": [],
    "prompt_ids": [1, 2, 3],
    "completion_ids": [7, 8, 9, 10, 11],
    "logprobs": [-0.5, -0.25, 0.0, 0.0, -1.0],
    "loss_mask": [1, 1, 0, 0, 1],
    "context": "sampled",
    "segmented": False,
}


def test_rows_convert_to_each_trainer_shape_unchanged():
    row = Trajectory.from_json(ROW)
    trl = to_trl([row, row])
    assert (
        trl["completion_ids"] == [ROW["completion_ids"]] * 2
        and trl["env_mask"] == [ROW["loss_mask"]] * 2
        and trl["logprobs"] == [ROW["logprobs"]] * 2
    )
    with pytest.raises(ValueError, match="differ in length"):
        Trajectory.from_json({**ROW, "logprobs": [0.0]})
    with pytest.raises(ValueError, match="other than 0 and 1"):
        Trajectory.from_json({**ROW, "loss_mask": [1, 2, 0, 0, 1]})


def test_verl_agent_loop_output_takes_every_field_and_the_extras_sit_in_extra_fields():
    row = Trajectory.from_json(ROW)
    fields = to_verl(row)
    assert set(fields) == set(VerlOutput.__annotations__) == set(AgentLoopOutput.model_fields)
    out = AgentLoopOutput(**fields)  # extra="forbid": nothing dropped
    assert (out.response_ids, out.response_mask, out.response_logprobs) == (
        ROW["completion_ids"],
        ROW["loss_mask"],
        ROW["logprobs"],
    )
    assert isinstance(out.reward_score, float) and out.reward_score == 1.0  # the service's 1 as a float
    assert type(out.metrics).__name__ == "AgentLoopMetrics" and out.metrics.num_preempted == -1
    assert {k: out.extra_fields[k] for k in ("harness_id", "weight_version", "finish_reason")} == {
        "harness_id": "sib-a",
        "weight_version": 3,
        "finish_reason": "submitted",
    }
    # verl's turns: the user prompt, assistant, tool, assistant.
    assert out.num_turns == 4 and verl_turns([1, 0, 1, 0, 1, 0, 1]) == 8
    # Broken once: a field verl has no place for (as the converter once put harness_id beside the fields) is refused.
    with pytest.raises(ValidationError, match="harness_id"):
        AgentLoopOutput(**fields, harness_id="sib-a")
    # verl declares a float; pydantic would take the service's int 1 too, so the type is checked as given.
    assert type(fields["reward_score"]) is float


def test_verl_output_class_is_verls_own_where_installed(frameworks):
    assert verl_output_class() is AgentLoopOutput


def test_skyrl_generator_output_is_complete_with_the_prompts_trajectory_ids(frameworks):
    rows = [
        Trajectory.from_json({**ROW, "index": i, "finish_reason": "budget-exhausted" if i else "submitted"})
        for i in range(2)
    ]
    out = to_skyrl(rows, "uid-7", metrics={"rescue/groups_replaced": 1.0})
    assert set(out) == set(SkyRLOutput.__annotations__) == set(GeneratorOutput.__annotations__)
    check_generator_output(2, dict(out))
    assert out["trajectory_ids"] == [TrajectoryID("uid-7", 0), TrajectoryID("uid-7", 1)]
    assert all(type(t) is TrajectoryID for t in out["trajectory_ids"] or [])  # SkyRL's own class where installed
    assert (
        out["stop_reasons"] == ["stop", "length"]
        and out["rewards"] == [1.0, 1.0]
        and out["rollout_metrics"] == {"rescue/groups_replaced": 1.0}
    )
    assert out["env_metrics"] == [
        {"harness_id": "sib-a", "weight_version": 3, "finish_reason": f, "rescued": True}
        for f in ("submitted", "budget-exhausted")
    ]
    # Broken once: without rollout_metrics (as the converter once left it out) the declared type refuses it.
    missing = {k: v for k, v in copy.copy(out).items() if k != "rollout_metrics"}
    with pytest.raises(ValidationError, match="rollout_metrics"):
        check_generator_output(2, missing)
    # And the trainer's one-row-per-input check.
    with pytest.raises(AssertionError):
        check_generator_output(3, dict(out))


def test_trl_reward_helpers_take_every_extra_of_to_trl():
    rows = [Trajectory.from_json(ROW), Trajectory.from_json({**ROW, "reward": 0.0})]
    out = to_trl(rows, [True, False])
    extras = {k: v for k, v in out.items() if k not in ("prompt_ids", "completion_ids", "logprobs", "env_mask")}
    assert tuple(extras) == TRL_EXTRAS
    # As TRL calls a reward function: prompts, completions, completion_ids, then every extra by name.
    assert environment_reward(
        prompts=["p", "p"], completions=["a", "b"], completion_ids=out["completion_ids"], **extras
    ) == [1.0, 0.0]
    assert "env_reward" in inspect.signature(environment_reward).parameters
    assert (
        extras["rescued"] == [True, False]
        and extras["harness_id"] == ["sib-a", "sib-a"]
        and extras["base_logprobs"] == [None, None]
    )


def test_a_base_row_carries_the_sampled_logprobs_and_h0s_beside_them():
    sampled = [ROW, {**ROW, "index": 1}]
    # H0's rendering: another prompt, the inserted note gone (2 ids at mask 0 become 1), the sampled ids the same.
    base = [
        {
            **ROW,
            "context": "base",
            "prompt_ids": [1, 5],
            "completion_ids": [7, 8, 9, 11],
            "loss_mask": [1, 1, 0, 1],
            "logprobs": [-0.4, -0.2, 0.0, -0.9],
        },
        {**ROW, "index": 1, "context": "base"},
    ]
    rows = pair_rows(base, sampled)
    assert (
        rows[0].logprobs == [-0.5, -0.25, 0.0, -1.0]
        and rows[0].base_logprobs == [-0.4, -0.2, 0.0, -0.9]
        and rows[0].prompt_ids == [1, 5]
    )
    assert rows[1].logprobs == ROW["logprobs"] and rows[1].base_logprobs == ROW["logprobs"]
    assert (
        to_verl(rows[0])["extra_fields"]["base_logprobs"] == [-0.4, -0.2, 0.0, -0.9]
        and to_trl(rows)["base_logprobs"][0] == rows[0].base_logprobs
    )
    with pytest.raises(ValueError, match="not the sampled row's"):
        pair_rows([{**base[0], "completion_ids": [7, 6, 9, 11]}], sampled)
    with pytest.raises(ValueError, match="needs the sampled row"):
        Trajectory.from_json(base[0])
