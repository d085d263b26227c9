"""Where coalescing is counted: the 32-byte sectors each warp-wide global request touches.

A warp request is one instruction executed by a warp: the trace rows with the same
``(gwarp, site, seq)``. The memory system moves whole 32-byte sectors, so the cost of a request
is the number of distinct sectors its lanes touch: 32 consecutive float32 = 128 bytes = 4
sectors; stride 2 = 8 sectors; a stride of 8 or more elements = one sector per lane = 32.
"""

from __future__ import annotations

import numpy as np

from ..keys import count_distinct, group_ids
from ..simt import WARP_SIZE

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
    """One row per warp request to ``space`` (0 global): its lanes, sectors and 128-byte lines,
    ``bytes`` it asked for (lanes x width) and ``used``, the distinct bytes among them (lanes
    that read the same word share it: a broadcast uses one word)."""
    m = mem[mem.space == space]
    names = ("gwarp", "block", "warp", "line", "site", "seq", "kind", "array", "lanes",
             "sectors", "lines", "bytes", "used")
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

    # distinct addresses of a request: its lanes run one instruction, so they share one width,
    # and numba's arrays are aligned to their elements, so two different addresses never overlap
    word, _ = group_ids(req, m.address)
    width_of_word = np.zeros(word.max() + 1, np.int64)
    width_of_word[word] = m.width
    req_of_word = np.zeros_like(width_of_word)
    req_of_word[word] = req
    used = np.bincount(req_of_word, weights=width_of_word, minlength=n).astype(np.int64)

    f = m[first]
    return np.rec.fromarrays(
        [f.gwarp, f.block, f.warp, f.line, f.site, f.seq, f.kind, f.array, lanes,
         distinct(SECTOR_BYTES), distinct(LINE_BYTES), nbytes, used], names=names)


def space_rows(mem, space: int, fields) -> list:
    """The columns ``fields`` of the rows of one memory space (only those columns are copied)."""
    rows = np.flatnonzero(np.asarray(mem["space"]) == space)   # indices: faster than a mask,
    return [np.asarray(mem[f])[rows] for f in fields]          # taken once per field


def distinct_units(gwarp, site, seq, address, width, unit) -> int:
    """Distinct (warp request, ``unit``-byte block) pairs: summed over the requests, the
    blocks each one touches. An access that straddles two blocks counts in both."""
    first = address // unit
    if np.array_equal(first, (address + width - 1) // unit):
        return count_distinct(gwarp, site, seq, first)
    rows, blocks = _spans(address, width, unit)
    return count_distinct(gwarp[rows], site[rows], seq[rows], blocks)


def summary(mem) -> dict:
    """``run.metrics``'s global-memory figures: warp requests, and 32-byte sectors per request
    (the mean of ``requests(mem).sectors``, counted without building the table)."""
    gwarp, site, seq, address, width = space_rows(mem, 0, ("gwarp", "site", "seq", "address",
                                                           "width"))
    n = count_distinct(gwarp, site, seq)
    if n == 0:
        return {"global_requests": 0, "global_sectors_per_request": None}
    sectors = distinct_units(gwarp, site, seq, address, width, SECTOR_BYTES)
    return {"global_requests": n, "global_sectors_per_request": sectors / n}


def sectors_per_request(mem, space: int = 0) -> float | None:
    r = requests(mem, space)
    return float(r.sectors.mean()) if len(r) else None


def by_line(mem, space: int = 0) -> dict:
    """Mean sectors per request for each source line: which line is uncoalesced."""
    r = requests(mem, space)
    return {int(line): float(r.sectors[r.line == line].mean()) for line in np.unique(r.line)}


# ---------------------------------------------------------------------------------------------
# one warp request, from its lanes' addresses (the memory-access figure and widget)


def strided_addresses(stride: int = 1, size: int = 4, offset: int = 0, base: int = 0) -> np.ndarray:
    """Byte addresses of ``a[offset + lane*stride]`` for lanes 0..31 (``a`` at ``base``)."""
    if stride < 0 or size < 1 or offset < 0:
        raise ValueError("stride and offset must be >= 0 and size >= 1")
    return base + (offset + np.arange(WARP_SIZE, dtype=np.int64) * stride) * size


def _lane_addresses(addresses) -> np.ma.MaskedArray:
    """Lane addresses as a 32-long masked int array.

    A lane made no access where its entry is masked, ``None`` or negative (-1 is the
    marker ``request_addresses_from_run`` users may write by hand).
    """
    if isinstance(addresses, np.ma.MaskedArray):
        data = np.ma.getdata(addresses).astype(np.int64)
        mask = np.ma.getmaskarray(addresses).copy()
    else:
        items = list(addresses)
        mask = np.array([a is None for a in items], dtype=bool)
        data = np.array([0 if a is None else a for a in items], dtype=np.int64)
    if len(data) > WARP_SIZE:
        raise ValueError(f"a warp has {WARP_SIZE} lanes, got {len(data)} addresses")
    mask |= data < 0
    pad = WARP_SIZE - len(data)
    data = np.concatenate([data, np.zeros(pad, dtype=np.int64)])
    mask = np.concatenate([mask, np.ones(pad, dtype=bool)])
    return np.ma.array(data, mask=mask)


def warp_request_summary(addresses, size: int = 4) -> dict:
    """Sectors, lines and bytes of one warp request.

    ``addresses``: up to 32 byte addresses, lane 0 first; a masked, ``None`` or negative
    entry is a lane that made no access. ``size``: bytes each lane reads or writes.

    Returns counts -- ``lanes`` (active lanes), ``sectors`` (distinct 32-byte sectors),
    ``lines`` (distinct 128-byte lines), ``bytes_requested`` (lanes x size), ``bytes_used``
    (distinct bytes: lanes reading the same word share it), ``bytes_moved`` (sectors x 32),
    ``efficiency`` (used / moved), ``min_sectors`` (the fewest sectors that could hold the
    bytes used: 1 for a broadcast) -- and per lane / per id arrays: ``addresses`` (masked,
    32 lanes), ``active`` (bool per lane), ``lane_sector``/``lane_line`` (sector / line of
    each lane's first byte, -1 when inactive), ``sector_ids``/``line_ids`` (sorted ids).
    """
    size = int(size)
    if size < 1:
        raise ValueError(f"size must be a positive number of bytes, got {size}")
    addr = _lane_addresses(addresses)
    active = ~np.ma.getmaskarray(addr)
    a = np.ma.getdata(addr)[active]
    # A misaligned access may straddle two sectors: count every sector it covers (as requests() does).
    first = a // SECTOR_BYTES
    sector_ids = np.unique(_spans(a, size, SECTOR_BYTES)[1])
    line_ids = np.unique(_spans(a, size, LINE_BYTES)[1])
    used = len(np.unique((a[:, None] + np.arange(size)).ravel())) if len(a) else 0
    moved = len(sector_ids) * SECTOR_BYTES
    lane_sector = np.full(WARP_SIZE, -1, dtype=np.int64)
    lane_sector[active] = first
    lane_line = np.full(WARP_SIZE, -1, dtype=np.int64)
    lane_line[active] = a // LINE_BYTES
    return {
        "lanes": int(active.sum()), "sectors": int(len(sector_ids)), "lines": int(len(line_ids)),
        "bytes_requested": int(active.sum()) * size, "bytes_used": int(used),
        "bytes_moved": int(moved), "efficiency": used / moved if moved else 1.0,
        "min_sectors": -(-int(used) // SECTOR_BYTES), "size": size,
        "addresses": addr, "active": active, "lane_sector": lane_sector, "lane_line": lane_line,
        "sector_ids": sector_ids.astype(np.int64), "line_ids": line_ids.astype(np.int64),
    }
