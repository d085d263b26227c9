"""Chapter 6 on a GPU: the emulator, numba-cuda and CUDA C agree with the float64 reference on
sizes that are not multiples of any tile (and on float4-friendly ones, where v6/v7 take their
vector path); the seed's epilogue loses the bias on the GPU too, the fixed one keeps it."""

from __future__ import annotations

import numpy as np
import pytest

import simtlab
from gpu_support import requires_gpu, run_on_gpu
from simtlab.kernels import gemm as G

pytestmark = [pytest.mark.gpu, requires_gpu]

ODD = [(33, 47, 29), (130, 257, 67), (1, 129, 5)]
ALIGNED = [(200, 132, 96), (129, 256, 36)]          # N and K multiples of 4: float4 rows
EMULATOR_SHAPE = (33, 47, 29)                       # small: v7 emulates 256 threads x 64 outputs


def _inputs(m, n, k):
    rng = np.random.default_rng(m * 1000 + n + k)
    return rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)


def _on_gpu(version, impl, a, b):
    import cupy

    from simtlab.gpubench.gemm import gemm_runner

    da, db = cupy.asarray(a), cupy.asarray(b)
    dc = cupy.full((a.shape[0], b.shape[1]), cupy.nan, cupy.float32)
    gemm_runner(version, impl, da, db, dc)()
    cupy.cuda.runtime.deviceSynchronize()
    return dc.get()


def _close(got, a, b):
    want = G.gemm_cpu(a, b)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    assert np.isfinite(got).all(), "an output was never written"
    assert (np.abs(got - want) / scale).max() < 1e-5


@pytest.mark.parametrize("shape", ODD + ALIGNED, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("version", [v.label for v in G.VERSIONS])
def test_cuda_c_matches_reference(version, shape):
    a, b = _inputs(*shape)
    _close(_on_gpu(version, "cuda-c", a, b), a, b)


@pytest.mark.parametrize("shape", ODD + ALIGNED, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("version", G.NUMBA_VERSIONS)
def test_numba_matches_reference(version, shape):
    a, b = _inputs(*shape)
    _close(_on_gpu(version, "numba", a, b), a, b)


@pytest.mark.parametrize("version", G.NUMBA_VERSIONS)
def test_emulator_agrees_with_numba_and_cuda_c(version):
    a, b = _inputs(*EMULATOR_SHAPE)
    gpu = _on_gpu(version, "numba", a, b)
    twin = _on_gpu(version, "cuda-c", a, b)
    emu = G.gemm_with(version, a, b, lambda k, g, bl, *args: simtlab.emulate(k, g, bl, *args, trace=False))
    _close(emu, a, b)
    # the same kernel, the same order of float32 adds, and the emulator fuses each
    # ``acc += a * b`` into one rounding as NVVM does (simtlab/emulator/contraction.py): the
    # same bits. nvcc's CUDA C twin chooses its own contractions: each step may round a
    # product once more, half an ulp of a product of two inputs in [0, 1) per step
    np.testing.assert_array_equal(gpu, emu)
    np.testing.assert_allclose(twin, emu, rtol=0,
                               atol=EMULATOR_SHAPE[2] * 0.5 * np.finfo(np.float32).eps)


@pytest.mark.parametrize("impl", ["numba", "cuda-c"])
def test_seed_epilogue_drops_bias_on_gpu_fixed_keeps_it(impl):
    import cupy

    from simtlab.cuda_source import cu_kernel

    w, x = _inputs(19, 23, 21)
    bias = np.linspace(1, 2, 19).astype(np.float32)
    grid, block = (G.cdiv(23, G.TILE), G.cdiv(19, G.TILE)), (G.TILE, G.TILE)
    out = {}
    for name in ("gemm_bias_act_seed", "gemm_bias_act"):
        p = np.zeros((19, 23), np.float32)
        if impl == "numba":
            run_on_gpu(getattr(G, name), grid, block, w, x, p, bias, 1, G.ACT_NONE)
        else:
            dp = cupy.asarray(p)
            cu_kernel("gemm", name)(grid, block, (cupy.asarray(w), cupy.asarray(x), dp, cupy.asarray(bias),
                                                  np.int32(1), np.int32(G.ACT_NONE), np.int32(19),
                                                  np.int32(23), np.int32(21)))
            p = dp.get()
        out[name] = p
    np.testing.assert_allclose(out["gemm_bias_act_seed"], G.dense_layer_cpu(w, x), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(out["gemm_bias_act"], G.dense_layer_cpu(w, x, bias), rtol=1e-5, atol=1e-4)


def test_cublas_reference_is_fp32_not_tf32():
    import cupy

    from simtlab.gpubench.gemm import check_version

    # TF32 keeps 10 mantissa bits: its error on K = 997 would be ~1e-3 relative, FP32's ~1e-7
    assert check_version("", "library") < 1e-5
    assert cupy.matmul(cupy.ones((2, 2), cupy.float32), cupy.ones((2, 2), cupy.float32)).dtype == cupy.float32
