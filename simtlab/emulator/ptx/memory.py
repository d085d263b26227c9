"""The PTX engine's address spaces: one flat 64-bit device space, as a GPU's generic space.

Every argument array gets a base address (``GLOBAL_BASE`` + the same 512-byte aligned
offsets the other engines give, so byte addresses, sectors and the trace's ``address``
column agree), and a pointer is a plain 64-bit integer: pointer arithmetic, casts to
``float4*``, ``cvta`` and generic loads all work on it. Each access maps back to (array,
flat element index) for the trace. Shared memory is a state space of its own, addresses from
0 in each block (static variables first, then ``extern __shared__``), seen in the generic
space through a window at ``SHARED_WINDOW``; local memory likewise per thread; ``__constant__``
variables live in a const bank seen at ``CONST_WINDOW``; local variables (NVRTC's
``__local_depot``: stack arrays) in each thread's own local space. A shared address may name
another block of the thread's cluster (distributed shared memory): ``cluster_address``.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

GLOBAL_BASE = 1 << 40          # null and small integers are never valid device addresses
SHARED_WINDOW = 1 << 36
LOCAL_WINDOW = 1 << 35
CONST_WINDOW = 1 << 34
PARAM_WINDOW = 1 << 33         # kernel parameters (cvta.param): what a TMA's tensor map names
WINDOW_SIZE = 1 << 32
# a shared address with bits above CLUSTER_RANK_SHIFT set is block (those bits - 1) of the
# cluster's shared memory (what mapa gives); below, the executing block's own (shared::cta)
CLUSTER_RANK_SHIFT = 24        # above the largest shared memory of a block (228 KiB)
SHARED_OFFSET_MASK = (1 << CLUSTER_RANK_SHIFT) - 1


def cluster_address(address, rank):
    """The shared address of the same byte in block ``rank`` of the cluster."""
    return ((np.asarray(rank, np.int64) + 1) << CLUSTER_RANK_SHIFT) | \
        (np.asarray(address, np.int64) & SHARED_OFFSET_MASK)


@dataclass
class Region:
    """Bytes of one array or variable at ``start`` in its state space."""

    aid: int                   # the array's id in the trace (ArrayInfo.id)
    name: str
    start: int
    nbytes: int
    itemsize: int              # element size of the trace's flat index
    data: np.ndarray | None    # the bytes (uint8 view) of a global/const array; None: shared/local

    @property
    def end(self) -> int:
        return self.start + self.nbytes


class RegionTable:
    """Regions of one state space sorted by address: which region holds each lane's address."""

    def __init__(self, regions):
        self.regions = sorted(regions, key=lambda r: r.start)
        self.starts = np.array([r.start for r in self.regions] or [0], np.int64)
        self.ends = np.array([r.end for r in self.regions] or [0], np.int64)
        self.start_list = [r.start for r in self.regions]

    def containing(self, lo, end):
        """The one region holding every byte of ``[lo, end)``, or None."""
        i = bisect.bisect_right(self.start_list, lo) - 1
        if i < 0 or end > self.regions[i].end:
            return None
        return self.regions[i]

    def find(self, addr, width):
        """Index of the region holding ``[addr, addr + width)`` per lane, -1 where none does."""
        if not self.regions:
            return np.full(len(addr), -1, np.int64)
        i = np.searchsorted(self.starts, addr, side="right") - 1
        ok = (i >= 0)
        ic = np.maximum(i, 0)
        ok &= addr + width <= self.ends[ic]
        return np.where(ok, i, -1)


def typed_view(data: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The bytes ``data`` seen as ``dtype`` elements (trailing bytes that do not fill one are
    left out: an access there fails the bounds check first)."""
    usable = len(data) - len(data) % dtype.itemsize
    return data[:usable].view(dtype)
