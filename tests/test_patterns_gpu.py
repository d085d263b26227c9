"""Chapter 3 kernels on a GPU: numba-cuda, CUDA C (CuPy RawModule) and the emulator give the
CPU reference's result, for sizes that are not powers of two and the edge cases (1 element,
one less and one more than a block); and the benchmark cases check themselves.
"""

import numpy as np
import pytest

import simtlab
from simtlab.kernels import patterns as P
from gpu_support import requires_gpu, run_on_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]

rng = np.random.default_rng(33)

SIZES_1D = [1, 2, P.BLOCK - 1, P.BLOCK + 1, 1000, 4097]
SIZES_STENCIL = [1, 2, P.STENCIL_BLOCK - 1, P.STENCIL_BLOCK + 1, 1000]
SHAPES_2D = [(1, 1), (1, 70), (70, 1), (P.TILE - 1, P.TILE + 1), (P.TILE + 1, P.TILE - 1),
             (P.BIG_TILE + 1, 37), (45, 67), (130, 257)]


def rand(shape):
    return (rng.random(shape, dtype=np.float32) + 0.5).astype(np.float32)


def run_cuda_c(name, grid, block, *args):
    """Launch kernels/patterns.cu's ``name``; NumPy arrays in, results copied back in place."""
    import cupy
    from simtlab.cuda_source import cu_kernel

    dev = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    grid = grid if isinstance(grid, tuple) else (grid,)
    block = block if isinstance(block, tuple) else (block,)
    cu_kernel("patterns", name)(grid, block, tuple(dev))
    cupy.cuda.runtime.deviceSynchronize()
    for a, d in zip(args, dev):
        if isinstance(a, np.ndarray):
            a[...] = cupy.asnumpy(d)


def three_ways(kernel, grid, block, inputs, out_shape, sizes=()):
    """The output of ``kernel`` on numba-cuda, in CUDA C and in the emulator, from the same inputs."""
    outs = {}
    for way in ("numba", "cuda-c", "emulator"):
        out = np.full(out_shape, np.nan, np.float32)
        args = [a.copy() for a in inputs] + [out]
        if way == "numba":
            run_on_gpu(kernel, grid, block, *args)
        elif way == "cuda-c":
            run_cuda_c(kernel.py_func.__name__, grid, block, *args, *[np.int32(s) for s in sizes])
        else:
            simtlab.emulate(kernel, grid, block, *args, trace=False)
        outs[way] = out
    return outs


def assert_all(outs, want, exact=False):
    for way, got in outs.items():
        if exact:
            np.testing.assert_array_equal(got, want, err_msg=way)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=way)


@pytest.mark.parametrize("n", SIZES_1D)
def test_map(n):
    x = rand(n)
    outs = three_ways(P.map_v1, P.cdiv(n, P.BLOCK), P.BLOCK, [x], n, sizes=[n])
    assert_all(outs, P.map_cpu(x))


@pytest.mark.parametrize("kind", ["gather", "scatter"])
@pytest.mark.parametrize("n", SIZES_1D)
def test_gather_scatter(kind, n):
    x, idx = rand(n), rng.permutation(n).astype(np.int32)
    kernel = P.gather_v1 if kind == "gather" else P.scatter_v1
    outs = three_ways(kernel, P.cdiv(n, P.BLOCK), P.BLOCK, [x, idx], n, sizes=[n])
    assert_all(outs, P.gather_cpu(x, idx) if kind == "gather" else P.scatter_cpu(x, idx), exact=True)


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("n", SIZES_1D + [P.COPY_STRIDE * 9 + 5])
def test_copy(version, n):
    kernel = P.copy_v1_strided if version == 1 else P.copy_v2_coalesced
    x = rand(n)
    outs = three_ways(kernel, P.cdiv(P.copy_threads(n, version), P.BLOCK), P.BLOCK, [x], n, sizes=[n])
    assert_all(outs, x, exact=True)


@pytest.mark.parametrize("kernel", [P.stencil1d_v1_global, P.stencil1d_v2_shared])
@pytest.mark.parametrize("n", SIZES_STENCIL)
def test_stencil1d(kernel, n):
    x, w = rand(n), rand(2 * P.RADIUS + 1) / 7
    outs = three_ways(kernel, P.cdiv(n, P.STENCIL_BLOCK), P.STENCIL_BLOCK, [x, w], n, sizes=[n])
    assert_all(outs, P.stencil1d_cpu(x, w))


@pytest.mark.parametrize("kernel", [P.stencil2d_v1_global, P.stencil2d_v2_shared])
@pytest.mark.parametrize("shape", SHAPES_2D + [(P.TILE_2D_Y - 1, P.TILE_2D_X + 1)])
def test_stencil2d(kernel, shape):
    x, w = rand(shape), rand((3, 3)) / 9
    grid, block = P.stencil2d_launch(shape)
    outs = three_ways(kernel, grid, block, [x, w], shape, sizes=shape)
    assert_all(outs, P.stencil2d_cpu(x, w))


@pytest.mark.parametrize("version", [1, 2, 3, 4])
@pytest.mark.parametrize("shape", SHAPES_2D)
def test_transpose(version, shape):
    a = rand(shape)
    grid, block = P.transpose_launch(shape, version)
    outs = three_ways(P.TRANSPOSES[version], grid, block, [a], shape[::-1], sizes=shape)
    assert_all(outs, a.T, exact=True)


def test_benchmark_cases_check_themselves():
    from simtlab.gpubench import patterns

    cases = patterns.cases()
    assert sum(c.reference for c in cases) == 1
    for case in cases:
        case.check(50_003)          # raises AssertionError with the case's name when wrong
        run = case.prepare(4099)
        run()
    import cupy
    cupy.cuda.runtime.deviceSynchronize()
