"""verl's group filter and SkyRL's generator wrapper over a stand-in service (httpx's
MockTransport): all-fail groups go to the service, the rescued rows replace them when some
succeed, a rescue the service fails leaves its group (its code kept), every other group is
untouched, one row per input, and the outputs are the frameworks' declared types
(framework_types.py). The same hooks against the local service: tests/integration/client-hooks.test.ts."""

import asyncio
import json
from types import SimpleNamespace

import httpx
from framework_types import AgentLoopOutput, TrajectoryID, check_generator_output

from harness_s_client import AsyncHarnessS, RescueSettings
from harness_s_client.skyrl import RescueGenerator
from harness_s_client.verl import VerlGroup, VerlGroupRescue

STATUS = {
    "rescued": True,
    "rollouts": [],
    "spent": {"policyTokens": 30, "policySeconds": 0.2, "environmentSeconds": 0.1},
}


def row(index: int, reward: float, task: str) -> dict:
    return {
        "index": index,
        "harness_id": "sib-1",
        "decision_id": f"dec_{task}",
        "weight_version": 7,
        "reward": reward,
        "success": reward > 0,
        "finish_reason": "submitted",
        "failure_tags": [],
        "prompt_ids": [1, 2],
        "completion_ids": [30 + index, 31, 2],
        "logprobs": [-0.3, 0.0, -0.1],
        "loss_mask": [1, 0, 1],
        "context": "sampled",
        "segmented": False,
    }


class Service:
    """Rescues of task b succeed (row 1 of 3 solves), of task c fail with a code at the first read."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        self.cancelled: list[str] = []

    def __call__(self, req: httpx.Request) -> httpx.Response:
        path = req.url.path
        if path.startswith("/v1/pools/"):
            return httpx.Response(
                200, json={"id": "pool", "base": {"id": "h0"}, "siblings": [{"id": "sib-1"}, {"id": "sib-2"}]}
            )
        if path == "/v1/rescues":
            body = json.loads(req.content)
            self.bodies.append(body)
            return httpx.Response(
                202, json={"id": f"rsc_{body['caller']['task']['id']}", "chosen": ["sib-1", "sib-2"], "expected": 4}
            )
        task = path.split("/")[3].removeprefix("rsc_")
        if path.endswith("/cancel"):
            self.cancelled.append(task)
            return httpx.Response(200, json={})
        if path.endswith("/trajectories"):
            return httpx.Response(
                200, json={"trajectories": [row(i, float(i == 1), task) for i in range(3)], "next": None}
            )
        job = {"id": f"rsc_{task}", "poolId": "pool", "taskId": task, "chosen": ["sib-1"], "expected": 4}
        if task == "c":
            return httpx.Response(
                200,
                json={
                    **STATUS,
                    "job": job,
                    "status": "running",
                    "completed": 0,
                    "failed": [{"index": 0, "code": "STALE_POLICY_VERSION", "reason": "held 8, wanted 7"}],
                },
            )
        return httpx.Response(200, json={**STATUS, "job": job, "status": "done", "completed": 4, "failed": []})


def settings() -> RescueSettings:
    return RescueSettings(
        pool_id="pool", environment={"kind": "openenv", "url": "http://env"}, endpoint_id="trainer-r0"
    )


def task(t: str) -> dict:
    return {"id": t, "family": "app", "tools": [{"name": "submit", "submit": True}]}


def verl_output(reward: float, ids: list[int]) -> AgentLoopOutput:
    return AgentLoopOutput(
        prompt_ids=[1], response_ids=ids, response_mask=[1] * len(ids), reward_score=reward, num_turns=2, metrics={}
    )


def test_the_verl_group_filter_splices_rescued_rows_into_all_fail_groups(frameworks):
    service = Service()

    async def run():
        async with AsyncHarnessS("http://service", "key", transport=httpx.MockTransport(service)) as client:
            rescue = VerlGroupRescue(client, settings())
            groups = [
                VerlGroup("uid-a", task("a"), [verl_output(1.0, [5]), verl_output(0.0, [6])]),
                VerlGroup(
                    "uid-b", task("b"), [verl_output(0.0, [5]), verl_output(0.0, [6])], failure_tags=["no-commit"]
                ),
                VerlGroup("uid-c", task("c"), [verl_output(0.0, [5]), verl_output(0.0, [6])]),
            ]
            return groups, await rescue(groups, step=7, weight_version=7, served_model="step-7")

    groups, got = asyncio.run(run())
    assert [o.kind for o in got.outcomes] == ["kept", "replaced", "unrescued"]
    assert got.outputs[0] == groups[0].outputs and got.outputs[2] == groups[2].outputs  # untouched, same objects
    assert all(type(o) is AgentLoopOutput for g in got.outputs for o in g) and [len(g) for g in got.outputs] == [
        2,
        2,
        2,
    ]
    b = got.outputs[1]
    assert (
        [o.response_ids for o in b] == [[30, 31, 2], [31, 31, 2]]
        and b[1].reward_score == 1.0
        and b[0].extra_fields["harness_id"] == "sib-1"
    )
    # The rescue names the step's weights and the rank's endpoint, routed by the group's tags; the 2 siblings run 1 row each.
    sent = service.bodies[0]
    assert (
        sent["caller"]["weightVersion"] == 7
        and sent["caller"]["servedModel"] == "step-7"
        and sent["caller"]["endpoint"] == "trainer-r0"
    )
    assert sent["failureTags"] == ["no-commit"] and sent["rolloutsPerHarness"] == 1 and len(service.bodies) == 2
    assert got.outcomes[2].code == "STALE_POLICY_VERSION" and service.cancelled == ["c"]
    assert (
        got.metrics["rescue/groups_replaced"] == 1.0
        and got.metrics["rescue/groups_failed"] == 1.0
        and got.metrics["rescue/policy_tokens"] == 60.0
    )


class UserGenerator:
    """The user's SkyRL generator: one row per input, rewards by the prompt (a solves once)."""

    async def generate(self, batch):
        n = len(batch["prompts"])
        return {
            "prompt_token_ids": [[1]] * n,
            "response_ids": [[5, 6]] * n,
            "rewards": [1.0 if p == "a" and i % 2 == 0 else 0.0 for i, p in enumerate(batch["prompts"])],
            "loss_masks": [[1, 1]] * n,
            "stop_reasons": ["stop"] * n,
            "rollout_metrics": {"generate/mean": 0.5},
            "rollout_logprobs": [[-0.1, -0.2]] * n,
        }


def test_the_skyrl_wrapper_gives_a_complete_generator_output_with_rescued_groups_replaced(frameworks):
    service = Service()
    prompts = ["a", "a", "b", "b", "c", "c"]
    ids = [TrajectoryID(f"uid-{p}", i % 2) for i, p in enumerate(prompts)]
    batch = {
        "prompts": prompts,
        "env_classes": ["x"] * 6,
        "env_extras": [{"task": p} for p in prompts],
        "sampling_params": None,
        "trajectory_ids": ids,
        "batch_metadata": SimpleNamespace(global_step=7),
    }

    async def run():
        async with AsyncHarnessS("http://service", "key", transport=httpx.MockTransport(service)) as client:
            gen = RescueGenerator(
                UserGenerator(),
                client,
                settings(),
                task_of=lambda extras, prompt: task(extras["task"]),
                weight_version=lambda step: step,
            )
            return gen, await gen.generate(batch)

    gen, out = asyncio.run(run())
    check_generator_output(6, dict(out))
    assert [o.kind for o in gen.outcomes] == ["kept", "replaced", "unrescued"]
    assert out["trajectory_ids"] == ids  # the prompt's uid and repetition, as the trainer groups them
    assert out["response_ids"] == [[5, 6], [5, 6], [30, 31, 2], [31, 31, 2], [5, 6], [5, 6]]
    assert (
        out["rewards"] == [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
        and out["loss_masks"][2] == [1, 0, 1]
        and out["rollout_logprobs"][2] == [-0.3, 0.0, -0.1]
    )
    metrics = out["rollout_metrics"] or {}
    assert (
        metrics["generate/mean"] == 0.5
        and metrics["rescue/groups_replaced"] == 1.0
        and metrics["rescue/groups_unrescued"] == 1.0
    )
    assert service.bodies[0]["caller"]["weightVersion"] == 7 and service.bodies[0]["failureTags"] == ["no-success"]
