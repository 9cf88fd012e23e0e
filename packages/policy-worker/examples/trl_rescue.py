"""Selective harness rescue in a TRL GRPOTrainer: the trainer's model acts in an OpenEnv
environment under the base harness H0; every group where all rollouts fail is rescued by the
Harness-S service under the routed sibling harnesses, with the same weights, and trained on in
its place. Runs on CPU with the tiny model (or `--model <a Hugging Face folder>`).

    npm run harness-s -- env-serve --env embedded --port 8000 --tasks-out /tmp/tasks.json &
    npm run harness-s -- serve --api-key test-key-123 --allow-loopback-endpoints &
    packages/policy-worker/.venv/bin/python packages/policy-worker/examples/trl_rescue.py \\
        --service http://127.0.0.1:18787 --api-key test-key-123 --env-url http://127.0.0.1:8000 --tasks /tmp/tasks.json
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import tempfile
from collections import Counter
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in TRL 1.13

from datasets import Dataset
from harness_s_client import HarnessS
from harness_s_client.trl import RescueRolloutFunc, environment_reward, rescue_rollout_func
from trl import GRPOConfig, GRPOTrainer

from harness_s_worker.tiny import build_tiny, load_model


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--service", required=True, help="the Harness-S API (harness-s serve, or a deployment)")
    ap.add_argument("--api-key", required=True, help="a key with the rescues and pools:read scopes")
    ap.add_argument("--env-url", required=True, help="your environment: an OpenEnv-protocol server")
    ap.add_argument(
        "--tasks",
        required=True,
        help="the tasks as a rescue takes them (env-serve --tasks-out writes the embedded suite's)",
    )
    ap.add_argument("--pool", default="embedded", help="the harness pool: H0 and its siblings")
    ap.add_argument("--model", default="tiny", help="a Hugging Face model folder, or tiny (built here, no download)")
    ap.add_argument("--task-count", type=int, default=4, help="tasks in the dataset")
    ap.add_argument("--steps", type=int, default=2, help="optimiser steps")
    ap.add_argument("--generations", type=int, default=2, help="rollouts per task (GRPO's group)")
    ap.add_argument("--max-tokens", type=int, default=16, help="tokens per model turn")
    ap.add_argument(
        "--out", default=None, help="the trainer's output folder (default: a temporary one, removed at exit)"
    )
    ap.add_argument(
        "--context",
        default="sampled",
        choices=["sampled", "base"],
        help="the rescued rows' context: as sampled, or H0's with its re-scores beside",
    )
    return ap.parse_args(argv)


def build(
    args: argparse.Namespace,
    trainer_cls: type[GRPOTrainer] = GRPOTrainer,
    reward_funcs: list[Any] | None = None,
    client: HarnessS | None = None,
) -> tuple[GRPOTrainer, RescueRolloutFunc]:
    with open(args.tasks) as f:
        tasks = {t["id"]: t for t in json.load(f)["tasks"][: args.task_count]}
    model, tokenizer = build_tiny(0) if args.model == "tiny" else load_model(args.model, "cpu")
    func = rescue_rollout_func(
        client or HarnessS(args.service, args.api_key),
        pool_id=args.pool,
        task_of=lambda prompt: tasks[prompt],  # each prompt is a task id
        environment={"kind": "openenv", "url": args.env_url},
        system="Solve the task with the tools; call submit when done.",
        max_tokens=args.max_tokens,
        context=args.context,
    )
    out = args.out
    if out is None:
        out = tempfile.mkdtemp(prefix="trl-rescue-")
        atexit.register(shutil.rmtree, out, True)
    config = GRPOConfig(
        output_dir=out,
        per_device_train_batch_size=args.generations * 2,
        num_generations=args.generations,
        max_steps=args.steps,
        learning_rate=1e-4,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        seed=0,
    )
    trainer = trainer_cls(
        model=model,
        processing_class=tokenizer,
        reward_funcs=reward_funcs or [environment_reward],
        args=config,
        train_dataset=Dataset.from_list([{"prompt": task_id} for task_id in tasks]),
        rollout_func=func,
    )
    return trainer, func


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    trainer, func = build(args)
    try:
        trainer.train()
    finally:
        func.close()
    kinds = Counter(o.kind for o in func.outcomes)
    print(
        f"groups: {len(func.outcomes)} ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}); steps: {trainer.state.global_step}"
    )
    for o in func.outcomes:
        if o.code:  # the service's own code for a rescue that did not finish whole: the group stayed
            print(f"step {o.step} group {o.group}: {o.code}: {o.reason}")


if __name__ == "__main__":
    main()
