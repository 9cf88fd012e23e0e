"""Drives examples/trl_rescue.py for tests/integration/trl-rescue.test.ts: the example's trainer,
with a reward under which rescued rows can win, records what its loss trains on (ids and loss
mask of every row, read inside `compute_loss`), while the client records every token row the
service returned. Writes a JSON report: groups by outcome, and whether every row of a replaced
group was trained on exactly as returned. Arguments: the example's, then `--report FILE`."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import httpx
import torch

HERE = Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("trl_rescue", HERE.parent / "examples" / "trl_rescue.py")
assert spec and spec.loader
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)

from harness_s_client import HarnessS  # noqa: E402


class Recorder(httpx.BaseTransport):
    """The service's token rows as they came off the wire."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.rows: dict[tuple[str, int], dict[str, Any]] = {}

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.url.path.endswith("/trajectories") and response.status_code == 200:
            response.read()
            rescue = request.url.path.split("/")[-2]
            for row in json.loads(response.content)["trajectories"]:
                self.rows[(rescue, row["index"])] = row
        return response


trained: list[tuple[list[int], list[int], list[int]]] = []


class RecordingTrainer(example.GRPOTrainer):  # type: ignore[misc, name-defined]
    def compute_loss(self, model: Any, inputs: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        pm, cm = inputs["prompt_mask"].bool(), inputs["completion_mask"].bool()
        tool = inputs.get("tool_mask")
        for r in range(inputs["completion_ids"].shape[0]):
            prompt = inputs["prompt_ids"][r][pm[r]].tolist()
            ids = inputs["completion_ids"][r][cm[r]].tolist()
            mask = tool[r][cm[r]].tolist() if tool is not None else [1] * len(ids)
            trained.append((prompt, ids, mask))
        return super().compute_loss(model, inputs, *args, **kwargs)


def rescued_rows_win(completions: list[Any], rescued: list[bool], env_reward: list[float], **_: Any) -> list[float]:
    """The environment's reward, plus 1 on every other rescued row: it stands in for a task the
    routed siblings solve (the tiny model solves none), so the rescue has something to replace with."""
    return [r + (1.0 if resc and i % 2 == 0 else 0.0) for i, (resc, r) in enumerate(zip(rescued, env_reward))]


def eos_report(trainer: Any, rows: list[dict[str, Any]], max_tokens: int) -> dict[str, int]:
    """How the rescued rows end (TRL's mask_truncated_completions masks a row whose last id is no
    EOS): on an EOS id; on an EOS sampled last but ids after it at mask 0; cut at the turn's token
    limit (its last sampled run `max_tokens` long: truncated, rightly masked); or stopped short of
    the limit without an EOS (one lost on the way)."""
    configured = getattr(trainer.model.generation_config, "eos_token_id", None)
    eos = (
        {trainer.processing_class.eos_token_id} | set(configured if isinstance(configured, list) else [configured])
    ) - {None}
    out = {"ends_with_eos": 0, "eos_then_more": 0, "cut_at_limit": 0, "eos_dropped": 0}
    for w in rows:
        mask, ids = w["loss_mask"], w["completion_ids"]
        sampled = "".join(map(str, mask)).rstrip("0")
        last_run, last_sampled = len(sampled) - len(sampled.rstrip("1")), len(sampled) - 1
        if ids and ids[-1] in eos:
            out["ends_with_eos"] += 1
        elif last_sampled >= 0 and ids[last_sampled] in eos:
            out["eos_then_more"] += 1
        elif last_run >= max_tokens:
            out["cut_at_limit"] += 1
        else:
            out["eos_dropped"] += 1
    return out


def main() -> None:
    argv = sys.argv[1:]
    at = argv.index("--report")
    report_path, argv = argv[at + 1], argv[:at] + argv[at + 2 :]
    args = example.parse_args(argv)
    recorder = Recorder()
    client = HarnessS(args.service, args.api_key, transport=recorder)
    trainer, func = example.build(args, trainer_cls=RecordingTrainer, reward_funcs=[rescued_rows_win], client=client)
    torch.manual_seed(0)
    torch.set_num_threads(1)  # the tiny model: more threads only spin beside the rest of the test suite
    try:
        trainer.train()
    finally:
        func.close()
    replaced = [o for o in func.outcomes if o.kind == "replaced"]
    wanted = [recorder.rows[(o.rescue_id, r.index)] for o in replaced for r in o.rows]
    seen = [(p, i, m) for p, i, m in trained]
    matched = sum(1 for w in wanted if (w["prompt_ids"], w["completion_ids"], w["loss_mask"]) in seen)
    report = {
        "steps": trainer.state.global_step,
        "groups": {k: sum(o.kind == k for o in func.outcomes) for k in ("kept", "replaced", "unrescued")},
        "replaced_rows": len(wanted),
        "replaced_rows_trained_as_returned": matched,
        "trained_rows": len(trained),
        "insertions_at_mask_1": sum(
            1 for w in wanted for m, lp in zip(w["loss_mask"], w["logprobs"]) if m == 1 and lp == 0.0
        ),
        "weight_versions": sorted({(o.step, r.weight_version) for o in func.outcomes for r in o.rows}),
        "harnesses": sorted({r.harness_id for o in replaced for r in o.rows}),
        # What the trainer's own logger received (TRL's log history: W&B and TensorBoard get the same).
        "logged": [
            {k: v for k, v in entry.items() if k.startswith("rescue/")}
            for entry in trainer.state.log_history
            if any(k.startswith("rescue/") for k in entry)
        ],
        "eos": eos_report(trainer, wanted, args.max_tokens),
    }
    Path(report_path).write_text(json.dumps(report, indent=1))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
