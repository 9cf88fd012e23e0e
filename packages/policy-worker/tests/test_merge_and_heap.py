"""Merging pre-filled rows into a running batch, and the C heap the worker keeps freed blocks in."""

import subprocess
import sys

import torch

from harness_s_worker.engine import stack_left_padded


def part(rows: int, width: int, start: int) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], torch.Tensor]:
    def values(offset: int) -> torch.Tensor:
        return torch.arange(rows * 2 * width * 3, dtype=torch.float32).reshape(rows, 2, width, 3) + start + offset

    mask = torch.ones(rows, width, dtype=torch.long)
    mask[0, 0] = 0  # a row already left-padded keeps its own zeros
    return [(values(0), values(1000)), (values(2000), values(3000))], mask


def test_parts_of_different_widths_are_left_padded_with_zeros_and_stacked_in_order():
    parts = [part(2, 5, 0), part(1, 7, 10_000), part(3, 4, 20_000)]
    layers, mask = stack_left_padded(parts)
    assert mask.shape == (6, 7) and layers[1][0].shape == (6, 2, 7, 3)
    for j in range(2):
        for side in range(2):
            expected = torch.cat(
                [
                    torch.cat([p[0][j][side].new_zeros(p[1].shape[0], 2, 7 - p[1].shape[1], 3), p[0][j][side]], dim=2)
                    for p in parts
                ]
            )
            assert torch.equal(layers[j][side], expected)
    assert torch.equal(
        mask, torch.cat([torch.cat([m.new_zeros(m.shape[0], 7 - m.shape[1]), m], dim=1) for _, m in parts])
    )


CYCLES = """
import ctypes, resource, sys
from harness_s_worker.heap import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
MB = 1 << 20
def cycle(size):
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)
    libc.free(block)
cycle(8 * MB)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for i in range(10):
    cycle(10 * MB + i * MB // 4)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_kept_freed_memory_is_reused_without_faulting_it_in_again():
    # Each block a little larger than the last, as a running batch's keys and values grow: by
    # default each one is mapped afresh and faulted in (2,560 pages and more each).
    faults = {
        how: int(subprocess.run([sys.executable, "-c", CYCLES, how], check=True, capture_output=True, text=True).stdout)
        for how in ("default", "keep")
    }
    assert faults["default"] > 10 * 2560
    assert faults["keep"] < 2560 + 10 * 64 * 2
