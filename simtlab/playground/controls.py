"""The options of the playground's launch and size dropdowns, around the current values."""

from __future__ import annotations

import numpy as np

MAX_THREADS_PER_BLOCK = 1024
BLOCK_SIZES_1D = (32, 64, 96, 128, 256, 512, 1024)


def _short(dims):
    dims = tuple(int(d) for d in dims)
    while len(dims) > 1 and dims[-1] == 1:
        dims = dims[:-1]
    return dims[0] if len(dims) == 1 else dims


def block_options(blockdim) -> list:
    """1-D: the usual sizes (and the current one); 2-D/3-D: the current shape with x or y
    halved or doubled, within 1024 threads."""
    current = _short(blockdim)
    if isinstance(current, int):
        return sorted(set(BLOCK_SIZES_1D) | {current})
    shapes = {current}
    dims = list(current)
    for axis in range(min(2, len(dims))):
        for factor in (0.5, 2):
            d = list(dims)
            d[axis] = int(d[axis] * factor)
            if d[axis] >= 1 and int(np.prod(d)) <= MAX_THREADS_PER_BLOCK:
                shapes.add(tuple(d))
    return sorted(shapes, key=lambda s: (int(np.prod(s)), s))


def grid_options(griddim) -> list:
    """1-D: powers of two up to 4096 and the current size; N-D: the current shape with its
    x (and y) halved or doubled."""
    current = _short(griddim)
    if isinstance(current, int):
        return sorted({2 ** k for k in range(13)} | {current})
    shapes = {current}
    for axis in range(min(2, len(current))):
        for factor in (0.5, 2):
            d = list(current)
            d[axis] = int(d[axis] * factor)
            if d[axis] >= 1:
                shapes.add(tuple(d))
    return sorted(shapes, key=lambda s: (int(np.prod(s)), s))


def size_options(n) -> list:
    """A quarter, half, the same, twice and four times the input size (None: no size)."""
    if n is None:
        return [None]
    return sorted({max(1, n // 4), max(1, n // 2), n, 2 * n, 4 * n})


__all__ = ["block_options", "grid_options", "size_options"]
