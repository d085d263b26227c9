"""Choosing the path (GPU or emulator), launching on it, and recorded H100 timings, without a GPU.

The GPU probe is replaced by a stub where a test needs a GPU to 'exist'; the real probe runs
only in ``test_real_probe_finds_no_gpu_here``.
"""

import json

import numpy as np
import pytest

import simtlab
from simtlab import backend


@pytest.fixture(autouse=True)
def fresh_probe(monkeypatch):
    monkeypatch.delenv(backend.ENV_VAR, raising=False)
    backend.reset()
    yield
    backend.reset()


def _fake_probe(monkeypatch, usable, reason=""):
    calls = []

    def check():
        calls.append(1)
        if not usable:
            raise RuntimeError(reason)

    monkeypatch.setattr(backend, "_tiny_gpu_check", check)
    return calls


def _has_real_gpu():
    try:
        backend.reset()
        return backend.gpu_available()
    finally:
        backend.reset()


@pytest.mark.skipif(_has_real_gpu(), reason="this machine has a usable GPU")
def test_real_probe_finds_no_gpu_here():
    assert backend.gpu_available() is False
    assert backend.active_backend() == "emulator"
    assert backend.unavailable_reason()  # says why, for the banner
    assert simtlab.gpu_available() is False and simtlab.active_backend() == "emulator"


def test_no_gpu_means_emulator_and_the_probe_runs_once(monkeypatch):
    calls = _fake_probe(monkeypatch, False, "no CUDA driver")
    assert backend.gpu_available() is False
    assert backend.active_backend() == "emulator"
    assert backend.unavailable_reason() == "no CUDA driver"
    assert len(calls) == 1  # cached: a second question does not probe again


def test_env_emulator_wins_over_a_working_gpu(monkeypatch):
    calls = _fake_probe(monkeypatch, True)
    monkeypatch.setenv(backend.ENV_VAR, "emulator")
    assert backend.gpu_available() is False
    assert backend.active_backend() == "emulator"
    assert backend.unavailable_reason() == "SIMTLAB_BACKEND=emulator"
    assert calls == []  # forcing the emulator never touches the GPU
    monkeypatch.setenv(backend.ENV_VAR, "auto")
    assert backend.gpu_available() is True and backend.active_backend() == "gpu"


def test_env_gpu_without_gpu_is_a_clear_error(monkeypatch):
    _fake_probe(monkeypatch, False, "CuPy is not installed")
    monkeypatch.setenv(backend.ENV_VAR, "gpu")
    with pytest.raises(backend.GpuUnavailableError, match="SIMTLAB_BACKEND=gpu.*CuPy is not installed"):
        backend.gpu_available()


def test_env_gpu_with_gpu(monkeypatch):
    _fake_probe(monkeypatch, True)
    monkeypatch.setenv(backend.ENV_VAR, "GPU")
    assert backend.gpu_available() is True


def test_env_with_a_typo(monkeypatch):
    monkeypatch.setenv(backend.ENV_VAR, "cuda")
    with pytest.raises(ValueError, match="'gpu', 'emulator'"):
        backend.gpu_available()


def test_a_probe_that_raises_anything_means_no_gpu(monkeypatch):
    def broken():
        raise OSError("libnvvm.so: cannot open shared object file")

    monkeypatch.setattr(backend, "_tiny_gpu_check", broken)
    assert backend.gpu_available() is False
    assert "libnvvm" in backend.unavailable_reason()


def test_banner_on_the_emulator(monkeypatch, capsys):
    _fake_probe(monkeypatch, False, "no CUDA driver")
    banner = backend.backend_banner()
    assert banner == ("Path: CPU emulator (no usable GPU: no CUDA driver) — "
                      "GPU cells will show timings recorded on an H100")
    backend.show_backend()
    assert capsys.readouterr().out.strip() == banner
    simtlab.show_backend()
    assert capsys.readouterr().out.strip() == banner


def test_banner_on_a_gpu(monkeypatch):
    _fake_probe(monkeypatch, True)
    monkeypatch.setattr(backend, "_gpu_name", lambda: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(backend, "gpu_versions", lambda: {"numba-cuda": "0.30.4", "cupy": "14.2.0"})
    assert backend.backend_banner() == "Path: GPU — NVIDIA H100 80GB HBM3 (numba-cuda 0.30.4, CuPy 14.2.0)"


def test_a_gpu_without_numba_cuda_is_not_the_gpu_path(monkeypatch):
    """The student install leaves numba-cuda out: numba's own (deprecated) CUDA target may see
    a GPU, but the course's GPU path needs numba-cuda, and the reason says how to get it."""
    from numba import cuda

    monkeypatch.setattr(cuda, "is_available", lambda: True)
    real_version = backend._version
    monkeypatch.setattr(backend, "_version",
                        lambda dist: "not installed" if dist == "numba-cuda" else real_version(dist))
    assert backend.gpu_available() is False
    reason = backend.unavailable_reason()
    assert reason.startswith("numba-cuda is not installed"), reason
    assert "[gpu-cu12]" in reason, reason      # how to add the GPU extra, for this install


def test_gpu_versions_names_the_packages():
    versions = backend.gpu_versions()
    assert versions["numba-cuda"] == "0.30.4"
    assert set(versions) >= {"numba-cuda", "numba", "numpy", "cupy"}


# ------------------------------------------------------------------------------ launch

def _vector_add():
    from numba import cuda

    @cuda.jit
    def add(a, b, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i] + b[i]

    return add


def test_launch_on_the_emulator_updates_arrays_in_place(monkeypatch):
    monkeypatch.setenv(backend.ENV_VAR, "emulator")
    a = np.arange(100, dtype=np.float32)
    b = np.full(100, 0.5, dtype=np.float32)
    out = np.zeros(100, dtype=np.float32)
    run = backend.launch(_vector_add(), 4, 32, a, b, out)
    np.testing.assert_array_equal(out, a + b)
    assert run.backend == "emulator"
    assert run.num_blocks == 4 and run.threads_per_block == 32


def test_launch_passes_emulator_options_and_is_exported(monkeypatch):
    monkeypatch.setenv(backend.ENV_VAR, "emulator")
    a = np.arange(40, dtype=np.int32)
    out = np.zeros(40, dtype=np.int32)
    run = simtlab.launch(_vector_add(), (2,), (32,), a, a, out, trace=False)
    np.testing.assert_array_equal(out, 2 * a)
    assert run.backend == "emulator"
    assert run.metrics["global_requests"] is None  # no trace was taken


def test_launch_shapes():
    assert backend._dim3(4) == (4, 1, 1)
    assert backend._dim3((2, 3)) == (2, 3, 1)
    assert backend._dim3(np.int64(7)) == (7, 1, 1)
    with pytest.raises(ValueError):
        backend._dim3((1, 2, 3, 4))
    run = backend.GpuRun(griddim=(2, 2, 1), blockdim=(8, 4, 1))
    assert run.backend == "gpu" and run.num_blocks == 4 and run.threads_per_block == 32


# ----------------------------------------------------------------------------- timings

def test_time_gpu_needs_a_gpu(monkeypatch):
    monkeypatch.setenv(backend.ENV_VAR, "emulator")
    with pytest.raises(backend.GpuUnavailableError, match="gpu_or_recorded"):
        backend.time_gpu(lambda: None)
    with pytest.raises(ValueError):
        backend.time_gpu(lambda: None, repeat=0)


def test_shipped_timings_file_has_the_structure_and_no_invented_numbers():
    data = backend.load_recorded()
    assert set(data) >= {"device", "date", "versions", "results"}
    assert isinstance(data["versions"], dict) and isinstance(data["results"], dict)


def _timings(tmp_path, results):
    path = tmp_path / "timings.json"
    path.write_text(json.dumps({"device": "NVIDIA H100 80GB HBM3", "date": "2026-01-02",
                                "versions": {"numba-cuda": "0.30.4", "cupy": "14.2.0"},
                                "results": results}))
    return path


def test_recorded_reads_an_entry(tmp_path):
    path = _timings(tmp_path, {"vector_add": {"median_ms": 0.25, "min_ms": 0.2, "times_ms": [0.2, 0.3]}})
    assert backend.recorded("vector_add", path)["median_ms"] == 0.25
    with pytest.raises(KeyError, match="no H100 timing recorded under 'gemm'"):
        backend.recorded("gemm", path)


def test_gpu_or_recorded_without_gpu_shows_recorded_figures(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(backend.ENV_VAR, "emulator")
    path = _timings(tmp_path, {"vector_add": {"median_ms": 0.25}})

    def measure():
        raise AssertionError("must not measure without a GPU")

    result = backend.gpu_or_recorded("vector_add", measure, path=path)
    assert result == {"median_ms": 0.25, "source": "recorded"}
    out = capsys.readouterr().out
    assert out.strip() == ("No GPU here: showing figures recorded on NVIDIA H100 80GB HBM3 on 2026-01-02 "
                           "with numba-cuda 0.30.4, cupy 14.2.0")


def test_gpu_or_recorded_says_when_nothing_is_recorded(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(backend.ENV_VAR, "emulator")
    result = backend.gpu_or_recorded("gemm", lambda: {}, path=_timings(tmp_path, {}))
    assert result["source"] == "none"
    assert "no timing is recorded for 'gemm' yet" in capsys.readouterr().out


def test_gpu_or_recorded_measures_on_a_gpu(tmp_path, monkeypatch):
    _fake_probe(monkeypatch, True)
    result = backend.gpu_or_recorded("vector_add", lambda: {"median_ms": 1.5}, path=_timings(tmp_path, {}))
    assert result == {"median_ms": 1.5, "source": "measured"}


def test_save_recorded_needs_a_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv(backend.ENV_VAR, "emulator")
    with pytest.raises(backend.GpuUnavailableError):
        backend.save_recorded("x", {"median_ms": 1.0}, path=_timings(tmp_path, {}))


def test_save_recorded_stamps_device_date_and_versions(tmp_path, monkeypatch):
    _fake_probe(monkeypatch, True)
    monkeypatch.setattr(backend, "_gpu_name", lambda: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(backend, "gpu_versions", lambda: {"numba-cuda": "0.30.4", "cupy": "14.2.0"})
    path = _timings(tmp_path, {"old": {"median_ms": 2.0}})
    backend.save_recorded("new", {"median_ms": 1.0, "source": "measured"}, path=path)
    data = json.loads(path.read_text())
    assert data["device"] == "NVIDIA H100 80GB HBM3"
    assert data["versions"]["cupy"] == "14.2.0"
    assert data["results"] == {"old": {"median_ms": 2.0}, "new": {"median_ms": 1.0}}
