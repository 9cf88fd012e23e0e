"""What one worker holds at most (no torch here: the launcher reads the defaults before the model loads)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Limits:
    """What one worker holds at most; past a cap the request is a 429 `CAPACITY_EXCEEDED`."""

    policies: int = 64
    episodes_per_policy: int = 4096
    jobs: int = 1000
    cache_mb: int = 1024
    sample_timeout_s: float = 300.0
