"""The benchmark harness on a real GPU: timing, bandwidth and ratios are sane (skipped without one)."""

from __future__ import annotations

import types

import numpy as np
import pytest

from gpu_support import requires_gpu
from simtlab import gpubench
from simtlab.gpubench.harness import Case, run_topic, time_launches

pytestmark = [pytest.mark.gpu, requires_gpu]


def _copy_module():
    import cupy
    from numba import cuda

    @cuda.jit
    def copy_kernel(src, dst):
        i = cuda.grid(1)
        if i < src.size:
            dst[i] = src[i]

    def library(n):
        src = cupy.random.random(n, dtype=cupy.float32)
        dst = cupy.empty_like(src)
        return lambda: cupy.copyto(dst, src)

    def numba_copy(n):
        src = cupy.random.random(n, dtype=cupy.float32)
        dst = cupy.empty_like(src)
        s, d = cuda.as_cuda_array(src, sync=False), cuda.as_cuda_array(dst, sync=False)
        blocks = (n + 255) // 256
        return lambda: copy_kernel[blocks, 256](s, d)

    def check(n):
        src = cupy.random.random(n, dtype=cupy.float32)
        dst = cupy.zeros_like(src)
        copy_kernel[(n + 255) // 256, 256](cuda.as_cuda_array(src), cuda.as_cuda_array(dst))
        np.testing.assert_array_equal(cupy.asnumpy(dst), cupy.asnumpy(src))

    return types.SimpleNamespace(
        __name__="copy_test", REFERENCE="cupy.copyto",
        cases=lambda: [Case("device copy (CuPy)", "library", library, lambda n: 8 * n, reference=True),
                       Case("copy kernel (numba)", "numba", numba_copy, lambda n: 8 * n, check=check)])


def test_time_launches_scales_with_the_work():
    import cupy

    a = cupy.random.random(2**28, dtype=cupy.float32)
    b = cupy.empty_like(a)
    # both copies are far larger than the 50 MB L2 cache (256 MiB and 1 GiB each way): 4x the
    # bytes should take about 4x the time. (One run on the H100 saw 2.3x with 2^25 vs 2^27
    # elements: the smaller copy ran at only 1.6 TB/s, hence the larger sizes and margins.)
    small = time_launches(lambda: cupy.copyto(b[: 2**26], a[: 2**26]))["median_ms"]
    large = time_launches(lambda: cupy.copyto(b, a))["median_ms"]
    assert 2.5 < large / small < 5.5, f"{small:.3f} ms for 2^26 floats, {large:.3f} ms for 2^28"


def test_run_topic_times_a_numba_copy_near_the_library_copy():
    res = run_topic(_copy_module(), n=2**26, sweep=(2**20, 2**22), check_n=1_000_003)
    rows = {r["name"]: r for r in res["rows"]}
    ref = rows["device copy (CuPy)"]
    assert ref["ratio"] == 1.0 and 500 < ref["gbps"] < 5000        # HBM: a few TB/s
    assert 0.6 < rows["copy kernel (numba)"]["ratio"] < 1.3
    assert res["sweep"]["sizes"] == [2**20, 2**22]
    assert all(len(v) == 2 and min(v) > 0 for v in res["sweep"]["gbps"].values())


def test_results_are_live_on_a_gpu(monkeypatch):
    monkeypatch.setattr(gpubench, "topic_module", lambda topic: _copy_module())
    monkeypatch.setattr(gpubench, "_known", lambda topic: None)
    res = gpubench.results("patterns", n=2**22, log=lambda s: None)
    assert res["source"] == "measured" and res["device"] and len(res["rows"]) == 2


def test_l2_cold_timing_is_slower_only_where_the_data_fits_in_l2():
    """Input + output of 2^22 floats (32 MiB) fit in the 50 MB L2: timed warm, a copy reads what
    the previous run left in L2; after a flush it must come from HBM. 2^26 floats (512 MiB) never
    fit, so flushing changes little. (2^21 floats failed once, cold/warm 0.85 where five later
    probes gave 1.4-2.0. Measured by benchmarks/probe_l2_cold.py: the host needs 7.9 us to enqueue
    a copy and the GPU 8.1 us to do a warm one of 2^21 floats, so a warm batch of them times the
    host; at 2^22 floats the GPU needs 14.3 us, enqueueing 7.6 us, and cold/warm was 1.76-1.79 in
    five rounds: benchmarks/results/probe_l2_cold_h100.txt.) Up to three tries: other test workers share the GPU
    (pytest -n), and a kernel of theirs running during one timing and not the other moves a ratio (seen once:
    0.58 at 2^26, 1.08 at 2^22); a flush that did nothing would fail every try."""
    import cupy

    tries = []
    for _ in range(3):
        ratios = {}
        for n in (2**22, 2**26):
            a = cupy.random.random(n, dtype=cupy.float32)
            b = cupy.empty_like(a)
            run = lambda: b.data.copy_from_device_async(a.data, a.nbytes)   # noqa: E731
            warm = time_launches(run)["median_ms"]
            cold = time_launches(run, l2="cold", repeat=9)
            assert cold["batch"] == 1 and cold["l2"] == "cold"
            ratios[n] = cold["median_ms"] / warm
        tries.append(ratios)
        if ratios[2**22] > 1.2 and 0.8 < ratios[2**26] < 1.25:
            break
    else:
        raise AssertionError(f"cold/warm per size in each try: {tries}")
