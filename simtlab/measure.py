"""Real timings for the chapters: measured on this GPU, or the figures recorded on an H100.

Each ``measure_*`` function needs a GPU and returns a plain dict (lists of floats, so it can
be stored as JSON). Each chapter-facing function (``cpu_vs_gpu``) goes through
``backend.gpu_or_recorded``: on a GPU it measures, without one it returns what
``benchmarks/record_h100.py`` stored in ``simtlab/data/h100_timings.json``, or
``{"source": "none", ...}`` when nothing is recorded yet. The ``plot_*`` functions accept
all three and always return a Figure.

``MEASUREMENTS`` lists every measure function by its key in the recorded file; the
recording script runs them all.
"""

from __future__ import annotations

import platform
import statistics
import time
import warnings

import numpy as np

from . import backend
from .plots.style import PALETTE, label, new_figure

__all__ = [
    "MEASUREMENTS",
    "VECTOR_ADD_SIZES",
    "cpu_vs_gpu",
    "cpu_vs_gpu_summary",
    "measure_cpu_vs_gpu_vector_add",
    "plot_cpu_vs_gpu",
    "time_cpu",
]

#: element counts for the vector-add comparison: 1 Ki to 64 Mi float32 (256 MiB per array)
VECTOR_ADD_SIZES = tuple(2**k for k in range(10, 27, 2))
#: the key of chapter 1's comparison in the recorded-timings file
CPU_VS_GPU_KEY = "ch01_cpu_vs_gpu"
BLOCK = 256

# series of the comparison: result key -> legend label
SERIES = {
    "cpu_numpy_ms": "CPU: NumPy a + b",
    "gpu_kernel_ms": "GPU: vector_add_v1 kernel (data already on the GPU)",
    "gpu_cupy_ms": "GPU: CuPy a + b (library reference)",
    "gpu_with_copies_ms": "GPU: copy a, b in + kernel + copy out back",
}


def time_cpu(fn, *, warmup: int = 1, repeat: int = 7) -> dict:
    """Median wall-clock time of ``fn()`` on the CPU, in ms (the same keys as ``backend.time_gpu``)."""
    if warmup < 0 or repeat < 1:
        raise ValueError(f"warmup={warmup}, repeat={repeat}: need warmup >= 0 and repeat >= 1")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return {"median_ms": statistics.median(times), "min_ms": min(times), "times_ms": times}


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _spin_up_gpu(seconds: float = 0.3) -> None:
    """Keep the GPU busy for a moment, so its clocks have left the idle state before timing.

    An idle H100 clocks its SMs down to a few hundred MHz, and the first milliseconds of work
    run slowly while it ramps up: without this, the first series timed comes out up to 2x slow.
    """
    import cupy

    x = cupy.ones(1 << 24, dtype=cupy.float32)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(20):
            x += 1.0
        cupy.cuda.runtime.deviceSynchronize()
    del x


def measure_cpu_vs_gpu_vector_add(sizes=VECTOR_ADD_SIZES, repeat: int = 20) -> dict:
    """Time ``out = a + b`` on float32 vectors of each size, on the CPU and on the GPU.

    Four timings per size, median of ``repeat`` runs, in ms: NumPy on one CPU core
    (``cpu_numpy_ms``); the chapter's ``vector_add_v1`` kernel on arrays already on the GPU
    (``gpu_kernel_ms``); CuPy's ``a + b`` (``gpu_cupy_ms``); and the kernel together with
    copying a and b to the GPU and the result back (``gpu_with_copies_ms``). Needs a GPU.
    """
    if not backend.gpu_available():
        raise backend.GpuUnavailableError(
            f"measuring GPU timings needs a GPU ({backend.unavailable_reason()}); "
            "cpu_vs_gpu() shows the recorded H100 figures instead"
        )
    import cupy
    from numba import cuda

    from simtlab.kernels.intro import vector_add_v1

    rng = np.random.default_rng(0)
    result = {key: [] for key in SERIES}
    sizes = [int(n) for n in sizes]
    with warnings.catch_warnings():
        # small sizes launch few blocks on purpose; numba's low-occupancy warning is noise here
        warnings.filterwarnings("ignore", message=".*under-utilization.*")
        _spin_up_gpu()
        for n in sizes:
            _measure_one_size(n, rng, result, repeat, vector_add_v1, cuda, cupy)

    return {
        "sizes": sizes,
        **result,
        "bytes": [3 * 4 * n for n in sizes],
        "gpu": backend._gpu_name(),
        "cpu": _cpu_name(),
        "dtype": "float32",
        "block": BLOCK,
        "repeat": repeat,
    }


def _measure_one_size(n, rng, result, repeat, vector_add_v1, cuda, cupy) -> None:
    """Append the four timings of ``out = a + b`` at size ``n`` to ``result``."""
    a = rng.random(n, dtype=np.float32)
    b = rng.random(n, dtype=np.float32)
    out = np.empty_like(a)
    cpu = time_cpu(lambda: np.add(a, b, out=out), repeat=max(3, min(repeat, 10)))

    grid = -(-n // BLOCK)
    da, db, dout = cuda.to_device(a), cuda.to_device(b), cuda.device_array_like(a)
    _spin_up_gpu(0.1)                  # the CPU timing above left the GPU idle
    kernel = backend.time_gpu(lambda: vector_add_v1[grid, BLOCK](da, db, dout), warmup=5, repeat=repeat)
    if not np.array_equal(dout.copy_to_host(), a + b):
        raise RuntimeError(f"vector_add_v1 gave a wrong result on the GPU for n = {n}")

    ca, cb = cupy.asarray(a), cupy.asarray(b)
    library = backend.time_gpu(lambda: ca + cb, warmup=5, repeat=repeat)

    def with_copies():
        xa, xb = cuda.to_device(a), cuda.to_device(b)
        xo = cuda.device_array_like(a)
        vector_add_v1[grid, BLOCK](xa, xb, xo)
        xo.copy_to_host(out)

    copies = backend.time_gpu(with_copies, warmup=1, repeat=max(3, repeat // 4))
    for key, timing in zip(SERIES, (cpu, kernel, library, copies)):
        result[key].append(float(timing["median_ms"]))


def cpu_vs_gpu(sizes=VECTOR_ADD_SIZES, path=None) -> dict:
    """Chapter 1's comparison: measured here on a GPU, else the H100 figures (or ``source: 'none'``).

    ``path``: the recorded-timings file (default ``backend.TIMINGS_PATH``).
    """
    return backend.gpu_or_recorded(CPU_VS_GPU_KEY, lambda: measure_cpu_vs_gpu_vector_add(sizes),
                                   path=path or backend.TIMINGS_PATH)


def _source_note(result: dict) -> str:
    source = result.get("source")
    gpu = result.get("gpu") or "a GPU"
    if source == "recorded":
        return f"recorded on {gpu}"
    if source == "measured":
        return f"measured now on {gpu}"
    return gpu


def plot_cpu_vs_gpu(result: dict):
    """Time (ms) against n on log-log axes for every series in ``result``.

    With nothing recorded (``source == 'none'``) the Figure says so instead of failing.
    """
    if not result or result.get("source") == "none" or not result.get("sizes"):
        fig, ax = new_figure("Vector add, CPU vs GPU: no timings yet", figsize=(8.0, 2.6))
        ax.axis("off")
        msg = (result or {}).get("message", "No timings to show.")
        ax.text(0.5, 0.5, msg + "\nOn a machine with a GPU: python benchmarks/record_h100.py",
                ha="center", va="center", wrap=True)
        return fig

    sizes = np.asarray(result["sizes"], dtype=float)
    fig, ax = new_figure(f"Vector add out = a + b (float32), {_source_note(result)}", figsize=(9.0, 5.0))
    styles = {"cpu_numpy_ms": "o-", "gpu_kernel_ms": "s-", "gpu_cupy_ms": "^--", "gpu_with_copies_ms": "d:"}
    for i, (key, name) in enumerate(SERIES.items()):
        if key not in result:
            continue
        ax.plot(sizes, result[key], styles[key], color=PALETTE[i], label=name, lw=1.8, ms=5)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    cpu = result.get("cpu")
    ax.legend(fontsize="small", loc="upper left",
              title=f"CPU: {cpu}" if cpu else None, title_fontsize="x-small")
    label(ax, "n (elements per vector, log scale)", "time per call (ms, log scale)",
          "median of repeated runs; GPU times from CUDA events")
    return fig


def cpu_vs_gpu_summary(result: dict) -> str:
    """A few sentences on the largest size: speed-up of the kernel, and what the copies cost."""
    if not result or result.get("source") == "none" or not result.get("sizes"):
        return (result or {}).get("message", "No timings to summarise.")
    i = int(np.argmax(result["sizes"]))
    n = result["sizes"][i]
    cpu, gpu = result["cpu_numpy_ms"][i], result["gpu_kernel_ms"][i]
    lines = [f"n = {n:,} float32 ({_source_note(result)}):",
             f"  CPU NumPy          {cpu:9.3f} ms",
             f"  GPU kernel         {gpu:9.3f} ms  ({cpu / gpu:.0f}x faster than the CPU, "
             f"{result['bytes'][i] / gpu / 1e6:.0f} GB/s)"]
    if "gpu_cupy_ms" in result:
        lines.append(f"  GPU CuPy a + b     {result['gpu_cupy_ms'][i]:9.3f} ms")
    if "gpu_with_copies_ms" in result:
        copies = result["gpu_with_copies_ms"][i]
        if abs(copies - cpu) <= 0.1 * cpu:
            verdict = "about as fast as the CPU"
        else:
            verdict = f"{cpu / copies:.1f}x the CPU's speed" if copies < cpu else f"{copies / cpu:.1f}x slower than the CPU"
        lines.append(f"  GPU with copies    {copies:9.3f} ms  ({verdict}; the copies take "
                     f"{(copies - gpu) / copies:.1%} of it)")
    small = int(np.argmin(result["sizes"]))
    if result["gpu_kernel_ms"][small] > result["cpu_numpy_ms"][small]:
        launch = min(result["gpu_kernel_ms"])
        lines.append(f"At n = {result['sizes'][small]:,} the CPU wins: launching a kernel from Python costs about "
                     f"{launch * 1e3:.0f} microseconds whatever its size.")
    return "\n".join(lines)


#: every measure function of the chapters, by its key in the recorded-timings file
MEASUREMENTS = {
    CPU_VS_GPU_KEY: measure_cpu_vs_gpu_vector_add,
}
