"""Which path a chapter runs on: a real GPU (numba-cuda + CuPy) or the CPU emulator.

The answer is found lazily, the first time something asks, and then kept: importing
simtlab never touches a GPU. ``SIMTLAB_BACKEND`` overrides the choice:

- ``SIMTLAB_BACKEND=emulator``: never use the GPU, even if there is one;
- ``SIMTLAB_BACKEND=gpu``: insist on the GPU, and fail loudly when it cannot be used.

Timings need a GPU. Without one, chapters show figures recorded on an H100 (kept in
``simtlab/data/h100_timings.json``) through ``gpu_or_recorded``.
"""

from __future__ import annotations

import datetime
import json
import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

ENV_VAR = "SIMTLAB_BACKEND"
TIMINGS_PATH = Path(__file__).parent / "data" / "h100_timings.json"

# Options of simtlab.emulate() that mean nothing on a GPU; launch() accepts and ignores
# them, so the same call works on both paths.
EMULATOR_ONLY_OPTIONS = {"trace", "order", "seed", "time_limit", "max_iterations", "max_steps"}


class GpuUnavailableError(RuntimeError):
    """A GPU was demanded (SIMTLAB_BACKEND=gpu, or a GPU-only call) but none is usable."""


_probe_result: tuple[bool, str] | None = None  # (usable, reason it is not), once probed


def _first_sentence(text: str) -> str:
    # Driver errors run to several lines of advice; the banner needs the first sentence.
    text = " ".join(text.split())
    end = text.find(". ")
    return text[: end + 1] if end >= 0 else text.rstrip(":")


def _tiny_gpu_check() -> None:
    """Run one small kernel through numba-cuda and one reduction through CuPy.

    Raises on anything that goes wrong; a GPU that is visible but cannot run our
    software stack (wrong driver, missing NVVM, ...) must count as no GPU.
    """
    import numba

    if getattr(numba.config, "ENABLE_CUDASIM", 0):
        raise RuntimeError("NUMBA_ENABLE_CUDASIM=1 is set: numba's simulator is not a GPU")
    from numba import cuda

    if not cuda.is_available():
        try:
            cuda.get_current_device()  # its exception says why, better than we can
        except Exception as exc:
            raise RuntimeError(_first_sentence(str(exc))) from None
        raise RuntimeError("numba-cuda finds no CUDA GPU")
    # Without numba-cuda (the student install leaves it out), `numba.cuda` is numba's own,
    # deprecated CUDA target: the course's GPU path is numba-cuda's, which the GPU extras bring.
    if _version("numba-cuda") == "not installed":
        raise RuntimeError(f"numba-cuda is not installed ({gpu_install_hint()})")
    try:
        import cupy
    except ImportError:
        raise RuntimeError(f"CuPy is not installed ({gpu_install_hint()})") from None
    import numpy as np

    @cuda.jit
    def add_one(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] += 1

    host = np.arange(4, dtype=np.int32)
    dev = cuda.to_device(host)
    add_one[1, 32](dev)
    cuda.synchronize()
    if not np.array_equal(dev.copy_to_host(), host + 1):
        raise RuntimeError("a test kernel ran on the GPU but gave a wrong answer")
    if int(cupy.arange(4).sum()) != 6:
        raise RuntimeError("CuPy ran on the GPU but gave a wrong answer")


def gpu_install_hint() -> str:
    """How to add the GPU path (numba-cuda, CuPy and their CUDA wheels) to this install."""
    from .paths import install_command

    return f"{install_command('gpu-cu12')}; gpu-cu13 for CUDA 13 drivers"


def _probe() -> tuple[bool, str]:
    global _probe_result
    if _probe_result is None:
        try:
            _tiny_gpu_check()
            _probe_result = (True, "")
        except Exception as exc:  # any failure at all means: use the emulator
            reason = str(exc) or type(exc).__name__
            _probe_result = (False, reason)
    return _probe_result


def reset() -> None:
    """Forget the probe's answer (tests, or after installing CuPy in a running kernel)."""
    global _probe_result
    _probe_result = None


def _requested() -> str:
    value = os.environ.get(ENV_VAR, "").strip().lower()
    if value in ("", "auto"):
        return "auto"
    if value in ("gpu", "emulator"):
        return value
    raise ValueError(f"{ENV_VAR}={value!r}: use 'gpu', 'emulator' or leave it unset")


def gpu_available() -> bool:
    """True when CuPy and numba-cuda both ran a tiny kernel on a GPU here."""
    requested = _requested()
    if requested == "emulator":
        return False
    usable, reason = _probe()
    if requested == "gpu" and not usable:
        raise GpuUnavailableError(f"{ENV_VAR}=gpu, but the GPU cannot be used: {reason}")
    return usable


def unavailable_reason() -> str:
    """Why the emulator is used ('' when the GPU is)."""
    if _requested() == "emulator":
        return f"{ENV_VAR}=emulator"
    return _probe()[1]


def active_backend() -> str:
    """'gpu' or 'emulator'."""
    return "gpu" if gpu_available() else "emulator"


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def gpu_versions() -> dict:
    """Versions of the software that runs kernels on the GPU (numba-cuda, CuPy, NumPy)."""
    versions = {"numba-cuda": _version("numba-cuda"), "numba": _version("numba"), "numpy": _version("numpy")}
    try:
        import cupy

        versions["cupy"] = cupy.__version__
    except ImportError:
        versions["cupy"] = "not installed"
    return versions


def _gpu_name() -> str:
    from numba import cuda

    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


def backend_banner() -> str:
    """One line saying which path this notebook runs on, for each chapter's first cell."""
    if gpu_available():
        v = gpu_versions()
        return f"Path: GPU — {_gpu_name()} (numba-cuda {v['numba-cuda']}, CuPy {v['cupy']})"
    return (
        f"Path: CPU emulator (no usable GPU: {unavailable_reason()}) — "
        "GPU cells will show timings recorded on an H100"
    )


def show_backend() -> None:
    """Print ``backend_banner()``: which path this notebook runs on (a GPU, or the CPU
    emulator and why)."""
    print(backend_banner())


# --------------------------------------------------------------------------- launching


def _dim3(dim) -> tuple[int, int, int]:
    dims = (int(dim),) if hasattr(dim, "__index__") else tuple(int(d) for d in dim)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"a grid or block shape has 1 to 3 dimensions, got {dim!r}")
    return dims + (1,) * (3 - len(dims))


@dataclass
class GpuRun:
    """What ``launch`` returns on the GPU path: the shape of the launch, and where it ran."""

    griddim: tuple[int, int, int]
    blockdim: tuple[int, int, int]
    backend: str = "gpu"

    @property
    def threads_per_block(self) -> int:
        x, y, z = self.blockdim
        return x * y * z

    @property
    def num_blocks(self) -> int:
        x, y, z = self.griddim
        return x * y * z


def _launch_gpu(kernel, griddim, blockdim, args, options) -> GpuRun:
    import numpy as np
    from numba import cuda

    unknown = set(options) - EMULATOR_ONLY_OPTIONS - {"shared_bytes"}
    if unknown:
        raise TypeError(f"launch() got unknown option(s): {', '.join(sorted(unknown))}")
    shared_bytes = int(options.get("shared_bytes", 0))
    if not hasattr(kernel, "py_func"):  # a plain function, as the emulator also accepts
        kernel = cuda.jit(kernel)

    device_args, copies_back = [], []
    for arg in args:
        if isinstance(arg, np.ndarray):
            dev = cuda.to_device(np.ascontiguousarray(arg))
            device_args.append(dev)
            if arg.flags.writeable:
                copies_back.append((arg, dev))
        else:
            device_args.append(arg)  # scalars, CuPy arrays and device arrays pass as they are

    import numba
    # a course-sized launch is small on purpose: numba's low-occupancy warning is noise here
    numba.config.CUDA_LOW_OCCUPANCY_WARNINGS = 0
    kernel[_dim3(griddim), _dim3(blockdim), 0, shared_bytes](*device_args)
    cuda.synchronize()
    # Copy back into the caller's arrays, so that both paths update NumPy arrays in place.
    for host, dev in copies_back:
        host[...] = dev.copy_to_host()
    return GpuRun(griddim=_dim3(griddim), blockdim=_dim3(blockdim))


def launch(kernel, griddim, blockdim, *args, **emulator_options):
    """Run a numba-cuda kernel on the active backend; NumPy array arguments are updated in place.

    ``launch(kernel, griddim, blockdim, *args)`` is ``kernel[griddim, blockdim](*args)``. On the
    GPU, NumPy arrays are copied to the device, the kernel runs, and the results are copied back
    into the same arrays; ``shared_bytes`` sets dynamic shared memory and the emulator's other
    keywords are ignored. On the emulator, this is ``simtlab.emulate`` (same keywords) and
    returns its ``Run``. Either way the result's ``.backend`` says which path ran.
    """
    if gpu_available():
        return _launch_gpu(kernel, griddim, blockdim, args, emulator_options)
    from simtlab.emulator import emulate

    run = emulate(kernel, griddim, blockdim, *args, **emulator_options)
    run.backend = "emulator"
    return run


# ----------------------------------------------------------------------------- timing


def time_gpu(fn, *, warmup: int = 3, repeat: int = 20) -> dict:
    """Time ``fn()`` (which launches GPU work) with CUDA events; median of ``repeat`` runs.

    Each run is timed alone (launch latency included, as chapter 1 shows it); the timer is
    ``simtlab.gpubench.harness.time_launches``, the one the benchmarks use. Events time what
    the GPU does between them, so ``fn`` should launch work, not copy from host memory (a host
    copy is counted too, since it blocks the stream).
    """
    if warmup < 0 or repeat < 1:
        raise ValueError(f"warmup={warmup}, repeat={repeat}: need warmup >= 0 and repeat >= 1")
    if not gpu_available():
        raise GpuUnavailableError(
            f"time_gpu needs a GPU ({unavailable_reason()}); use gpu_or_recorded() to fall back "
            "to recorded H100 timings"
        )
    from .gpubench.harness import time_launches

    t = time_launches(fn, warmup=warmup, repeat=repeat, batch_ms=0)
    return {k: t[k] for k in ("median_ms", "min_ms", "times_ms")}


# ------------------------------------------------------------------- recorded timings


def load_recorded(path: Path | str = TIMINGS_PATH) -> dict:
    """The whole recorded-timings file: ``device``, ``date``, ``versions``, ``results``."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def recorded(key: str, path: Path | str = TIMINGS_PATH) -> dict:
    """The timing recorded on the H100 under ``key``; KeyError when none is recorded yet."""
    data = load_recorded(path)
    results = data.get("results", {})
    if key not in results:
        raise KeyError(f"no H100 timing recorded under {key!r} yet (known: {sorted(results) or 'none'})")
    return dict(results[key])


def _recorded_note(data: dict) -> str:
    versions = ", ".join(f"{k} {v}" for k, v in (data.get("versions") or {}).items() if v) or "unknown versions"
    return f"{data.get('device') or 'an H100'} on {data.get('date') or 'an unknown date'} with {versions}"


def gpu_or_recorded(key: str, measure_fn, path: Path | str = TIMINGS_PATH) -> dict:
    """Measure on this GPU if there is one, else return what was recorded on an H100.

    The returned dict gets ``source``: 'measured', 'recorded' or 'none' (nothing recorded
    yet: then it holds only ``source`` and ``message``).
    """
    if gpu_available():
        result = measure_fn()
        return {**result, "source": "measured"} if isinstance(result, dict) else result
    data = load_recorded(path)
    entry = data.get("results", {}).get(key)
    if entry is None:
        message = f"No GPU here, and no timing is recorded for {key!r} yet."
        print(message)
        return {"source": "none", "message": message}
    print(f"No GPU here: showing figures recorded on {_recorded_note(data)}")
    return {**entry, "source": "recorded"}


def save_recorded(key: str, result: dict, path: Path | str = TIMINGS_PATH) -> None:
    """Store a timing measured on this GPU under ``key`` (run on the H100 that records them).

    Also stamps the file with this GPU's name, today's date and the software versions, so
    a student without a GPU sees where the numbers came from.
    """
    if not gpu_available():
        raise GpuUnavailableError("save_recorded stores measured timings, and needs a GPU")
    data = load_recorded(path)
    data["device"] = _gpu_name()
    data["date"] = datetime.date.today().isoformat()
    data["versions"] = gpu_versions()
    data.setdefault("results", {})[key] = {k: v for k, v in result.items() if k != "source"}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=False)
        f.write("\n")


__all__ = [
    "ENV_VAR",
    "GpuRun",
    "GpuUnavailableError",
    "active_backend",
    "backend_banner",
    "gpu_available",
    "gpu_or_recorded",
    "gpu_versions",
    "launch",
    "load_recorded",
    "recorded",
    "reset",
    "save_recorded",
    "show_backend",
    "time_gpu",
    "unavailable_reason",
]


def _launch_signature():
    """``launch`` takes ``emulate``'s keywords: show them instead of ``**emulator_options``."""
    import inspect

    from .emulator import emulate
    return inspect.signature(emulate).replace(return_annotation=inspect.Signature.empty)


launch.__signature__ = _launch_signature()
