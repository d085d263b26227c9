"""Chapter 6: matrix multiply C = A @ B in float32 (row-major, A is M x K, B is K x N), from one
thread per output to register-blocked tiles, and the Cairo graduation report's bias + activation epilogue.

Every kernel here runs on a GPU (numba-cuda) and in the emulator, on any M, N, K (not only
multiples of the tile: loads outside the matrices read 0, stores outside are skipped).
kernels/gemm.cu has the same versions in CUDA C++, plus float4 loads (v6), warp tiling with
double buffering (v7), a cp.async ring autotuned over its tiles (v8: :data:`V8_CONFIGS`, one per
``V8_KERNEL`` line of the .cu; the chapter's row is :data:`V8_CHAMPION`) and register staging with
conflict-free fragments, autotuned the same way (v9: :data:`V9_CONFIGS`, :data:`V9_CHAMPION`). :data:`VERSIONS` is the table of versions with their launch plans;
:func:`gemm_with` runs one version through any launcher (the emulator, or numba on a GPU).

Napkin math (what the benchmark divides by): 2*M*N*K FLOPs; at best each matrix crosses DRAM
once, 4*(M*K + K*N + M*N) bytes. What a version actually asks of memory is
:func:`global_loads` (float32 loads from global memory, before any cache helps).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import cuda, float32

from simtlab.simt import cdiv

TILE = 16                 # v1-v3 and the epilogue kernels: TILE x TILE threads, one output each
# v4, 1-D register blocking: a BM4 x BN4 tile of C per block, BK4 deep slices of A and B,
# TM4 outputs (a column strip) per thread: BM4 * BN4 / TM4 = 512 threads
BM4, BN4, BK4, TM4 = 64, 64, 8, 8
THREADS4 = BM4 * BN4 // TM4
# v5, 2-D register blocking: a BM5 x BN5 tile per block, TM5 x TN5 outputs per thread, owned
# strided (rows ty + 16*i, columns tx + 16*j) so a warp's shared reads are consecutive words
BM5, BN5, BK5, TM5, TN5 = 128, 128, 8, 8, 8
TX5, TY5 = BN5 // TN5, BM5 // TM5          # 16 x 16 = 256 threads
THREADS5 = TX5 * TY5
# v7 (numba), warp tiling: a BM7 x BN7 block tile split into WM7 x WN7 warp tiles; the 32 lanes
# of a warp form LM7 x LN7 and own the rows lr + LM7*i, columns lc + LN7*j of their warp tile
BM7 = 128
BN7 = 128
BK7 = 8
WM7 = 32
WN7 = 64
LM7 = 4
LN7 = 8
PAD7 = 4                                             # A's transposed stores: padding spreads the banks
SA7_WIDTH = BM7 + PAD7
TM7 = WM7 // LM7                                     # 8 x 8 outputs per thread
TN7 = WN7 // LN7
WARPS_N7 = BN7 // WN7
THREADS7N = (BM7 // WM7) * WARPS_N7 * 32             # 256
LOADS7A = BM7 * BK7 // THREADS7N                     # elements of A and B each thread fetches per tile
LOADS7B = BK7 * BN7 // THREADS7N

ACT_NONE, ACT_SWISH, ACT_SIGMOID = 0, 1, 2
ACTIVATIONS = {"none": ACT_NONE, "swish": ACT_SWISH, "sigmoid": ACT_SIGMOID}


# ------------------------------------------------------------------------------------------
# CPU reference
# ------------------------------------------------------------------------------------------
def gemm_cpu(a, b):
    """A @ B in float64, rounded once to float32: the value every version is compared with."""
    return (np.asarray(a, np.float64) @ np.asarray(b, np.float64)).astype(np.float32)


def dense_layer_cpu(w, x, bias=None, activation="none"):
    """The Cairo graduation report's layer: ``act(W @ X + bias[:, None])`` with one bias per output row (channel)."""
    z = np.asarray(w, np.float64) @ np.asarray(x, np.float64)
    if bias is not None:
        z = z + np.asarray(bias, np.float64)[:, None]
    act = ACTIVATIONS[activation] if isinstance(activation, str) else activation
    if act == ACT_SWISH:
        z = z / (1.0 + np.exp(-z))
    elif act == ACT_SIGMOID:
        z = 1.0 / (1.0 + np.exp(-z))
    return z.astype(np.float32)


# ------------------------------------------------------------------------------------------
# One thread per output
# ------------------------------------------------------------------------------------------
# v1: one thread per C element, but threadIdx.x walks down the rows: with the plan's 16 x 16
#   blocks a warp covers 16 rows x 2 columns of C, so it reads 16 rows of A (K floats apart) and
#   writes 16 rows of C: 16 sectors per request (B: the 2 columns are neighbours, 1 sector)
@cuda.jit
def gemm_v1_naive(a, b, c):
    row, col = cuda.grid(2)
    if row < c.shape[0] and col < c.shape[1]:
        acc = float32(0.0)
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc


# v2: threadIdx.x walks along a row of C: with 16 x 16 blocks a warp covers 2 rows x 16 columns,
#   so it reads one A element per row (a broadcast: 2 sectors), 16 consecutive B elements (64 bytes,
#   2 sectors) and writes 16 consecutive C elements in each of 2 rows: 2 sectors per row
@cuda.jit
def gemm_v2_coalesced(a, b, c):
    col, row = cuda.grid(2)
    if row < c.shape[0] and col < c.shape[1]:
        acc = float32(0.0)
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        c[row, col] = acc


# v3: TILE x TILE tiles of A and B staged in shared memory, one phase per tile along K: each
#   element is read from global memory once per block instead of once per thread (TILE x fewer)
@cuda.jit
def gemm_v3_tiled(a, b, c):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
    m, kk, n = a.shape[0], a.shape[1], b.shape[1]
    acc = float32(0.0)
    for t in range((kk + TILE - 1) // TILE):
        k0 = t * TILE
        # outside A or B: load 0, so the products of the ragged last tile add nothing
        sa[ty, tx] = a[row, k0 + tx] if row < m and k0 + tx < kk else float32(0.0)
        sb[ty, tx] = b[k0 + ty, col] if k0 + ty < kk and col < n else float32(0.0)
        cuda.syncthreads()                 # the whole tile is in before anyone reads it
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()                 # the next phase overwrites sa/sb
    if row < m and col < n:
        c[row, col] = acc


# the foundation's names (the emulator tests and benchmarks use them)
gemm_naive = gemm_v2_coalesced
gemm_tiled = gemm_v3_tiled


# ------------------------------------------------------------------------------------------
# Several outputs per thread: register blocking
# ------------------------------------------------------------------------------------------
# v4: 1-D register blocking: each thread keeps TM4 outputs of one column in registers; one B
#   value read from shared memory serves TM4 FMAs, but each of them also reads its own A value
#   (a warp-wide broadcast, still one load instruction): 9 shared loads per 8 FMAs against v3's
#   2 per FMA, 1.8x fewer, not 8x
@cuda.jit
def gemm_v4_blocking_1d(a, b, c):
    sa = cuda.shared.array((BK4, BM4), float32)         # A tile stored transposed: sa[k, row]
    sb = cuda.shared.array((BK4, BN4), float32)
    acc = cuda.local.array(TM4, float32)
    t = cuda.threadIdx.x
    tx = t % BN4                                         # this thread's column in the tile
    ty = t // BN4                                        # rows ty, ty + 8, ... of the tile
    row0 = cuda.blockIdx.y * BM4
    col0 = cuda.blockIdx.x * BN4
    m, kk, n = a.shape[0], a.shape[1], b.shape[1]
    for i in range(TM4):
        acc[i] = float32(0.0)
    for k0 in range(0, kk, BK4):
        # BM4 * BK4 = 512 A elements, one per thread: 8 lanes read 8 consecutive floats of a row
        r, q = t // BK4, t % BK4
        sa[q, r] = a[row0 + r, k0 + q] if row0 + r < m and k0 + q < kk else float32(0.0)
        # BK4 * BN4 = 512 B elements, one per thread, consecutive along a row
        r, q = t // BN4, t % BN4
        sb[r, q] = b[k0 + r, col0 + q] if k0 + r < kk and col0 + q < n else float32(0.0)
        cuda.syncthreads()
        for k in range(BK4):
            bv = sb[k, tx]
            for i in range(TM4):
                acc[i] += sa[k, ty + (THREADS4 // BN4) * i] * bv
        cuda.syncthreads()
    col = col0 + tx
    for i in range(TM4):
        row = row0 + ty + (THREADS4 // BN4) * i
        if row < m and col < n:
            c[row, col] = acc[i]


# v5: 2-D register blocking: each thread keeps a TM5 x TN5 block of outputs; per k it reads TM5
#   A and TN5 B values from shared memory into registers and does TM5 * TN5 FMAs with them:
#   8 x 8 outputs cost 16 shared reads per 64 FMAs (v3: 2 per 1)
@cuda.jit
def gemm_v5_blocking_2d(a, b, c):
    sa = cuda.shared.array((BK5, BM5), float32)         # transposed: sa[k, row]
    sb = cuda.shared.array((BK5, BN5), float32)
    acc = cuda.local.array((TM5, TN5), float32)
    ra = cuda.local.array(TM5, float32)
    rb = cuda.local.array(TN5, float32)
    t = cuda.threadIdx.x
    tx, ty = t % TX5, t // TX5
    row0 = cuda.blockIdx.y * BM5
    col0 = cuda.blockIdx.x * BN5
    m, kk, n = a.shape[0], a.shape[1], b.shape[1]
    for i in range(TM5):
        for j in range(TN5):
            acc[i, j] = float32(0.0)
    for k0 in range(0, kk, BK5):
        # BM5 * BK5 = 1024 A and 1024 B elements: 4 of each per thread
        for p in range(BM5 * BK5 // THREADS5):
            e = t + p * THREADS5
            r, q = e // BK5, e % BK5
            sa[q, r] = a[row0 + r, k0 + q] if row0 + r < m and k0 + q < kk else float32(0.0)
        for p in range(BK5 * BN5 // THREADS5):
            e = t + p * THREADS5
            r, q = e // BN5, e % BN5
            sb[r, q] = b[k0 + r, col0 + q] if k0 + r < kk and col0 + q < n else float32(0.0)
        cuda.syncthreads()
        for k in range(BK5):
            for i in range(TM5):
                ra[i] = sa[k, ty + TY5 * i]
            for j in range(TN5):
                rb[j] = sb[k, tx + TX5 * j]
            for i in range(TM5):
                for j in range(TN5):
                    acc[i, j] += ra[i] * rb[j]
        cuda.syncthreads()
    for i in range(TM5):
        row = row0 + ty + TY5 * i
        for j in range(TN5):
            col = col0 + tx + TX5 * j
            if row < m and col < n:
                c[row, col] = acc[i, j]


# v7: warp tiling and double buffering: each warp owns a WM7 x WN7 part of the tile (its
#   shared reads touch 4 + 8 words); the next tile's global loads go into registers before this
#   tile's FMAs and into the other shared buffer after them, so their latency hides behind the
#   math; two k steps per loop turn let the compiler fetch the next k's operands early
@cuda.jit
def gemm_v7_warptile(a, b, c):
    sa = cuda.shared.array((2, BK7, SA7_WIDTH), float32)  # two buffers, A transposed: sa[s, k, row]
    sb = cuda.shared.array((2, BK7, BN7), float32)
    acc = cuda.local.array((TM7, TN7), float32)
    pa = cuda.local.array(LOADS7A, float32)             # the next tile, on its way from global memory
    pb = cuda.local.array(LOADS7B, float32)
    ra = cuda.local.array((2, TM7), float32)
    rb = cuda.local.array((2, TN7), float32)
    t = cuda.threadIdx.x
    warp, lane = t // 32, t % 32
    wr = (warp // WARPS_N7) * WM7 + lane // LN7          # this lane's first row and column
    wc = (warp % WARPS_N7) * WN7 + lane % LN7
    row0 = cuda.blockIdx.y * BM7
    col0 = cuda.blockIdx.x * BN7
    m, kk, n = a.shape[0], a.shape[1], b.shape[1]
    for i in range(TM7):
        for j in range(TN7):
            acc[i, j] = float32(0.0)
    tiles = (kk + BK7 - 1) // BK7
    for tile in range(tiles + 1):
        s = tile % 2
        if tile < tiles:                                  # fetch tile `tile` into registers
            k0 = tile * BK7
            for p in range(LOADS7A):
                e = t + p * THREADS7N
                r, q = e // BK7, e % BK7
                pa[p] = a[row0 + r, k0 + q] if row0 + r < m and k0 + q < kk else float32(0.0)
            for p in range(LOADS7B):
                e = t + p * THREADS7N
                r, q = e // BN7, e % BN7
                pb[p] = b[k0 + r, col0 + q] if k0 + r < kk and col0 + q < n else float32(0.0)
        if tile > 0:                                      # multiply the previous tile (buffer 1 - s)
            o = 1 - s
            for k in range(0, BK7, 2):
                for i in range(TM7):
                    ra[0, i] = sa[o, k, wr + LM7 * i]
                    ra[1, i] = sa[o, k + 1, wr + LM7 * i]
                for j in range(TN7):
                    rb[0, j] = sb[o, k, wc + LN7 * j]
                    rb[1, j] = sb[o, k + 1, wc + LN7 * j]
                for i in range(TM7):
                    for j in range(TN7):
                        acc[i, j] += ra[0, i] * rb[0, j]
                for i in range(TM7):
                    for j in range(TN7):
                        acc[i, j] += ra[1, i] * rb[1, j]
        if tile < tiles:                                  # park the fetched tile in buffer s
            for p in range(LOADS7A):
                e = t + p * THREADS7N
                r, q = e // BK7, e % BK7
                sa[s, q, r] = pa[p]
            for p in range(LOADS7B):
                e = t + p * THREADS7N
                r, q = e // BN7, e % BN7
                sb[s, r, q] = pb[p]
        cuda.syncthreads()                                # buffer s is full; buffer 1 - s is free
    for i in range(TM7):
        row = row0 + wr + LM7 * i
        for j in range(TN7):
            col = col0 + wc + LN7 * j
            if row < m and col < n:
                c[row, col] = acc[i, j]


# ------------------------------------------------------------------------------------------
# numba with 128-bit loads: v7's idea with float4 global and shared reads through linked CUDA C
# ------------------------------------------------------------------------------------------
#: the float4 variant's tiles: 128 x 128 x 8, 8 warps of 64 x 32; a lane owns 2 x 2 blocks of
#: 4 x 4 outputs (rows a_col + 32 wm + i, columns b_col + 16 wn + j) so each block's 4 values of
#: A and of B are consecutive in shared memory: one float4 read each
F4_BM, F4_BN, F4_BK = 128, 128, 8
F4_WM, F4_WN, F4_LANES_N = 64, 32, 4
F4_WSUBM, F4_WSUBN = 32, 16
F4_THREADS = (F4_BM // F4_WM) * (F4_BN // F4_WN) * 32      # 256
F4_SA_WIDTH = F4_BM + 4                                      # A transposed, padded as v8's


def numba_device_source() -> str:
    """The section of gemm.cu that numba links: gemm_ld_global_f4 and gemm_ld_shared_f4."""
    text = CU_PATH.read_text()
    start = text.index("struct GemmFloat4")
    end = text.index("// ==================================== end numba")
    return text[start:end]


@functools.lru_cache(maxsize=None)
def numba_v7_float4_kernel():
    """numba's v7 with 128-bit loads: ``kernel(a, b, c)`` (float32, K and N multiples of 4, any M;
    launch with :func:`numba_v7_float4_launch`). Each thread fetches the next tile's A and B as one
    float4 each (``gemm_ld_global_f4``: LDG.128) into registers while the FMAs of the current tile
    run, parks them in the other shared buffer, and reads its fragments as float4
    (``gemm_ld_shared_f4``: LDS.128): 4 shared reads per k for 64 FMAs instead of 16. The two
    loads are CUDA C device functions linked with ``cuda.declare_device`` (LTO inlines them);
    numba passes addresses as integers (``arr.ctypes.data``). Not run by the emulator (the
    foreign functions are CUDA C): the GPU test and benchmarks/gemm_v8_sweep.py run it."""
    from numba import cuda, types, uint64

    source = numba_device_source()
    try:
        code = cuda.CUSource(source)
    except AttributeError:                                  # an older numba-cuda: a file on disk
        import tempfile

        path = Path(tempfile.gettempdir()) / "simtlab_gemm_float4.cu"
        path.write_text(source)
        code = str(path)
    four = types.UniTuple(types.float32, 4)
    ldg4 = cuda.declare_device("gemm_ld_global_f4", four(types.uint64), link=[code])
    lds4 = cuda.declare_device("gemm_ld_shared_f4", four(types.uint64), link=[code])
    BM, BN, BK, SAW = F4_BM, F4_BN, F4_BK, F4_SA_WIDTH
    WM, WN, LN, WSUBM, WSUBN = F4_WM, F4_WN, F4_LANES_N, F4_WSUBM, F4_WSUBN

    @cuda.jit
    def gemm_v7_float4(a, b, c):
        sa = cuda.shared.array((2, BK, SAW), float32)      # two buffers, A transposed: sa[s, k, row]
        sb = cuda.shared.array((2, BK, BN), float32)
        acc = cuda.local.array((8, 8), float32)
        pa = cuda.local.array(4, float32)                  # the next tile's float4 of A and of B
        pb = cuda.local.array(4, float32)
        ra = cuda.local.array(8, float32)
        rb = cuda.local.array(8, float32)
        t = cuda.threadIdx.x
        warp, lane = t // 32, t % 32
        a_col = (warp // (BN // WN)) * WM + (lane // LN) * 4
        b_col = (warp % (BN // WN)) * WN + (lane % LN) * 4
        row0 = cuda.blockIdx.y * BM
        col0 = cuda.blockIdx.x * BN
        m, kk, n = a.shape[0], a.shape[1], b.shape[1]
        a_base, b_base = a.ctypes.data, b.ctypes.data      # byte addresses (uint64)
        sa_base, sb_base = sa.ctypes.data, sb.ctypes.data
        ar, aq = (t * 4) // BK, (t * 4) % BK               # this thread's float4 of the A tile
        br, bq = (t * 4) // BN, (t * 4) % BN               # and of the B tile
        for i in range(8):
            for j in range(8):
                acc[i, j] = float32(0.0)
        tiles = (kk + BK - 1) // BK
        for tile in range(tiles + 1):
            s = tile % 2
            if tile < tiles:                               # fetch tile `tile`: K, N % 4 == 0, so a
                k0 = tile * BK                             # float4 is wholly inside or outside
                if row0 + ar < m and k0 + aq < kk:
                    pa[0], pa[1], pa[2], pa[3] = ldg4(a_base + uint64(((row0 + ar) * kk + k0 + aq) * 4))
                else:
                    for e in range(4):
                        pa[e] = float32(0.0)
                if k0 + br < kk and col0 + bq < n:
                    pb[0], pb[1], pb[2], pb[3] = ldg4(b_base + uint64(((k0 + br) * n + col0 + bq) * 4))
                else:
                    for e in range(4):
                        pb[e] = float32(0.0)
            if tile > 0:                                   # multiply the previous tile (buffer 1 - s)
                o = 1 - s
                for k in range(BK):
                    for w in range(2):
                        ra[4 * w], ra[4 * w + 1], ra[4 * w + 2], ra[4 * w + 3] = \
                            lds4(sa_base + uint64(((o * BK + k) * SAW + a_col + w * WSUBM) * 4))
                        rb[4 * w], rb[4 * w + 1], rb[4 * w + 2], rb[4 * w + 3] = \
                            lds4(sb_base + uint64(((o * BK + k) * BN + b_col + w * WSUBN) * 4))
                    for i in range(8):
                        for j in range(8):
                            acc[i, j] += ra[i] * rb[j]
            if tile < tiles:                               # park the fetched tile in buffer s
                for e in range(4):
                    sa[s, aq + e, ar] = pa[e]
                    sb[s, br, bq + e] = pb[e]
            cuda.syncthreads()                             # buffer s is full; buffer 1 - s is free
        for i in range(8):
            row = row0 + a_col + (i // 4) * WSUBM + i % 4
            for j in range(8):
                col = col0 + b_col + (j // 4) * WSUBN + j % 4
                if row < m and col < n:
                    c[row, col] = acc[i, j]

    return gemm_v7_float4


def numba_v7_float4_launch(m: int, n: int, k: int) -> tuple:
    """``(grid, block)`` of :func:`numba_v7_float4_kernel`; ValueError unless K and N are multiples
    of 4 (each row of A and B must start 16-byte aligned for its float4 loads)."""
    bad = [f"{name} = {val} is not a multiple of 4" for name, val in (("K", k), ("N", n)) if val % 4]
    if bad:
        raise ValueError("the numba float4 kernel loads rows of A and B as float4: " + "; ".join(bad))
    return (cdiv(n, F4_BN), cdiv(m, F4_BM)), F4_THREADS


# ------------------------------------------------------------------------------------------
# The Cairo graduation report's layer: P = act(W @ X + bias), bias per output row, fused into the store
# ------------------------------------------------------------------------------------------
@cuda.jit(device=True)
def activate(z, activation):
    if activation == ACT_SWISH:
        return z / (float32(1.0) + math.exp(-z))
    if activation == ACT_SIGMOID:
        return float32(1.0) / (float32(1.0) + math.exp(-z))
    return z


@cuda.jit(device=True)
def tiled_dot(a, b, row, col, sa, sb):
    """The v3 main loop: the dot product of A's row and B's column, tile by tile."""
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    m, kk, n = a.shape[0], a.shape[1], b.shape[1]
    acc = float32(0.0)
    for t in range((kk + TILE - 1) // TILE):
        k0 = t * TILE
        sa[ty, tx] = a[row, k0 + tx] if row < m and k0 + tx < kk else float32(0.0)
        sb[ty, tx] = b[k0 + ty, col] if k0 + ty < kk and col < n else float32(0.0)
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    return acc


# the Cairo graduation report's epilogue, as printed: P is stored, then the bias is added to the register only;
#   with an activation the result is stored again (so it is right), without one the biased
#   value is never written: a layer with bias and no activation loses its bias
@cuda.jit
def gemm_bias_act_seed(a, b, c, bias, use_bias, activation):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    col = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    row = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    p = tiled_dot(a, b, row, col, sa, sb)
    if row < c.shape[0] and col < c.shape[1]:
        c[row, col] = p
        if use_bias:
            p = p + bias[row]
        if activation != ACT_NONE:
            c[row, col] = activate(p, activation)


# fixed: bias, then activation, then one store of the finished value
@cuda.jit
def gemm_bias_act(a, b, c, bias, use_bias, activation):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    col = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    row = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    p = tiled_dot(a, b, row, col, sa, sb)
    if row < c.shape[0] and col < c.shape[1]:
        if use_bias:
            p = p + bias[row]
        c[row, col] = activate(p, activation)


# ------------------------------------------------------------------------------------------
# Launch plans and napkin math
# ------------------------------------------------------------------------------------------
#: the CUDA C-only versions' tiles and threads (kernels/gemm.cu: V6_CONFIG, V7_CONFIG)
TILE6, THREADS6 = (128, 128), 256
TILE7, THREADS7 = (BM7, BN7), THREADS7N

# ------------------------------------------------------------------------------------------
# v8 (CUDA C only): the SgemmPipeline template of gemm.cu, one kernel per V8_KERNEL line
# ------------------------------------------------------------------------------------------
CU_PATH = Path(__file__).with_suffix(".cu")
_V8_LINE = re.compile(r"^V8_KERNEL\((gemm_v8_\w+), " + ", ".join([r"(\d+)"] * 12) + r"\)\s*(?://\s*(.*))?$", re.M)
#: sa's padding in floats (gemm.cu SgemmPipeline::PAD): A's transposed rows are BM + 4 floats
V8_PAD = 4


@dataclass(frozen=True)
class V8Config:
    """One instantiation of gemm.cu's SgemmPipeline (a ``V8_KERNEL(...)`` line): block tile
    bm x bn x bk, warp tile wm x wn made of wmiter x wniter blocks of tm x tn outputs per lane,
    ``stages`` tiles in the cp.async ring, block swizzle ``group``, ``__launch_bounds__``'s
    ``min_blocks``; ``reason``: why it is in the sweep (the line's comment)."""
    kernel: str
    bm: int
    bn: int
    bk: int
    wm: int
    wn: int
    wmiter: int
    wniter: int
    tm: int
    tn: int
    stages: int
    group: int
    min_blocks: int
    reason: str = ""

    @property
    def threads(self) -> int:
        return (self.bm // self.wm) * (self.bn // self.wn) * 32

    @property
    def thread_tile(self) -> tuple:
        """Outputs per thread (rows, columns)."""
        return self.wmiter * self.tm, self.wniter * self.tn

    @property
    def shared_bytes(self) -> int:
        """Dynamic shared memory of one block: STAGES tiles of A (transposed, padded) and B."""
        return self.stages * self.bk * (self.bm + V8_PAD + self.bn) * 4

    @property
    def describe(self) -> str:
        fm, fn = self.thread_tile
        return (f"{self.bm}x{self.bn}x{self.bk} tiles, {self.threads // 32} warps of {self.wm}x{self.wn}, "
                f"{fm}x{fn} outputs a thread, {self.stages} stages, group {self.group}, "
                f"min {self.min_blocks} block{'s' if self.min_blocks > 1 else ''}/SM")

    @property
    def label(self) -> str:
        """The chapter's name of this configuration as the v8 row."""
        fm, fn = self.thread_tile
        return f"v8 cp.async {self.bm}x{self.bn}x{self.bk} {fm}x{fn}/thread {self.stages} stages"

    @property
    def plan(self) -> "GemmPlan":
        return GemmPlan((self.bm, self.bn), (self.threads,), shared=self.shared_bytes)


def _template_configs(cls, line: re.Pattern, knobs: int, source: str | None = None) -> tuple:
    """One ``cls`` per template line of gemm.cu (``V8_KERNEL(name, knobs...) // reason``)."""
    text = CU_PATH.read_text() if source is None else source
    return tuple(cls(m.group(1), *(int(m.group(i)) for i in range(2, knobs + 2)), (m.group(knobs + 2) or "").strip())
                 for m in line.finditer(text))


def _find_config(configs: tuple, kernel: str, family: str):
    """The entry of ``configs`` called ``kernel`` (KeyError naming the known ones)."""
    for c in configs:
        if c.kernel == kernel:
            return c
    raise KeyError(f"no {family} configuration {kernel!r}; gemm.cu has {', '.join(c.kernel for c in configs)}")


def _reduced_source(kernel: str, macro: str, sections: list) -> str:
    """gemm.cu with every line blanked (line numbers kept) except the file's head, the float4
    helpers, the ``sections`` given as (first line's marker, marker of the line after the last,
    offset added to both), and of the ``macro(...)`` lines only ``kernel``'s."""
    text = CU_PATH.read_text()
    lines = text.splitlines(keepends=True)

    def line_of(marker):
        return text[:text.index(marker)].count("\n")

    keep = [(0, line_of("#define TILE 16") + 1), (line_of("// A 4-wide slice of row r"), line_of("// v6's body"))]
    keep += [(line_of(first) + shift, line_of(after) + shift) for first, after, shift in sections]
    out = []
    for i, line in enumerate(lines):
        kept = any(a <= i < b for a, b in keep)
        if line.startswith(f"{macro}(") and not line.startswith(f"{macro}({kernel},"):
            kept = False
        out.append(line if kept else "\n")
    return "".join(out)


#: every V8_KERNEL line of gemm.cu: the sweep benchmarks/gemm_v8_sweep.py times against cuBLAS
V8_CONFIGS = _template_configs(V8Config, _V8_LINE, 12)
#: the configuration the chapter's v8 row runs: the fastest correct one of the last sweep on the
#: H100 (benchmarks/results/gemm_v8_sweep_h100.json, "best"); set by hand after a sweep
V8_CHAMPION = "gemm_v8_128x256x8_w64x64_t16x8_s3_g8_b1"


def v8_config(kernel: str) -> V8Config:
    """The V8_CONFIGS entry of ``kernel`` (KeyError naming the known ones)."""
    return _find_config(V8_CONFIGS, kernel, "v8")


def v8_source(kernel: str) -> str:
    """gemm.cu reduced to what v8's ``kernel`` needs, every other line blanked (line numbers
    kept): the file's head, the float4 helpers (load4/store4), the v8 section with only that
    V8_KERNEL line. What the sweep compiles per configuration: quick, and one configuration
    that fails to build leaves the others timed."""
    v8_config(kernel)
    return _reduced_source(kernel, "V8_KERNEL", [("// v8: what v7 still lacked", "// v9: v8's sweep showed", -1)])


# ------------------------------------------------------------------------------------------
# v9 (CUDA C only): the SgemmStaged template of gemm.cu, two kernels per V9_KERNEL line
# ------------------------------------------------------------------------------------------
_V9_LINE = re.compile(r"^V9_KERNEL\((gemm_v9_\w+), " + ", ".join([r"(\d+)"] * 10) + r"\)\s*(?://\s*(.*))?$", re.M)


@dataclass(frozen=True)
class V9Config:
    """One instantiation of gemm.cu's SgemmStaged (a ``V9_KERNEL(...)`` line): block tile
    bm x bn x bk, warps_m x warps_n warps, each lane mi x ni blocks of 4 x 4 outputs, block
    swizzle ``group``, ``__launch_bounds__``'s ``min_blocks``, ``asynchronous`` (1: cp.async copies
    instead of staging registers); ``reason``: the line's comment.
    Two kernels: ``kernel`` (float4 rows: K % 4 == 0 and N % 4 == 0) and ``kernel + "_scalar"``."""
    kernel: str
    bm: int
    bn: int
    bk: int
    warps_m: int
    warps_n: int
    mi: int
    ni: int
    group: int
    min_blocks: int
    asynchronous: int = 0
    reason: str = ""

    @property
    def threads(self) -> int:
        return self.warps_m * self.warps_n * 32

    @property
    def thread_tile(self) -> tuple:
        """Outputs per thread (rows, columns)."""
        return 4 * self.mi, 4 * self.ni

    @property
    def shared_bytes(self) -> int:
        """Static shared memory of one block: two tiles of A (transposed, padded) and B."""
        return 2 * self.bk * (self.bm + V8_PAD + self.bn) * 4

    @property
    def describe(self) -> str:
        fm, fn = self.thread_tile
        return (f"{self.bm}x{self.bn}x{self.bk} tiles, {self.warps_m}x{self.warps_n} warps, "
                f"{fm}x{fn} outputs a thread, group {self.group}, "
                f"min {self.min_blocks} block{'s' if self.min_blocks > 1 else ''}/SM")

    @property
    def label(self) -> str:
        """The chapter's name of this configuration as the v9 row."""
        fm, fn = self.thread_tile
        how = "cp.async" if self.asynchronous else "staged"
        return f"v9 {how} {self.bm}x{self.bn}x{self.bk} {fm}x{fn}/thread"

    @property
    def plan(self) -> "GemmPlan":
        return GemmPlan((self.bm, self.bn), (self.threads,), scalar=self.kernel + "_scalar")


#: every V9_KERNEL line of gemm.cu: the sweep benchmarks/gemm_v8_sweep.py times against cuBLAS
V9_CONFIGS = _template_configs(V9Config, _V9_LINE, 10)
#: the configuration the chapter's v9 row runs: the fastest correct one of the last sweep on the
#: H100 (benchmarks/results/gemm_v9_sweep_h100.json, "best_v9"); set by hand after a sweep
V9_CHAMPION = "gemm_v9_128x128x8_w2x2_t16x8_g0_b2"


def v9_config(kernel: str) -> V9Config:
    """The V9_CONFIGS entry of ``kernel`` (KeyError naming the known ones)."""
    return _find_config(V9_CONFIGS, kernel, "v9")


def v9_source(kernel: str) -> str:
    """gemm.cu reduced to what v9's ``kernel`` needs (as :func:`v8_source`): the file's head, the
    float4 helpers, the block swizzle and the v9 section with only that V9_KERNEL line."""
    v9_config(kernel)
    return _reduced_source(kernel, "V9_KERNEL", [
        ("__device__ __forceinline__ unsigned shared_address", "template <int BM, int BN, int BK, int WM, int WN, int WMITER", 0),
        ("// v9: v8's sweep showed", "// The seed report's layer", -1)])


class GemmPlan:
    """The launch plan of one GEMM version: one launch, a grid of blocks each covering a
    ``tile`` (rows, columns) of C with ``threads`` threads. ``scalar`` names the CUDA C twin
    for sizes whose rows float4 cannot load (None: the kernel takes any size); ``rows_on_x``:
    blockIdx.x walks the rows of C (v1's uncoalesced mapping); ``shared``: dynamic shared
    memory per block in bytes (v8's ring)."""

    def __init__(self, tile, block, scalar=None, rows_on_x=False, shared=0):
        self.tile, self.block, self.scalar, self.rows_on_x = tile, block, scalar, rows_on_x
        self.shared = shared
        self.per_thread = tile[0] * tile[1] // int(np.prod(block))

    def grid(self, m: int, n: int) -> tuple:
        tm, tn = self.tile
        return (cdiv(m, tm), cdiv(n, tn)) if self.rows_on_x else (cdiv(n, tn), cdiv(m, tm))

    def __call__(self, version, impl, xp, a, b, out=None):
        from simtlab.versions import Launch

        m, k = a.shape
        n = b.shape[1]
        c = xp.zeros((m, n), xp.float32) if out is None else out
        name = version.kernel(impl)
        if impl == "cuda-c" and self.scalar and (n % 4 or k % 4):
            name = self.scalar            # rows of A and B start 16-byte aligned only when K, N % 4 == 0
        return [Launch(name, self.grid(m, n), self.block, (a, b, c, np.int32(m), np.int32(n), np.int32(k)),
                       shared=self.shared)], c


# ------------------------------------------------------------------------------------------
# Split-K (CUDA C only): v7's tile over one slice of K per blockIdx.z, added into a zeroed C
# ------------------------------------------------------------------------------------------
#: gemm.cu's SPLITK_CONFIG: v7's 128 x 128 x 16 tile, 256 threads, 2 blocks per SM
SPLITK_TILE, SPLITK_BK, SPLITK_THREADS, SPLITK_BLOCKS_PER_SM = (128, 128), 16, 256, 2


class SplitKPlan(GemmPlan):
    """The split-K launch: a grid of tiles x ``splits`` along z, each split multiplying its
    tiles over ceil(K / 16 / splits) whole BK tiles of K and adding them into C with atomicAdd.
    C is zeroed first (``Launch.zero``: a memset on the GPU, timed with the kernel)."""

    def __init__(self, splits: int):
        if int(splits) < 1:
            raise ValueError(f"splits must be at least 1, got {splits}")
        super().__init__(SPLITK_TILE, (SPLITK_THREADS,), scalar="gemm_splitk_scalar")
        self.splits = int(splits)

    def grid(self, m: int, n: int) -> tuple:
        return (*super().grid(m, n), self.splits)

    def __call__(self, version, impl, xp, a, b, out=None):
        from simtlab.versions import Launch

        version.kernel(impl)                 # CUDA C only: a clear error for numba
        m, k = a.shape
        n = b.shape[1]
        c = xp.empty((m, n), xp.float32) if out is None else out
        name = self.scalar if n % 4 or k % 4 else version.cuda_c
        return [Launch(name, self.grid(m, n), self.block, (a, b, c, np.int32(m), np.int32(n), np.int32(k)),
                       zero=(c,))], c


def splitk_version(splits: int):
    """A :class:`~simtlab.versions.Version` row for split-K with ``splits`` slices of K (not in
    :data:`VERSIONS`: its speed depends on the shape, benchmarks/gpu_gemm.py --split-k times it)."""
    return _version(f"split-K x{int(splits)}", None, "gemm_splitk", SplitKPlan(splits))


def splitk_ranges(k: int, splits: int, bk: int = SPLITK_BK) -> list:
    """The [k_begin, k_end) slice of K each split multiplies (gemm.cu's gemm_splitk_body): whole
    BK tiles, ceil(tiles / splits) of them a split; a split past the last tile gets none."""
    tiles = cdiv(k, bk)
    per = cdiv(tiles, splits)
    return [(min(k, z * per * bk), min(k, (z + 1) * per * bk)) for z in range(splits)]


def _square_bytes(n):
    return gemm_bytes(n, n, n)


def _square_flops(n):
    return gemm_flops(n, n, n)


def _version(label, numba, cuda_c, plan):
    from simtlab.versions import Version

    return Version(label, numba, cuda_c, plan, _square_bytes, _square_flops)


#: chapter 6's versions: label, numba kernel, CUDA C kernel, launch plan, bytes(n), flops(n) for
#: n x n times n x n. The emulator tests, the GPU tests and the benchmark all launch from here.
VERSIONS = (
    _version("v1 naive", "gemm_v1_naive", "gemm_v1_naive", GemmPlan((TILE, TILE), (TILE, TILE), rows_on_x=True)),
    _version("v2 coalesced", "gemm_v2_coalesced", "gemm_v2_coalesced", GemmPlan((TILE, TILE), (TILE, TILE))),
    _version("v3 shared tiles", "gemm_v3_tiled", "gemm_v3_tiled", GemmPlan((TILE, TILE), (TILE, TILE))),
    _version("v4 1-D blocking", "gemm_v4_blocking_1d", "gemm_v4_blocking_1d", GemmPlan((BM4, BN4), (THREADS4,))),
    _version("v5 2-D blocking", "gemm_v5_blocking_2d", "gemm_v5_blocking_2d", GemmPlan((BM5, BN5), (THREADS5,))),
    _version("v6 float4 loads", None, "gemm_v6_float4", GemmPlan(TILE6, (THREADS6,), scalar="gemm_v6_float4_scalar")),
    _version("v7 warp tiling", "gemm_v7_warptile", "gemm_v7_warptile",
             GemmPlan(TILE7, (THREADS7,), scalar="gemm_v7_warptile_scalar")),
    _version(v8_config(V8_CHAMPION).label, None, V8_CHAMPION, v8_config(V8_CHAMPION).plan),
    _version(v9_config(V9_CHAMPION).label, None, V9_CHAMPION, v9_config(V9_CHAMPION).plan),
)
#: labels of the versions numba (and so the emulator) runs
NUMBA_VERSIONS = tuple(v.label for v in VERSIONS if v.numba)


def version(label: str):
    """The row of :data:`VERSIONS` called ``label`` (ValueError naming the versions)."""
    from simtlab.versions import find

    return find(VERSIONS, label)


def launch_plan(label: str, m: int, n: int) -> tuple[tuple, tuple]:
    """(grid, block) of a version for an M x N output (numba and CUDA C alike)."""
    plan = version(label).plan
    return plan.grid(m, n), plan.block


def kernel_of(label: str):
    """The numba kernel of a version."""
    return globals()[version(label).kernel("numba")]


def gemm_with(label: str, a, b, launch):
    """C = A @ B by version ``label``, its plan's launches made by ``launch(kernel, grid, block,
    *args)`` (the emulator, or numba on a GPU). Returns C (float32, M x N)."""
    from simtlab.versions import run_plan

    a = np.ascontiguousarray(a, np.float32)
    b = np.ascontiguousarray(b, np.float32)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"A ({a.shape}) and B ({b.shape}) do not multiply: A must be M x K and B K x N")
    launches, c = version(label).launches("numba", np, a, b)
    run_plan("gemm", launches, launch)
    return c


def gemm_flops(m, n, k):
    return 2 * m * n * k


def gemm_bytes(m, n, k, itemsize=4):
    """Bytes if each matrix crosses DRAM exactly once (the roofline's least traffic)."""
    return (m * k + k * n + m * n) * itemsize


def global_loads(label: str, m: int, n: int, k: int) -> int:
    """float32 loads from global memory that version ``label`` issues (loads outside the matrices are
    skipped, so they do not count): one per operand of every FMA for v1/v2; for a tiled version,
    every block loads the part of its BM-row strip of A and its BN-column strip of B that exists,
    once: each A element is loaded once per column of blocks, each B element once per row."""
    if label in ("v1 naive", "v2 coalesced"):
        return 2 * m * n * k
    tm, tn = version(label).plan.tile
    return cdiv(n, tn) * m * k + cdiv(m, tm) * k * n


def loads_per_flop(label: str, m: int, n: int, k: int) -> float:
    """Global float32 loads per FLOP (1 for one thread per output, 1/TILE for v3, ...)."""
    return global_loads(label, m, n, k) / gemm_flops(m, n, k)
