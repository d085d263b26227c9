"""Chapter 6's v8 and numba's float4 v7 on a GPU: every v8 configuration (compiled alone, as the
sweep compiles it) multiplies right on odd sizes and on float4-aligned sizes with ragged edges,
against a float64 product; numba's v7 with linked CUDA C float4 loads too, and its SASS has the
128-bit loads inline (LTO inlined the linked functions: no call per load)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gpu_support import requires_gpu
from simtlab.kernels import gemm as G

pytestmark = [pytest.mark.gpu, requires_gpu]

ODD = [(33, 47, 29), (301, 259, 203), (1, 5, 1)]
ALIGNED = [(257, 132, 100), (129, 516, 36)]          # K and N multiples of 4: the 16-byte path


def _inputs(m, n, k):
    rng = np.random.default_rng(m * 1000 + n + k)
    return rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)


def _relative_error(got, a, b) -> float:
    want = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)
    return float(np.max(np.abs(got - want) / scale))


def _run(prepare, a, b):
    import cupy

    da, db = cupy.asarray(a), cupy.asarray(b)
    dc = cupy.full((a.shape[0], b.shape[1]), cupy.nan, cupy.float32)   # an output never written stays NaN
    prepare(da, db, dc)()
    cupy.cuda.runtime.deviceSynchronize()
    return dc.get()


@pytest.fixture(scope="module")
def sweep():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "gemm_v8_sweep.py"
    spec = importlib.util.spec_from_file_location("gemm_v8_sweep", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("kernel", [c.kernel for c in G.V8_CONFIGS])
def test_every_v8_configuration_matches_float64(sweep, kernel):
    prepare, compiled = sweep.v8_launch(G.v8_config(kernel))
    for m, n, k in ODD + ALIGNED:
        a, b = _inputs(m, n, k)
        got = _run(prepare, a, b)
        assert np.isfinite(got).all(), (kernel, (m, n, k))
        assert _relative_error(got, a, b) < 1e-5, (kernel, (m, n, k))


def test_numba_v7_float4_matches_float64_and_refuses_unaligned_rows(sweep):
    prepare, _ = sweep.numba_f4_launch()
    for m, n, k in ALIGNED + [(130, 260, 68)]:
        a, b = _inputs(m, n, k)
        assert _relative_error(_run(prepare, a, b), a, b) < 1e-5, (m, n, k)
    with pytest.raises(ValueError, match="multiple of 4"):
        G.numba_v7_float4_launch(64, 64, 63)


def test_numba_v7_float4_issues_128_bit_loads_inline():
    from numba import float32

    kernel = G.numba_v7_float4_kernel()
    sig = (float32[:, ::1], float32[:, ::1], float32[:, ::1])
    kernel.compile(sig)
    sass = kernel.inspect_sass(sig)
    assert re.search(r"\bLDG\.E\.(?:CONSTANT\.)?128\b|\bLDG\.E\.128\.CONSTANT\b|LDG\.E\.128", sass), "no 128-bit global load"
    assert "LDS.128" in sass, "no 128-bit shared load"
    assert not re.search(r"\bCALL\b", sass), "the linked loads were not inlined (a CALL per load)"


@pytest.mark.parametrize("kernel", [c.kernel for c in G.V9_CONFIGS])
def test_every_v9_configuration_matches_float64(sweep, kernel):
    """Both kernels of each v9 configuration (the sweep's launch picks the scalar twin for odd sizes)."""
    prepare, compiled = sweep.v9_launch(G.v9_config(kernel))
    for m, n, k in ODD + ALIGNED:
        a, b = _inputs(m, n, k)
        got = _run(prepare, a, b)
        assert np.isfinite(got).all(), (kernel, m, n, k)
        assert _relative_error(got, a, b) < 1e-5, (kernel, m, n, k)
    assert compiled.local_size_bytes == 0, kernel        # v9's point: no configuration spills
