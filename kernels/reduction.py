"""Chapter 5: sum reduction, from the seed report's interleaved tree to a grid-stride kernel
with warp shuffles, and the vector-matrix product of the seed lab report by block-wise reduction.

Every kernel here runs on a GPU (numba-cuda) and in the emulator. The block kernels (v1-v5)
turn each block's slice of ``x`` into one partial sum; :func:`reduce_passes` launches one
again on the partials until one value is left. kernels/reduction.cu has the same versions in
CUDA C++, plus float4 loads and the last-block-done combination.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32

BLOCK = 256                   # threads per block: shared arrays have BLOCK slots; v1-v4 also run with
                              # any power of two below it (v5 from 64), v6/v7 need exactly BLOCK
WARPS = BLOCK // 32
FULL_MASK = 0xFFFFFFFF        # all 32 lanes take part in a shuffle
UNROLL = 4                    # independent loads in flight per thread in the grid-stride kernels


# ------------------------------------------------------------------------------------------
# CPU references
# ------------------------------------------------------------------------------------------
def sum_cpu(x):
    """The sum in float64, rounded once to float32: the value every version is compared with."""
    return np.float32(np.asarray(x).astype(np.float64).sum())


def vecmat_cpu(v, w):
    """``out[r] = sum_k w[r, k] * v[k]``: the seed's vector-matrix product with the matrix stored
    transposed (one row of ``w`` per output), in float64 rounded to float32."""
    return (w.astype(np.float64) @ v.astype(np.float64)).astype(np.float32)


# ------------------------------------------------------------------------------------------
# One partial sum per block: the tree inside a block
# ------------------------------------------------------------------------------------------
# v1: the seed's interleaved tree: at each level the threads with t % (2*stride) == 0 add
#   their neighbour; they are spread over every warp, so all warps diverge
@cuda.jit
def reduce_v1_interleaved(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    s[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    stride = 1
    while stride < cuda.blockDim.x:
        if t % (2 * stride) == 0:
            s[t] += s[t + stride]
        cuda.syncthreads()                 # the next level reads what this one wrote
        stride *= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


# v2: the same pairs, but thread t adds pair t (index k = 2*stride*t): active threads are
#   contiguous, whole warps idle instead of diverging; the strided index now hits the same
#   shared bank from several lanes
@cuda.jit
def reduce_v2_strided_index(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    s[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    stride = 1
    while stride < cuda.blockDim.x:
        k = 2 * stride * t
        if k < cuda.blockDim.x:
            s[k] += s[k + stride]
        cuda.syncthreads()
        stride *= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


# v3: sequential addressing: thread t adds s[t + step] to s[t], the upper half onto the lower;
#   contiguous threads and consecutive words, so no divergence (while step >= 32) and no bank
#   conflicts
@cuda.jit
def reduce_v3_sequential(x, partial):
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


#: the foundation's name for the sequential-addressing tree (tests and benchmarks use it)
block_sum_tree = reduce_v3_sequential


# broken on purpose (the chapter shows what the emulator finds): v3 without the barrier
#   between levels, so a level may read a slot the previous level has not written yet
@cuda.jit
def reduce_v3_missing_barrier(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    s[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        step //= 2                         # no syncthreads() here
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


# v4: first add during load (the seed's final kernel): each thread reads two elements a block
#   apart and stores their sum, so a block covers 2*BLOCK elements and half the threads of v3
#   sit idle no more
@cuda.jit
def reduce_v4_first_add(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * (2 * cuda.blockDim.x) + t
    a = x[i] if i < x.size else float32(0.0)
    b = x[i + cuda.blockDim.x] if i + cuda.blockDim.x < x.size else float32(0.0)
    s[t] = a + b
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


# v5: v4 with the last 32 partial sums added by warp 0 with shfl_down_sync: registers instead
#   of shared memory, and no barrier for the last 6 levels (8 barriers -> 2)
@cuda.jit
def reduce_v5_warp_shuffle(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * (2 * cuda.blockDim.x) + t
    a = x[i] if i < x.size else float32(0.0)
    b = x[i + cuda.blockDim.x] if i + cuda.blockDim.x < x.size else float32(0.0)
    s[t] = a + b
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 32:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t < 32:                             # warp 0 only: all its 32 lanes take part below
        v = s[t] + s[t + 32]
        offset = 16
        while offset > 0:
            v += cuda.shfl_down_sync(FULL_MASK, v, offset)   # lane l adds v of lane l + offset
            offset //= 2
        if t == 0:
            partial[cuda.blockIdx.x] = v


# broken on purpose (chapter 5 shows the races): the classic "unrolled last warp" from before
#   Volta: v4's tree down to 64 sums, then warp 0 adds in shared memory with no barrier, trusting
#   its 32 lanes to run in lock-step. Since Volta they need not (independent thread scheduling),
#   and without `volatile` the compiler may keep s[t] in a register and load s[t + 16] early
@cuda.jit
def reduce_last_warp_unsafe(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * (2 * cuda.blockDim.x) + t
    a = x[i] if i < x.size else float32(0.0)
    b = x[i + cuda.blockDim.x] if i + cuda.blockDim.x < x.size else float32(0.0)
    s[t] = a + b
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 32:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t < 32:                             # lane t + 16 writes s[t + 16] while lane t reads it
        s[t] += s[t + 32]
        s[t] += s[t + 16]
        s[t] += s[t + 8]
        s[t] += s[t + 4]
        s[t] += s[t + 2]
        s[t] += s[t + 1]
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


# the fix that keeps shared memory: read into a register, syncwarp, write, syncwarp: every read
#   of a level comes before any write of it, and every write before the next level's reads
#   (v5's shuffles are the better fix: no shared memory at all)
@cuda.jit
def reduce_last_warp_syncwarp(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * (2 * cuda.blockDim.x) + t
    a = x[i] if i < x.size else float32(0.0)
    b = x[i + cuda.blockDim.x] if i + cuda.blockDim.x < x.size else float32(0.0)
    s[t] = a + b
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 32:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t < 32:
        v = s[t]
        offset = 32
        while offset > 0:
            v += s[t + offset]
            cuda.syncwarp(FULL_MASK)       # all 32 lanes have read this level
            s[t] = v
            cuda.syncwarp(FULL_MASK)       # all 32 lanes have written it
            offset //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


# ------------------------------------------------------------------------------------------
# Many elements per thread: a grid-stride loop, then shuffles inside each warp
# ------------------------------------------------------------------------------------------
@cuda.jit(device=True)
def warp_sum(v):
    """The sum of ``v`` over the 32 lanes of a warp, in lane 0 (other lanes hold partial sums)."""
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(FULL_MASK, v, offset)
        offset //= 2
    return v


@cuda.jit(device=True)
def block_sum(v):
    """The sum of ``v`` over the block, in thread 0: shuffle in each warp, then warp 0 adds the warp sums."""
    sums = cuda.shared.array(WARPS, float32)
    t = cuda.threadIdx.x
    v = warp_sum(v)
    if t % 32 == 0:
        sums[t // 32] = v
    cuda.syncthreads()
    total = float32(0.0)
    if t < 32:
        w = sums[t] if t < WARPS else float32(0.0)
        total = warp_sum(w)
    return total


@cuda.jit(device=True)
def thread_sum(x):
    """This thread's grid-stride share of ``x``: UNROLL independent loads per trip keep more
    requests in flight than one load after another."""
    n = x.size
    i = cuda.grid(1)
    g = cuda.gridsize(1)
    acc = float32(0.0)
    while i + 3 * g < n:
        a = x[i]
        b = x[i + g]
        c = x[i + 2 * g]
        d = x[i + 3 * g]
        acc += (a + b) + (c + d)
        i += 4 * g
    while i < n:
        acc += x[i]
        i += g
    return acc


# v6: grid-stride loop (a few blocks per SM, each thread sums many elements, 4 loads in
#   flight), then shuffles: one partial per block, one barrier in all; a second launch with
#   one block sums the partials
@cuda.jit
def reduce_v6_grid_stride(x, partial):
    total = block_sum(thread_sum(x))
    if cuda.threadIdx.x == 0:
        partial[cuda.blockIdx.x] = total


# v7: v6 whose blocks combine with one atomic add each into out[0] (zeroed first): one launch,
#   but the blocks add in whatever order they finish, so float32 rounding changes from run to
#   run
@cuda.jit
def reduce_v7_atomic(x, out):
    total = block_sum(thread_sum(x))
    if cuda.threadIdx.x == 0:
        cuda.atomic.add(out, 0, total)


# ------------------------------------------------------------------------------------------
# Vector-matrix product by block-wise reduction (the seed lab report)
# ------------------------------------------------------------------------------------------
VM_SHARED = 4000    # the seed's shared cache: one slot per element of a segment, at most 4000


# v1: the lab report's kernel as written: grid (blocks per row, rows), one shared-memory fold
#   per segment of blockDim.x products. BUG: the segment loop steps by blockDim.x * blockDim.x
#   instead of gridDim.x * blockDim.x, so segments are skipped
@cuda.jit
def vecmat_v1_seed(v, w, block_out):
    x = cuda.shared.array(VM_SHARED, float32)
    row = cuda.blockIdx.y
    t = cuda.threadIdx.x
    n = v.size
    start = cuda.blockIdx.x * cuda.blockDim.x
    while start < n:
        length = min(cuda.blockDim.x, n - start)
        if t < length:
            x[t] = w[row, start + t] * v[start + t]
        cuda.syncthreads()
        right = length - 1
        while right > 0:                   # fold the segment in half: x[t] += x[right - t]
            mid = right // 2
            if (right + 1) % 2 == 0:
                if t <= mid:
                    x[t] += x[right - t]
            elif t < mid:
                x[t] += x[right - t]
            right = mid
            cuda.syncthreads()
        if t == 0:
            block_out[row, cuda.blockIdx.x] += x[0]
        cuda.syncthreads()
        start += cuda.blockDim.x * cuda.blockDim.x  # BUG: should be gridDim.x * blockDim.x


# v2: the fix: each thread sums its grid-stride products in a register first, then one
#   block_sum per block (shuffles); one partial per (row, block), no per-segment trees, no +=
#   on global memory
@cuda.jit
def vecmat_v2_grid_stride(v, w, block_out):
    row = cuda.blockIdx.y
    n = v.size
    k = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    step = cuda.gridDim.x * cuda.blockDim.x
    acc = float32(0.0)
    while k < n:
        acc += w[row, k] * v[k]
        k += step
    total = block_sum(acc)
    if cuda.threadIdx.x == 0:
        block_out[row, cuda.blockIdx.x] = total


# the second pass of both vecmat versions: one block per row adds that row's block partials
@cuda.jit
def vecmat_rows(block_out, out):
    row = cuda.blockIdx.x
    acc = float32(0.0)
    j = cuda.threadIdx.x
    while j < block_out.shape[1]:
        acc += block_out[row, j]
        j += cuda.blockDim.x
    total = block_sum(acc)
    if cuda.threadIdx.x == 0:
        out[row] = total


# ------------------------------------------------------------------------------------------
# Row-wise reduction: the per-channel mean behind batch normalisation (the seed report's
# BN_Kernel_Mean_Reduction). x is (channels, elements per channel), one row per channel.
# ------------------------------------------------------------------------------------------
def row_mean_cpu(x):
    """The mean of each row, in float64 rounded once to float32."""
    return np.asarray(x, np.float64).mean(axis=1).astype(np.float32)


# row sums v1: a (blocks per row, rows) grid like the seed's; block (b, r) adds its grid-stride
#   share of row r in registers (consecutive lanes, consecutive columns: coalesced), then one
#   block_sum; a row has several blocks, so a few channels still fill every SM
@cuda.jit
def row_sum_partials(x, partial):
    row = cuda.blockIdx.y
    k = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    step = cuda.gridDim.x * cuda.blockDim.x
    acc = float32(0.0)
    while k < x.shape[1]:
        acc += x[row, k]
        k += step
    total = block_sum(acc)
    if cuda.threadIdx.x == 0:
        partial[row, cuda.blockIdx.x] = total


# second pass: one block per row adds that row's partials and divides by the row's length
@cuda.jit
def row_mean_finish(partial, cols, out):
    row = cuda.blockIdx.x
    acc = float32(0.0)
    j = cuda.threadIdx.x
    while j < partial.shape[1]:
        acc += partial[row, j]
        j += cuda.blockDim.x
    total = block_sum(acc)
    if cuda.threadIdx.x == 0:
        out[row] = total / cols


# ------------------------------------------------------------------------------------------
# Host side: how many elements a block covers, and launching passes until one value is left
# ------------------------------------------------------------------------------------------
#: block kernels (one partial per block) and the elements one block of BLOCK threads covers
BLOCK_KERNELS = {
    "v1 interleaved": (reduce_v1_interleaved, BLOCK),
    "v2 strided index": (reduce_v2_strided_index, BLOCK),
    "v3 sequential": (reduce_v3_sequential, BLOCK),
    "v4 first add": (reduce_v4_first_add, 2 * BLOCK),
    "v5 warp shuffle": (reduce_v5_warp_shuffle, 2 * BLOCK),
}


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def reduce_passes(kernel, x, launch, per_block: int | None = None):
    """Sum ``x`` with a block kernel: launch it on ``x``, then on its partials, until one is left.

    ``launch(kernel, grid, block, src, dst)`` runs one pass (the emulator or a GPU);
    ``per_block``: elements one block covers (looked up in BLOCK_KERNELS when None).
    Returns ``(sum as float32, list of grid sizes, one per pass)``.
    """
    if per_block is None:
        per_block = {k: e for k, e in BLOCK_KERNELS.values()}[kernel]
    src = np.asarray(x, np.float32)
    if src.size == 0:
        raise ValueError("reduce_passes: x is empty; a sum needs at least one element")
    grids = []
    while True:
        grid = cdiv(src.size, per_block)
        dst = np.zeros(grid, np.float32)
        launch(kernel, grid, BLOCK, src, dst)
        grids.append(grid)
        if grid == 1:
            return np.float32(dst[0]), grids
        src = dst


def grid_stride_blocks(n: int, max_blocks: int) -> int:
    """Blocks for a grid-stride kernel: enough for every thread to have work, at most max_blocks."""
    return max(1, min(max_blocks, cdiv(n, BLOCK)))


#: every numba version of the sum: kernel, and how its blocks' partial sums are combined
SUM_KERNELS = {
    **{name: (kernel, "passes") for name, (kernel, _) in BLOCK_KERNELS.items()},
    "v6 grid-stride, second pass": (reduce_v6_grid_stride, "second pass"),
    "v7 grid-stride, atomicAdd": (reduce_v7_atomic, "atomic"),
}


def sum_with(version: str, x, launch, max_blocks: int = 4):
    """The whole sum of ``x`` with one version, every launch it needs made by
    ``launch(kernel, grid, block, *arrays)`` (the emulator, or a GPU with host arrays copied
    back). Grid-stride versions run ``grid_stride_blocks(n, max_blocks)`` blocks."""
    if version not in SUM_KERNELS:
        raise ValueError(f"unknown version {version!r}; the versions are {', '.join(SUM_KERNELS)}")
    kernel, combine = SUM_KERNELS[version]
    x = np.asarray(x, np.float32)
    if combine == "passes":
        return reduce_passes(kernel, x, launch)[0]
    grid = grid_stride_blocks(x.size, max_blocks)
    out = np.zeros(1, np.float32)
    if combine == "atomic":
        launch(kernel, grid, BLOCK, x, out)
        return np.float32(out[0])
    partial = np.zeros(grid, np.float32)
    launch(kernel, grid, BLOCK, x, partial)
    launch(kernel, 1, BLOCK, partial, out)
    return np.float32(out[0])


def vecmat_with(kernel, v, w, launch, blocks_per_row: int = 2, block: int = BLOCK):
    """``w @ v`` with a vecmat kernel on a (blocks_per_row, rows) grid, then ``vecmat_rows``."""
    rows = w.shape[0]
    block_out = np.zeros((rows, blocks_per_row), np.float32)
    launch(kernel, (blocks_per_row, rows), block, v, w, block_out)
    out = np.zeros(rows, np.float32)
    launch(vecmat_rows, rows, BLOCK, block_out, out)
    return out


def row_mean_with(x, launch, blocks_per_row: int = 2):
    """The mean of each row of ``x``: ``row_sum_partials`` on a (blocks_per_row, rows) grid,
    then ``row_mean_finish``, every launch made by ``launch(kernel, grid, block, *args)``."""
    x = np.ascontiguousarray(x, np.float32)
    rows, cols = x.shape
    partial = np.zeros((rows, blocks_per_row), np.float32)
    launch(row_sum_partials, (blocks_per_row, rows), BLOCK, x, partial)
    out = np.zeros(rows, np.float32)
    launch(row_mean_finish, rows, BLOCK, partial, np.float32(cols), out)
    return out


# ------------------------------------------------------------------------------------------
# Napkin math (the benchmark's bytes and FLOPs)
# ------------------------------------------------------------------------------------------
def reduction_bytes(n, itemsize=4):
    """Every element is read once; the partial sums (a few KB) are noise next to n * 4 bytes."""
    return n * itemsize


def reduction_flops(n):
    """n - 1 additions, rounded to n."""
    return n


def vecmat_bytes(rows, n, itemsize=4):
    """The matrix once, the vector once (the other blocks' reads of v hit in L2), the outputs once."""
    return (rows * n + n + rows) * itemsize


def vecmat_flops(rows, n):
    """One multiply and one add per matrix element."""
    return 2 * rows * n


def row_mean_bytes(rows, cols, itemsize=4):
    """Every element read once, one mean written per row (the partials are a few KB)."""
    return (rows * cols + rows) * itemsize
