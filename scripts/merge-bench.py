"""CPU to merge newly pre-filled rows into a running batch of long contexts (the engine's
`stack_left_padded`), against padding each part with `torch.cat` and concatenating the parts (the
engine's way before), measured in the same run on the same tensors, one thread. The heap keeps
freed blocks as the worker's does (`harness_s_worker/heap.py`) unless `--release-freed-memory` is
given. Run with the worker's venv:
packages/policy-worker/.venv/bin/python scripts/merge-bench.py [--release-freed-memory]"""

import sys
import time

import torch

from harness_s_worker.engine import Layers, stack_left_padded
from harness_s_worker.heap import keep_freed_memory

torch.set_num_threads(1)
if "--release-freed-memory" not in sys.argv[1:]:
    keep_freed_memory()
HEADS, HEAD_DIM, LAYERS = 4, 16, 2  # the tiny model's


def part(rows: int, width: int) -> tuple[Layers, torch.Tensor]:
    layers = [(torch.randn(rows, HEADS, width, HEAD_DIM), torch.randn(rows, HEADS, width, HEAD_DIM)) for _ in range(LAYERS)]
    return layers, torch.ones(rows, width, dtype=torch.long)


def padded_and_concatenated(parts: list[tuple[Layers, torch.Tensor]]) -> tuple[Layers, torch.Tensor]:
    width = max(mask.shape[1] for _, mask in parts)

    def pad(t: torch.Tensor, dim: int) -> torch.Tensor:
        n = width - t.shape[dim]
        shape = list(t.shape)
        shape[dim] = n
        return t if n == 0 else torch.cat([t.new_zeros(shape), t], dim=dim)

    layers = [(torch.cat([pad(p[j][0], 2) for p, _ in parts]), torch.cat([pad(p[j][1], 2) for p, _ in parts])) for j in range(LAYERS)]
    return layers, torch.cat([pad(mask, 1) for _, mask in parts])


def cpu_per_call(merge: object, parts: list[tuple[Layers, torch.Tensor]], repeats: int = 20) -> float:
    started = time.process_time()
    for _ in range(repeats):
        merge(parts)  # type: ignore[operator]
    return (time.process_time() - started) / repeats


for rows, width in ((4, 500), (16, 1500), (16, 3000), (48, 3000)):
    parts = [part(rows, width), part(2, width + 200)]
    old, new = cpu_per_call(padded_and_concatenated, parts), cpu_per_call(stack_left_padded, parts)
    print(f"{rows} running rows × {width} positions, 2 joining at {width + 200}: {new * 1000:.1f} ms CPU in place, {old * 1000:.1f} ms padded and concatenated ({old / new:.1f}x)")
