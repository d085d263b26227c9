"""Chapter 3: communication patterns. Which threads read and write which elements.

map (one in, one out), gather (read from computed places), scatter (write to computed places),
stencil (read a fixed neighbourhood, 1-D and 2-D, 'same' zero padding, halo in shared memory),
transpose (naive, shared-memory tile, padded tile, bigger tile) and copy (strided vs coalesced).
The same kernels in CUDA C++ are in ``kernels/patterns.cu``, with the same names.

All kernels work on float32 data (``idx`` arrays are int32) and accept sizes that are not
multiples of the block: every access is guarded.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32

from simtlab.simt import cdiv
from simtlab.versions import Launch, Version, find

# ------------------------------------------------------------------------------------------
# Compile-time sizes (numba needs shared-array shapes as global constants)
# ------------------------------------------------------------------------------------------
BLOCK = 256                               # threads per block of the 1-D kernels
COPY_STRIDE = 32                          # elements between neighbouring lanes in copy v1

RADIUS = 3                                # 1-D stencil: 2 * RADIUS + 1 = 7 weights
STENCIL_BLOCK = 128                       # threads per block of the 1-D stencils
STENCIL_SHARED = STENCIL_BLOCK + 2 * RADIUS

RADIUS_2D = 1                             # 2-D stencil: 3 x 3 weights
TILE_2D_X, TILE_2D_Y = 32, 8              # 2-D stencil block: 32 x 8 threads, one output each
SHARED_2D_X = TILE_2D_X + 2 * RADIUS_2D
SHARED_2D_Y = TILE_2D_Y + 2 * RADIUS_2D

TILE = 32                                 # transpose: a block moves a TILE x TILE tile
BLOCK_ROWS = 8                            # with TILE x BLOCK_ROWS threads: 4 rows per thread
TILE_PAD = TILE + 1                       # one spare column: a tile column spans all 32 banks
BIG_TILE = 64                             # transpose v4: 64 x 64 tile, 16 elements per thread
BIG_TILE_PAD = BIG_TILE + 1


# ------------------------------------------------------------------------------------------
# CPU references
# ------------------------------------------------------------------------------------------
def map_cpu(x):
    return (2 * x + 1).astype(x.dtype)


def gather_cpu(x, idx):
    """out[i] = x[idx[i]]."""
    return x[idx]


def scatter_cpu(x, idx):
    """out[idx[i]] = x[i]; ``idx`` must be a permutation (two writers to one element race)."""
    out = np.empty_like(x)
    out[idx] = x
    return out


def stencil1d_cpu(x, w):
    """out[i] = sum_k w[k] * x[i + k - R], R = len(w) // 2, x taken as 0 outside (same size out)."""
    r = len(w) // 2
    padded = np.concatenate([np.zeros(r), x.astype(np.float64), np.zeros(r)])
    out = np.zeros(x.size)
    for k in range(len(w)):
        out += float(w[k]) * padded[k:k + x.size]
    return out.astype(x.dtype)


def stencil2d_cpu(x, w):
    """out[r, c] = sum_{i,j} w[i, j] * x[r + i - R, c + j - R], zero outside, same shape out."""
    r = w.shape[0] // 2
    rows, cols = x.shape
    padded = np.zeros((rows + 2 * r, cols + 2 * r))
    padded[r:r + rows, r:r + cols] = x
    out = np.zeros(x.shape)
    for i in range(w.shape[0]):
        for j in range(w.shape[1]):
            out += float(w[i, j]) * padded[i:i + rows, j:j + cols]
    return out.astype(x.dtype)


def transpose_cpu(a):
    return np.ascontiguousarray(a.T)


def copy_cpu(x):
    return x.copy()


# ------------------------------------------------------------------------------------------
# Map: one element in, one element out (launch: cdiv(n, BLOCK) blocks of BLOCK threads)
# ------------------------------------------------------------------------------------------

# v1: thread i reads x[i] and writes out[i]: neighbouring lanes touch neighbouring words
@cuda.jit
def map_v1(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = 2 * x[i] + 1


# ------------------------------------------------------------------------------------------
# Gather and scatter (launch: cdiv(n, BLOCK) blocks of BLOCK threads)
# ------------------------------------------------------------------------------------------

# v1 gather: thread i reads where idx[i] says; the writes stay coalesced, the reads scatter
@cuda.jit
def gather_v1(x, idx, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[idx[i]]


# v1 scatter: thread i writes where idx[i] says; the reads stay coalesced, the writes scatter
@cuda.jit
def scatter_v1(x, idx, out):
    i = cuda.grid(1)
    if i < x.size:
        out[idx[i]] = x[i]


# ------------------------------------------------------------------------------------------
# Copy (launch: cdiv(n, BLOCK) blocks of BLOCK threads; v1 needs COPY_STRIDE * cdiv(n, COPY_STRIDE))
# ------------------------------------------------------------------------------------------

# v1 strided: thread t copies element (t % h) * S + t // h (h = cdiv(n, S)): lanes are S apart
@cuda.jit
def copy_v1_strided(x, out):
    t = cuda.grid(1)
    h = (x.size + COPY_STRIDE - 1) // COPY_STRIDE
    i = (t % h) * COPY_STRIDE + t // h
    if t < h * COPY_STRIDE and i < x.size:
        out[i] = x[i]


# v2 coalesced: thread t copies element t: one warp moves 128 contiguous bytes, 4 sectors
@cuda.jit
def copy_v2_coalesced(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i]


def copy_threads(n: int, version: int) -> int:
    """Threads a copy version needs for n elements (v1 covers whole columns of its n/S x S view)."""
    return cdiv(n, COPY_STRIDE) * COPY_STRIDE if version == 1 else n


# ------------------------------------------------------------------------------------------
# 1-D stencil, 'same' zero padding (launch: cdiv(n, STENCIL_BLOCK) blocks of STENCIL_BLOCK threads)
# ------------------------------------------------------------------------------------------

# seed: the notes' "gather" (average 3 neighbours, written back in place): a data race, wrong
@cuda.jit
def average3_in_place(x):
    i = cuda.grid(1)
    if 0 < i < x.size - 1:
        x[i] = (x[i - 1] + x[i] + x[i + 1]) / 3    # x[i - 1] may already be overwritten


# v1: each thread reads its 2R+1 neighbours from global memory: every x is read 2R+1 times
@cuda.jit
def stencil1d_v1_global(x, w, out):
    i = cuda.grid(1)
    if i < x.size:
        acc = 0.0
        for k in range(2 * RADIUS + 1):
            j = i + k - RADIUS
            if 0 <= j < x.size:
                acc += w[k] * x[j]
        out[i] = acc


# v2: the block loads its tile plus a halo of R on each side into shared memory once, coalesced
@cuda.jit
def stencil1d_v2_shared(x, w, out):
    s = cuda.shared.array(STENCIL_SHARED, float32)
    t = cuda.threadIdx.x
    start = cuda.blockIdx.x * STENCIL_BLOCK - RADIUS      # global index of s[0]
    for j in range(t, STENCIL_SHARED, STENCIL_BLOCK):     # 134 slots, 128 threads: 6 load twice
        g = start + j
        if 0 <= g < x.size:
            s[j] = x[g]
        else:
            s[j] = 0.0                                    # 'same' zero padding
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < x.size:
        acc = 0.0
        for k in range(2 * RADIUS + 1):
            acc += w[k] * s[t + k]
        out[i] = acc


# ------------------------------------------------------------------------------------------
# 2-D stencil, 'same' zero padding (launch: blocks of TILE_2D_X x TILE_2D_Y threads,
# grid (cdiv(cols, TILE_2D_X), cdiv(rows, TILE_2D_Y)))
# ------------------------------------------------------------------------------------------

# v1: each thread reads its (2R+1)^2 neighbourhood from global memory
@cuda.jit
def stencil2d_v1_global(x, w, out):
    c, r = cuda.grid(2)
    rows, cols = x.shape
    if r < rows and c < cols:
        acc = 0.0
        for i in range(2 * RADIUS_2D + 1):
            for j in range(2 * RADIUS_2D + 1):
                rr = r + i - RADIUS_2D
                cc = c + j - RADIUS_2D
                if 0 <= rr < rows and 0 <= cc < cols:
                    acc += w[i, j] * x[rr, cc]
        out[r, c] = acc


# v2: the block loads its (8+2R) x (32+2R) tile with halo into shared memory once, row by row
@cuda.jit
def stencil2d_v2_shared(x, w, out):
    s = cuda.shared.array((SHARED_2D_Y, SHARED_2D_X), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = x.shape
    row0 = cuda.blockIdx.y * TILE_2D_Y - RADIUS_2D       # global row and column of s[0, 0]
    col0 = cuda.blockIdx.x * TILE_2D_X - RADIUS_2D
    for i in range(ty, SHARED_2D_Y, TILE_2D_Y):
        for j in range(tx, SHARED_2D_X, TILE_2D_X):
            rr = row0 + i
            cc = col0 + j
            if 0 <= rr < rows and 0 <= cc < cols:
                s[i, j] = x[rr, cc]
            else:
                s[i, j] = 0.0
    cuda.syncthreads()
    c, r = cuda.grid(2)
    if r < rows and c < cols:
        acc = 0.0
        for i in range(2 * RADIUS_2D + 1):
            for j in range(2 * RADIUS_2D + 1):
                acc += w[i, j] * s[ty + i, tx + j]
        out[r, c] = acc


# ------------------------------------------------------------------------------------------
# Transpose: out (cols x rows) = a.T (launch: blocks of TILE x BLOCK_ROWS threads, grid
# (cdiv(cols, TILE), cdiv(rows, TILE)); v4: BIG_TILE instead of TILE in the grid)
# ------------------------------------------------------------------------------------------

# v1 naive: lanes read along a row of a (coalesced) but write down a column of out (32 sectors)
@cuda.jit
def transpose_v1_naive(a, out):
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x         # column of a
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y         # first row of a for this thread
    for j in range(0, TILE, BLOCK_ROWS):
        if y + j < a.shape[0] and x < a.shape[1]:
            out[x, y + j] = a[y + j, x]


# v2 tile: stage a 32x32 tile in shared memory so both the read and the write walk along rows
@cuda.jit
def transpose_v2_tile(a, out):
    tile = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if y + j < a.shape[0] and x < a.shape[1]:
            tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx                       # the tile's place in out: blocks swap
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if y + j < out.shape[0] and x < out.shape[1]:
            out[y + j, x] = tile[tx, ty + j]              # a tile column: 32 lanes, one bank


# v3 padded tile: rows of 33 floats put the 32 words of a tile column in 32 different banks
@cuda.jit
def transpose_v3_padded(a, out):
    tile = cuda.shared.array((TILE, TILE_PAD), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if y + j < a.shape[0] and x < a.shape[1]:
            tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if y + j < out.shape[0] and x < out.shape[1]:
            out[y + j, x] = tile[tx, ty + j]


# v4 big tile: a 64x64 padded tile, 16 elements per thread: more loads in flight per thread
@cuda.jit
def transpose_v4_big_tile(a, out):
    tile = cuda.shared.array((BIG_TILE, BIG_TILE_PAD), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    bx = cuda.blockIdx.x * BIG_TILE
    by = cuda.blockIdx.y * BIG_TILE
    for j in range(0, BIG_TILE, BLOCK_ROWS):
        for i in range(0, BIG_TILE, TILE):
            if by + ty + j < a.shape[0] and bx + tx + i < a.shape[1]:
                tile[ty + j, tx + i] = a[by + ty + j, bx + tx + i]
    cuda.syncthreads()
    for j in range(0, BIG_TILE, BLOCK_ROWS):
        for i in range(0, BIG_TILE, TILE):
            if bx + ty + j < out.shape[0] and by + tx + i < out.shape[1]:
                out[bx + ty + j, by + tx + i] = tile[tx + i, ty + j]


TRANSPOSES = {1: transpose_v1_naive, 2: transpose_v2_tile, 3: transpose_v3_padded,
              4: transpose_v4_big_tile}


def transpose_launch(shape, version: int = 3):
    """(grid, block) for transpose ``version`` of an array of ``shape`` (rows, cols)."""
    rows, cols = shape
    tile = BIG_TILE if version == 4 else TILE
    return (cdiv(cols, tile), cdiv(rows, tile)), (TILE, BLOCK_ROWS)


def stencil2d_launch(shape):
    rows, cols = shape
    return (cdiv(cols, TILE_2D_X), cdiv(rows, TILE_2D_Y)), (TILE_2D_X, TILE_2D_Y)


# ------------------------------------------------------------------------------------------
# Napkin math: the fewest bytes each kernel must move (float32 data, int32 indices)
# ------------------------------------------------------------------------------------------
def copy_bytes(n, itemsize=4):
    """Read n, write n. The strided copy needs the same bytes but moves 8x more sectors."""
    return 2 * n * itemsize


map_bytes = copy_bytes
transpose_bytes = copy_bytes            # n = rows * cols: read a once, write out once


def gather_bytes(n, itemsize=4):
    """Read idx and x, write out (a random gather really moves a 32-byte sector per x read)."""
    return 3 * n * itemsize


scatter_bytes = gather_bytes


def stencil1d_bytes(n, itemsize=4):
    """Read x once and write out once; the weights are a few bytes, held in cache."""
    return 2 * n * itemsize


stencil2d_bytes = stencil1d_bytes       # n = rows * cols


def stencil1d_flops(n):
    return 2 * (2 * RADIUS + 1) * n


def stencil2d_flops(n):
    return 2 * (2 * RADIUS_2D + 1) ** 2 * n


# ------------------------------------------------------------------------------------------
# Launch plans and the table of versions (simtlab/versions.py): the emulator, the GPU tests and
# the benchmark launch these. Sizes for the CUDA C twin are np.int32 (numba reads shapes).
# ------------------------------------------------------------------------------------------
def matrix_shape(n: int) -> tuple[int, int]:
    """(rows, cols) of the matrix the 2-D kernels use for ``n`` elements: as square as possible."""
    cols = max(1, math.isqrt(n))
    return n // cols, cols


def _unwritten(xp, shape):
    # NaN everywhere: an element a kernel never wrote shows in the check
    return xp.full(shape, np.nan, dtype=xp.float32)


def plan_copy(version_number: int):
    def plan(version, impl, xp, x):
        n = int(x.size)
        out = _unwritten(xp, x.shape)
        grid = cdiv(copy_threads(n, version_number), BLOCK)
        return [Launch(version.kernel(impl), grid, BLOCK, (x, out, np.int32(n)))], out
    return plan


def plan_transpose(version_number: int):
    def plan(version, impl, xp, a):
        rows, cols = a.shape
        out = _unwritten(xp, (cols, rows))
        grid, block = transpose_launch(a.shape, version_number)
        return [Launch(version.kernel(impl), grid, block, (a, out, np.int32(rows), np.int32(cols)))], out
    return plan


def plan_stencil1d(version, impl, xp, x, w):
    n = int(x.size)
    out = _unwritten(xp, x.shape)
    return [Launch(version.kernel(impl), cdiv(n, STENCIL_BLOCK), STENCIL_BLOCK, (x, w, out, np.int32(n)))], out


def plan_stencil2d(version, impl, xp, x, w):
    rows, cols = x.shape
    out = _unwritten(xp, x.shape)
    grid, block = stencil2d_launch(x.shape)
    return [Launch(version.kernel(impl), grid, block, (x, w, out, np.int32(rows), np.int32(cols)))], out


def plan_indexed(version, impl, xp, x, idx):
    n = int(x.size)
    out = _unwritten(xp, x.shape)
    return [Launch(version.kernel(impl), cdiv(n, BLOCK), BLOCK, (x, idx, out, np.int32(n)))], out


def _matrix_bytes(n):
    rows, cols = matrix_shape(n)
    return transpose_bytes(rows * cols)


def _v(label, kernel, plan, nbytes, group, flops=None):
    return Version(label, kernel, kernel, plan, nbytes, flops, group=group)


#: chapter 3's versions: label, numba kernel, CUDA C kernel, launch plan, bytes(n), flops(n).
#: ``group`` says which CPU reference (and inputs) a version shares with its siblings.
VERSIONS = (
    _v("copy v1 strided (32 apart)", "copy_v1_strided", plan_copy(1), copy_bytes, "copy"),
    _v("copy v2 coalesced", "copy_v2_coalesced", plan_copy(2), copy_bytes, "copy"),
    _v("transpose v1 naive", "transpose_v1_naive", plan_transpose(1), _matrix_bytes, "transpose"),
    _v("transpose v2 shared tile", "transpose_v2_tile", plan_transpose(2), _matrix_bytes, "transpose"),
    _v("transpose v3 padded tile", "transpose_v3_padded", plan_transpose(3), _matrix_bytes, "transpose"),
    _v("transpose v4 64x64 padded tile", "transpose_v4_big_tile", plan_transpose(4), _matrix_bytes, "transpose"),
    _v("stencil 1-D (7 points) v1 global reads", "stencil1d_v1_global", plan_stencil1d, stencil1d_bytes,
       "stencil1d", stencil1d_flops),
    _v("stencil 1-D (7 points) v2 shared halo", "stencil1d_v2_shared", plan_stencil1d, stencil1d_bytes,
       "stencil1d", stencil1d_flops),
    _v("stencil 2-D (3x3) v1 global reads", "stencil2d_v1_global", plan_stencil2d, _matrix_bytes,
       "stencil2d", lambda n: stencil2d_flops(math.prod(matrix_shape(n)))),
    _v("stencil 2-D (3x3) v2 shared halo", "stencil2d_v2_shared", plan_stencil2d, _matrix_bytes,
       "stencil2d", lambda n: stencil2d_flops(math.prod(matrix_shape(n)))),
    _v("gather v1 (random permutation)", "gather_v1", plan_indexed, gather_bytes, "gather"),
    _v("scatter v1 (random permutation)", "scatter_v1", plan_indexed, scatter_bytes, "scatter"),
)
