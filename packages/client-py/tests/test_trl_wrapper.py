"""rescue_rollout_func's choices without a service: a group that did not all fail is kept, an
all-fail group is replaced by rescued rows when some of them succeed, and stays (with the reason)
when they fail too or the rescue does not finish whole; rows reach TRL as returned."""

from types import SimpleNamespace

import torch

from harness_s_client import Trajectory
from harness_s_client.trl import RescueRolloutFunc


def row(index: int, harness: str, reward: float, ids: list[int]) -> Trajectory:
    return Trajectory(index, harness, "d", 0, reward, reward > 0, "submitted", ["no-commit"], [1, 2], ids, [-0.5] * len(ids), [1] * len(ids), "sampled")


class FakeClient:
    """Base runs (H0) and rescues of tasks a, b, c: a solves under H0, b's rescue succeeds, c's rescue fails (a slot given up on)."""

    def __init__(self) -> None:
        self.started: list[tuple[str, list[str], list[str] | None]] = []

    def start_rescue(self, pool_id, failure_tags, caller, k=2, rollouts_per_harness=2, harnesses=None):
        task = caller["task"]["id"]
        self.started.append((task, failure_tags, harnesses))
        return {"id": f"{'base' if harnesses else 'rescue'}-{task}"}

    def wait(self, rescue_id, timeout_s=600.0):
        return {"status": "failed", "failed": [{"index": 1, "reason": "connect ECONNREFUSED"}]} if rescue_id == "rescue-c" else {"status": "done"}

    def trajectories(self, rescue_id):
        kind, task = rescue_id.split("-")
        if kind == "base":
            return [row(i, "h0", 1.0 if task == "a" and i == 0 else 0.0, [10 + i]) for i in range(2)]
        return [row(i, "sib", float(i == 1), [20 + i, 21]) for i in range(3)]


def trainer(reward_funcs):
    model = torch.nn.Linear(1, 1)
    model.train()
    return SimpleNamespace(
        num_generations=2,
        model=model,
        accelerator=SimpleNamespace(unwrap_model=lambda m: m),
        state=SimpleNamespace(global_step=0),
        processing_class=SimpleNamespace(batch_decode=lambda ids, skip_special_tokens: [" ".join(map(str, x)) for x in ids]),
        reward_funcs=reward_funcs,
        reward_weights=torch.tensor([1.0] * len(reward_funcs)),
    )


def test_kept_replaced_and_unrescued_groups_and_the_rows_handed_on():
    client = FakeClient()
    func = RescueRolloutFunc(client, "pool", lambda p: {"id": p}, {"kind": "builtin", "id": "embedded"})  # type: ignore[arg-type]
    func.endpoint, func.base_harness, func.siblings = SimpleNamespace(advance=lambda step: None), "h0", 3
    t = trainer([lambda completions, env_reward, **_: env_reward])
    out = func(["a", "a", "b", "b", "c", "c"], t)
    assert [o.kind for o in func.outcomes] == ["kept", "replaced", "unrescued"]
    assert func.outcomes[2].reason is not None and "ECONNREFUSED" in func.outcomes[2].reason
    # Base runs name H0; rescues route by the failed rows' tags; a's group was never rescued.
    assert [s for s in client.started if s[2]] == [("a", [], ["h0"]), ("b", [], ["h0"]), ("c", [], ["h0"])]
    assert [s[:2] for s in client.started if not s[2]] == [("b", ["no-commit"]), ("c", ["no-commit"])]
    # b's group is the first two rescued rows, exactly as returned; a's and c's are their H0 rows.
    assert out["completion_ids"] == [[10], [11], [20, 21], [21, 21], [10], [11]]
    assert out["env_mask"] == [[1], [1], [1, 1], [1, 1], [1], [1]]
    assert out["rescued"] == [False, False, True, True, False, False] and out["harness_id"][2:4] == ["sib", "sib"]
    assert t.model.training  # the trainer's mode is given back


def test_an_all_fail_rescue_leaves_the_group():
    client = FakeClient()
    func = RescueRolloutFunc(client, "pool", lambda p: {"id": p}, {"kind": "builtin", "id": "embedded"})  # type: ignore[arg-type]
    func.endpoint, func.base_harness, func.siblings = SimpleNamespace(advance=lambda step: None), "h0", 3
    out = func(["b", "b"], trainer([lambda completions, **_: [0.0] * len(completions)]))
    assert [o.kind for o in func.outcomes] == ["unrescued"] and out["completion_ids"] == [[10], [11]]
