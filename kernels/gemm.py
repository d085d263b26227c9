"""Matrix multiply C = A @ B. (The GEMM chapter grows this file; the foundation needs the
shared-memory tiled version, which the emulator benchmark also uses.)"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32

TILE = 16


def gemm_cpu(a, b):
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)


# v1: one thread per C element, reading a row of A and a column of B from global memory
@cuda.jit
def gemm_naive(a, b, c):
    col, row = cuda.grid(2)
    if row < c.shape[0] and col < c.shape[1]:
        acc = 0.0
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc


# v2: TILE x TILE tiles of A and B staged in shared memory; each value is read TILE times from
# shared memory instead of global memory
@cuda.jit
def gemm_tiled(a, b, c):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
    acc = 0.0
    for t in range((a.shape[1] + TILE - 1) // TILE):
        k = t * TILE
        sa[ty, tx] = a[row, k + tx] if row < a.shape[0] and k + tx < a.shape[1] else 0.0
        sb[ty, tx] = b[k + ty, col] if k + ty < b.shape[0] and col < b.shape[1] else 0.0
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()                 # the next tile overwrites sa/sb
    if row < c.shape[0] and col < c.shape[1]:
        c[row, col] = acc


def gemm_flops(m, n, k):
    return 2 * m * n * k


def gemm_bytes(m, n, k, itemsize=4):
    """Bytes if each matrix is read or written exactly once."""
    return (m * k + k * n + m * n) * itemsize
