"""Keep freed memory in the process's heap, so that a traced launch does not pay a page fault
for every fresh page of its temporary arrays.

A traced launch allocates and frees a few hundred MB of NumPy temporaries (columns of
600,000 rows, sort keys). glibc's malloc serves each large block with ``mmap`` and gives it
back with ``munmap`` on free, so the next array of that size starts on fresh pages and the
kernel zero-fills each one on first touch: about 40,000 page faults per traced launch of the
64x64x64 tiled GEMM, a third of its time on this course's shared 2-core machine (measured with
``tools/engine_time_breakdown.py`` in fresh processes: 450 ms with the default settings,
270-310 ms with these; 8,000-18,000 faults).

``keep_freed_memory()`` raises glibc's mmap threshold to its maximum (32 MiB: larger blocks
still come from ``mmap``) and lets the top of the heap keep up to ``TRIM_BYTES`` of freed memory
instead of returning it at once. The settings are process-wide (there is one allocator),
so they are applied once, when ``simtlab.emulator`` is imported; the process's resident memory
stays closer to its peak. ``SIMTLAB_KEEP_HEAP=0`` in the environment leaves malloc as it is.
On a system without glibc (macOS, musl) nothing changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

# mallopt parameters, from glibc's malloc.h
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
MiB = 1024 * 1024
MMAP_THRESHOLD_BYTES = 32 * MiB     # glibc's largest allowed value on 64-bit
TRIM_BYTES = 512 * MiB              # freed memory the heap may keep at its top
TOP_PAD_BYTES = 64 * MiB            # extra the heap takes each time it grows

_applied: bool | None = None


def keep_freed_memory() -> bool:
    """Apply the settings once; True when glibc accepted them (False: off or not glibc)."""
    global _applied
    if _applied is None:
        _applied = os.environ.get("SIMTLAB_KEEP_HEAP", "1") != "0" and _mallopt_all()
    return _applied


def _mallopt_all() -> bool:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False                   # no glibc malloc here
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return all(mallopt(param, value) == 1 for param, value in
               ((M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES), (M_TRIM_THRESHOLD, TRIM_BYTES),
                (M_TOP_PAD, TOP_PAD_BYTES)))
