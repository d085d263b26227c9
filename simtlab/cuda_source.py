"""The CUDA C versions of the course's kernels (``kernels/<topic>.cu``): compile and launch.

On a GPU, ``cu_kernel("scan", "scan_v2")`` is a ``cupy.RawKernel`` compiled by NVRTC through
CuPy's ``RawModule``. Without a GPU, ``compile_cu("scan")`` still compiles the file, with
``nvcc`` when it is installed (CI) or NVRTC through CuPy, so a typo in a .cu file fails the
tests on every machine; the result names the tool it used.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KERNELS_DIR", "CompileResult", "cu_path", "cu_files", "find_nvcc", "compile_cu",
           "raw_module", "cu_kernel", "source_kernel", "NVRTC_OPTIONS"]

from .backend import gpu_install_hint
from .paths import KERNELS_DIR  # kernels/ in a checkout, simtlab/kernels/ in a wheel

#: the options every .cu file is compiled with (NVRTC picks the GPU's own architecture)
NVRTC_OPTIONS = ("-std=c++17",)


@dataclass(frozen=True)
class CompileResult:
    path: Path
    tool: str          # "nvcc 13.0 (sm_90)" or "NVRTC 12.8 via CuPy (sm_90)"
    ok: bool
    log: str           # the compiler's messages (warnings and errors)

    def __str__(self) -> str:
        status = "compiled" if self.ok else "FAILED to compile"
        return f"{self.path.name}: {status} with {self.tool}" + (f"\n{self.log}" if self.log.strip() else "")


def cu_path(topic: str | os.PathLike) -> Path:
    """``kernels/<topic>.cu`` (or the path itself when it names an existing file)."""
    path = Path(topic)
    if path.suffix == ".cu" and path.exists():
        return path
    path = KERNELS_DIR / (path.stem + ".cu")
    if not path.exists():
        known = ", ".join(p.stem for p in cu_files()) or "none"
        raise FileNotFoundError(f"no kernels/{path.name}: the CUDA C topics are {known}")
    return path


def cu_files() -> list[Path]:
    return sorted(KERNELS_DIR.glob("*.cu"))


def find_nvcc() -> str | None:
    """nvcc on PATH, in $CUDA_HOME/bin, or in /usr/local/cuda/bin; None when there is none."""
    candidates = [shutil.which("nvcc")]
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            candidates.append(str(Path(os.environ[env]) / "bin" / "nvcc"))
    candidates.append("/usr/local/cuda/bin/nvcc")
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return c
    return None


# Seconds a compile may take before it counts as hung: nvcc needs seconds on an idle machine,
# minutes on a busy one (CI on 2 cores at load 6-8 once took over 300 s), never an hour.
COMPILE_TIMEOUT = 1800


def _nvcc_version(nvcc: str) -> str:
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True,
                         timeout=COMPILE_TIMEOUT).stdout
    for token in out.replace(",", " ").split():
        if token.startswith("V") and token[1:2].isdigit():
            return token[1:]
    return "unknown version"


def _compile_with_nvcc(nvcc: str, path: Path, arch: str) -> CompileResult:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [nvcc, f"-arch={arch}", "-std=c++17", "-cubin", "-Werror", "all-warnings",
               "-o", str(Path(tmp) / "out.cubin"), str(path)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT)
    tool = f"nvcc {_nvcc_version(nvcc)} ({arch})"
    return CompileResult(path, tool, proc.returncode == 0, proc.stdout + proc.stderr)


def _compile_with_nvrtc(path: Path, arch: str) -> CompileResult:
    import cupy  # noqa: F401  (ImportError: neither tool is here)
    from cupy.cuda import nvrtc

    major, minor = nvrtc.getVersion()
    tool = f"NVRTC {major}.{minor} via CuPy ({arch})"
    source = path.read_text()
    prog = nvrtc.createProgram(source, path.name, [], [])
    options = [*NVRTC_OPTIONS, f"--gpu-architecture={arch.replace('sm_', 'compute_')}"]
    try:
        nvrtc.compileProgram(prog, options)
        ok = True
    except nvrtc.NVRTCError:
        ok = False
    log = nvrtc.getProgramLog(prog)
    nvrtc.destroyProgram(prog)
    return CompileResult(path, tool, ok, log)


def compile_cu(topic: str | os.PathLike, arch: str = "sm_90") -> CompileResult:
    """Compile ``kernels/<topic>.cu`` without running it: nvcc if installed, else NVRTC (CuPy).

    Warnings count as errors with nvcc. Raises RuntimeError when neither tool is installed.
    """
    path = cu_path(topic)
    nvcc = find_nvcc()
    if nvcc:
        return _compile_with_nvcc(nvcc, path, arch)
    try:
        return _compile_with_nvrtc(path, arch)
    except ImportError:
        raise RuntimeError(
            "cannot compile CUDA C here: there is no nvcc (install the CUDA toolkit, or set CUDA_HOME) "
            f"and no CuPy for NVRTC ({gpu_install_hint()})") from None


@functools.lru_cache(maxsize=None)
def _module(path: str, mtime: float):
    import cupy

    return cupy.RawModule(code=Path(path).read_text(), options=NVRTC_OPTIONS, name_expressions=None)


def raw_module(topic: str):
    """The ``cupy.RawModule`` of ``kernels/<topic>.cu`` (GPU only; compiled once per edit)."""
    path = cu_path(topic)
    return _module(str(path), path.stat().st_mtime)


def cu_kernel(topic: str, name: str):
    """One ``extern "C" __global__`` kernel of ``kernels/<topic>.cu`` as a ``cupy.RawKernel``."""
    return raw_module(topic).get_function(name)


@functools.lru_cache(maxsize=32)
def source_kernel(code: str, name: str):
    """``extern "C" __global__ void name(...)`` of a CUDA C string (a notebook cell) as a
    ``cupy.RawKernel``, compiled by NVRTC through ``cupy.RawModule`` once per distinct source."""
    import cupy

    return cupy.RawModule(code=code, options=NVRTC_OPTIONS).get_function(name)
