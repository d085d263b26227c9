"""Group, order and count the rows of a trace by several integer columns, with one ``np.sort``.

A trace has hundreds of thousands of rows and every analysis groups them (warp requests, a
thread's accesses to one line, an address's accesses). Sorting one packed int64 key is the
fastest way NumPy offers: ``np.sort`` of int64 is several times faster than ``np.argsort`` or
``np.lexsort`` (it is vectorised), and ``np.unique`` sorts too. So the columns are packed into
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
    bits each column takes in it (the last column lowest). ``spare_bits`` low bits are left free (for a row number). Columns
    too wide to fit together are first replaced by their dense rank (a sort of their own)."""
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
    n = len(columns[0])
    if n == 0:
        return np.zeros(0, np.int64)
    row_bits = _bits(n)
    try:
        key, _ = pack(*columns, spare_bits=row_bits)
    except ValueError:
        return np.lexsort(tuple(np.asarray(c) for c in reversed(columns)))
    key <<= row_bits
    key |= np.arange(n, dtype=np.int64)
    key.sort()
    key &= (1 << row_bits) - 1
    return key


def sorted_groups(*columns) -> tuple[np.ndarray, np.ndarray]:
    """(order, starts): ``order`` sorts the rows stably by the columns and ``starts`` are the
    positions in that order where a new combination of values begins."""
    n = len(columns[0])
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    row_bits = _bits(n)
    try:
        key, _ = pack(*columns, spare_bits=row_bits)
    except ValueError:
        order = np.lexsort(tuple(np.asarray(c) for c in reversed(columns)))
        k = np.stack([np.asarray(c)[order] for c in columns])
        return order, np.flatnonzero(np.r_[True, np.any(k[:, 1:] != k[:, :-1], axis=0)])
    key <<= row_bits
    key |= np.arange(n, dtype=np.int64)
    key.sort()
    order = key & ((1 << row_bits) - 1)
    key >>= row_bits
    return order, np.flatnonzero(np.r_[True, key[1:] != key[:-1]])


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
