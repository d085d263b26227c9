"""Chapter 8's unfused direct convolution (kernels/cnn.cu conv_bias_relu_direct + maxpool2): the
fused kernel's threads storing the conv map. On the PTX engine its pool1 is the fused kernel's
to the bit (the same sums in the same order), so the GPU benchmark's direct-vs-fused difference
is the fusion alone (gpubench.cnn.conv1_paths)."""

from __future__ import annotations

import numpy as np
import pytest

from simtlab.kernels import cnn as CN

CC = pytest.importorskip("simtlab.cuda_c_kernels")


def _run(launches):
    import simtlab

    for step in launches:
        simtlab.emulate(CC.course_kernel("cnn", step.kernel), step.grid, step.block, *step.args,
                        shared_bytes=step.shared, trace=False)


@pytest.mark.parametrize("c, m", [(1, 6), (6, 16)])
def test_direct_then_pool_is_the_fused_kernel_bit_for_bit(c, m):
    try:
        CC.nvrtc_version()
    except CC.CompilerMissing as why:
        pytest.skip(f"NVRTC is not installed ({why})")
    rng = np.random.default_rng(c)
    x = rng.random((3, c, 12, 16), dtype=np.float32)
    w = (rng.random((m, c, 5, 5), dtype=np.float32) - np.float32(0.5))
    bias = (rng.random(m, dtype=np.float32) - np.float32(0.5))
    conv_map = np.zeros((3, m, 8, 12), np.float32)
    pooled = np.zeros((3, m, 4, 6), np.float32)
    fused = np.zeros((3, m, 4, 6), np.float32)
    _run(CN.conv_launches(np, "cuda-c", x, w, bias, conv_map, "direct") + [CN.pool_launch(conv_map, pooled)])
    _run(CN.conv_launches(np, "cuda-c", x, w, bias, fused, "fused"))
    np.testing.assert_allclose(conv_map, np.maximum(CN.conv2d_cpu(x, w) + bias[None, :, None, None], 0),
                               rtol=1e-5, atol=1e-5)
    assert np.array_equal(pooled.view(np.uint32), fused.view(np.uint32))


def test_the_direct_path_is_cuda_c_only_and_for_the_networks_layers():
    x, w, b = np.zeros((1, 1, 28, 28), np.float32), np.zeros((6, 1, 5, 5), np.float32), np.zeros(6, np.float32)
    with pytest.raises(ValueError, match="CUDA C only"):
        CN.conv_launches(np, "numba", x, w, b, np.zeros((1, 6, 24, 24), np.float32), "direct")
    with pytest.raises(ValueError, match="C = 1 or 6, K = 5"):
        CN.conv_launches(np, "cuda-c", np.zeros((1, 1, 27, 27), np.float32), w, b,
                         np.zeros((1, 6, 23, 23), np.float32), "direct")
    steps, _ = CN.network_plan(CN.init_params(0), x, np, "cuda-c", "direct")
    assert [name for name, _ in steps][:4] == ["conv1", "pool1", "conv2", "pool2"]
    assert steps[0][1][0].kernel == "conv_bias_relu_direct"
