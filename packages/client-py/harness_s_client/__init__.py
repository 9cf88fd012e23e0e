"""A client of the Harness-S service for trainers of your own: register your policy endpoint, start
rescues of all-fail groups with your policy in your environment, and read their token rows back in
your trainer's shape (TRL's `rollout_func` dict, verl's `AgentLoopOutput`, SkyRL's `GeneratorOutput`)."""

from .client import HarnessSClient, HarnessSError
from .convert import Trajectory, to_skyrl, to_trl, to_verl

__all__ = ["HarnessSClient", "HarnessSError", "Trajectory", "to_skyrl", "to_trl", "to_verl"]
