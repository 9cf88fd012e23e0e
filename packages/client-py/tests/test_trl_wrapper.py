"""rescue_rollout_func's choices without a service or torch: a group that did not all fail is
kept, an all-fail group is replaced by rescued rows when some of them succeed, and stays (with the
service's code and reason) when they fail too or the rescue fails; rows reach TRL as returned, in
one vocabulary with the reward helpers; the rescue metrics reach the trainer's own log; each
rank's endpoint id is its own; the live endpoint's temporary folder is removed."""

import tempfile
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

from harness_s_client import TRL_EXTRAS, RescueFailedError, Trajectory
from harness_s_client.groups import rank_endpoint_id
from harness_s_client.trl import RescueRolloutFunc, environment_reward


def row(index: int, harness: str, reward: float, ids: list[int]) -> Trajectory:
    return Trajectory(
        index,
        harness,
        "d",
        0,
        reward,
        reward > 0,
        "submitted",
        ["no-commit"],
        [1, 2],
        ids,
        [-0.5] * len(ids),
        [1] * len(ids),
        "sampled",
    )


class FakeClient:
    """Base runs (H0) and rescues of tasks a, b, c: a solves under H0, b's rescue succeeds, c's rescue fails (a slot the service gave up on)."""

    def __init__(self) -> None:
        self.started: list[tuple[str, list[str], list[str] | None]] = []
        self.cancelled: list[str] = []
        self.contexts: list[str] = []

    def start_rescue(self, pool_id, failure_tags, caller, k=2, rollouts_per_harness=2, harnesses=None):
        task = caller["task"]["id"]
        self.started.append((task, failure_tags, harnesses))
        return {
            "id": f"{'base' if harnesses else 'rescue'}-{task}",
            "chosen": ["sib"] if not harnesses else harnesses,
            "expected": 2,
        }

    def wait(self, rescue_id, timeout_s=600.0):
        spent = {"policyTokens": 40, "policySeconds": 0.5, "environmentSeconds": 0.25}
        status = {"job": {"id": rescue_id}, "status": "done", "failed": [], "spent": spent}
        if rescue_id == "rescue-c":
            raise RescueFailedError(
                {
                    **status,
                    "status": "running",
                    "failed": [{"index": 1, "code": "ENVIRONMENT_UNAVAILABLE", "reason": "connect ECONNREFUSED"}],
                }
            )
        return status

    def cancel(self, rescue_id):
        self.cancelled.append(rescue_id)
        return {}

    def trajectories(self, rescue_id, context="sampled"):
        self.contexts.append(context)
        kind, task = rescue_id.split("-")
        if kind == "base":
            return [row(i, "h0", 1.0 if task == "a" and i == 0 else 0.0, [10 + i]) for i in range(2)]
        rows = [row(i, "sib", float(i == 1), [20 + i, 21]) for i in range(3)]
        return [Trajectory(**{**r.__dict__, "base_logprobs": [-0.1] * 2}) for r in rows] if context == "base" else rows


class Weights:
    def __init__(self, n: int) -> None:
        self.n = n

    def tolist(self) -> list[float]:
        return [1.0] * self.n


class Model:
    training = True

    def train(self, mode: bool = True) -> None:
        self.training = mode

    def eval(self) -> None:
        self.training = False


def trainer(reward_funcs):
    return SimpleNamespace(
        num_generations=2,
        model=Model(),
        accelerator=SimpleNamespace(unwrap_model=lambda m: m),
        state=SimpleNamespace(global_step=0),
        processing_class=SimpleNamespace(
            batch_decode=lambda ids, skip_special_tokens: [" ".join(map(str, x)) for x in ids]
        ),
        reward_funcs=reward_funcs,
        reward_weights=Weights(len(reward_funcs)),
        _metrics={"train": defaultdict(list), "eval": defaultdict(list)},
    )


def wrapper(client, **options):
    func = RescueRolloutFunc(client, "pool", lambda p: {"id": p}, {"kind": "builtin", "id": "embedded"}, **options)  # type: ignore[arg-type]
    func.endpoint, func.base_harness, func.siblings = (
        SimpleNamespace(advance=lambda step: None, close=lambda: None),
        "h0",
        3,
    )
    return func


def test_kept_replaced_and_unrescued_groups_the_rows_handed_on_and_the_metrics_logged():
    client = FakeClient()
    func = wrapper(client)
    t = trainer([lambda completions, env_reward, **_: env_reward])
    out = func(["a", "a", "b", "b", "c", "c"], t)
    assert [o.kind for o in func.outcomes] == ["kept", "replaced", "unrescued"]
    # c's group stays, with the code and reason the service gave; its rescue is cancelled.
    assert (
        func.outcomes[2].code == "ENVIRONMENT_UNAVAILABLE"
        and "ECONNREFUSED" in (func.outcomes[2].reason or "")
        and client.cancelled == ["rescue-c"]
    )
    # Base runs name H0; rescues route by the failed rows' tags; a's group was never rescued.
    assert [s for s in client.started if s[2]] == [("a", [], ["h0"]), ("b", [], ["h0"]), ("c", [], ["h0"])]
    assert [s[:2] for s in client.started if not s[2]] == [("b", ["no-commit"]), ("c", ["no-commit"])]
    # b's group is the first two rescued rows, exactly as returned; a's and c's are their H0 rows.
    assert out["completion_ids"] == [[10], [11], [20, 21], [21, 21], [10], [11]]
    assert out["env_mask"] == [[1], [1], [1, 1], [1, 1], [1], [1]]
    assert out["rescued"] == [False, False, True, True, False, False] and out["harness_id"][2:4] == ["sib", "sib"]
    # One vocabulary: the keys past TRL's own are the reward helpers' extras, and they take them.
    assert tuple(k for k in out if k not in ("prompt_ids", "completion_ids", "logprobs", "env_mask")) == TRL_EXTRAS
    assert environment_reward(completions=out["completion_ids"], **{k: out[k] for k in TRL_EXTRAS}) == [
        1.0,
        0.0,
        0.0,
        1.0,
        0.0,
        0.0,
    ]
    assert t.model.training  # the trainer's mode is given back
    logged = dict(t._metrics["train"])
    assert (
        logged["rescue/groups_kept"] == [1.0]
        and logged["rescue/groups_replaced"] == [1.0]
        and logged["rescue/groups_unrescued"] == [1.0]
    )
    assert (
        logged["rescue/groups_failed"] == [1.0]
        and logged["rescue/rescues"] == [2.0]
        and logged["rescue/rollouts"] == [3.0]
    )
    assert logged["rescue/policy_tokens"] == [80.0] and logged["rescue/chosen/sib"] == [2.0]


def test_an_all_fail_rescue_leaves_the_group():
    client = FakeClient()
    func = wrapper(client)
    out = func(["b", "b"], trainer([lambda completions, **_: [0.0] * len(completions)]))
    assert (
        [o.kind for o in func.outcomes] == ["unrescued"]
        and out["completion_ids"] == [[10], [11]]
        and func.outcomes[0].code is None
    )


def test_context_base_reads_h0s_rows_with_both_logprob_arrays():
    client = FakeClient()
    func = wrapper(client, context="base")
    out = func(["b", "b"], trainer([lambda completions, env_reward, **_: env_reward]))
    assert "base" in client.contexts and out["logprobs"][0] == [-0.5, -0.5] and out["base_logprobs"][0] == [-0.1, -0.1]


def test_each_rank_registers_its_own_endpoint(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert rank_endpoint_id("trl-trainer") == "trl-trainer"
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert rank_endpoint_id("trl-trainer") == "trl-trainer-r3"
    monkeypatch.setenv("RANK", "5")
    assert RescueRolloutFunc(FakeClient(), "pool", str, {}).endpoint_id == "trl-trainer-r5"  # type: ignore[arg-type]


def test_close_removes_the_live_endpoints_temporary_folder():
    state = Path(tempfile.mkdtemp(prefix="harness-s-live-"))
    func = wrapper(FakeClient())
    closed = []
    func.endpoint = SimpleNamespace(close=lambda: closed.append(1), policies=SimpleNamespace(state_dir=state))
    func.close()
    assert closed == [1] and not state.exists() and func.endpoint is None
