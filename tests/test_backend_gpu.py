"""launch, query_device and time_gpu on a real GPU (skipped without one)."""

import numpy as np
import pytest
from numba import cuda  # importing numba-cuda does not touch the GPU

from simtlab import backend
from simtlab.hardware import H100_SXM, query_device

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not backend.gpu_available(), reason="needs a CUDA GPU with CuPy and numba-cuda"),
]


def _double(a):
    # A plain function, not @cuda.jit: launch compiles it, as the emulator accepts it too.
    i = cuda.grid(1)
    if i < a.size:
        a[i] *= 2


def _kernels():
    @cuda.jit
    def saxpy(alpha, x, y):
        i = cuda.grid(1)
        if i < y.size:
            y[i] = alpha * x[i] + y[i]

    @cuda.jit
    def block_sums(x, out):
        # Dynamic shared memory, to check that launch passes shared_bytes.
        buf = cuda.shared.array(0, dtype=np.float32)
        t = cuda.threadIdx.x
        buf[t] = x[cuda.grid(1)]
        cuda.syncthreads()
        if t == 0:
            s = 0.0
            for k in range(cuda.blockDim.x):
                s += buf[k]
            out[cuda.blockIdx.x] = s

    return saxpy, block_sums


def test_launch_matches_numpy_in_place():
    saxpy, _ = _kernels()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    expected = np.float32(2.5) * x + y
    y_before = y
    run = backend.launch(saxpy, 8, 128, np.float32(2.5), x, y)
    assert run.backend == "gpu" and run.num_blocks == 8
    assert y is y_before
    # The GPU fuses alpha * x + y into one FMA (one rounding, NumPy rounds twice), so results
    # near zero differ in the last bits: an absolute tolerance too.
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


def test_launch_with_dynamic_shared_memory_and_a_plain_function():
    _, block_sums = _kernels()
    x = np.arange(256, dtype=np.float32)
    out = np.zeros(4, dtype=np.float32)
    # the emulator's limits mean nothing on a GPU: accepted and ignored, as trace= is
    backend.launch(block_sums, 4, 64, x, out, shared_bytes=64 * 4, trace=False,
                   max_iterations=10, time_limit=None)
    np.testing.assert_allclose(out, x.reshape(4, 64).sum(axis=1))

    a = np.arange(50, dtype=np.int32)
    backend.launch(_double, 2, 32, a)
    np.testing.assert_array_equal(a, 2 * np.arange(50))


def test_launch_rejects_unknown_options():
    saxpy, _ = _kernels()
    with pytest.raises(TypeError, match="unknown option"):
        backend.launch(saxpy, 1, 32, np.float32(1), np.zeros(32, np.float32), np.zeros(32, np.float32),
                       stream=0)


def test_query_device():
    props = query_device()
    assert props is not None
    assert props.multiprocessors > 0
    assert props.warp_size == 32
    assert props.max_threads_per_block == 1024
    assert props.max_warps_per_sm * 32 == props.max_threads_per_sm
    assert props.memory_bytes > 0 and props.l2_cache_bytes > 0
    if props.name == "NVIDIA H100 80GB HBM3":   # the reference figure is this GPU's measured one
        assert abs(props.memory_bytes - H100_SXM.memory_bytes) < 2**30
    assert props.source == "measured: this GPU"
    assert backend.backend_banner().startswith(f"Path: GPU — {props.name}")


def test_time_gpu():
    import cupy

    a = cupy.ones(1 << 20, dtype=cupy.float32)
    result = backend.time_gpu(lambda: a * 2, warmup=2, repeat=5)
    assert len(result["times_ms"]) == 5
    assert 0 < result["min_ms"] <= result["median_ms"]
