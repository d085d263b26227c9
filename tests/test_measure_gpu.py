"""simtlab.measure on a real GPU (skipped without one)."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

from simtlab import backend, measure


def _gpu() -> bool:
    try:
        return backend.gpu_available()
    except Exception:
        return False


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _gpu(), reason="needs a CUDA GPU with numba-cuda and CuPy")]


def test_cpu_vs_gpu_measures_on_the_gpu(capsys):
    sizes = [2**10, 2**16, 2**20]
    result = measure.cpu_vs_gpu(sizes=sizes)
    assert result["source"] == "measured"
    assert result["sizes"] == sizes
    for key in measure.SERIES:
        values = np.asarray(result[key])
        assert values.shape == (3,) and np.all(values > 0), key
    # copying 12 MiB over the bus costs more than adding on the GPU
    assert result["gpu_with_copies_ms"][-1] > result["gpu_kernel_ms"][-1]
    assert isinstance(measure.plot_cpu_vs_gpu(result), Figure)
    assert "faster than the CPU" in measure.cpu_vs_gpu_summary(result)


def test_record_round_trip(tmp_path):
    path = tmp_path / "timings.json"
    path.write_text('{"device": null, "date": null, "versions": {}, "results": {}}')
    result = measure.measure_cpu_vs_gpu_vector_add([2**12], repeat=3)
    backend.save_recorded(measure.CPU_VS_GPU_KEY, result, path=path)
    data = backend.load_recorded(path)
    assert data["device"] and data["date"] and data["versions"]["numba-cuda"]
    assert data["results"][measure.CPU_VS_GPU_KEY]["sizes"] == [2**12]
