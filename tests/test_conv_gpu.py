"""Chapter 7 on a GPU: the emulator, numba-cuda and CUDA C give the reference convolution on odd
shapes (batch, channels, 'valid'/'same'/int padding, stride 1 and 2); v5's tuned tiles give it on
ECE408's C1 and C3 layers, image sizes that are not multiples of the tile included; the seed's
grid-stride step leaves outputs unwritten on the GPU as in the emulator."""

from __future__ import annotations

import numpy as np
import pytest

import simtlab
from gpu_support import requires_gpu, run_on_gpu
from simtlab.kernels import conv as K

pytestmark = [pytest.mark.gpu, requires_gpu]

# (B, C, H, W, M, K, stride, padding): odd sizes, several channels, every padding kind
SHAPES = [
    (3, 2, 11, 13, 5, 3, 1, "valid"),
    (2, 3, 9, 9, 4, 5, 2, "same"),
    (1, 1, 17, 17, 3, 4, 1, "same"),
    (2, 4, 10, 7, 17, 3, 2, 1),
]


def _inputs(shape, seed=0):
    b, c, h, w, m, k = shape[:6]
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((b, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((m, c, k, k)).astype(np.float32)
    return x, wt


def _emulator(kernel, grid, block, *args, **options):
    simtlab.emulate(kernel, grid, block, *args, trace=False, **options)


def _cuda_c(version, x, w, stride, padding, config=None):
    import cupy

    from simtlab.gpubench.conv import conv_runner

    run, y = conv_runner(version, "cuda-c", cupy.asarray(x), cupy.asarray(w), stride, padding, config=config)
    run()
    cupy.cuda.runtime.deviceSynchronize()
    return cupy.asnumpy(y)


def _numba_device(version, x, w, stride, padding):
    import cupy

    from simtlab.gpubench.conv import conv_runner

    run, y = conv_runner(version, "numba", cupy.asarray(x), cupy.asarray(w), stride, padding)
    run()
    cupy.cuda.runtime.deviceSynchronize()
    return cupy.asnumpy(y)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("version", ["v1 direct", "v2 im2col + GEMM", "v3 implicit GEMM", "v3b implicit GEMM, offset table",
                                     "v4 constant weights"])
def test_emulator_numba_cuda_c_agree(version, shape):
    stride, padding = shape[6], shape[7]
    x, w = _inputs(shape)
    want = K.conv2d_cpu(x, w, stride, padding, relu=version.startswith("v1"))
    results = {
        "emulator": K.conv_with(version, x, w, _emulator, stride, padding),
        "numba (host launch)": K.conv_with(version, x, w, run_on_gpu, stride, padding),
        "numba (device arrays)": _numba_device(version, x, w, stride, padding),
        "CUDA C": _cuda_c(version, x, w, stride, padding),
    }
    for name, got in results.items():
        assert got.shape == want.shape, f"{version} {name}: shape {got.shape}, expected {want.shape}"
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"{version} {name} {shape}")


@pytest.mark.parametrize("layer", ["C1", "C3"])
def test_v5_tuned_tiles_match_the_reference(layer):
    from simtlab.gpubench.conv import V5_CONFIGS, layer_shape

    s = layer_shape(layer)
    rng = np.random.default_rng(1)
    for h, w, padding in [(s["H"], s["W"], "valid"), (s["H"] + 5, s["W"] + 3, "valid"), (s["H"], s["W"], "same")]:
        x = rng.standard_normal((3, s["C"], h, w)).astype(np.float32)
        wt = rng.standard_normal((s["M"], s["C"], s["K"], s["K"])).astype(np.float32)
        want = K.conv2d_cpu(x, wt, 1, padding)
        for config in V5_CONFIGS[layer]:
            got = _cuda_c("v5 tuned", x, wt, 1, padding, config=config)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4,
                                       err_msg=f"v5 {config} on {layer} {h}x{w} {padding}")


@pytest.mark.parametrize("layer", ["C1", "C3"])
def test_v6_image_per_block_matches_the_reference(layer):
    from simtlab.gpubench.conv import layer_shape

    s = layer_shape(layer)
    rng = np.random.default_rng(2)
    for batch, h, w in [(5, s["H"], s["W"]), (3, s["H"] - 3, s["W"] - 1)]:
        x = rng.standard_normal((batch, s["C"], h, w)).astype(np.float32)
        wt = rng.standard_normal((s["M"], s["C"], s["K"], s["K"])).astype(np.float32)
        want = K.conv2d_cpu(x, wt)
        for tile in K.V6_TILES[(s["C"], s["M"], s["K"])]:
            got = _cuda_c("v6 image per block", x, wt, 1, "valid", config=tile)
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, err_msg=f"v6 {tile} on {layer} {h}x{w}")
        np.testing.assert_allclose(_numba_device("v6 image per block", x, wt, 1, "valid"), want, rtol=1e-4,
                                   atol=1e-4, err_msg=f"v6 numba on {layer} {h}x{w}")
        np.testing.assert_allclose(K.conv_with("v6 image per block", x[:2], wt, _emulator), want[:2], rtol=1e-4,
                                   atol=1e-4, err_msg=f"v6 emulator on {layer} {h}x{w}")


def test_seed_grid_stride_skips_outputs_on_the_gpu_as_in_the_emulator():
    x, w = _inputs((2, 2, 12, 12, 3, 3, 1, "valid"), seed=3)
    x = np.abs(x)
    w = np.abs(w)                                        # every output > 0: a skipped one stays 0
    want = K.conv2d_cpu(x, w, relu=True)
    gpu = K.conv_with("v0 blog grid-stride", x, w, run_on_gpu, max_blocks=2)
    emu = K.conv_with("v0 blog grid-stride", x, w, _emulator, max_blocks=2)
    fixed = K.conv_with("v1 direct", x, w, run_on_gpu, max_blocks=2)
    np.testing.assert_array_equal(gpu == 0, emu == 0)
    assert (gpu == 0).sum() == want.size - 2 * K.BLOCK    # only the first 2 x BLOCK outputs are written
    np.testing.assert_allclose(fixed, want, rtol=1e-5)


def test_benchmark_checks_pass_for_every_case():
    from simtlab.gpubench.conv import CHECK_BATCH, cases

    for layer in ("C1", "C3"):
        for case in cases(layer):
            case.check(CHECK_BATCH)


def test_optimisation_rows_pass_their_checks():
    """benchmarks/conv_gpu.py --optim: im2col + cuBLAS SGEMM (FP32) and every other row give the layer."""
    from simtlab.gpubench.conv import CHECK_BATCH, optim_cases

    for layer in ("C1", "C3"):
        for case in optim_cases(layer):
            if case.check is not None:
                case.check(CHECK_BATCH)
