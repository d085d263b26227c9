"""simtlab.measure without a GPU: recorded figures, or a clear 'nothing recorded yet'."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from simtlab import backend, measure

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch):
    monkeypatch.setenv(backend.ENV_VAR, "emulator")
    backend.reset()
    yield
    backend.reset()


def _timings_file(tmp_path, results):
    path = tmp_path / "timings.json"
    path.write_text(json.dumps({"device": "NVIDIA H100 80GB HBM3", "date": "2026-01-02",
                                "versions": {"numba-cuda": "0.30.4", "cupy": "14.2.0"},
                                "results": results}))
    return path


FAKE = {
    "sizes": [1024, 65536, 4194304],
    "cpu_numpy_ms": [0.001, 0.02, 2.5],
    "gpu_kernel_ms": [0.004, 0.005, 0.03],
    "gpu_cupy_ms": [0.005, 0.006, 0.031],
    "gpu_with_copies_ms": [0.05, 0.2, 6.0],
    "bytes": [12288, 786432, 50331648],
    "gpu": "NVIDIA H100 80GB HBM3",
    "cpu": "Some CPU",
}


def test_nothing_recorded_says_so_and_still_plots(tmp_path, capsys):
    path = _timings_file(tmp_path, {})
    result = measure.cpu_vs_gpu(path=path)
    assert result["source"] == "none"
    out = capsys.readouterr().out
    assert "No GPU here" in out and "no timing is recorded" in out
    fig = measure.plot_cpu_vs_gpu(result)
    assert isinstance(fig, Figure)
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    assert "no timing is recorded" in texts and "record_h100.py" in texts
    assert "no timing is recorded" in measure.cpu_vs_gpu_summary(result)


def test_shipped_file_does_not_break_the_chapter(capsys):
    # whatever the repository's file holds (empty now, filled later), the chapter's cell works
    result = measure.cpu_vs_gpu()
    assert result["source"] in ("none", "recorded")
    assert isinstance(measure.plot_cpu_vs_gpu(result), Figure)
    assert isinstance(measure.cpu_vs_gpu_summary(result), str)


def test_recorded_figures_are_shown(tmp_path, capsys):
    path = _timings_file(tmp_path, {measure.CPU_VS_GPU_KEY: FAKE})
    result = measure.cpu_vs_gpu(path=path)
    assert result["source"] == "recorded"
    assert "recorded on NVIDIA H100 80GB HBM3 on 2026-01-02" in capsys.readouterr().out
    fig = measure.plot_cpu_vs_gpu(result)
    ax = fig.axes[0]
    assert len(ax.lines) == 4
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "ms" in ax.get_ylabel() and "n" in ax.get_xlabel()
    assert "recorded on NVIDIA H100" in fig._suptitle.get_text()
    summary = measure.cpu_vs_gpu_summary(result)
    assert "83x faster than the CPU" in summary        # 2.5 / 0.03
    assert "slower than the CPU" in summary            # 6 ms with copies vs 2.5 ms
    assert "the CPU wins" in summary                   # at n = 1024


def test_measuring_needs_a_gpu():
    with pytest.raises(backend.GpuUnavailableError, match="needs a GPU"):
        measure.measure_cpu_vs_gpu_vector_add([1024])


def test_time_cpu():
    t = measure.time_cpu(lambda: sum(range(1000)), repeat=3)
    assert set(t) == {"median_ms", "min_ms", "times_ms"} and len(t["times_ms"]) == 3
    assert 0 <= t["min_ms"] <= t["median_ms"]
    with pytest.raises(ValueError):
        measure.time_cpu(lambda: None, repeat=0)


def test_every_measurement_is_registered():
    assert measure.MEASUREMENTS[measure.CPU_VS_GPU_KEY] is measure.measure_cpu_vs_gpu_vector_add


def test_record_script_without_gpu(tmp_path):
    script = REPO / "benchmarks" / "record_h100.py"
    env = {**__import__("os").environ, backend.ENV_VAR: "emulator"}
    listed = subprocess.run([sys.executable, str(script), "--list"], capture_output=True, text=True, env=env)
    assert listed.returncode == 0 and measure.CPU_VS_GPU_KEY in listed.stdout
    path = _timings_file(tmp_path, {})
    before = path.read_text()
    run = subprocess.run([sys.executable, str(script), "--path", str(path)], capture_output=True, text=True, env=env)
    assert run.returncode == 1 and "no usable GPU" in run.stderr
    assert path.read_text() == before
