"""Checks for chapter 6 (GEMM).

- ``check_tiled_gemm(gemm_tiled)``: C = A @ B with 16 x 16 blocks of threads and 16 x 16 tiles of A
  and B in shared memory, right on sizes that are not multiples of 16, and from the trace: every
  element of A and B a block needs is loaded from global memory exactly once by that block, each
  phase loads one tile of each, no races.
- ``check_register_blocked(gemm_1d, loads_per_flop)``: a 32 x 32 tile of C per block of 256 threads,
  4 outputs per thread (a column strip), right on odd sizes, at most 4 stores per thread, each
  A/B element loaded once per block; and ``loads_per_flop(bm, bn)``, the napkin figure, equals the
  loads per FLOP counted in the trace.
- ``check_swizzled_tile(gemm_swizzled)``: v4's GEMM with its A tile in exactly 8 x 64 floats at a
  swizzled column (the student's ``swizzled(k, row)``): right on odd sizes, and from the trace
  every shared request 1 wavefront (no padding, no bank conflicts).
- ``check_float4_loads(tile_loads)``: CUDA C statements loading the A and B tiles of
  :data:`F4_KERNEL` with float4, compiled by NVRTC and run on the PTX engine: right on two shapes,
  and from the trace every lane load of A and B 16 bytes wide, every warp request using whole sectors.
- ``check_bias_epilogue(gemm_bias_act)``: the Cairo graduation report's layer ``act(W @ X + bias)`` fixed: right for
  bias on and off and every activation, and each output element stored exactly once.

Every check draws new random sizes and inputs on each call.
"""

from __future__ import annotations

import numpy as np

from ._common import cdiv, rng
from .report import (CheckFailed, by_error_type, call_student, compare_arrays, failing_in, passed, poison,
                     run_student_kernel)
from .card import student_check

__all__ = ["check_tiled_gemm", "hidden_check_tiled_gemm", "check_register_blocked", "check_bias_epilogue",
           "check_shared_ceiling", "shared_ceiling", "check_float4_loads", "float4_kernel_source", "F4_KERNEL",
           "check_swizzled_tile", "TILE", "BM", "BN",
           "TM"]

TILE = 16
#: exercise 6.2: a BM x BN tile of C per block, TM outputs per thread -> BM * BN / TM threads
BM, BN, TM = 32, 32, 4
THREADS_2 = BM * BN // TM


def _odd_shape(r, low=17, high=50):
    """(M, N, K): odd sizes, none a multiple of 16, M and N spanning more than one tile."""
    dims = []
    for _ in range(3):
        d = int(r.integers(low, high)) | 1
        dims.append(d + 2 if d % 16 == 0 else d)
    return tuple(dims)


def _matrices(r, m, n, k):
    return (r.standard_normal((m, k)).astype(np.float32), r.standard_normal((k, n)).astype(np.float32))


def _reference(a, b):
    from ..kernels.gemm import gemm_cpu

    return gemm_cpu(a, b)


def _compare(c, a, b, context):
    k = a.shape[1]
    with failing_in(context, "On sizes that are not multiples of the tile, threads whose row or column lies "
                    "outside A or B must load 0 into the tile (not skip the load: the tile would keep the previous "
                    "phase's values) and must not store."):
        compare_arrays(c, _reference(a, b), "c", rtol=1e-5, atol=2e-5 * k, index_names=("row", "col"))


def _global(run, position: int) -> str:
    """The name of the kernel's ``position``-th array argument (students may rename a, b, c)."""
    return [x.name for x in run.arrays if x.space == "global"][position]


def _loads_once_per_block(run, m, n, k, bm, bn, context):
    """Every A element of the block's rows and every B element of its columns read exactly once
    by that block; nothing else read."""
    from ..analysis.gemm import loads_per_element

    gx = run.griddim[0]
    for blk in range(run.num_blocks):
        bx, by = blk % gx, blk // gx
        rows = slice(by * bm, min(m, (by + 1) * bm))
        cols = slice(bx * bn, min(n, (bx + 1) * bn))
        for name, need in (("a", (rows, slice(0, k))), ("b", (slice(0, k), cols))):
            counts = loads_per_element(run, _global(run, 0 if name == "a" else 1), blk)
            want = np.zeros_like(counts)
            want[need] = 1
            if not np.array_equal(counts, want):
                bad = np.argwhere(counts != want)[0]
                raise CheckFailed(
                    f"{context}\nBlock (x={bx}, y={by}) read {name}[{bad[0]}, {bad[1]}] {counts[tuple(bad)]} times "
                    f"from global memory; it should read each element of its {'rows of A' if name == 'a' else 'columns of B'} "
                    "exactly once (and nothing else). Load each tile into shared memory once per phase, and let the "
                    "inner loop read the tiles, not A and B.")


# ------------------------------------------------------------------------------------------
# Exercise 6.1: tiled GEMM on odd sizes
# ------------------------------------------------------------------------------------------
#: the hidden check's shapes (M, N, K): one element, exactly one tile, K a multiple of the tile,
#: a matrix thinner than a tile, and a long K
HIDDEN_TILED_SHAPES = [(1, 1, 1), (16, 16, 16), (15, 33, 64), (70, 3, 5), (18, 17, 131)]


@student_check("ch06.tiled")
def check_tiled_gemm(gemm_tiled, shapes=None, seed=None) -> None:
    """``gemm_tiled(a, b, c)`` launched on (ceil(N/16), ceil(M/16)) blocks of 16 x 16 threads
    (one random odd shape, or each of ``shapes``)."""
    r = rng() if seed is None else np.random.default_rng(seed)
    for m, n, k in shapes or [_odd_shape(r)]:
        _check_tiled_once(gemm_tiled, r, m, n, k)


@student_check("ch06.tiled")
def hidden_check_tiled_gemm(gemm_tiled) -> None:
    """The graded twin of :func:`check_tiled_gemm`: edge shapes the visible check never draws."""
    check_tiled_gemm(gemm_tiled, shapes=HIDDEN_TILED_SHAPES, seed=14_06)


def _check_tiled_once(gemm_tiled, r, m, n, k) -> None:
    a, b = _matrices(r, m, n, k)
    c = poison((m, n))
    grid = (cdiv(n, TILE), cdiv(m, TILE))
    context = f"C = A @ B with A {m}x{k}, B {k}x{n}: grid {grid} of {TILE}x{TILE} threads."
    with failing_in(context):
        run = run_student_kernel(gemm_tiled, grid, (TILE, TILE), a, b, c)
    _compare(c, a, b, context)
    shared = [x for x in run.arrays if x.space == "shared"]
    if not shared:
        raise CheckFailed(f"{context}\nThe product is right but the kernel uses no shared memory: stage TILE x TILE "
                          "tiles of A and B in cuda.shared.array((TILE, TILE), float32) arrays.")
    _loads_once_per_block(run, m, n, k, TILE, TILE, context)
    if run.metrics["races"]:
        raise CheckFailed(f"{context}\nThe product is right here, but only by luck of the schedule: the emulator "
                          f"found {run.metrics['races']} races, first: {run.races[0]}.\nEvery phase needs two "
                          "barriers: after the tile is loaded (before anyone reads it) and after the inner loop "
                          "(before the next phase overwrites it).")
    phases = cdiv(k, TILE)
    passed(f"Tiled GEMM right on {m}x{k} times {k}x{n}: every block loaded each element it needs once, "
           f"in {phases} phases; {run.metrics['global_requests']} global requests, no races.")


# ------------------------------------------------------------------------------------------
# Exercise 6.2: 1-D register blocking and its loads per FLOP
# ------------------------------------------------------------------------------------------
@student_check("ch06.blocked")
def check_register_blocked(gemm_1d, loads_per_flop) -> None:
    """``gemm_1d(a, b, c)`` on (ceil(N/32), ceil(M/32)) blocks of 256 threads, 4 outputs each;
    ``loads_per_flop(bm, bn)``: global loads per FLOP of a bm x bn tile."""
    r = rng()
    m, n, k = _odd_shape(r, 33, 70)
    a, b = _matrices(r, m, n, k)
    c = poison((m, n))
    grid = (cdiv(n, BN), cdiv(m, BM))
    context = f"C = A @ B with A {m}x{k}, B {k}x{n}: grid {grid} of {THREADS_2} threads, {BM}x{BN} tiles."
    with failing_in(context):
        run = run_student_kernel(gemm_1d, grid, THREADS_2, a, b, c)
    _compare(c, a, b, context)
    writes = run.accesses(_global(run, 2), "write")
    per_thread = np.bincount(writes.block * THREADS_2 + writes.thread).max()
    if per_thread > TM:
        raise CheckFailed(f"{context}\nOne thread stored {per_thread} outputs; each of the {THREADS_2} threads "
                          f"must own {TM} outputs of the {BM}x{BN} tile (keep them in registers, store each once).")
    if np.bincount(writes.block * THREADS_2 + writes.thread, minlength=run.num_blocks * THREADS_2).max() < TM \
            and m >= BM and n >= BN:
        raise CheckFailed(f"{context}\nNo thread stored {TM} outputs: each thread must own {TM} of them.")
    _loads_once_per_block(run, m, n, k, BM, BN, context)
    answer = call_student(loads_per_flop, "loads_per_flop", BM, BN)
    counted = (BM + BN) * k / (2 * BM * BN * k)      # one full block: its strips over 2*BM*BN*K FLOPs
    if not np.isclose(float(answer), counted, rtol=1e-9):
        raise CheckFailed(f"The kernel is right. loads_per_flop({BM}, {BN}) returned {answer}, but a block of the "
                          f"trace loads {BM + BN} elements per step along K ({BM} of A, {BN} of B) for "
                          f"{BM}*{BN} FMAs = {2 * BM * BN} FLOPs. Give the formula in bm and bn.")
    loads = len(run.accesses(_global(run, 0), "read")) + len(run.accesses(_global(run, 1), "read"))
    passed(f"1-D register blocking right on {m}x{k} times {k}x{n}, {TM} outputs per thread; "
           f"{loads:,} global loads for {2 * m * n * k:,} FLOPs here (padding tiles skip loads), "
           f"{answer:.4f} per FLOP for a full {BM}x{BN} tile: {1 / answer:.0f} FLOPs per loaded float.")


# ------------------------------------------------------------------------------------------
# Exercise 6.3: the Cairo graduation report's bias + activation epilogue, fixed
# ------------------------------------------------------------------------------------------
@student_check("ch06.epilogue")
def check_bias_epilogue(gemm_bias_act) -> None:
    """``gemm_bias_act(w, x, p, bias, use_bias, activation)`` on 16 x 16 blocks: p = act(w @ x +
    bias[row]) for use_bias in (0, 1) and activation in (none, swish, sigmoid), one store each."""
    from ..kernels.gemm import ACTIVATIONS, dense_layer_cpu

    r = rng()
    m, n, k = _odd_shape(r, 17, 40)
    w, x = _matrices(r, m, n, k)
    bias = r.uniform(1.0, 2.0, m).astype(np.float32)       # >= 1: a lost bias cannot hide
    grid = (cdiv(n, TILE), cdiv(m, TILE))
    for act_name, act in ACTIVATIONS.items():
        for use_bias in (1, 0):
            p = poison((m, n))
            context = (f"P = {act_name}(W @ X{' + bias' if use_bias else ''}) with W {m}x{k}, X {k}x{n} "
                       f"(use_bias={use_bias}, activation={act} = {act_name}).")
            with failing_in(context):
                run = run_student_kernel(gemm_bias_act, grid, (TILE, TILE), w, x, p, bias, use_bias, act)
            want = dense_layer_cpu(w, x, bias if use_bias else None, act_name)
            def lost_bias(_, p=p, use_bias=use_bias):
                if use_bias and np.allclose(p, dense_layer_cpu(w, x, None, act_name), rtol=1e-5, atol=2e-5 * k):
                    return ("That is the layer without its bias: the Cairo graduation report's bug. The value stored must be the "
                            "one after the bias (and the activation).")
                return None

            with failing_in(context, lost_bias):
                compare_arrays(p, want, "p", rtol=1e-5, atol=2e-5 * k, index_names=("row", "col"))
            stores = len(run.accesses(_global(run, 2), "write"))
            if stores != m * n:
                raise CheckFailed(f"{context}\nThe values are right, but the kernel made {stores} stores to p for "
                                  f"{m * n} elements: store each finished value once (the Cairo graduation report stores the raw "
                                  "product first, then overwrites it).")
    passed(f"The epilogue is right with and without bias, for every activation, on {m}x{k} times {k}x{n}: "
           "one store per output.")


# ------------------------------------------------------------------------------------------
# Prediction: the ceiling shared-memory loads put on a GEMM
# ------------------------------------------------------------------------------------------
#: an SM's four sub-partitions each issue one warp-instruction per clock; its shared memory
#: serves one wavefront (a conflict-free warp load) per clock
ISSUE_PER_SM, SHARED_WAVEFRONTS_PER_SM = 4, 1


def shared_ceiling(peak_tflops: float, shared_loads_per_ffma: float) -> float:
    """The model of the prediction exercise: FFMA warp-instructions per clock per SM are limited by the
    shared pipe (1 / l) and by the issue slots, which loads share with FFMAs (4 / (1 + l))."""
    l = shared_loads_per_ffma
    ffma_per_clock = min(SHARED_WAVEFRONTS_PER_SM / l, ISSUE_PER_SM / (1 + l), ISSUE_PER_SM)
    return peak_tflops * ffma_per_clock / ISSUE_PER_SM


@student_check("ch06.predict")
def check_shared_ceiling(predicted_tflops) -> None:
    """``predicted_tflops(peak_tflops, shared_loads_per_ffma)``: the FP32 TFLOP/s a kernel can
    reach at most when each FFMA needs ``shared_loads_per_ffma`` shared loads (one wavefront
    each), under the two limits of the model."""
    r = rng()
    cases = [(66.9, 2.0), (66.9, 9 / 8), (66.9, 0.25), (66.9, 0.125)]
    cases += [(float(r.uniform(10, 100)), float(r.choice([0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0]))) for _ in range(8)]
    for peak, l in cases:
        want = shared_ceiling(peak, l)
        got = call_student(predicted_tflops, "predicted_tflops", peak, l)
        try:
            ok = abs(float(got) - want) <= 1e-6 * want
        except (TypeError, ValueError):
            raise CheckFailed(f"predicted_tflops({peak:.1f}, {l}) must return a number of TFLOP/s, got {got!r}") from None
        if not ok:
            hint = ""
            if abs(float(got) - peak / (4 * l)) <= 1e-6 * want:
                hint = (" That is the shared-memory limit alone: the loads are instructions too, and the four "
                        "issue slots per clock are shared between loads and FFMAs (4 / (1 + l) FFMAs per clock).")
            elif abs(float(got) - peak * min(1.0, 1 / l)) <= 1e-6 * want:
                hint = (" Compare like with like: the SM issues up to 4 FFMA warp-instructions per clock, but "
                        "its shared memory serves 1 wavefront per clock.")
            raise CheckFailed(f"predicted_tflops(peak_tflops={peak:.2f}, shared_loads_per_ffma={l}) returned "
                              f"{got!r}, expected {want:.3f}.{hint}")
    passed(f"your model gives v3 (2 shared loads per FFMA) a ceiling of {shared_ceiling(66.9, 2.0):.1f} TFLOP/s "
           f"on the H100, v5 (1/4) {shared_ceiling(66.9, 0.25):.1f}")


# ------------------------------------------------------------------------------------------
# Exercise 6.5: float4 loads of the tiles (CUDA C on the PTX engine)
# ------------------------------------------------------------------------------------------
#: exercise 6.5's kernel: 64 x 64 tiles of C, BK = 8, 128 threads of 4 x 8 outputs; K and N % 4 == 0
F4_NAME, F4_BM, F4_BN, F4_THREADS = "gemm_f4", 64, 64, 128
#: where the student's tile loads go in :data:`F4_KERNEL`
F4_LOADS_HERE = "        // <- the tile loads (the answer) go here\n"
#: exercise 6.5's kernel around the student's loads (the answer holds the loads alone: the grader's
#: rules refuse answers with `__` in them, which every CUDA C kernel has)
F4_KERNEL = r"""
#define BM 64
#define BN 64
#define BK 8
#define TM 4                     // 128 threads: 16 x 8 of them, each 4 rows x 8 columns of C
#define TN 8
extern "C" __global__ void gemm_f4(const float* __restrict__ A, const float* __restrict__ B,
                                   float* __restrict__ C, int M, int N, int K)   // K % 4 == 0, N % 4 == 0
{
    __shared__ float sa[BK][BM];                   // A tile transposed: sa[k][row]
    __shared__ __align__(16) float sb[BK][BN];
    const int t = threadIdx.x;
    const int tr = t / (BN / TN), tc = t % (BN / TN);   // rows tr + 16 i, columns tc + 8 j of the tile
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};
    for (int k0 = 0; k0 < K; k0 += BK) {
""" + F4_LOADS_HERE + r"""        __syncthreads();
        for (int k = 0; k < BK; ++k)
            for (int i = 0; i < TM; ++i)
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += sa[k][tr + 16 * i] * sb[k][tc + 8 * j];
        __syncthreads();
    }
    for (int i = 0; i < TM; ++i)
        for (int j = 0; j < TN; ++j)
            if (row0 + tr + 16 * i < M && col0 + tc + 8 * j < N)
                C[(size_t)(row0 + tr + 16 * i) * N + col0 + tc + 8 * j] = acc[i][j];
}
"""


def float4_kernel_source(loads: str) -> str:
    """Exercise 6.5's whole kernel with ``loads`` (CUDA C statements) as its tile loads."""
    return F4_KERNEL.replace(F4_LOADS_HERE, loads.rstrip("\n") + "\n")
#: the bytes one lane of a float4 load moves
VECTOR_BYTES = 16
#: what ``simtlab build`` leaves in a CUDA C answer (simtlab/notebooks/build.py C_STUB)
C_STUB = "/* YOUR CODE HERE */"


def _float4_shapes(r):
    """(M, N, K): one with rows of A and B starting on 32-byte sectors (K, N % 8 == 0: the
    sector count is checked there), one with K, N % 8 == 4 (float4-aligned only)."""
    m1 = int(r.integers(65, 130)) | 1
    m2 = int(r.integers(17, 64)) | 1
    return [(m1, 8 * int(r.integers(9, 17)), 8 * int(r.integers(3, 6))),
            (m2, 8 * int(r.integers(2, 9)) + 4, 8 * int(r.integers(2, 4)) + 4)]


def _compile_student_c(source: str, name: str, exercise: str, wrap=lambda s: s):
    """The student's CUDA C (``wrap`` puts it into its kernel) compiled by NVRTC for the PTX engine."""
    from .. import cuda_c_kernels as CC
    from ..paths import install_command
    from .report import ExerciseNotWritten

    if not isinstance(source, str):
        raise CheckFailed(f"pass the kernel's CUDA C source as a string, got {type(source).__name__}")
    if C_STUB in source:
        failure = ExerciseNotWritten(f"exercise {exercise} is not written yet: replace {C_STUB} in the kernel's source")
        failure.exercise = exercise
        raise failure
    try:
        return CC.cuda_c(wrap(source), name)
    except CC.CompilerMissing:
        raise CheckFailed(f"This exercise compiles CUDA C on the CPU with NVIDIA's NVRTC, which is not installed: "
                          f"{install_command('cuda-c')}") from None
    except CC.CudaCompileError as e:
        raise CheckFailed(f"NVRTC did not compile the kernel:\n{e}") from None


def _load_requests(run, array: str):
    """The global read requests of ``array`` (rows of coalescing.requests) and its lanes' widths."""
    from ..analysis.coalescing import requests

    info = run.array(array)
    reqs = requests(run.memory)
    reqs = reqs[(reqs.array == info.id) & (reqs.kind == 0)]
    mem = run.memory
    widths = mem.width[(mem.space == 0) & (mem.array == info.id) & (mem.kind == 0)]
    return reqs, widths


@student_check("ch06.float4")
def check_float4_loads(tile_loads) -> None:
    """``tile_loads``: the CUDA C statements that load one k-step's A and B tiles into ``sa`` and
    ``sb`` of :data:`F4_KERNEL` (``gemm_f4``: 64 x 64 tiles, 128 threads), launched on
    (ceil(N/64), ceil(M/64)) blocks: C right for K, N % 4 == 0 and any M, and from the trace every
    global load of A and B 16 bytes wide a lane, each request using every byte of the sectors it
    touches."""
    kernel = _compile_student_c(tile_loads, F4_NAME, "ch06.float4", float4_kernel_source)
    r = rng()
    runs = []
    for m, n, k in _float4_shapes(r):
        a, b = _matrices(r, m, n, k)
        c = poison((m, n))
        grid = (cdiv(n, F4_BN), cdiv(m, F4_BM))
        context = f"C = A @ B with A {m}x{k}, B {k}x{n}: grid {grid} of {F4_THREADS} threads (CUDA C on the PTX engine)."
        with failing_in(context, by_error_type({"UninitializedReadError": (
                "The multiply loop read a tile slot no thread wrote: load the whole A tile (64 x 8) and B tile "
                "(8 x 64) into sa and sb before the barrier, zeros outside the matrices.")})):
            run = run_student_kernel(kernel, grid, F4_THREADS, a, b, c, np.int32(m), np.int32(n), np.int32(k))
        _compare(c, a, b, context)
        runs.append((run, context, (m, n, k)))
    run, context, (m, n, k) = runs[0]
    loaded = 0
    for name, what in (("A", "the A tile"), ("B", "the B tile")):
        reqs, widths = _load_requests(run, name)
        narrow = widths[widths != VECTOR_BYTES]
        if len(narrow):
            raise CheckFailed(
                f"{context}\nC is right, but {len(narrow)} of the {len(widths)} lane loads of {name} are "
                f"{int(narrow[0])} bytes wide: {what} takes {len(reqs)} warp requests where float4 loads need a "
                f"quarter as many. Load 4 consecutive floats per thread with one "
                f"*reinterpret_cast<const float4*>(&{name}[...]) (16-byte aligned: the column is a multiple of 4).")
        wasted = reqs[reqs.sectors * 32 != reqs.used]
        if len(wasted):
            w = wasted[0]
            raise CheckFailed(
                f"{context}\nEvery load of {name} is a float4, but a warp request of {name} at line {int(w.line)} "
                f"touches {int(w.sectors)} sectors ({32 * int(w.sectors)} bytes) for {int(w.used)} bytes it uses: "
                f"the lanes' float4 do not fill whole 32-byte sectors. Give neighbouring lanes neighbouring float4 "
                f"of one row ({'2 lanes per 8-float row of the A tile' if name == 'A' else '16 lanes per 64-float row of the B tile'}).")
        loaded += int(reqs.used.sum())
    scalar = loaded // 128
    requests_now = sum(len(_load_requests(run, x)[0]) for x in ("A", "B"))
    passed(f"float4 loads: C is right on {m}x{k} times {k}x{n} and on a second shape; every lane load of A and B "
           f"moves 16 bytes and every warp request uses whole sectors: {requests_now} requests for {loaded:,} bytes "
           f"(4-byte loads: {scalar} or more)")


# ------------------------------------------------------------------------------------------
# Exercise 6.6: a swizzled A tile, no padding, no bank conflicts
# ------------------------------------------------------------------------------------------
#: exercise 6.6's kernel: v4's tiles (64 x 64, BK 8, 512 threads, 8 outputs each)
SW_BM, SW_BN, SW_BK, SW_THREADS = 64, 64, 8, 512


@student_check("ch06.swizzle")
def check_swizzled_tile(gemm_swizzled) -> None:
    """``gemm_swizzled(a, b, c)``: v4's 1-D register-blocked GEMM on (ceil(N/64), ceil(M/64)) blocks
    of 512 threads, its A tile stored transposed in exactly 8 x 64 floats at a swizzled column:
    C right on odd sizes, and from the trace every shared request 1 wavefront."""
    from .ch03 import worst_shared_request

    r = rng()
    # M and N past one tile (edge blocks), K past one depth of 8 and odd: a few thousand warp requests
    m, n, k = int(r.integers(33, 48)) * 2 + 1, int(r.integers(33, 48)) * 2 + 1, int(r.integers(5, 12)) * 2 + 1
    a, b = _matrices(r, m, n, k)
    c = poison((m, n))
    grid = (cdiv(n, SW_BN), cdiv(m, SW_BM))
    context = f"C = A @ B with A {m}x{k}, B {k}x{n}: grid {grid} of {SW_THREADS} threads."
    with failing_in(context):
        run = run_student_kernel(gemm_swizzled, grid, SW_THREADS, a, b, c)

    def not_a_permutation(_):
        return ("The store and the multiply loop must use the same swizzled(k, row), and for each k it must send the "
                "64 rows to 64 different columns (a permutation of 0..63): XOR or add a multiple of 4 that depends on k.")
    with failing_in(context, not_a_permutation):
        _compare(c, a, b, context)
    shared = [x for x in run.arrays if x.space == "shared"]
    tile = max(shared, key=lambda x: int(np.prod(x.shape)))
    if sum(int(np.prod(x.shape)) for x in shared) > SW_BK * (SW_BM + SW_BN):
        raise CheckFailed(f"{context}\nC is right, but the shared arrays hold {sum(int(np.prod(x.shape)) for x in shared)} "
                          f"floats ({tile.name} {tile.shape}): keep the tiles at {SW_BK} x {SW_BM} and {SW_BK} x {SW_BN}, "
                          "no padding; the swizzle is what spreads the banks here.")
    bank = worst_shared_request(run)
    if bank and bank["wavefronts"] > 1:
        raise CheckFailed(
            f"{context}\nC is right, but shared memory has bank conflicts: {bank['text']}.\nIn the store "
            f"sa[q, swizzled(q, r)], 8 consecutive lanes share the row r and take q = 0..7: rows {SW_BM} words apart "
            "are in the same bank, so swizzled(q, r) must move each q to another group of banks.")
    passed(f"swizzled A tile: C right on {m}x{k} times {k}x{n}; {run.metrics['shared_requests']:,} shared requests, "
           f"each 1 wavefront, in {SW_BK} x {SW_BM} floats (no padding)")
