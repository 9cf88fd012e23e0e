"""rescue_rollout_func's choices without a service or torch: a group that did not all fail is
kept, an all-fail group is replaced by rescued rows when some of them succeed, and stays (with the
service's code and reason) when they fail too or the rescue fails; rows reach TRL as returned, in
one vocabulary with the reward helpers; the rescue metrics reach the trainer's own log; each
rank's endpoint id is its own; the live endpoint's temporary folder is removed. The reward
functions get the dataset's columns (read from TRL's caller frame, or `columns_of`); groups that
lie across processes are run once and each process gets its own rows (two ranks as threads, with
accelerate's `gather_object` stood in for; the real two-process run is
packages/policy-worker/tests/test_trl_multiprocess.py)."""

import tempfile
import threading
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

from harness_s_client import TRL_EXTRAS, RescueFailedError, Trajectory
from harness_s_client import trl as trl_module
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


def trainer(reward_funcs, rank=None, world=2):
    accelerator = SimpleNamespace(unwrap_model=lambda m: m)
    if rank is not None:
        accelerator.num_processes, accelerator.process_index, accelerator.is_main_process = world, rank, rank == 0
    return SimpleNamespace(
        num_generations=2,
        model=Model(),
        accelerator=accelerator,
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


SOLUTION = {"a": "sa", "b": "sb", "c": "sc"}


def acc(seen):
    """A reward over a dataset column, recording what it was given (`solution` is required)."""

    def acc(completions, solution, prompts, rescued, env_reward, **_):
        assert solution == [SOLUTION[p] for p in prompts]
        seen.append((list(prompts), list(solution), list(rescued)))
        return env_reward

    return acc


def _generate_and_score_completions(self, inputs):
    """TRL's caller as the wrapper reads it (trl 1.13.0, grpo_trainer.py:2347-2458): `prompts` from `inputs`."""
    prompts = [x["prompt"] for x in inputs]
    return self.rollout_func(list(prompts), self)


def test_reward_functions_get_the_dataset_columns_for_h0_and_rescued_rows():
    seen = []
    t = trainer([acc(seen)])
    t.rollout_func = wrapper(FakeClient())
    inputs = [{"prompt": p, "solution": SOLUTION[p], "completion_ids": "x"} for p in ["a", "a", "b", "b", "c", "c"]]
    out = _generate_and_score_completions(t, inputs)
    assert out["rescued"] == [False, False, True, True, False, False]
    # Every group scored under H0, then b's and c's rescues: c's failed, so only b's rows were scored.
    assert seen == [
        (["a", "a"], ["sa", "sa"], [False, False]),
        (["b", "b"], ["sb", "sb"], [False, False]),
        (["c", "c"], ["sc", "sc"], [False, False]),
        (["b", "b"], ["sb", "sb"], [True, True]),
    ]


def test_columns_of_gives_the_columns_and_without_them_the_wrapper_warns(caplog):
    seen = []
    func = wrapper(FakeClient(), columns_of=lambda p: {"solution": SOLUTION[p]})
    func(["b", "b"], trainer([acc(seen)]))
    assert seen[-1] == (["b", "b"], ["sb", "sb"], [True, True])
    # Called from elsewhere, with no columns_of: no columns (warned), as a reward not needing them sees it.
    got = []
    func = wrapper(FakeClient())
    func(["b", "b"], trainer([lambda completions, env_reward, **kw: got.append(sorted(kw)) or env_reward]))
    assert "solution" not in got[0] and "dataset rows of the prompts were not found" in caplog.text


class World:
    """`n` ranks as threads; `gather` stands in for accelerate's gather_object (every rank's list,
    concatenated in rank order, on every rank)."""

    def __init__(self, n):
        self.n, self.barrier, self.slots, self.local = (
            n,
            threading.Barrier(n, timeout=10),
            [None] * n,
            threading.local(),
        )

    def gather(self, obj):
        self.slots[self.local.rank] = list(obj)
        self.barrier.wait()
        out = [x for slot in self.slots for x in slot]
        self.barrier.wait()
        return out

    def run(self, work):
        results, errors = [None] * self.n, [None] * self.n

        def go(r):
            self.local.rank = r
            try:
                results[r] = work(r)
            except Exception as err:  # noqa: BLE001
                errors[r] = err

        threads = [threading.Thread(target=go, args=(r,)) for r in range(self.n)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(20)
        return results, errors


def test_groups_across_two_processes_are_run_once_and_each_process_gets_its_own_rows(monkeypatch):
    world = World(2)
    monkeypatch.setattr(trl_module, "_gather", world.gather)
    clients, funcs, seen = [FakeClient(), FakeClient()], [], [[], []]
    trainers = [trainer([acc(seen[r])], rank=r) for r in range(2)]
    for r in range(2):
        funcs.append(wrapper(clients[r]))
        trainers[r].rollout_func = funcs[r]
    local = [["a", "a", "b"], ["b", "c", "c"]]  # TRL's layout: group b lies across the two processes

    def work(r):
        inputs = [{"prompt": p, "solution": SOLUTION[p]} for p in local[r]]
        return _generate_and_score_completions(trainers[r], inputs)

    (out0, out1), errors = world.run(work)
    assert errors == [None, None]
    # Group g runs on process g % 2: a and c on 0, b on 1; each once.
    assert [s[:2] for s in clients[0].started] == [("a", []), ("c", []), ("c", ["no-commit"])]
    assert [s[:2] for s in clients[1].started] == [("b", []), ("b", ["no-commit"])]
    # Each process gets its own rows in its own order: b's rescued rows split 1 + 1.
    assert out0["completion_ids"] == [[10], [11], [20, 21]] and out0["rescued"] == [False, False, True]
    assert out1["completion_ids"] == [[21, 21], [10], [11]] and out1["rescued"] == [True, False, False]
    # Both processes know every group's fate; the metrics are logged once, by the main process.
    for f in funcs:
        assert [(o.group, o.task_id, o.kind) for o in f.outcomes] == [
            (0, "a", "kept"),
            (1, "b", "replaced"),
            (2, "c", "unrescued"),
        ]
    assert dict(trainers[0]._metrics["train"])["rescue/groups_replaced"] == [1.0]
    assert dict(trainers[1]._metrics["train"]) == {}
    # The whole group's columns reached the scoring on the process that ran it.
    assert (["b", "b"], ["sb", "sb"], [True, True]) in seen[1]


def test_a_failure_on_one_process_is_raised_on_every_process(monkeypatch):
    world = World(2)
    monkeypatch.setattr(trl_module, "_gather", world.gather)

    class Broken(FakeClient):
        def start_rescue(self, *args, **kwargs):
            raise ConnectionError("the service went away")

    clients = [FakeClient(), Broken()]
    trainers = [trainer([lambda completions, env_reward, **_: env_reward], rank=r) for r in range(2)]
    for r in range(2):
        trainers[r].rollout_func = wrapper(clients[r])
    local = [["a", "a", "b"], ["b", "c", "c"]]
    _, errors = world.run(lambda r: trainers[r].rollout_func(local[r], trainers[r]))
    assert all(isinstance(e, RuntimeError) for e in errors)
    assert "another process" in str(errors[0]) and "process 1: ConnectionError" in str(errors[0])
    assert isinstance(errors[1].__cause__, ConnectionError)
