"""Group, order and count the rows of a trace by several integer columns, with one ``np.sort``.

A trace has hundreds of thousands of rows and every analysis groups them (warp requests, a
thread's accesses to one line, an address's accesses). Sorting one packed int64 key is the
fastest way NumPy offers: ``np.sort`` of int64 is several times faster than ``np.argsort`` or
``np.lexsort`` (it is vectorised; 600,000 keys on this course's machine: 8 ms, against 30 ms for
``argsort`` and 62 ms for a stable one), and ``np.unique`` sorts too. So the columns are packed into
one int64 (each shifted by its minimum, the first column most significant) and, where the order
of the rows is needed, the row number goes into the low bits of the same key: sorting that key
is a stable argsort.

Nothing here imports the rest of ``simtlab`` (the emulator and the analyses both use it).
"""

from __future__ import annotations

import numpy as np

_KEY_BITS = 62          # room left in an int64 (non-negative, one bit spare)


def _bits(size: int) -> int:
    """Bits that hold the values 0 .. size-1."""
    return max(int(size) - 1, 0).bit_length()


def _offset(column) -> tuple[np.ndarray, int]:
    c = np.asarray(column, np.int64).reshape(-1)
    if len(c) == 0:
        return c, 1
    low = int(c.min())
    if low != 0:
        c = c - low
    return c, int(c.max()) + 1


def pack(*columns, spare_bits: int = 0) -> tuple[np.ndarray, tuple]:
    """One int64 per row that sorts as the rows do (first column most significant), and the
    bits each column takes in it (the last column lowest). ``spare_bits`` low bits are left
    free (for a row number). Columns too wide to fit together are first replaced by their
    dense rank (a sort of their own)."""
    cols = [_offset(c) for c in columns]
    widths = [_bits(size) for _, size in cols]
    while sum(widths) + spare_bits > _KEY_BITS:
        widest = int(np.argmax(widths))
        c, size = cols[widest]
        dense = _dense_rank(c)
        new_size = int(dense.max()) + 1 if len(dense) else 1
        if _bits(new_size) >= widths[widest]:
            raise ValueError("these columns have too many distinct values to pack into one "
                             "int64 key; group them in several steps")
        cols[widest], widths[widest] = (dense, new_size), _bits(new_size)
    key = np.zeros(len(cols[0][0]), np.int64)
    for (c, _), w in zip(cols, widths):
        if w:
            key <<= w
            key |= c
    return key, tuple(widths)


def _dense_rank(c: np.ndarray) -> np.ndarray:
    """0..k-1 for the k distinct values of ``c``, in increasing order of value."""
    order = np.argsort(c, kind="stable")
    sorted_c = c[order]
    rank_sorted = np.cumsum(np.r_[False, sorted_c[1:] != sorted_c[:-1]])
    rank = np.empty(len(c), np.int64)
    rank[order] = rank_sorted
    return rank


def stable_order(*columns) -> np.ndarray:
    """The permutation that sorts the rows by the columns, rows with equal keys kept in their
    order: ``np.lexsort`` (last column first) with one ``np.sort``."""
    if len(columns[0]) == 0:
        return np.zeros(0, np.int64)
    try:
        key, widths = pack(*columns, spare_bits=_bits(len(columns[0])))
    except ValueError:
        return np.lexsort(tuple(np.asarray(c) for c in reversed(columns)))
    return _sort_key(key, sum(widths))[0]


def key_order(key: np.ndarray, key_bits: int) -> np.ndarray:
    """``stable_order`` of rows already packed into one non-negative key of ``key_bits`` bits."""
    return _sort_key(key, key_bits)[0]


def _sort_key(key: np.ndarray, key_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(stable order of the rows by ``key``, the keys in that order)."""
    row_bits = _bits(len(key))
    if key_bits + row_bits > _KEY_BITS:
        order = np.argsort(key, kind="stable")
        return order, key[order]
    k = key << row_bits
    k |= np.arange(len(key), dtype=np.int64)
    k.sort()
    order = k & ((1 << row_bits) - 1)
    k >>= row_bits
    return order, k


def sorted_groups(*columns) -> tuple[np.ndarray, np.ndarray]:
    """(order, starts): ``order`` sorts the rows stably by the columns and ``starts`` are the
    positions in that order where a new combination of values begins."""
    n = len(columns[0])
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    try:
        key, widths = pack(*columns, spare_bits=_bits(n))
    except ValueError:
        order = np.lexsort(tuple(np.asarray(c) for c in reversed(columns)))
        k = np.stack([np.asarray(c)[order] for c in columns])
        return order, np.flatnonzero(np.r_[True, np.any(k[:, 1:] != k[:, :-1], axis=0)])
    return key_groups(key, sum(widths))


def key_groups(key: np.ndarray, key_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """``sorted_groups`` of rows already packed into one non-negative key of ``key_bits`` bits."""
    if len(key) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    order, k = _sort_key(key, key_bits)
    return order, np.flatnonzero(np.r_[True, k[1:] != k[:-1]])


def _as_uint64(column) -> np.ndarray:
    c = np.asarray(column)
    return c.view(np.uint64) if c.dtype == np.int64 else c.astype(np.uint64)


def maybe_shared(columns, flagged: np.ndarray) -> np.ndarray:
    """Rows whose values in ``columns`` may also be those of a ``flagged`` row (a superset,
    never missing one). The rows are hashed into about 2n buckets, without a sort: a row
    sharing no bucket with a flagged row drops out; one that shares it by chance stays."""
    n = len(columns[0])
    bits = max(_bits(2 * n), 1)
    h = np.array(_as_uint64(columns[0]))
    for c in columns[1:]:          # wraps around modulo 2^64: only equal rows must collide
        h *= np.uint64(0x100000001B3)
        h += _as_uint64(c)
    # Fibonacci hashing: the top bits of h * 2^64/phi spread neighbouring values apart
    h *= np.uint64(0x9E3779B97F4A7C15)
    h >>= np.uint64(64 - bits)
    hit = np.zeros(1 << bits, bool)
    hit[h[flagged]] = True
    return hit[h]


def group_ids(*columns) -> tuple[np.ndarray, int]:
    """Dense ids 0..n-1 for the distinct rows of several integer columns, numbered in the
    order of the rows' values (first column first), and n."""
    if len(columns[0]) == 0:
        return np.zeros(0, np.int64), 0
    order, starts = sorted_groups(*columns)
    new_group = np.zeros(len(order), np.int64)
    new_group[starts[1:]] = 1
    ids = np.empty(len(order), np.int64)
    ids[order] = np.cumsum(new_group)
    return ids, len(starts)


def count_distinct(*columns) -> int:
    """How many distinct rows the columns hold (no permutation needed: the packed key is
    sorted on its own)."""
    if len(columns[0]) == 0:
        return 0
    key, _ = pack(*columns)
    key.sort()
    return int(np.count_nonzero(key[1:] != key[:-1])) + 1


def occurrence(*columns) -> np.ndarray:
    """For rows in time order: how many earlier rows share the same values (0, 1, 2, ...)."""
    n = len(columns[0])
    if n == 0:
        return np.zeros(0, np.int64)
    order, starts = sorted_groups(*columns)
    sizes = np.diff(np.r_[starts, n])
    seq = np.empty(n, np.int64)
    seq[order] = np.arange(n) - np.repeat(starts, sizes)
    return seq


def element_rows(index, width, itemsize):
    """``(rows, element index)``: each trace row once per array element it covers. A row is
    one access; the PTX engine's vector accesses (a ``float4``: 16 bytes, 4 floats) cover
    several elements from their ``index`` on; every other access covers one."""
    count = np.maximum(np.asarray(width, np.int64) // np.asarray(itemsize, np.int64), 1)
    if (count == 1).all():
        return np.arange(len(count)), np.asarray(index, np.int64)
    rows = np.repeat(np.arange(len(count)), count)
    offsets = np.arange(len(rows)) - np.repeat(np.cumsum(count) - count, count)
    return rows, np.asarray(index, np.int64)[rows] + offsets
