"""Drives rescue_rollout_func in TRL's GRPOTrainer on two processes, for
tests/test_trl_multiprocess.py. Run under `accelerate launch --num_processes 2 --cpu` (gloo):

    accelerate launch --num_processes 2 --cpu --mixed_precision no --num_machines 1 --dynamo_backend no \\
        tests/trl_multiprocess_driver.py --out DIR [--steps 3]

The tiny model (built here, no download) is each process's trainer model, served from its process
(`harness_s_worker.live`, each rank under its own endpoint id) as the real wrapper serves it; the
service is faked in-process (`FakeService`: the same methods of `HarnessS` the wrapper calls) with
rows in the tiny tokenizer's vocabulary: under H0 every task fails but t0 (its first row answers),
and every rescue answers on its second row. The dataset has a `solution` column, and the only
reward function is `acc(completions, solution, **kw)`: 1 where the completion holds the solution.

`per_device_train_batch_size=3`, `num_generations=2`, `steps_per_generation=1`: a step's 3 groups
lie as TRL's RepeatSampler lays them, process 0 `a a b`, process 1 `b c c`; group b spans both.
Each process writes DIR/rank<r>.json: the prompts and rows its rollout_func returned, what its
trainer trained on, every call of `acc` (the wrapper's scoring and TRL's own), the runs its fake
service started (by which endpoint, at which weight version), and the rescue metrics in its log
history."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in TRL 1.13

import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from harness_s_client import Trajectory  # noqa: E402
from harness_s_client.trl import RescueRolloutFunc  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from harness_s_worker.tiny import build_tiny  # noqa: E402

SOLUTIONS = {"t0": "alpha", "t1": "beta", "t2": "gamma", "t3": "delta", "t4": "maybe", "t5": "target"}
RANK = int(os.environ.get("RANK", "0"))


class FakeService:
    """What the wrapper asks of `HarnessS`, answered here: base runs (H0) and rescues of the tasks,
    their token rows (prompt ids, completion ids with an environment turn at mask 0, log-probabilities)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tok = tokenizer
        self.runs: dict[str, dict[str, Any]] = {}
        self.started: list[dict[str, Any]] = []
        self.registered: list[str] = []

    def register_policy_endpoint(self, id: str, kind: str, url: str, policy: str, secret_header: Any = None) -> None:
        self.registered.append(id)

    def pool(self, pool_id: str) -> dict[str, Any]:
        return {"id": pool_id, "base": {"id": "h0"}, "siblings": [{"id": "sib-a"}, {"id": "sib-b"}, {"id": "sib-c"}]}

    def start_rescue(
        self,
        pool_id: str,
        failure_tags: list[str],
        caller: dict[str, Any],
        k: int = 2,
        rollouts_per_harness: int = 2,
        harnesses: list[str] | None = None,
        **_: Any,
    ) -> dict[str, Any]:
        kind = "base" if harnesses else "rescue"
        rid = f"{kind}-{caller['task']['id']}-{len(self.started)}-r{RANK}"
        chosen = harnesses or ["sib-a", "sib-b"][:k]
        run = {
            "id": rid,
            "kind": kind,
            "task": caller["task"]["id"],
            "endpoint": caller["endpoint"],
            "weight_version": caller["weightVersion"],
            "rows": rollouts_per_harness * len(chosen),
            "chosen": chosen,
        }
        self.runs[rid] = run
        self.started.append({k: v for k, v in run.items() if k != "rows"})
        return {"id": rid, "chosen": chosen, "expected": run["rows"]}

    def wait(self, rescue_id: str, timeout_s: float = 600.0) -> dict[str, Any]:
        spent = {"policyTokens": 40.0, "policySeconds": 0.5, "environmentSeconds": 0.25}
        return {"job": {"id": rescue_id}, "status": "done", "failed": [], "spent": spent}

    def cancel(self, rescue_id: str) -> dict[str, Any]:
        return {}

    def trajectories(self, rescue_id: str, context: str = "sampled") -> list[Trajectory]:
        run = self.runs[rescue_id]
        task, rescued = run["task"], run["kind"] == "rescue"
        out = []
        for i in range(run["rows"]):
            answers = (rescued and i == 1) or (not rescued and task == "t0" and i == 0)
            said = f"answer {SOLUTIONS[task]}" if answers else "no"
            first = self.tok.encode("<tool_call>" if rescued else "list_items", add_special_tokens=False)
            env = self.tok.encode(" Error: unauthorized.", add_special_tokens=False)
            last = self.tok.encode(said, add_special_tokens=False) + [self.tok.eos_token_id]
            ids, mask = first + env + last, [1] * len(first) + [0] * len(env) + [1] * len(last)
            out.append(
                Trajectory(
                    index=i,
                    harness_id=run["chosen"][i % len(run["chosen"])],
                    decision_id=f"d-{rescue_id}",
                    weight_version=run["weight_version"],
                    reward=1.0 if answers else 0.0,
                    success=answers,
                    finish_reason="submitted",
                    failure_tags=[] if answers else ["wrong-answer"],
                    prompt_ids=self.tok.encode(f"user {task}", add_special_tokens=False),
                    completion_ids=ids,
                    logprobs=[-0.5 if m else 0.0 for m in mask],
                    loss_mask=mask,
                    context="sampled",
                )
            )
        return out


calls: list[dict[str, Any]] = []


def acc(completions: list[str], solution: list[str], **kw: Any) -> list[float]:
    """The standard accuracy reward: the dataset's `solution` column against each completion. Records
    who called it (the wrapper scores with `log_metric` its own no-op; TRL passes its trainer's)."""
    by = "wrapper" if getattr(kw["log_metric"], "__name__", "") == "_ignore" else "trl"
    calls.append({"by": by, "prompts": list(kw["prompts"]), "solution": list(solution), "rescued": list(kw["rescued"])})
    return [1.0 if s in c else 0.0 for c, s in zip(completions, solution, strict=True)]


class RecordingFunc(RescueRolloutFunc):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.returned: list[dict[str, Any]] = []

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        out = super().__call__(prompts, trainer)
        self.returned.append(
            {"prompts": list(prompts), "rescued": out["rescued"], "completion_ids": out["completion_ids"]}
        )
        return out


trained: list[list[int]] = []


class RecordingTrainer(GRPOTrainer):  # type: ignore[misc]
    def compute_loss(self, model: Any, inputs: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        cm = inputs["completion_mask"].bool()
        trained.extend(inputs["completion_ids"][r][cm[r]].tolist() for r in range(cm.shape[0]))
        return super().compute_loss(model, inputs, *args, **kwargs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model, tok = build_tiny(0)
    service = FakeService(tok)
    func = RecordingFunc(
        service,  # type: ignore[arg-type]
        "embedded",
        lambda prompt: {"id": prompt, "instruction": f"solve {prompt}"},
        {"kind": "openenv", "url": "http://127.0.0.1:9"},
        max_tokens=8,
    )
    config = GRPOConfig(
        output_dir=str(Path(args.out) / f"trainer-r{RANK}"),
        per_device_train_batch_size=3,
        num_generations=2,
        steps_per_generation=1,
        max_steps=args.steps,
        learning_rate=1e-4,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        seed=0,
    )
    dataset = Dataset.from_list([{"prompt": t, "solution": s} for t, s in SOLUTIONS.items()])
    trainer = RecordingTrainer(
        model=model, processing_class=tok, reward_funcs=[acc], args=config, train_dataset=dataset, rollout_func=func
    )
    try:
        trainer.train()
    finally:
        func.close()
    report = {
        "rank": RANK,
        "solutions": SOLUTIONS,
        "world": trainer.accelerator.num_processes,
        "steps": trainer.state.global_step,
        "endpoint_id": func.endpoint_id,
        "registered": service.registered,
        "started": service.started,
        "returned": func.returned,
        "trained": trained,
        "calls": calls,
        "outcomes": [
            {"step": o.step, "group": o.group, "task": o.task_id, "kind": o.kind, "rows": len(o.rows)}
            for o in func.outcomes
        ],
        "logged": [
            {k: v for k, v in e.items() if k.startswith("rescue/")}
            for e in trainer.state.log_history
            if any(k.startswith("rescue/") for k in e)
        ],
        "rescued_first_id": tok.convert_tokens_to_ids("<tool_call>"),
    }
    Path(args.out, f"rank{RANK}.json").write_text(json.dumps(report))
    print(f"rank {RANK}: {trainer.state.global_step} steps", file=sys.stderr)


if __name__ == "__main__":
    main()
