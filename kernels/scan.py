"""Chapter 4: scan (prefix sum). out[i] = x[0] + x[1] + ... + x[i] (inclusive scan).

The plan: serial CPU references for every operator first, then the block-level scans (each
block scans its own elements and writes its total to ``block_sums``), then scans of any length
(three kernels, or one pass with decoupled look-back), then the napkin math.

All GPU versions compute the inclusive sum scan of float32 data. The block-level kernels use
dynamic shared memory (``shared_bytes`` at launch, see ``shared_bytes``) so that one kernel
serves a picture of 16 elements and a benchmark of 512 per block. ``kernels/scan.cu`` has the
same kernels in CUDA C++, with the same names and argument order (plus ``n``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32, int32

from simtlab.simt import WARP_SIZE, cdiv
from simtlab.versions import Launch, Version, emulate, find

FULL_MASK = 0xFFFFFFFF
WARP = WARP_SIZE
LOG_NUM_BANKS = 5            # 32 banks of 4 bytes: Blelloch v3 pads one word every 32
ITEMS = 8                    # elements per thread in v5 and v6 (numba: one per warp round)
MAX_WARPS = 32               # 1024 threads per block at most
TILE_SLOTS = 33              # v5: a slot per warp + the tile's total
LOOKBACK_SLOTS = 34          # v6: + the tile's exclusive prefix

# status flags of a tile in the single-pass scan (v6)
NOT_READY, AGGREGATE, PREFIX = 0, 1, 2


# ------------------------------------------------------------------------------------------
# CPU references
# ------------------------------------------------------------------------------------------
#: the binary operators a scan can use, as NumPy ufuncs (all associative)
OPERATORS = {
    "add": np.add,
    "mul": np.multiply,
    "min": np.minimum,
    "max": np.maximum,
    "and": np.logical_and,
    "or": np.logical_or,
}


def identity(op: str, dtype=np.float32):
    """The value e with op(e, a) == a for every a of this dtype (what an exclusive scan starts from).

    min starts from the largest value of the type (+inf for floats, 0xFF for uint8), max from the
    smallest (-inf for floats, the most negative integer for signed types).
    """
    dt = np.dtype(dtype)
    if op not in OPERATORS:
        raise ValueError(f"unknown operator {op!r}: use one of {', '.join(OPERATORS)}")
    if op in ("and", "or"):
        return op == "and"
    if op == "add":
        return dt.type(0)
    if op == "mul":
        return dt.type(1)
    if dt.kind == "f":
        return dt.type(np.inf if op == "min" else -np.inf)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return dt.type(info.max if op == "min" else info.min)
    if dt.kind == "b":
        return op == "min"
    raise ValueError(f"no identity of {op!r} for dtype {dt}")


def _result_dtype(x, op):
    return np.dtype(bool) if op in ("and", "or") else np.asarray(x).dtype


def inclusive_scan_cpu(x, op: str = "add"):
    """Serial inclusive scan: out[i] = x[0] op x[1] op ... op x[i]. n steps, n operations."""
    f = OPERATORS[op]
    out = np.empty(len(x), _result_dtype(x, op))
    acc = identity(op, out.dtype)
    for i in range(len(x)):
        acc = f(acc, x[i])
        out[i] = acc
    return out


def exclusive_scan_cpu(x, op: str = "add"):
    """Serial exclusive scan: out[0] = identity, out[i] = x[0] op ... op x[i-1]."""
    f = OPERATORS[op]
    out = np.empty(len(x), _result_dtype(x, op))
    acc = identity(op, out.dtype)
    for i in range(len(x)):
        out[i] = acc                        # what came before element i, not element i itself
        acc = f(acc, x[i])
    return out


def scan_reference(x):
    """The inclusive sum scan in float64, fast (NumPy): what every GPU version is compared with."""
    return np.cumsum(np.asarray(x, dtype=np.float64))


# ------------------------------------------------------------------------------------------
# Block-level scans: block b scans its own elements, writes them to out and its total to
# block_sums[b]. Launch with shared_bytes(version, blockdim) bytes of dynamic shared memory.
# ------------------------------------------------------------------------------------------
# wrong on purpose (chapter 4 fixes it): Hillis-Steele in place; thread t may read temp[t - d]
# after thread t - d has already added to it, so some elements are counted twice
@cuda.jit
def scan_in_place_racy(x, out, block_sums):
    temp = cuda.shared.array(0, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    temp[t] = x[i] if i < x.size else float32(0)
    cuda.syncthreads()
    d = 1
    while d < cuda.blockDim.x:
        if t >= d:
            temp[t] += temp[t - d]          # reads a neighbour that may be written in this step
        cuda.syncthreads()
        d *= 2
    if i < x.size:
        out[i] = temp[t]
    if t == cuda.blockDim.x - 1:
        block_sums[cuda.blockIdx.x] = temp[t]


# v1: Hillis-Steele, step-efficient: log2(B) steps, each adding the element d to the left; every
# thread reads before a barrier and writes after it, so no thread reads what another is writing
@cuda.jit
def scan_v1_hillis_steele(x, out, block_sums):
    temp = cuda.shared.array(0, float32)    # blockDim.x floats
    t = cuda.threadIdx.x
    b = cuda.blockDim.x
    i = cuda.blockIdx.x * b + t
    temp[t] = x[i] if i < x.size else float32(0)
    cuda.syncthreads()
    d = 1
    while d < b:
        left = temp[t - d] if t >= d else float32(0)
        cuda.syncthreads()                  # every read of this step is done ...
        if t >= d:
            temp[t] += left
        cuda.syncthreads()                  # ... and every write, before the next step reads
        d *= 2
    if i < x.size:
        out[i] = temp[t]
    if t == b - 1:
        block_sums[cuda.blockIdx.x] = temp[t]


# v2: Blelloch, work-efficient: an up-sweep (reduction tree) then a down-sweep, 2 elements per
# thread and about 2n additions in all instead of n log2 n; blockDim must be a power of two
@cuda.jit
def scan_v2_blelloch(x, out, block_sums):
    temp = cuda.shared.array(0, float32)    # 2 * blockDim.x floats
    t = cuda.threadIdx.x
    b = cuda.blockDim.x
    m = 2 * b                               # elements of this block
    base = cuda.blockIdx.x * m
    temp[t] = x[base + t] if base + t < x.size else float32(0)
    temp[t + b] = x[base + t + b] if base + t + b < x.size else float32(0)
    offset = 1
    d = b
    while d > 0:                            # up-sweep: partial sums towards temp[m - 1]
        cuda.syncthreads()
        if t < d:
            left = offset * (2 * t + 1) - 1
            right = offset * (2 * t + 2) - 1
            temp[right] += temp[left]
        offset *= 2
        d //= 2
    if t == 0:
        block_sums[cuda.blockIdx.x] = temp[m - 1]
        temp[m - 1] = 0                     # the identity of +: the exclusive scan starts here
    d = 1
    while d < m:                            # down-sweep: pass each prefix down the same tree
        offset //= 2
        cuda.syncthreads()
        if t < d:
            left = offset * (2 * t + 1) - 1
            right = offset * (2 * t + 2) - 1
            v = temp[left]
            temp[left] = temp[right]
            temp[right] += v
        d *= 2
    cuda.syncthreads()
    if base + t < x.size:                   # exclusive + own element = inclusive
        out[base + t] = temp[t] + x[base + t]
    if base + t + b < x.size:
        out[base + t + b] = temp[t + b] + x[base + t + b]


# v3: Blelloch with one padding word every 32: the tree's strided indices (stride 2, 4, ... 32
# words) fall in different banks instead of piling onto a few, so fewer shared-memory wavefronts
@cuda.jit
def scan_v3_blelloch_padded(x, out, block_sums):
    temp = cuda.shared.array(0, float32)    # 2 * blockDim.x + 2 * blockDim.x // 32 floats
    t = cuda.threadIdx.x
    b = cuda.blockDim.x
    m = 2 * b
    base = cuda.blockIdx.x * m
    pa = t + (t >> LOG_NUM_BANKS)
    pb = t + b + ((t + b) >> LOG_NUM_BANKS)
    temp[pa] = x[base + t] if base + t < x.size else float32(0)
    temp[pb] = x[base + t + b] if base + t + b < x.size else float32(0)
    offset = 1
    d = b
    while d > 0:
        cuda.syncthreads()
        if t < d:
            left = offset * (2 * t + 1) - 1
            right = offset * (2 * t + 2) - 1
            temp[right + (right >> LOG_NUM_BANKS)] += temp[left + (left >> LOG_NUM_BANKS)]
        offset *= 2
        d //= 2
    last = m - 1 + ((m - 1) >> LOG_NUM_BANKS)
    if t == 0:
        block_sums[cuda.blockIdx.x] = temp[last]
        temp[last] = 0
    d = 1
    while d < m:
        offset //= 2
        cuda.syncthreads()
        if t < d:
            left = offset * (2 * t + 1) - 1
            right = offset * (2 * t + 2) - 1
            left += left >> LOG_NUM_BANKS
            right += right >> LOG_NUM_BANKS
            v = temp[left]
            temp[left] = temp[right]
            temp[right] += v
        d *= 2
    cuda.syncthreads()
    if base + t < x.size:
        out[base + t] = temp[pa] + x[base + t]
    if base + t + b < x.size:
        out[base + t + b] = temp[pb] + x[base + t + b]


@cuda.jit(device=True)
def warp_inclusive_scan(v, lane):
    """Hillis-Steele across the 32 lanes of a warp with shuffles: 5 steps, no shared memory."""
    d = 1
    while d < WARP:
        y = cuda.shfl_up_sync(FULL_MASK, v, d)   # lane reads lane - d (lanes < d get their own)
        if lane >= d:
            v += y
        d *= 2
    return v


# v4: warp-shuffle scan: each warp scans its 32 values in registers (5 shuffles), one warp scans
# the warp totals; 2 barriers per block instead of one per step, and no bank conflicts
@cuda.jit
def scan_v4_warp_shuffle(x, out, block_sums):
    warp_sums = cuda.shared.array(MAX_WARPS, float32)
    t = cuda.threadIdx.x
    lane = t % WARP
    warp = t // WARP
    nwarps = cuda.blockDim.x // WARP          # blockDim must be a multiple of 32
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    v = x[i] if i < x.size else float32(0)
    v = warp_inclusive_scan(v, lane)
    if lane == WARP - 1:
        warp_sums[warp] = v
    cuda.syncthreads()
    if warp == 0:
        s = warp_sums[lane] if lane < nwarps else float32(0)
        s = warp_inclusive_scan(s, lane)
        if lane < nwarps:
            warp_sums[lane] = s
    cuda.syncthreads()
    if warp > 0:
        v += warp_sums[warp - 1]
    if i < x.size:
        out[i] = v
    if t == cuda.blockDim.x - 1:
        block_sums[cuda.blockIdx.x] = v


@cuda.jit(device=True)
def tile_scan(x, base, vals, warp_sums, lane, warp, nwarps):
    """Scan ITEMS * blockDim elements from ``base`` into ``vals`` (in warp order); return the
    exclusive prefix of this thread's warp inside the tile and the tile's total.

    Warp w owns 32 * ITEMS contiguous elements; in round j lane l takes element
    w * 32 * ITEMS + 32 * j + l (coalesced), and the warp scans the round with shuffles.
    """
    wbase = base + warp * WARP * ITEMS
    carry = float32(0)
    for j in range(ITEMS):
        k = wbase + j * WARP + lane
        v = x[k] if k < x.size else float32(0)
        v = warp_inclusive_scan(v, lane) + carry
        vals[j] = v
        carry = cuda.shfl_sync(FULL_MASK, v, WARP - 1)     # the round's total, to every lane
    if lane == 0:
        warp_sums[warp] = carry
    cuda.syncthreads()
    if warp == 0:
        s = warp_sums[lane] if lane < nwarps else float32(0)
        s = warp_inclusive_scan(s, lane)
        before = cuda.shfl_up_sync(FULL_MASK, s, 1)
        if lane < nwarps:
            warp_sums[lane] = before if lane > 0 else float32(0)
        if lane == nwarps - 1:
            warp_sums[MAX_WARPS] = s                       # the tile's total
    cuda.syncthreads()
    return warp_sums[warp], warp_sums[MAX_WARPS]


@cuda.jit(device=True)
def store_tile(out, base, vals, prefix, lane, warp):
    wbase = base + warp * WARP * ITEMS
    for j in range(ITEMS):
        k = wbase + j * WARP + lane
        if k < out.size:
            out[k] = vals[j] + prefix


# v5: ITEMS elements per thread: the per-element cost is a few shuffles in registers, and a
# block's barriers and shared-memory traffic are paid once per ITEMS * blockDim elements
@cuda.jit
def scan_v5_tile(x, out, block_sums):
    warp_sums = cuda.shared.array(TILE_SLOTS, float32)
    vals = cuda.local.array(ITEMS, float32)
    t = cuda.threadIdx.x
    lane = t % WARP
    warp = t // WARP
    base = cuda.blockIdx.x * cuda.blockDim.x * ITEMS
    before, total = tile_scan(x, base, vals, warp_sums, lane, warp, cuda.blockDim.x // WARP)
    store_tile(out, base, vals, before, lane, warp)
    if t == 0:
        block_sums[cuda.blockIdx.x] = total


# add-back (third kernel of a scan of any length): block b + 1 adds the scanned sum of blocks
# 0..b to each of its per_block elements
@cuda.jit
def add_block_prefix(out, scanned_sums, per_block):
    b = cuda.blockIdx.x + 1
    add = scanned_sums[b - 1]
    start = b * per_block
    end = min(start + per_block, out.size)
    i = start + cuda.threadIdx.x
    while i < end:
        out[i] += add
        i += cuda.blockDim.x


@cuda.jit(device=True)
def warp_sum(v):
    """Sum over the 32 lanes of a warp (butterfly): every lane gets the total."""
    d = 16
    while d > 0:
        v += cuda.shfl_xor_sync(FULL_MASK, v, d)
        d //= 2
    return v


@cuda.jit(device=True)
def look_back(flags, aggregates, prefixes, tile, lane):
    """Warp 0's decoupled look-back: the sum of all tiles before ``tile``.

    Lane l inspects tile ``tile - 1 - l`` of a window of 32; it waits until every tile of the
    window has published something, then sums the aggregates back to the nearest tile that has
    published its inclusive prefix (that one's prefix ends the walk). Without one, the window
    moves 32 tiles further back.
    """
    exclusive = float32(0)
    newest = tile - 1
    while True:
        k = newest - lane
        flag = PREFIX                       # before tile 0: a prefix of 0
        if k >= 0:
            flag = cuda.atomic.add(flags, k, 0)              # an atomic read: never a stale value
        while cuda.any_sync(FULL_MASK, flag == NOT_READY):
            if flag == NOT_READY:
                flag = cuda.atomic.add(flags, k, 0)
        cuda.threadfence()                  # the value was published before its flag
        v = float32(0)
        if k >= 0:
            if flag == PREFIX:
                v = cuda.atomic.add(prefixes, k, float32(0))
            else:
                v = cuda.atomic.add(aggregates, k, float32(0))
        have_prefix = cuda.ballot_sync(FULL_MASK, flag == PREFIX)
        if have_prefix & ((1 << lane) - 1):  # a newer lane already found a prefix: stop there
            v = float32(0)
        exclusive += warp_sum(v)
        if have_prefix != 0:
            return exclusive
        newest -= WARP


# v6: single pass with decoupled look-back (Merrill & Garland 2016): each tile publishes its
# total at once and finds its prefix from the tiles before it, so x is read once and out written
# once (8 bytes per element) instead of the three-kernel scan's 16
@cuda.jit
def scan_v6_lookback(x, out, flags, aggregates, prefixes, ticket):
    warp_sums = cuda.shared.array(LOOKBACK_SLOTS, float32)
    tile_id = cuda.shared.array(1, int32)
    vals = cuda.local.array(ITEMS, float32)
    t = cuda.threadIdx.x
    lane = t % WARP
    warp = t // WARP
    if t == 0:
        # tiles in the order blocks start: a block only ever waits for blocks already running
        tile_id[0] = cuda.atomic.add(ticket, 0, 1)
    cuda.syncthreads()
    tile = tile_id[0]
    base = tile * cuda.blockDim.x * ITEMS
    before, total = tile_scan(x, base, vals, warp_sums, lane, warp, cuda.blockDim.x // WARP)
    if warp == 0:
        exclusive = float32(0)
        if tile == 0:
            if lane == 0:
                cuda.atomic.add(prefixes, 0, total)
                cuda.threadfence()
                cuda.atomic.exch(flags, 0, PREFIX)
        else:
            if lane == 0:
                cuda.atomic.add(aggregates, tile, total)     # publish the aggregate first
                cuda.threadfence()
                cuda.atomic.exch(flags, tile, AGGREGATE)
            exclusive = look_back(flags, aggregates, prefixes, tile, lane)
            if lane == 0:
                cuda.atomic.add(prefixes, tile, exclusive + total)
                cuda.threadfence()
                cuda.atomic.exch(flags, tile, PREFIX)
        if lane == 0:
            warp_sums[MAX_WARPS + 1] = exclusive
    cuda.syncthreads()
    store_tile(out, base, vals, before + warp_sums[MAX_WARPS + 1], lane, warp)


# ------------------------------------------------------------------------------------------
# Napkin math
# ------------------------------------------------------------------------------------------
def scan_bytes(n: int, itemsize: int = 4) -> int:
    """The fewest bytes any scan moves: x read once, out written once."""
    return 2 * n * itemsize


def three_kernel_bytes(n: int, per_block: int, itemsize: int = 4) -> int:
    """What the three-kernel scan moves: read x, write out, then read and write out again
    (add-back), plus the block sums (small)."""
    sums = cdiv(n, per_block)
    return 4 * n * itemsize + (4 * sums * itemsize if sums > 1 else sums * itemsize)


def scan_flops(n: int) -> int:
    """Additions of the serial scan (a work-efficient parallel scan does about twice as many)."""
    return max(n - 1, 0)


def hillis_steele_work(n: int) -> int:
    """Additions of Hillis-Steele on n elements: step d adds to n - d elements, d = 1, 2, 4, ..."""
    work, d = 0, 1
    while d < n:
        work += n - d
        d *= 2
    return work


def blelloch_work(n: int) -> int:
    """Additions of Blelloch on n (a power of two) elements: n - 1 up, n - 1 down."""
    return 2 * (n - 1)


def steps(version: str, n: int) -> int:
    """Parallel steps: log2 n for Hillis-Steele, 2 log2 n for Blelloch."""
    levels = math.ceil(math.log2(n)) if n > 1 else 0
    return levels if version == "Hillis-Steele" else 2 * levels


# ------------------------------------------------------------------------------------------
# Launch plans: which kernels, grids and arrays a whole scan of n elements needs. The same plan
# runs on the emulator (NumPy arrays) and on a GPU (CuPy arrays, numba or CUDA C): see
# simtlab/versions.py. Sizes for the CUDA C twin are np.int32 (numba reads them from shapes).
# ------------------------------------------------------------------------------------------
#: threads per block on the GPU (the benchmark and the GPU tests)
BLOCK = 256
#: elements per block of the CUDA C tile kernels (v5, v6): 256 threads x TILE_VECS=4 float4
CUDA_TILE_ITEMS = 16 * BLOCK


def shared_bytes(kernel, blockdim: int) -> int:
    """Dynamic shared memory a block-level scan needs at this block size (0 if it uses none)."""
    name = getattr(getattr(kernel, "py_func", kernel), "__name__", str(kernel))
    if name in ("scan_v1_hillis_steele", "scan_in_place_racy"):
        return blockdim * 4
    if name == "scan_v2_blelloch":
        return 2 * blockdim * 4
    if name == "scan_v3_blelloch_padded":
        m = 2 * blockdim
        return (m + (m >> LOG_NUM_BANKS)) * 4
    return 0


def check_block(label: str, blockdim: int) -> None:
    """Clear errors for block sizes a version cannot use."""
    if blockdim % WARP or not 0 < blockdim <= 1024:
        raise ValueError(f"blockdim {blockdim}: the scans need a multiple of 32 threads, at most 1024")
    if "Blelloch" in label and blockdim & (blockdim - 1):
        raise ValueError(f"blockdim {blockdim}: Blelloch's tree needs a power of two (try "
                         f"{1 << (blockdim.bit_length() - 1)})")


def per_block(version, impl: str, blockdim: int) -> int:
    """Elements one block scans: the CUDA C tile kernels load float4 (16 per thread at 256)."""
    if version.numba in ("scan_v5_tile", "scan_v6_lookback"):
        if impl == "cuda-c":
            if blockdim != BLOCK:
                raise ValueError(f"the CUDA C tile kernels are compiled for {BLOCK} threads, not {blockdim}")
            return CUDA_TILE_ITEMS
        return ITEMS * blockdim
    return version.plan.elements_per_thread * blockdim


def plan_three_kernel(elements_per_thread: int):
    """A scan of any length: block scans, a scan of the block sums (the same way, recursively,
    until one block holds them all), then each block adds its prefix back."""
    def plan(version, impl, xp, x, blockdim: int = BLOCK):
        check_block(version.label, blockdim)
        name = version.kernel(impl)
        shared = shared_bytes(globals()[name], blockdim)
        tile = per_block(version, impl, blockdim)
        out = xp.zeros_like(x)

        def level(src, dst):
            size = int(src.size)
            blocks = max(1, cdiv(size, tile))
            sums = xp.zeros(blocks, xp.float32)
            steps = [Launch(name, blocks, blockdim, (src, dst, sums, np.int32(size)), shared)]
            if blocks > 1:
                scanned = xp.zeros(blocks, xp.float32)
                steps += level(sums, scanned)
                # the tile size: a Python int for numba, np.int32 for the CUDA C twin
                steps.append(Launch("add_block_prefix", blocks - 1, blockdim,
                                    (dst, scanned, tile if impl == "numba" else np.int32(tile), np.int32(size))))
            return steps
        return level(x, out), out
    plan.elements_per_thread = elements_per_thread
    return plan


def plan_lookback(version, impl, xp, x, blockdim: int = BLOCK):
    """The single pass (v6): zeroed tile states and a ticket counter, then one launch."""
    check_block(version.label, blockdim)
    tiles = max(1, cdiv(int(x.size), per_block(version, impl, blockdim)))
    out = xp.zeros_like(x)
    if impl == "numba":
        flags, aggregates, prefixes, ticket = (xp.zeros(tiles, xp.int32), xp.zeros(tiles, xp.float32),
                                               xp.zeros(tiles, xp.float32), xp.zeros(1, xp.int32))
        args, zero = (x, out, flags, aggregates, prefixes, ticket), (flags, aggregates, prefixes, ticket)
    else:                          # CUDA C packs flag and value of a tile in one 64-bit word
        status, ticket = xp.zeros(tiles, xp.uint64), xp.zeros(1, xp.uint32)
        args, zero = (x, out, status, ticket, np.int32(x.size)), (status, ticket)
    return [Launch(version.kernel(impl), tiles, blockdim, args, zero=zero)], out


def _scan(label, kernel, plan):
    return Version(label, kernel, kernel, plan, scan_bytes, scan_flops)


def scan_emulated(x, version: str = "warp shuffle", blockdim: int = 64, **options):
    """The inclusive scan of x (float32) by one of the versions, on the emulator.

    ``version``: a label of ``VERSIONS`` (``"v4 warp shuffle"`` or just ``"warp shuffle"``).
    Returns ``(out, runs)``: one emulator Run per launch.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    return emulate("scan", find(VERSIONS, version), x, blockdim=blockdim, **options)


#: chapter 4's versions: label, numba kernel, CUDA C kernel, launch plan, bytes(n), flops(n)
VERSIONS = (
    _scan("v1 Hillis-Steele", "scan_v1_hillis_steele", plan_three_kernel(1)),
    _scan("v2 Blelloch", "scan_v2_blelloch", plan_three_kernel(2)),
    _scan("v3 Blelloch padded", "scan_v3_blelloch_padded", plan_three_kernel(2)),
    _scan("v4 warp shuffle", "scan_v4_warp_shuffle", plan_three_kernel(1)),
    _scan("v5 tile", "scan_v5_tile", plan_three_kernel(ITEMS)),
    _scan("v6 lookback", "scan_v6_lookback", plan_lookback),
)
#: the block-level scans (v1-v5), by algorithm name, with how many elements a block of B threads scans
BLOCK_SCANS = {v.label.split(" ", 1)[1]: (globals()[v.numba], lambda b, e=v.plan.elements_per_thread: e * b)
               for v in VERSIONS if v.plan is not plan_lookback}
