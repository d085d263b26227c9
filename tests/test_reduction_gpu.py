"""Chapter 5 on a GPU: the emulator, numba-cuda and CUDA C give the reference's sum, for sizes
that are not powers of two and the edge cases (1 element, one less and one more than a block);
the two-pass and last-block sums are bit-for-bit deterministic, the atomic ones are not."""

from __future__ import annotations

import numpy as np
import pytest

import simtlab
from gpu_support import requires_gpu, run_on_gpu
from simtlab.kernels import reduction as R

pytestmark = [pytest.mark.gpu, requires_gpu]

SIZES = [1, 2, R.BLOCK - 1, R.BLOCK, R.BLOCK + 1, 2 * R.BLOCK - 1, 2 * R.BLOCK + 1, 1000, 3001]
# float32 sums with partial sums of similar size: a few ulps of the total
RTOL = 1e-5


def _numba(kernel, grid, block, *args):
    run_on_gpu(kernel, grid, block, *args)


def _emulator(kernel, grid, block, *args):
    simtlab.emulate(kernel, grid, block, *args, trace=False)


def _cuda_c(version, x):
    import cupy

    from simtlab.gpubench import runner

    run, out = runner("reduction", version, "cuda-c", cupy.asarray(x))
    run()
    cupy.cuda.runtime.deviceSynchronize()
    return np.float32(out[0].get())


def _numba_full(version, x):
    """The whole sum with numba-cuda on device arrays (the benchmark's path, many blocks)."""
    import cupy

    from simtlab.gpubench import runner

    run, out = runner("reduction", version, "numba", cupy.asarray(x))
    run()
    cupy.cuda.runtime.deviceSynchronize()
    return np.float32(out[0].get())


def _inputs(n, integers):
    rng = np.random.default_rng(n)
    if integers:                          # every partial sum exact in float32: all orders agree
        return rng.integers(0, 16, n).astype(np.float32)
    return (rng.random(n) + 0.5).astype(np.float32)


@pytest.mark.parametrize("integers", [True, False], ids=["int", "float"])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("version", list(R.SUM_LABELS))
def test_emulator_numba_cuda_c_agree(version, n, integers):
    x = _inputs(n, integers)
    want = R.sum_cpu(x)
    results = {
        "emulator": R.sum_with(version, x, _emulator),
        "numba (host launch)": R.sum_with(version, x, _numba),
        "numba (device arrays)": _numba_full(version, x),
        "CUDA C": _cuda_c(version, x),
    }
    for name, got in results.items():
        if integers:
            assert got == want, f"{version} {name} n={n}: {got} != {want}"
        else:
            assert abs(got - want) <= RTOL * want, f"{version} {name} n={n}: {got} vs {want}"


@pytest.mark.parametrize("n", SIZES + [1_000_003, 2**22 + 5])
@pytest.mark.parametrize("version", ["v8 float4, atomicAdd", "v9 float4, last block"])
def test_float4_versions(version, n):
    # CUDA C only: n % 4 != 0 exercises the tail, n < 4 has no float4 at all
    for integers in (True, False):
        x = _inputs(n, integers)
        got, want = _cuda_c(version, x), R.sum_cpu(x)
        if integers and want < 2**24:
            assert got == want, (version, n, got, want)
        else:
            assert abs(got - want) <= RTOL * want, (version, n, got, want)


@pytest.mark.parametrize("n", [1_000_003, 2**22 + 5])
@pytest.mark.parametrize("version", list(R.SUM_LABELS))
def test_large_sizes(version, n):
    x = _inputs(n, False)
    want = R.sum_cpu(x)
    for got in (_numba_full(version, x), _cuda_c(version, x)):
        assert abs(got - want) <= RTOL * want, (version, n, got, want)


def _repeat(version, impl, x, times):
    import cupy

    from simtlab.gpubench import runner

    run, out = runner("reduction", version, impl, cupy.asarray(x))
    bits = []
    for _ in range(times):
        run()
        bits.append(out[0].get().tobytes())
    return bits


def test_two_pass_and_last_block_are_deterministic():
    x = np.random.default_rng(11).normal(0.0, 1.0, 2**22).astype(np.float32)
    for version, impl in [("v6 grid-stride, second pass", "cuda-c"), ("v6 grid-stride, second pass", "numba"),
                          ("v9 float4, last block", "cuda-c"), ("v5 warp shuffle", "cuda-c")]:
        bits = _repeat(version, impl, x, 30)
        assert len(set(bits)) == 1, f"{version} ({impl}) gave {len(set(bits))} different float32 results"


def test_atomic_sums_vary_between_runs():
    # ~1000 blocks add into one float in the order they finish; float32 rounding depends on it.
    # This demonstrates the non-determinism the chapter describes; 100 runs make a single
    # bit pattern practically impossible.
    x = np.random.default_rng(12).normal(0.0, 1.0, 2**22).astype(np.float32)
    for version in ("v7 grid-stride, atomicAdd", "v8 float4, atomicAdd"):
        bits = _repeat(version, "cuda-c", x, 100)
        values = [np.frombuffer(b, np.float32)[0] for b in bits]
        assert len(set(bits)) > 1, f"{version}: 100 runs gave one bit pattern"
        want = R.sum_cpu(x)
        assert all(abs(v - want) <= 1e-5 * np.abs(x).sum() for v in values)


def test_integer_atomics_are_exact():
    # integer addition is associative: any order of the atomics gives the same bits
    x = np.random.default_rng(13).integers(0, 16, 2**20).astype(np.float32)
    bits = _repeat("v8 float4, atomicAdd", "cuda-c", x, 20)
    assert set(bits) == {R.sum_cpu(x).tobytes()}


@pytest.mark.parametrize("rows, n", [(10, 4000), (3, 1), (7, 257), (2, 100_003)])
def test_vecmat(rows, n):
    import cupy

    from simtlab.gpubench import runner

    rng = np.random.default_rng(n)
    v, w = rng.random(n, dtype=np.float32), rng.random((rows, n), dtype=np.float32)
    want = R.vecmat_cpu(v, w)
    if n <= 4000:
        np.testing.assert_allclose(R.vecmat_with(R.vecmat_v2_grid_stride, v, w, _emulator), want, rtol=RTOL)
    np.testing.assert_allclose(R.vecmat_with(R.vecmat_v2_grid_stride, v, w, _numba), want, rtol=RTOL)
    for impl in ("numba", "cuda-c"):
        run, out = runner("reduction", "vecmat v2 grid-stride", impl, cupy.asarray(v), cupy.asarray(w))
        run()
        np.testing.assert_allclose(cupy.asnumpy(out), want, rtol=RTOL, err_msg=impl)


def test_vecmat_seed_skips_columns_on_the_gpu_too():
    # the seed's launch: 8 blocks of 256 per row, 4000 columns: only columns 0..2047 are read
    rng = np.random.default_rng(5)
    v, w = rng.random(4000, dtype=np.float32), rng.random((10, 4000), dtype=np.float32)
    got = R.vecmat_with(R.vecmat_v1_seed, v, w, _numba, blocks_per_row=8)
    np.testing.assert_allclose(got, R.vecmat_cpu(v[:2048], w[:, :2048]), rtol=RTOL)
    import cupy

    from simtlab.cuda_source import cu_kernel

    block_out = cupy.zeros((10, 8), cupy.float32)
    cu_kernel("reduction", "vecmat_v1_seed")((8, 10), (256,), (cupy.asarray(v), cupy.asarray(w), block_out,
                                                                np.int32(4000)))
    np.testing.assert_allclose(cupy.asnumpy(block_out).sum(axis=1), R.vecmat_cpu(v[:2048], w[:, :2048]),
                               rtol=RTOL)


def test_gpubench_cases_check():
    from simtlab.gpubench import reduction as B

    cases = B.cases()
    assert sum(c.reference for c in cases) == 1
    for case in cases:
        if case.check is not None:
            case.check(100_003)
        run = case.prepare(2**16)
        run()


@pytest.mark.parametrize("rows, cols", [(3, 1), (32, 257), (64, 112 * 112)])
def test_row_means(rows, cols):
    import cupy

    from simtlab.cuda_source import cu_kernel

    x = np.random.default_rng(cols).normal(1.0, 1.0, (rows, cols)).astype(np.float32)
    want = R.row_mean_cpu(x)
    np.testing.assert_allclose(R.row_mean_with(x, _numba, blocks_per_row=4), want, rtol=1e-4, atol=1e-6)
    blocks = 4
    partial = cupy.zeros((rows, blocks), cupy.float32)
    out = cupy.zeros(rows, cupy.float32)
    cu_kernel("reduction", "row_sum_partials")((blocks, rows), (R.BLOCK,), (cupy.asarray(x), partial, np.int64(cols)))
    cu_kernel("reduction", "row_mean_finish")((rows,), (R.BLOCK,), (partial, np.float32(cols), out, np.int32(blocks)))
    np.testing.assert_allclose(cupy.asnumpy(out), want, rtol=1e-4, atol=1e-6)


def test_last_warp_with_syncwarp_is_right():
    # the unsafe version is undefined behaviour: nothing to assert about its sums here
    # (benchmarks/results/text_h100_probes.txt records what it gave on the H100)
    x = np.random.default_rng(0).integers(0, 16, 1000 * 2 * R.BLOCK).astype(np.float32)
    blocks = x.size // (2 * R.BLOCK)
    want = x.reshape(blocks, 2 * R.BLOCK).astype(np.int64).sum(axis=1).astype(np.float32)
    partial = np.zeros(blocks, np.float32)
    run_on_gpu(R.reduce_last_warp_syncwarp, blocks, R.BLOCK, x, partial)
    np.testing.assert_array_equal(partial, want)
    import cupy

    from simtlab.cuda_source import cu_kernel

    p = cupy.zeros(blocks, cupy.float32)
    cu_kernel("reduction", "reduce_last_warp_syncwarp")((blocks,), (R.BLOCK,), (cupy.asarray(x), p, np.int64(x.size)))
    np.testing.assert_array_equal(cupy.asnumpy(p), want)
