"""kernels/filter2d.py: both versions agree with the CPU reference; the shared-memory version
reads each image value once from global memory."""

import numpy as np
import pytest

import simtlab
from simtlab.kernels import filter2d


def _launch(kernel, image, filt, **kw):
    out = np.full((image.shape[0] - filter2d.K + 1, image.shape[1] - filter2d.K + 1), np.nan, np.float32)
    grid = (-(-out.shape[1] // filter2d.TILE), -(-out.shape[0] // filter2d.TILE))
    run = simtlab.emulate(kernel, grid, (filter2d.TILE, filter2d.TILE), image, filt, out, **kw)
    return out, run


@pytest.mark.parametrize("kernel", [filter2d.conv2d_v1_global, filter2d.conv2d_v2_shared])
@pytest.mark.parametrize("shape", [(64, 64), (37, 50)])
def test_matches_the_cpu_reference(kernel, shape):
    rng = np.random.default_rng(3)
    image = rng.random(shape, dtype=np.float32) - 0.5
    filt = rng.random((filter2d.K, filter2d.K), dtype=np.float32) - 0.5
    out, run = _launch(kernel, image, filt, trace=False)
    np.testing.assert_allclose(out, filter2d.conv2d_cpu(image, filt), rtol=1e-4, atol=1e-5)


def test_the_shared_patch_reads_each_image_value_once_per_block():
    rng = np.random.default_rng(4)
    image = rng.random((64, 64), dtype=np.float32)
    filt = rng.random((filter2d.K, filter2d.K), dtype=np.float32)
    _, v1 = _launch(filter2d.conv2d_v1_global, image, filt)
    _, v2 = _launch(filter2d.conv2d_v2_shared, image, filt)
    reads1 = len(v1.accesses("image", "read"))
    reads2 = len(v2.accesses("image", "read"))
    assert reads1 == 60 * 60 * filter2d.K * filter2d.K            # one window per output element
    # one patch per block (4 x 4 blocks), less its cells past the image's edge
    per_axis = sum(min(filter2d.HALO, 64 - start) for start in range(0, 60, filter2d.TILE))
    assert reads2 == per_axis ** 2 < 16 * filter2d.HALO ** 2
    assert v2.metrics["races"] == 0 and v1.metrics["races"] == 0
    assert filter2d.conv2d_flops((64, 64)) == 2 * 60 * 60 * 25
