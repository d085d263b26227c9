"""Chapter 5: sum reduction, from the Cairo graduation report's interleaved tree to a grid-stride kernel
with warp shuffles, and the vector-matrix product of the Waterloo lab report by block-wise reduction.

Every kernel here runs on a GPU (numba-cuda) and in the emulator. The block kernels (v1-v5)
turn each block's slice of ``x`` into one partial sum; :func:`reduce_passes` launches one
again on the partials until one value is left. kernels/reduction.cu has the same versions in
CUDA C++, plus float4 loads and the last-block-done combination.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32

from simtlab.simt import cdiv
from simtlab.versions import Launch, Version, find, run_plan

BLOCK = 256                   # threads per block: shared arrays have BLOCK slots; v1-v4 also run with
                              # any power of two below it (v5 from 64), v6/v7 need exactly BLOCK
WARPS = BLOCK // 32
FULL_MASK = 0xFFFFFFFF        # all 32 lanes take part in a shuffle


# ------------------------------------------------------------------------------------------
# CPU references
# ------------------------------------------------------------------------------------------
def sum_cpu(x):
    """The sum in float64, rounded once to float32: the value every version is compared with."""
    return np.float32(np.asarray(x).astype(np.float64).sum())


def vecmat_cpu(v, w):
    """``out[r] = sum_k w[r, k] * v[k]``: the Waterloo lab report's vector-matrix product with the matrix stored
    transposed (one row of ``w`` per output), in float64 rounded to float32."""
    return (w.astype(np.float64) @ v.astype(np.float64)).astype(np.float32)


# ------------------------------------------------------------------------------------------
# One partial sum per block: the tree inside a block
# ------------------------------------------------------------------------------------------
# v1: the Cairo graduation report's interleaved tree: at each level the threads with t % (2*stride) == 0 add
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


# v4: first add during load (the Cairo graduation report's final kernel): each thread reads two elements a block
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
    """This thread's grid-stride share of ``x``: four independent loads per trip keep more
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
# Vector-matrix product by block-wise reduction (the Waterloo lab report)
# ------------------------------------------------------------------------------------------
VM_SHARED = 4000    # the Waterloo lab report's shared cache: one slot per element of a segment, at most 4000


# v1: the Waterloo lab report's kernel as written: grid (blocks per row, rows), one shared-memory fold
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
# Row-wise reduction: the per-channel mean behind batch normalisation (the Cairo graduation report's
# BN_Kernel_Mean_Reduction). x is (channels, elements per channel), one row per channel.
# ------------------------------------------------------------------------------------------
def row_mean_cpu(x):
    """The mean of each row, in float64 rounded once to float32."""
    return np.asarray(x, np.float64).mean(axis=1).astype(np.float32)


# row sums v1: a (blocks per row, rows) grid like the Cairo graduation report's; block (b, r) adds its grid-stride
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


#: the vector-matrix product's matrix for n elements: ROWS outputs (the Waterloo lab report's 10 neurons)
ROWS = 10


def vecmat_shape(n: int) -> tuple[int, int]:
    """(rows, columns) of the benchmark's matrix for ``n`` elements."""
    return ROWS, max(1, n // ROWS)


def vecmat_bytes(rows, n, itemsize=4):
    """The matrix once, the vector once, the outputs once. v (107 MB at the benchmark's size) is larger
    than the L2, yet Nsight Compute counted exactly matrix + v read from DRAM: the blocks of all rows
    that read the same part of v run at the same time and share it through L2."""
    return (rows * n + n + rows) * itemsize


def vecmat_flops(rows, n):
    """One multiply and one add per matrix element."""
    return 2 * rows * n


# ------------------------------------------------------------------------------------------
# Launch plans: every launch one whole sum (or product) needs. The emulator, the GPU tests and
# the benchmark all run these (simtlab/versions.py); sizes for the CUDA C twin are np.int64/32.
# ------------------------------------------------------------------------------------------
def grid_stride_blocks(n: int, max_blocks: int) -> int:
    """Blocks for a grid-stride kernel: enough for every thread to have work, at most max_blocks."""
    return max(1, min(max_blocks, cdiv(n, BLOCK)))


def _check_sum_input(x):
    if x.ndim != 1 or x.size == 0 or x.dtype != np.float32:
        raise ValueError(f"x must be a non-empty 1-D float32 array, got {x.dtype} of shape {x.shape}: "
                         "a sum needs at least one element")


def plan_passes(elements_per_thread: int):
    """Block kernels (v1-v5): one partial sum per block, launched again on the partials until one
    value is left. A block of BLOCK threads covers ``elements_per_thread * BLOCK`` elements."""
    def plan(version, impl, xp, x):
        _check_sum_input(x)
        name, per_block = version.kernel(impl), elements_per_thread * BLOCK
        launches, src = [], x
        while True:
            grid = cdiv(int(src.size), per_block)
            dst = xp.zeros(grid, xp.float32)
            launches.append(Launch(name, grid, BLOCK, (src, dst, np.int64(src.size))))
            if grid == 1:
                return launches, dst
            src = dst
    plan.elements_per_thread = elements_per_thread
    return plan


def plan_second_pass(version, impl, xp, x, max_blocks: int = 4):
    """v6: ``max_blocks`` grid-stride blocks write partial sums; one block adds them."""
    _check_sum_input(x)
    name, grid = version.kernel(impl), grid_stride_blocks(x.size, max_blocks)
    partial, out = xp.zeros(grid, xp.float32), xp.zeros(1, xp.float32)
    return [Launch(name, grid, BLOCK, (x, partial, np.int64(x.size))),
            Launch(name, 1, BLOCK, (partial, out, np.int64(grid)))], out


def plan_atomic(version, impl, xp, x, max_blocks: int = 4):
    """v7, v8: every block adds its sum to out[0] with one atomic; out is zeroed first."""
    _check_sum_input(x)
    _check_float4(version, impl, x)
    out = xp.zeros(1, xp.float32)
    grid = grid_stride_blocks(x.size, max_blocks)
    return [Launch(version.kernel(impl), grid, BLOCK, (x, out, np.int64(x.size)), zero=(out,))], out


def plan_last_block(version, impl, xp, x, max_blocks: int = 4):
    """v9: blocks write partials; the last block to finish (a ticket counter) adds them."""
    _check_sum_input(x)
    _check_float4(version, impl, x)
    grid = grid_stride_blocks(x.size, max_blocks)
    partial, done, out = xp.zeros(grid, xp.float32), xp.zeros(1, xp.uint32), xp.zeros(1, xp.float32)
    return [Launch(version.kernel(impl), grid, BLOCK, (x, partial, done, out, np.int64(x.size)),
                   zero=(done,))], out


def _check_float4(version, impl, x):
    if impl == "cuda-c" and "float4" in version.label and getattr(getattr(x, "data", None), "ptr", 0) % 16:
        raise ValueError("the float4 kernels need a 16-byte aligned x (a fresh CuPy array is)")


def plan_vecmat(version, impl, xp, v, w, blocks_per_row: int = 2, block: int = BLOCK):
    """``w @ v`` (w: rows x n): a (blocks_per_row, rows) grid of block partials, then
    ``vecmat_rows``, one block per row. The Waterloo lab report's kernel adds into its partials: zeroed first."""
    rows, n = w.shape
    if version.numba == "vecmat_v1_seed":
        blocks_per_row = max(1, min(blocks_per_row, cdiv(n, block)))
    block_out, out = xp.zeros((rows, blocks_per_row), xp.float32), xp.zeros(rows, xp.float32)
    zero = (block_out,) if version.numba == "vecmat_v1_seed" else ()
    return [Launch(version.kernel(impl), (blocks_per_row, rows), block, (v, w, block_out, np.int32(n)), zero=zero),
            Launch("vecmat_rows", rows, BLOCK, (block_out, out, np.int32(blocks_per_row)))], out


def _sum(label, numba, cuda_c, plan):
    return Version(label, numba, cuda_c, plan, reduction_bytes, reduction_flops, group="sum")


def _vecmat(label, kernel):
    return Version(label, kernel, kernel, plan_vecmat, lambda n: vecmat_bytes(*vecmat_shape(n)),
                   lambda n: vecmat_flops(*vecmat_shape(n)), group="vecmat")


#: chapter 5's versions: label, numba kernel, CUDA C kernel, launch plan, bytes(n), flops(n)
VERSIONS = (
    _sum("v1 interleaved", "reduce_v1_interleaved", "reduce_v1_interleaved", plan_passes(1)),
    _sum("v2 strided index", "reduce_v2_strided_index", "reduce_v2_strided_index", plan_passes(1)),
    _sum("v3 sequential", "reduce_v3_sequential", "reduce_v3_sequential", plan_passes(1)),
    _sum("v4 first add", "reduce_v4_first_add", "reduce_v4_first_add", plan_passes(2)),
    _sum("v5 warp shuffle", "reduce_v5_warp_shuffle", "reduce_v5_warp_shuffle", plan_passes(2)),
    _sum("v6 grid-stride, second pass", "reduce_v6_grid_stride", "reduce_v6_grid_stride", plan_second_pass),
    _sum("v7 grid-stride, atomicAdd", "reduce_v7_atomic", "reduce_v7_atomic", plan_atomic),
    _sum("v8 float4, atomicAdd", None, "reduce_v8_float4_atomic", plan_atomic),
    _sum("v9 float4, last block", None, "reduce_v9_float4_last_block", plan_last_block),
    _vecmat("vecmat v1 seed (skips segments)", "vecmat_v1_seed"),
    _vecmat("vecmat v2 grid-stride", "vecmat_v2_grid_stride"),
)

#: labels of the sum versions numba (and so the emulator) runs
SUM_LABELS = tuple(v.label for v in VERSIONS if v.group == "sum" and v.numba)
#: block kernels (one partial per block) and the elements one block of BLOCK threads covers
BLOCK_KERNELS = {v.label: (globals()[v.numba], v.plan.elements_per_thread * BLOCK)
                 for v in VERSIONS if hasattr(v.plan, "elements_per_thread")}


def sum_with(version: str, x, launch, max_blocks: int = 4):
    """The whole sum of ``x`` with one version, every launch of its plan made by
    ``launch(kernel, grid, block, *arrays)`` (the emulator, or a GPU with host arrays copied
    back). Grid-stride versions run ``grid_stride_blocks(n, max_blocks)`` blocks."""
    v = find(VERSIONS, version, group="sum")
    x = np.asarray(x, np.float32)
    opts = {} if hasattr(v.plan, "elements_per_thread") else {"max_blocks": max_blocks}
    launches, out = v.launches("numba", np, x, **opts)
    run_plan("reduction", launches, launch)
    return np.float32(out[0])


def reduce_passes(kernel, x, launch):
    """Sum ``x`` with a block kernel (v1-v5), pass after pass until one value is left.
    Returns ``(sum as float32, list of grid sizes, one per pass)``."""
    v = next(v for v in VERSIONS if v.numba == kernel.py_func.__name__)
    launches, out = v.launches("numba", np, np.asarray(x, np.float32))
    run_plan("reduction", launches, launch)
    return np.float32(out[0]), [step.grid for step in launches]


def vecmat_with(kernel, v, w, launch, blocks_per_row: int = 2, block: int = BLOCK):
    """``w @ v`` with a vecmat kernel's plan, every launch made by ``launch``."""
    version = next(x for x in VERSIONS if x.numba == kernel.py_func.__name__)
    launches, out = version.launches("numba", np, v, w, blocks_per_row=blocks_per_row, block=block)
    run_plan("reduction", launches, launch)
    return out


def row_mean_bytes(rows, cols, itemsize=4):
    """Every element read once, one mean written per row (the partials are a few KB)."""
    return (rows * cols + rows) * itemsize
