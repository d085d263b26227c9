"""Where coalescing is counted: the 32-byte sectors each warp-wide global request touches.

A warp request is one instruction executed by a warp: the trace rows with the same
``(gwarp, site, seq)``. The memory system moves whole 32-byte sectors, so the cost of a request
is the number of distinct sectors its lanes touch: 32 consecutive float32 = 128 bytes = 4
sectors; stride 2 = 8 sectors; a stride of 8 or more elements = one sector per lane = 32.
"""

from __future__ import annotations

import numpy as np

from ..simt import group_ids

SECTOR_BYTES = 32
LINE_BYTES = 128


def _spans(address, size, unit):
    """Expand each access [address, address+size) into the ``unit``-byte blocks it touches."""
    first = address // unit
    last = (address + size - 1) // unit
    count = last - first + 1
    rows = np.repeat(np.arange(len(address)), count)
    offsets = np.arange(len(rows)) - np.repeat(np.cumsum(count) - count, count)
    return rows, first[rows] + offsets


def requests(mem, space: int = 0) -> np.recarray:
    """One row per warp request to ``space`` (0 global): its lanes, sectors and 128-byte lines."""
    m = mem[mem.space == space]
    names = ("gwarp", "block", "warp", "line", "site", "seq", "kind", "array", "lanes",
             "sectors", "lines", "bytes")
    if len(m) == 0:
        return np.rec.fromarrays([np.zeros(0, np.int64)] * len(names), names=names)
    req, n = group_ids(m.gwarp, m.site, m.seq)
    first = np.full(n, -1, np.int64)
    order = np.arange(len(m))[::-1]
    first[req[order]] = order                 # first row of each request (row order = time)
    lanes = np.bincount(req, minlength=n)
    nbytes = np.bincount(req, weights=m.width, minlength=n).astype(np.int64)

    def distinct(unit):
        rows, blocks = _spans(m.address, m.width, unit)
        pair, _ = group_ids(req[rows], blocks)
        uniq_req = np.zeros(pair.max() + 1 if len(pair) else 0, np.int64)
        uniq_req[pair] = req[rows]
        return np.bincount(uniq_req, minlength=n)

    f = m[first]
    return np.rec.fromarrays(
        [f.gwarp, f.block, f.warp, f.line, f.site, f.seq, f.kind, f.array, lanes,
         distinct(SECTOR_BYTES), distinct(LINE_BYTES), nbytes], names=names)


def sectors_per_request(mem, space: int = 0) -> float | None:
    r = requests(mem, space)
    return float(r.sectors.mean()) if len(r) else None


def by_line(mem, space: int = 0) -> dict:
    """Mean sectors per request for each source line: which line is uncoalesced."""
    r = requests(mem, space)
    return {int(line): float(r.sectors[r.line == line].mean()) for line in np.unique(r.line)}
