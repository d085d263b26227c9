"""Sum reduction. (Chapter 5 grows this file; the foundation needs the tree reduction, which the
emulator benchmark also uses.)"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32

BLOCK = 256


def sum_cpu(x):
    return np.float32(x.astype(np.float64).sum())


# v1: shared-memory tree with sequential addressing; one partial sum per block
@cuda.jit
def block_sum_tree(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    s[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()                 # every level reads what the previous one wrote
        step //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


def reduction_bytes(n, itemsize=4):
    return n * itemsize


def reduction_flops(n):
    return n
