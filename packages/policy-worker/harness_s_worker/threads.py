"""How many CPU threads torch uses, for the worker and the suite LM's build alike."""

from __future__ import annotations

import torch

SMALL_MODEL = 20_000_000


def set_threads(parameters: int, device: str, threads: int | None) -> None:
    """`threads`, else 1 on CPU for a model under 20M parameters (the tiny model, the suite LM's
    toy, small and base sizes: more threads only add overhead, and beside other busy processes their
    spin-waits burn CPU: three toy builds side by side used twice the CPU at torch's default),
    else torch's default."""
    threads = threads or (1 if parameters < SMALL_MODEL and device == "cpu" else None)
    if threads:
        torch.set_num_threads(threads)
