"""Chapter 6's split-K on a GPU: the plan that benchmarks/gpu_gemm.py --split-k times (C zeroed by
a memset, then gemm_splitk over gridDim.z slices of K) multiplies right against a float64 product,
on float4 rows and on odd sizes, with more slices than K has tiles too, and run twice on the
same C (the memset is part of every run)."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_support import requires_gpu
from simtlab.kernels import gemm as G

pytestmark = [pytest.mark.gpu, requires_gpu]


def _relative_error(got, a, b) -> float:
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    return float(np.max(np.abs(got - want) / scale))


@pytest.mark.parametrize("m, n, k, splits", [(512, 512, 4096, 8), (260, 300, 196, 3), (301, 259, 203, 16),
                                             (33, 47, 29, 2)])
def test_split_k_matches_a_float64_product(m, n, k, splits):
    import cupy

    from simtlab import versions

    rng = np.random.default_rng(m + n + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = cupy.full((m, n), cupy.nan, cupy.float32)
    run, out = versions.gpu_runner("gemm", G.splitk_version(splits), "cuda-c", cupy.asarray(a), cupy.asarray(b),
                                   out=c)
    run()
    run()                                     # a second run: the memset zeroes C again
    cupy.cuda.runtime.deviceSynchronize()
    assert out is c
    assert _relative_error(c.get(), a, b) < 1e-5
