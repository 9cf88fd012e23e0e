"""A client of the Harness-S service for trainers of your own: register your policy endpoint, start
rescues of all-fail groups with your policy in your environment, and read their token rows back in
your trainer's shape (TRL's `rollout_func` dict, verl's `AgentLoopOutput`, SkyRL's
`GeneratorOutput`). httpx is its only dependency; the hooks are `harness_s_client.trl`,
`harness_s_client.verl` and `harness_s_client.skyrl`."""

from .aio import AsyncHarnessS
from .client import HarnessS, HarnessSClient
from .convert import TRL_EXTRAS, Trajectory, TrajectoryID, to_skyrl, to_trl, to_verl, verl_turns
from .errors import (
    ExperimentFailedError,
    HarnessSConnectionError,
    HarnessSError,
    HarnessSTimeoutError,
    RescueFailedError,
)
from .groups import GroupOutcome, RescueSettings, rank_endpoint_id, rescue_metrics

__all__ = [
    "TRL_EXTRAS",
    "AsyncHarnessS",
    "ExperimentFailedError",
    "GroupOutcome",
    "HarnessS",
    "HarnessSClient",
    "HarnessSConnectionError",
    "HarnessSError",
    "HarnessSTimeoutError",
    "RescueFailedError",
    "RescueSettings",
    "Trajectory",
    "TrajectoryID",
    "rank_endpoint_id",
    "rescue_metrics",
    "to_skyrl",
    "to_trl",
    "to_verl",
    "verl_turns",
]
