"""Drives the client's hooks against the local service for tests/integration/client-hooks.test.ts,
in the client's own venv (no torch): registers the caller's policy endpoint (the worker's policy,
created there first), runs verl's group filter and SkyRL's generator wrapper on batches whose
groups all fail, checks every output against the frameworks' declared types (framework_types.py),
and starts a rescue pinned to a weight version the worker does not hold, timing how soon the
client raises the service's code. Prints a JSON report. Arguments: --service --api-key
--env-url --tasks --worker-url --worker-token --policy --pool."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from framework_types import AgentLoopOutput, TrajectoryID, check_generator_output, install_stand_ins

from harness_s_client import AsyncHarnessS, HarnessS, HarnessSError, RescueSettings
from harness_s_client.skyrl import RescueGenerator
from harness_s_client.verl import VerlGroup, VerlGroupRescue


def every_other_wins(rows: list[Any]) -> list[float]:
    """The environment's reward plus 1 on every other rescued row: it stands in for a task the
    routed siblings solve (the tiny model solves none), so a group has something to replace with."""
    return [r.reward + (1.0 if i % 2 == 0 else 0.0) for i, r in enumerate(rows)]


def failed_output(ids: list[int]) -> AgentLoopOutput:
    return AgentLoopOutput(
        prompt_ids=[1, 2], response_ids=ids, response_mask=[1] * len(ids), reward_score=0.0, num_turns=2, metrics={}
    )


class AllFail:
    """A user's SkyRL generator whose every row fails."""

    async def generate(self, batch: dict[str, Any]) -> dict[str, Any]:
        n = len(batch["prompts"])
        return {
            "prompt_token_ids": [[1, 2]] * n,
            "response_ids": [[5]] * n,
            "rewards": [0.0] * n,
            "loss_masks": [[1]] * n,
            "stop_reasons": ["length"] * n,
            "rollout_metrics": None,
            "rollout_logprobs": [[-1.0]] * n,
        }


async def hooks(args: argparse.Namespace, tasks: list[dict[str, Any]], settings: RescueSettings) -> dict[str, Any]:
    async with AsyncHarnessS(args.service, args.api_key) as client:
        verl = VerlGroupRescue(client, settings, score=every_other_wins)
        groups = [
            VerlGroup(
                f"uid-{t['id']}", t, [failed_output([5]), failed_output([6])], failure_tags=["incomplete-results"]
            )
            for t in tasks
        ]
        filtered = await verl(groups, step=0, weight_version=0)
        for g in filtered.outputs:
            for o in g:
                AgentLoopOutput.model_validate(o.model_dump())  # verl's declared type, nothing dropped
        prompts = [t["id"] for t in tasks for _ in range(2)]
        ids = [TrajectoryID(f"uid-{p}", i % 2) for i, p in enumerate(prompts)]
        batch = {
            "prompts": prompts,
            "env_classes": ["openenv"] * len(prompts),
            "env_extras": [{"task": p} for p in prompts],
            "sampling_params": None,
            "trajectory_ids": ids,
            "batch_metadata": None,
        }
        by_id = {t["id"]: t for t in tasks}
        skyrl = RescueGenerator(
            AllFail(),
            client,
            settings,
            task_of=lambda extras, prompt: by_id[extras["task"]],
            weight_version=lambda step: 0,
            score=every_other_wins,
        )
        out = await skyrl.generate(batch)
        check_generator_output(len(prompts), dict(out))
        assert out["trajectory_ids"] == ids
    return {
        "verl": {
            "kinds": [o.kind for o in filtered.outcomes],
            "rows": [len(g) for g in filtered.outputs],
            "types": sorted({type(o).__name__ for g in filtered.outputs for o in g}),
            "metrics": filtered.metrics,
        },
        "skyrl": {
            "kinds": [o.kind for o in skyrl.outcomes],
            "rows": len(out["response_ids"]),
            "rescued_rows": sum(1 for r in out["response_ids"] if r != [5]),
            "metrics": out["rollout_metrics"],
        },
    }


def stale(client: HarnessS, task: dict[str, Any], settings: RescueSettings) -> dict[str, Any]:
    """A rescue pinned to weights the worker does not hold (it is at 0): the service's code, how soon."""
    started = time.monotonic()
    try:
        run = client.start_rescue(
            settings.pool_id,
            ["incomplete-results"],
            settings.caller(task, weight_version=5),
            k=1,
            rollouts_per_harness=1,
        )
        client.wait(run["id"], timeout_s=300)
        return {"code": None, "seconds": time.monotonic() - started}
    except HarnessSError as err:
        return {
            "code": err.code,
            "status": err.status,
            "message": err.message,
            "type": type(err).__name__,
            "seconds": time.monotonic() - started,
        }


def main() -> None:
    ap = argparse.ArgumentParser()
    for name in ("service", "api-key", "env-url", "tasks", "worker-url", "worker-token", "policy", "pool"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args()
    tasks = json.loads(Path(args.tasks).read_text())["tasks"][:2]
    with pytest.MonkeyPatch.context() as mp:
        install_stand_ins(mp)
        with HarnessS(args.service, args.api_key) as client:
            client.register_policy_endpoint(
                "hooks",
                "protocol-v2",
                args.worker_url,
                args.policy,
                secret_header=("authorization", f"Bearer {args.worker_token}"),
            )
            settings = RescueSettings(
                pool_id=args.pool,
                environment={"kind": "openenv", "url": args.env_url},
                endpoint_id="hooks",
                max_tokens=16,
            )
            report = asyncio.run(hooks(args, tasks, settings))
            report["stale"] = stale(client, tasks[0], settings)
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()
