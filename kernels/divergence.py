"""Chapter 2: warps and divergence. Pairs of kernels that do the same work with and without
divergence inside a warp, so the emulator can measure the difference.
"""

from __future__ import annotations

import numpy as np
from numba import cuda


# ------------------------------------------------------------------------------------------
# CPU references
# ------------------------------------------------------------------------------------------
def parity_cpu(x):
    """Even elements doubled, odd elements negated."""
    out = x.copy()
    out[0::2] = 2 * x[0::2]
    out[1::2] = -x[1::2]
    return out


def by_warp_cpu(x):
    """Elements of even warps (32-element groups) doubled, of odd warps negated."""
    out = x.copy()
    even = (np.arange(x.size) // 32) % 2 == 0
    out[even] = 2 * x[even]
    out[~even] = -x[~even]
    return out


def triangle_sum_cpu(n_terms):
    """Element i is the sum 0 + 1 + ... + (n_terms[i] - 1)."""
    return (n_terms * (n_terms - 1) // 2).astype(np.int32)


# ------------------------------------------------------------------------------------------
# if/else
# ------------------------------------------------------------------------------------------
# v1: branch on the thread's parity: both paths inside every warp, each runs with 16 lanes
@cuda.jit
def branch_by_parity(x, out):
    i = cuda.grid(1)
    if i < x.size:
        if i % 2 == 0:
            out[i] = 2 * x[i]
        else:
            out[i] = -x[i]


# v1, as one expression: the same choice written as a conditional expression; the compiler
#   turned it into select instructions (SEL/FSEL, no branch) on an H100, where it compiled v1's
#   if/else to a branch (benchmarks/results/probe_ch1_5_h100.txt)
@cuda.jit
def branch_by_parity_select(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = 2 * x[i] if i % 2 == 0 else -x[i]


# v2: branch on the warp index: all 32 lanes of a warp agree, so no warp runs both paths
@cuda.jit
def branch_by_warp(x, out):
    i = cuda.grid(1)
    if i < x.size:
        if (i // 32) % 2 == 0:
            out[i] = 2 * x[i]
        else:
            out[i] = -x[i]


# ------------------------------------------------------------------------------------------
# Loops of unequal trip counts
# ------------------------------------------------------------------------------------------
# v1: each thread loops n_terms[i] times; a warp runs until its longest lane is done
@cuda.jit
def triangle_sum(n_terms, out):
    i = cuda.grid(1)
    if i < n_terms.size:
        acc = 0
        for k in range(n_terms[i]):
            acc += k
        out[i] = acc


# v2: thread t works on element order[t]; with order sorting the trip counts, the lanes of a
# warp loop (nearly) the same number of times, so no lane idles while the warp's longest runs
@cuda.jit
def triangle_sum_by_order(n_terms, order, out):
    t = cuda.grid(1)
    if t < n_terms.size:
        i = order[t]
        acc = 0
        for k in range(n_terms[i]):
            acc += k
        out[i] = acc


def branch_bytes(n, itemsize=4):
    return 2 * n * itemsize
