"""How this process's C heap treats large freed blocks (glibc only; elsewhere nothing changes).

By default glibc serves each block over its threshold (128 KB at first, then the largest mapped
block freed so far, up to 32 MB) with a fresh `mmap` and returns it to the system when freed. A
worker on CPU allocates and frees such tensors many times a second, each a little larger than the
last as a running batch's keys and values grow, so each one is faulted in again page by page: on a
VM that was most of a merge's CPU (`scripts/merge-bench.py`). Keeping freed memory for reuse
trades that for a resident size that stays at its peak.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# glibc's ceiling for the mmap threshold on 64-bit (HEAP_MAX_SIZE / 2): blocks above it are still
# mapped and unmapped each time.
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024
# The most mallopt's int takes: the heap's top is given back only past 2 GB free.
TRIM_AT = 2**31 - 1


def keep_freed_memory() -> bool:
    """Serves blocks up to 32 MB from the heap and gives back its top only past 2 GB. True when glibc took both."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_MAX)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_AT))
