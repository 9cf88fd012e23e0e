"""The service's JSON bodies as the client reads and sends them (functions/api/routes/*.ts and the
zod schemas they name in packages/core): what a user's mypy sees. Fields a response may leave out
are NotRequired; shapes the client hands on without reading are `dict[str, Any]`."""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

EndpointKind = Literal["protocol-v2", "openai-chat", "vllm", "sglang"]
TokenMode = Literal["completions-ids", "inference-generate", "sglang-generate", "chat-token-ids"]
Context = Literal["sampled", "base"]
RescueState = Literal["running", "done", "failed", "cancelled"]


class CallerTool(TypedDict):
    name: str
    description: NotRequired[str]
    parameters: NotRequired[dict[str, Any]]
    submit: NotRequired[bool]


class CallerTask(TypedDict):
    """The caller's task as data: what the router and the policy read, its tools (exactly one
    `submit: true`), and its environment's reset arguments."""

    id: str
    family: str
    tags: NotRequired[list[str]]
    instruction: NotRequired[str]
    tools: list[CallerTool]
    reset: NotRequired[dict[str, str | int | float | bool]]


class Budget(TypedDict, total=False):
    policyTokens: int
    environmentSeconds: float


class CallerRescue(TypedDict):
    """`caller` of a rescue: your endpoint (its registered id), your environment, your task."""

    endpoint: str
    environment: dict[str, Any]
    task: CallerTask
    system: NotRequired[str]
    maxTokens: NotRequired[int]
    weightVersion: NotRequired[int]
    servedModel: NotRequired[str]
    budget: NotRequired[Budget]


class RescueAccepted(TypedDict):
    #: Absent when mode "adaptive" chose to spend nothing (`expected` 0: no rescue was started).
    id: NotRequired[str]
    chosen: list[str]
    expected: int
    #: With mode "adaptive": `option` ("siblings" | "resample" | "none"), `reason`, per-option `estimates`, `allocation`, `spend`.
    adaptive: NotRequired[dict[str, Any]]


class RescueJob(TypedDict):
    id: str
    poolId: str
    taskId: str
    chosen: list[str]
    expected: int


class FailedSlot(TypedDict):
    index: int
    code: str
    reason: str


class RescueSpent(TypedDict):
    policyTokens: int
    policySeconds: float
    environmentSeconds: float


class RolloutOutcome(TypedDict):
    index: int
    harnessId: str
    reward: float
    success: bool
    failureTags: list[str]
    steps: int


class RescueStatus(TypedDict):
    job: RescueJob
    status: RescueState
    completed: int
    failed: list[FailedSlot]
    rescued: bool
    spent: RescueSpent
    rollouts: list[RolloutOutcome]


class EndpointProbe(TypedDict):
    weightVersion: int | None
    checkedAt: float
    mode: NotRequired[TokenMode]


class PolicyEndpoint(TypedDict):
    """A registration as the service shows it (the secret header by name only)."""

    id: str
    kind: EndpointKind
    url: str
    policy: str
    createdAt: float
    probe: EndpointProbe
    mode: NotRequired[TokenMode]
    secretHeader: NotRequired[dict[str, str]]


class PoolSummary(TypedDict):
    id: str
    version: str
    siblings: int


class Usage(TypedDict):
    keyId: str
    usage: dict[str, float]
    requestQuota: float | None
    budgetUsd: float | None
    activeExperiments: int
    days: NotRequired[list[dict[str, Any]]]


class Quote(TypedDict, total=False):
    """What a rescue or an experiment would cost (`POST /v1/quotes`): rollouts, usage, cost of goods, charge, basis."""

    rollouts: int
    usage: dict[str, float]
    costOfGoods: dict[str, Any]
    chargeUsd: float
    basis: Any
    caps: dict[str, Any]


class TrajectoryRow(TypedDict):
    """One row of `GET /v1/rescues/{id}/trajectories` as sent."""

    index: int
    harness_id: str
    decision_id: str
    weight_version: int
    reward: float
    success: bool
    finish_reason: Literal["submitted", "budget-exhausted"]
    failure_tags: list[str]
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    loss_mask: list[int]
    context: Context
    segmented: NotRequired[bool]


class TrajectoryPage(TypedDict):
    trajectories: list[TrajectoryRow]
    next: int | None


ExperimentState = Literal["queued", "running", "done", "stopped", "failed", "cancelled"]
#: States a run never leaves (`TERMINAL_STATES` in packages/core/src/experiment/records.ts).
EXPERIMENT_TERMINAL_STATES: frozenset[str] = frozenset({"done", "stopped", "failed", "cancelled"})


class ExperimentBudget(TypedDict):
    """A run's cap: every rollout counts; `usd` caps the charge at the tariff too."""

    rollouts: int
    usd: NotRequired[float]


class ExperimentRequest(TypedDict, total=False):
    """`POST /v1/experiments` (and `quote_experiment`): every field has the service's default
    (`env` "embedded", arms grpo, grpo-budget and harness-s, seeds [1], budget 100,000 rollouts).
    `env` is a family's name or your OpenEnv server `{"kind": "openenv", "url", "tasks", ...}`;
    `train` overrides the training config by its own keys (an unknown key is a 400)."""

    env: str | dict[str, Any]
    model: str
    arms: list[str]
    seeds: list[int]
    train: dict[str, Any]
    evalSamples: int
    evalTasks: int
    protocol: Literal["test", "validation"]
    budget: ExperimentBudget


class ExperimentProgress(TypedDict):
    """How far a run is: `done` of `total` units of work, and what it does now (`label`)."""

    done: int
    total: int
    label: str


class ExperimentCost(TypedDict):
    rollouts: int
    computeMs: float
    usd: float


class ExperimentStatus(TypedDict):
    """`GET /v1/experiments/{id}` (and the answer of starting or cancelling one): state, progress,
    usage and cost so far; `stopReason` once stopped (budget cap, cancelled), `error` once failed."""

    id: str
    status: ExperimentState
    request: dict[str, Any]
    progress: ExperimentProgress
    attempts: int
    cost: ExperimentCost
    budget: ExperimentBudget | None
    quote: Quote | None
    #: Metered usage, cost of goods and charge so far (`GET` only; null in a start's or a cancel's answer).
    actual: dict[str, Any] | None
    stopReason: str | None
    error: str | None
    createdAt: float
    updatedAt: float


class ExperimentListProgress(TypedDict):
    done: int
    total: int


class ExperimentListItem(TypedDict):
    """One run in the key's list (`GET /v1/experiments`); `experiment(id)` has the rest."""

    id: str
    status: ExperimentState
    createdAt: float
    updatedAt: float
    env: str
    model: str | None
    arms: int
    seeds: int
    progress: ExperimentListProgress


class ExperimentPage(TypedDict):
    """A page of the key's runs, newest first; `next` is the next page's cursor (None at the end)."""

    items: list[ExperimentListItem]
    next: str | None


class ExperimentPlot(TypedDict):
    """A plot of a run's report (`curves.png`, `utilities.png`): its file name and its path on the API."""

    file: str
    url: str
