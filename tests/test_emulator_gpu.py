"""The same kernels give the same outputs on a GPU (numba-cuda) and in the emulator."""

import numpy as np
import pytest
from numba import cuda, float32

import simtlab
from simtlab.kernels import divergence as dv
from simtlab.kernels import gemm, intro, reduction
from gpu_support import requires_gpu, run_on_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]

rng = np.random.default_rng(2026)


def both(kernel, grid, block, *args, shared_bytes=0, **emu):
    """Run on the GPU and in the emulator from identical inputs; return both argument lists."""
    gpu_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    emu_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    run_on_gpu(kernel, grid, block, *gpu_args, shared_bytes=shared_bytes)
    simtlab.emulate(kernel, grid, block, *emu_args, shared_bytes=shared_bytes, **emu)
    return gpu_args, emu_args


def assert_same(gpu, emu, rtol=1e-5, atol=1e-6):
    for g, e in zip(gpu, emu):
        if isinstance(g, np.ndarray):
            np.testing.assert_allclose(e, g, rtol=rtol, atol=atol)


@pytest.mark.parametrize("kernel", [intro.vector_add_v1, intro.vector_add_v2])
@pytest.mark.parametrize("n, grid", [(1, 1), (1000, 4), (1000, 1), (4097, 17)])
def test_vector_add(kernel, n, grid):
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = np.full(n, np.nan, np.float32)
    g, e = both(kernel, grid, 256, a, b, out, trace=False)
    if kernel is intro.vector_add_v1 and grid * 256 < n:
        return                      # v1 only covers grid*block elements, on both backends
    assert_same(g, e)
    np.testing.assert_allclose(g[2], a + b, rtol=1e-6)


def test_conv2d_relu_seed_shape():
    image = rng.random((100, 100), dtype=np.float32) - 0.5
    filters = rng.random((10, 5, 5), dtype=np.float32) - 0.5
    out = np.full((10, 20, 20), np.nan, np.float32)
    g, e = both(intro.conv2d_relu_v1, 16, 32, image, filters, out, trace=False)
    np.testing.assert_array_equal(e[2], g[2])      # sums of products fused as on the GPU
    np.testing.assert_allclose(g[2], intro.conv2d_relu_cpu(image, filters), rtol=1e-4, atol=1e-5)


def test_whoami_mapping():
    ids = [np.full((37, 45), -1, np.int32) for _ in range(3)]
    g, e = both(intro.whoami_2d, (3, 3), (16, 16), *ids)
    for a, b in zip(g, e):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kernel", [dv.branch_by_parity, dv.branch_by_warp])
def test_branches(kernel):
    x = rng.random(1000, dtype=np.float32)
    g, e = both(kernel, 4, 256, x, np.zeros_like(x))
    assert_same(g, e)


def test_triangle_sum():
    n_terms = rng.integers(0, 50, 300).astype(np.int32)
    g, e = both(dv.triangle_sum, 2, 256, n_terms, np.zeros(300, np.int32))
    np.testing.assert_array_equal(g[1], e[1])
    np.testing.assert_array_equal(g[1], dv.triangle_sum_cpu(n_terms))
    order = np.argsort(n_terms, kind="stable").astype(np.int32)
    g, e = both(dv.triangle_sum_by_order, 2, 256, n_terms, order, np.zeros(300, np.int32))
    np.testing.assert_array_equal(g[2], e[2])
    np.testing.assert_array_equal(g[2], dv.triangle_sum_cpu(n_terms))


@pytest.mark.parametrize("n", [1, 255, 256, 257, 10_000])
def test_tree_reduction(n):
    x = rng.random(n, dtype=np.float32)
    blocks = -(-n // reduction.BLOCK)
    g, e = both(reduction.block_sum_tree, blocks, reduction.BLOCK, x,
                np.zeros(blocks, np.float32), trace=False)
    assert_same(g, e, rtol=1e-6)


@pytest.mark.parametrize("kernel", [gemm.gemm_naive, gemm.gemm_tiled])
@pytest.mark.parametrize("m, k, n", [(64, 64, 64), (33, 17, 50)])
def test_gemm(kernel, m, k, n):
    a = rng.random((m, k), dtype=np.float32)
    b = rng.random((k, n), dtype=np.float32)
    c = np.full((m, n), np.nan, np.float32)
    grid = (-(-n // gemm.TILE), -(-m // gemm.TILE))
    g, e = both(kernel, grid, (gemm.TILE, gemm.TILE), a, b, c, trace=False)
    np.testing.assert_array_equal(e[2], g[2])      # acc += a * b fused as on the GPU


@cuda.jit
def warp_api(x, out):
    t = cuda.threadIdx.x
    v = x[t]
    total = v
    off = 16
    while off > 0:
        total += cuda.shfl_down_sync(0xFFFFFFFF, total, off)
        off //= 2
    out[t, 0] = cuda.shfl_sync(0xFFFFFFFF, total, 0)
    out[t, 1] = cuda.shfl_up_sync(0xFFFFFFFF, v, 3)
    out[t, 2] = cuda.shfl_xor_sync(0xFFFFFFFF, v, 5)
    out[t, 3] = cuda.ballot_sync(0xFFFFFFFF, v % 3 == 0)
    out[t, 4] = cuda.any_sync(0xFFFFFFFF, v > 60)
    out[t, 5] = cuda.all_sync(0xFFFFFFFF, v >= 0)
    out[t, 6] = cuda.syncthreads_count(1 if v % 2 == 0 else 0)   # numba wants an int
    s = cuda.shared.array(64, float32)
    s[t] = v
    cuda.syncthreads()
    out[t, 7] = s[63 - t]
    cuda.atomic.add(out, (0, 8), 1)


def test_warp_intrinsics_atomics_and_barriers():
    x = rng.integers(0, 64, 64).astype(np.int64)
    g, e = both(warp_api, 1, 64, x, np.zeros((64, 9), np.int64))
    np.testing.assert_array_equal(g[1], e[1])


def test_store_conversions_match_numba_cuda():
    """Stores that do not fit the array's type: the emulator converts as the GPU does
    (tests/test_store_conversions.py holds the CPU side and the rules)."""
    import test_store_conversions as sc
    out = np.zeros(32, np.uint32)
    g, e = both(sc.ballot_into_uint32, 1, 32, out)
    np.testing.assert_array_equal(e[0], g[0])
    outs = [np.zeros(sc.FLOATS.size, t) for t in (np.int32, np.uint32, np.uint8, np.float32)]
    g, e = both(sc.store_values, 1, 32, sc.FLOATS, *outs)
    for a, b in zip(g[1:], e[1:]):
        np.testing.assert_array_equal(b, a)
    outs = [np.zeros(sc.WIDE.size, np.int32), np.zeros(sc.WIDE.size, np.uint16)]
    g, e = both(sc.store_wide_integers, 1, 32, sc.WIDE, *outs)
    for a, b in zip(g[1:], e[1:]):
        np.testing.assert_array_equal(b, a)
    g, e = both(sc.atomic_wraps, 1, 2, np.array([2**31 - 1], np.int32))
    np.testing.assert_array_equal(e[0], g[0])
