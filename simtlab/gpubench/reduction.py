"""Chapter 5 on the GPU: every sum-reduction version against ``cupy.sum`` (CUB DeviceReduce).

Each version of ``kernels/reduction.py`` (numba-cuda) and ``kernels/reduction.cu`` (CUDA C
through CuPy) is timed for a whole sum: the block kernels (v1-v5) launch again on their
partial sums until one value is left, v6 adds a one-block second pass, v7/v8 zero the output
and add with one atomic per block, v9 lets the last block finish the sum. Bytes moved: the
input once, ``4 * n``. The vector-matrix product of the seed lab report is timed on a
``ROWS x (n // ROWS)`` matrix (its own bytes: the matrix, the vector, the outputs).

``sum_runner``/``vecmat_runner`` build one version's launch; tests/test_reduction_gpu.py uses
them too.
"""

from __future__ import annotations

import numpy as np

from .harness import Case, nonzero_random
from .launch import bind

TOPIC = "reduction"
REFERENCE = "cupy.sum (CUB DeviceReduce)"
#: resident blocks per SM for the grid-stride kernels: 8 x 256 threads fill an H100 SM (2048)
BLOCKS_PER_SM = 8
#: output rows of the vector-matrix product (the seed's 10 output neurons)
ROWS = 10

__all__ = ["TOPIC", "REFERENCE", "cases", "SUM_VERSIONS", "VECMAT_VERSIONS", "sum_runner",
           "vecmat_runner", "grid_blocks", "vecmat_shape", "BLOCKS_PER_SM", "ROWS"]

#: name -> (numba kernel name or None, CUDA C kernel name, how blocks are combined)
SUM_VERSIONS = {
    "v1 interleaved": ("reduce_v1_interleaved", "reduce_v1_interleaved", "passes"),
    "v2 strided index": ("reduce_v2_strided_index", "reduce_v2_strided_index", "passes"),
    "v3 sequential": ("reduce_v3_sequential", "reduce_v3_sequential", "passes"),
    "v4 first add": ("reduce_v4_first_add", "reduce_v4_first_add", "passes"),
    "v5 warp shuffle": ("reduce_v5_warp_shuffle", "reduce_v5_warp_shuffle", "passes"),
    "v6 grid-stride, second pass": ("reduce_v6_grid_stride", "reduce_v6_grid_stride", "second pass"),
    "v7 grid-stride, atomicAdd": ("reduce_v7_atomic", "reduce_v7_atomic", "atomic"),
    "v8 float4, atomicAdd": (None, "reduce_v8_float4_atomic", "atomic"),
    "v9 float4, last block": (None, "reduce_v9_float4_last_block", "last block"),
}
#: name -> (numba kernel name, CUDA C kernel name)
VECMAT_VERSIONS = {
    "vecmat v1 seed (skips segments)": ("vecmat_v1_seed", "vecmat_v1_seed"),
    "vecmat v2 grid-stride": ("vecmat_v2_grid_stride", "vecmat_v2_grid_stride"),
}


def grid_blocks() -> int:
    """Blocks of the grid-stride kernels: BLOCKS_PER_SM per SM of this GPU."""
    import cupy

    return BLOCKS_PER_SM * cupy.cuda.Device().attributes["MultiProcessorCount"]


def vecmat_shape(n: int) -> tuple[int, int]:
    """(rows, columns) of the benchmark's matrix for ``n`` elements."""
    return ROWS, max(1, n // ROWS)


def sum_runner(version: str, impl: str, x):
    """``(run, out)``: ``run()`` enqueues one whole sum of the CuPy array ``x`` with ``version``
    (``impl`` "numba" or "cuda-c"); afterwards ``out[0]`` holds the sum (float32)."""
    import cupy

    from ..kernels import reduction as R

    if version not in SUM_VERSIONS:
        raise ValueError(f"unknown version {version!r}; the versions are {', '.join(SUM_VERSIONS)}")
    nb_name, c_name, combine = SUM_VERSIONS[version]
    name = nb_name if impl == "numba" else c_name
    if name is None:
        raise ValueError(f"{version} exists only in CUDA C (numba has no float4 loads): use impl='cuda-c'")
    if x.dtype != cupy.float32 or x.ndim != 1 or x.size == 0:
        raise ValueError(f"x must be a non-empty 1-D float32 CuPy array, got {x.dtype} of shape {x.shape}")
    n = int(x.size)
    n64 = np.int64(n)
    if combine == "passes":
        per_block = 2 * R.BLOCK if name in ("reduce_v4_first_add", "reduce_v5_warp_shuffle") else R.BLOCK
        steps, src = [], x
        while True:
            grid = R.cdiv(int(src.size), per_block)
            dst = cupy.zeros(grid, cupy.float32)
            steps.append(bind(impl, TOPIC, name, grid, R.BLOCK, src, dst, np.int64(src.size)))
            if grid == 1:
                break
            src = dst

        def run():
            for s in steps:
                s()
        return run, dst
    grid = R.grid_stride_blocks(n, grid_blocks())
    out = cupy.zeros(1, cupy.float32)
    if combine == "second pass":
        partial = cupy.zeros(grid, cupy.float32)
        first = bind(impl, TOPIC, name, grid, R.BLOCK, x, partial, n64)
        second = bind(impl, TOPIC, name, 1, R.BLOCK, partial, out, np.int64(grid))

        def run():
            first()
            second()
        return run, out
    if combine == "atomic":
        if "float4" in name and x.data.ptr % 16:
            raise ValueError("the float4 kernels need a 16-byte aligned x (a fresh CuPy array is)")
        launch = bind(impl, TOPIC, name, grid, R.BLOCK, x, out, n64)

        def run():
            out.data.memset_async(0, 4)
            launch()
        return run, out
    if x.data.ptr % 16:
        raise ValueError("the float4 kernels need a 16-byte aligned x (a fresh CuPy array is)")
    partial = cupy.zeros(grid, cupy.float32)
    done = cupy.zeros(1, cupy.uint32)
    return bind(impl, TOPIC, name, grid, R.BLOCK, x, partial, done, out, n64), out


def vecmat_runner(version: str, impl: str, v, w):
    """``(run, out)``: ``run()`` enqueues ``out = w @ v`` (``w`` rows x n, the seed's transposed
    weights) as block partials plus the one-block-per-row second pass."""
    import cupy

    from ..kernels import reduction as R

    nb_name, c_name = VECMAT_VERSIONS[version]
    rows, n = w.shape
    per_row = max(1, R.cdiv(grid_blocks(), rows))
    if nb_name == "vecmat_v1_seed":
        per_row = max(1, min(per_row, R.cdiv(n, R.BLOCK)))
    block_out = cupy.zeros((rows, per_row), cupy.float32)
    out = cupy.zeros(rows, cupy.float32)
    name = nb_name if impl == "numba" else c_name
    launch = bind(impl, TOPIC, name, (per_row, rows), R.BLOCK, v, w, block_out, np.int32(n))
    finish = bind(impl, TOPIC, "vecmat_rows", rows, R.BLOCK, block_out, out, np.int32(per_row))
    seed = nb_name == "vecmat_v1_seed"

    def run():
        if seed:                                  # the seed adds into block_out: zero it first
            block_out.data.memset_async(0, block_out.nbytes)
        launch()
        finish()
    return run, out


# ------------------------------------------------------------------------------------------
# Cases
# ------------------------------------------------------------------------------------------
def _sum_check(version, impl):
    def check(n):
        import cupy

        from ..kernels.reduction import sum_cpu

        x = nonzero_random(n, seed=3)
        run, out = sum_runner(version, impl, x)
        run()
        cupy.cuda.runtime.deviceSynchronize()
        got, want = float(out[0].get()), float(sum_cpu(cupy.asnumpy(x)))
        if not np.isclose(got, want, rtol=1e-5, atol=0):
            raise AssertionError(f"{version} ({impl}) at n = {n:,}: sum {got!r}, expected {want!r} "
                                 f"(relative error {abs(got - want) / want:.2e}, allowed 1e-5)")
    return check


def _sum_prepare(version, impl):
    def prepare(n):
        run, _ = sum_runner(version, impl, nonzero_random(n))
        return run
    return prepare


def _cupy_sum_case() -> Case:
    def prepare(n):
        import cupy

        x = nonzero_random(n)
        out = cupy.zeros((), cupy.float32)
        return lambda: cupy.sum(x, out=out)

    def check(n):
        import cupy

        from ..kernels.reduction import sum_cpu

        x = nonzero_random(n, seed=3)
        got, want = float(cupy.sum(x)), float(sum_cpu(cupy.asnumpy(x)))
        if not np.isclose(got, want, rtol=1e-5, atol=0):
            raise AssertionError(f"cupy.sum at n = {n:,}: {got!r}, expected {want!r}")

    from ..kernels.reduction import reduction_bytes

    return Case(name="cupy.sum (CUB, reference)", impl="library", prepare=prepare,
                bytes_moved=reduction_bytes, check=check, reference=True)


def _vecmat_bytes(n):
    from ..kernels.reduction import vecmat_bytes

    return vecmat_bytes(*vecmat_shape(n))


def _vecmat_data(n, seed=4):
    rows, cols = vecmat_shape(n)
    return nonzero_random(cols, seed), nonzero_random((rows, cols), seed + 1)


def _vecmat_case(version, impl) -> Case:
    def prepare(n):
        v, w = _vecmat_data(n)
        run, _ = vecmat_runner(version, impl, v, w)
        return run

    def check(n):
        import cupy

        from ..kernels.reduction import vecmat_cpu

        v, w = _vecmat_data(n)
        run, out = vecmat_runner(version, impl, v, w)
        run()
        cupy.cuda.runtime.deviceSynchronize()
        got, want = cupy.asnumpy(out), vecmat_cpu(cupy.asnumpy(v), cupy.asnumpy(w))
        bad = np.flatnonzero(~np.isclose(got, want, rtol=1e-5, atol=0))
        if len(bad):
            r = int(bad[0])
            raise AssertionError(f"{version} ({impl}) at n = {n:,}: {len(bad)} wrong rows; row {r}: "
                                 f"{got[r]!r}, expected {want[r]!r}")

    label = "CUDA C" if impl == "cuda-c" else "numba"
    return Case(name=f"{version} ({label})", impl=impl, prepare=prepare, bytes_moved=_vecmat_bytes,
                check=check)


def _gemv_case() -> Case:
    def prepare(n):
        v, w = _vecmat_data(n)
        return lambda: w @ v

    return Case(name="vecmat: cupy w @ v (cuBLAS gemv)", impl="library", prepare=prepare,
                bytes_moved=_vecmat_bytes)


def cases() -> list[Case]:
    """cupy.sum, every sum version in CUDA C and numba, then the vector-matrix product."""
    from ..kernels.reduction import reduction_bytes, reduction_flops

    out = [_cupy_sum_case()]
    for version, (nb_name, _, _) in SUM_VERSIONS.items():
        for impl, label in (("cuda-c", "CUDA C"), ("numba", "numba")):
            if impl == "numba" and nb_name is None:
                continue
            out.append(Case(name=f"{version} ({label})", impl=impl, prepare=_sum_prepare(version, impl),
                            bytes_moved=reduction_bytes, check=_sum_check(version, impl),
                            flops=reduction_flops))
    out.append(_gemv_case())
    for impl in ("cuda-c", "numba"):
        out.append(_vecmat_case("vecmat v2 grid-stride", impl))
    return out
