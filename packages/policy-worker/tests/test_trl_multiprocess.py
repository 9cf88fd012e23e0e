"""rescue_rollout_func in TRL's GRPOTrainer on two processes (gloo, CPU; tiny model, 3 steps, a
fake service in each process: trl_multiprocess_driver.py). With `per_device_train_batch_size=3`
and `num_generations=2`, each step's middle group lies across the processes (TRL's RepeatSampler:
process 0 `a a b`, process 1 `b c c`). Asserted from each process's report: every group is run
and decided once, by one process with its own endpoint; rescued rows reach both processes, each
process getting exactly its own rows in its own order; the reward `acc(completions, solution,
**kw)` gets the dataset's `solution` for rescued rows (in the wrapper's scoring and in TRL's); the
rescue metrics are logged once, by the main process, counting every group of the batch once.

Launched as `accelerate launch --multi_gpu --num_processes 2` with `ACCELERATE_USE_CPU=true` and
no GPU visible: accelerate 1.15's `--cpu` flag takes its single-process launcher
(accelerate/commands/launch.py:1403-1413), multi-CPU there being mpirun's."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEPS = 3


def launch(out: Path) -> subprocess.CompletedProcess[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    }
    env.update(
        CUDA_VISIBLE_DEVICES="",
        ACCELERATE_USE_CPU="true",
        OMP_NUM_THREADS="1",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TRL_EXPERIMENTAL_SILENCE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    command = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(port),
        str(HERE / "trl_multiprocess_driver.py"),
        "--out",
        str(out),
        "--steps",
        str(STEPS),
    ]
    return subprocess.run(command, cwd=HERE.parent, env=env, capture_output=True, text=True, timeout=300)


def test_groups_across_two_processes_rescued_once_with_the_dataset_columns(tmp_path):
    started = time.monotonic()
    run = launch(tmp_path)
    assert run.returncode == 0, run.stderr[-6000:]
    r0, r1 = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    print(f"two processes, {STEPS} steps: {time.monotonic() - started:.1f} s wall")
    assert (r0["world"], r1["world"], r0["steps"], r1["steps"]) == (2, 2, STEPS, STEPS)
    solutions = r0["solutions"]

    # Every process holds the same outcome for every group of every step.
    assert r0["outcomes"] == r1["outcomes"] and len(r0["outcomes"]) == 3 * STEPS
    for step in range(STEPS):
        mine = [r0["returned"][step], r1["returned"][step]]
        prompts = mine[0]["prompts"] + mine[1]["prompts"]
        outcomes = [o for o in r0["outcomes"] if o["step"] == step]
        # TRL's layout: 3 rows a process, the middle group across both.
        assert [len(m["prompts"]) for m in mine] == [3, 3] and mine[0]["prompts"][2] == mine[1]["prompts"][0]
        assert [o["task"] for o in outcomes] == prompts[::2] and [o["group"] for o in outcomes] == [0, 1, 2]
        # Each process gets exactly its own rows, in its order: the replaced groups' rows where they lie.
        flags = [o["kind"] == "replaced" for o in outcomes for _ in range(2)]
        assert mine[0]["rescued"] == flags[:3] and mine[1]["rescued"] == flags[3:]
        # Each group run once (H0, then its rescue if all failed), by process group % 2, with that process's endpoint.
        for r, report in enumerate((r0, r1)):
            runs = [s for s in report["started"] if s["weight_version"] == step]
            assert [s["task"] for s in runs if s["kind"] == "base"] == [
                o["task"] for o in outcomes if o["group"] % 2 == r
            ]
            assert [s["task"] for s in runs if s["kind"] == "rescue"] == [
                o["task"] for o in outcomes if o["group"] % 2 == r and o["kind"] != "kept"
            ]
            assert {s["endpoint"] for s in runs} <= {f"trl-trainer-r{r}"}
    assert sum(len(r["started"]) for r in (r0, r1)) == sum(1 + (o["kind"] != "kept") for o in r0["outcomes"])
    assert (r0["registered"], r1["registered"]) == (["trl-trainer-r0"], ["trl-trainer-r1"])

    # Rescued rows reach both processes: returned by rollout_func and trained on (they open with <tool_call>).
    for report in (r0, r1):
        assert any(any(m["rescued"]) for m in report["returned"])
        assert any(ids[0] == report["rescued_first_id"] for ids in report["trained"])

    # acc(completions, solution, **kw) got the dataset's solution of every row, rescued rows too, from the
    # wrapper's scoring (on the process running the group) and from TRL's own (on every process).
    calls = r0["calls"] + r1["calls"]
    for c in calls:
        assert c["solution"] == [solutions[p] for p in c["prompts"]]
    for report in (r0, r1):
        assert any(c["by"] == "trl" and any(c["rescued"]) for c in report["calls"])
        assert any(c["by"] == "wrapper" and all(c["rescued"]) for c in report["calls"])

    # The rescue metrics: logged once a step, by the main process, each counting the batch's 3 groups once.
    assert len(r0["logged"]) == STEPS and r1["logged"] == []
    for entry in r0["logged"]:
        assert entry["rescue/groups_kept"] + entry["rescue/groups_replaced"] + entry["rescue/groups_unrescued"] == 3
    assert sum(e["rescue/groups_replaced"] for e in r0["logged"]) == sum(
        o["kind"] == "replaced" for o in r0["outcomes"]
    )
