"""Blocks that wait for each other, on a GPU: a cooperative launch with a grid-wide barrier
(numba-cuda) and a thread-block cluster reading its partner's shared memory (CUDA C, Hopper)."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_support import requires_gpu
from simtlab.kernels import cooperation as C

pytestmark = [pytest.mark.gpu, requires_gpu]


@pytest.mark.parametrize("n", [1, 255, 257, 100_003, 2**22 + 3])
def test_grid_sync_sum_is_right_and_reproducible(n):
    from numba import cuda

    x = np.random.default_rng(n).integers(0, 16, n).astype(np.float32)   # exact in float32
    d = cuda.to_device(x)
    total, blocks = C.grid_sync_sum(d)
    assert total == np.float32(x.astype(np.int64).sum())
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    assert blocks % sms == 0 and blocks >= sms          # whole waves: every block resident
    y = np.random.default_rng(1).random(n).astype(np.float32)
    dy = cuda.to_device(y)
    bits = {C.grid_sync_sum(dy)[0].tobytes() for _ in range(3)}
    assert len(bits) == 1                               # partials added in index order
    np.testing.assert_allclose(next(iter({C.grid_sync_sum(dy)[0]})), C.sum_cpu(y), rtol=1e-5)


def test_cooperative_launch_larger_than_the_gpu_is_refused():
    from numba import cuda

    d = cuda.to_device(np.ones(1000, np.float32))
    C.grid_sync_sum(d)
    too_many = C.max_grid_sync_blocks() + 1
    with pytest.raises(Exception, match="(?i)cooperative|too large|exceed"):
        C.reduce_grid_sync[too_many, C.BLOCK](d, cuda.device_array(too_many, np.float32),
                                              cuda.device_array(1, np.float32))
        cuda.synchronize()


def test_cluster_pairs_sum():
    cupy = pytest.importorskip("cupy")
    if cupy.cuda.Device().compute_capability < "90":
        pytest.skip("thread-block clusters need compute capability 9.0 (Hopper)")
    for n in (1, 1000, 2**20 + 7):
        x = np.random.default_rng(n).integers(0, 16, n).astype(np.float32)
        total, blocks = C.cluster_sum(cupy.asarray(x))
        assert blocks % 2 == 0
        assert total == np.float32(x.astype(np.int64).sum())
