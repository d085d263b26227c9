"""CUDA C kernels on the CPU: NVIDIA's own compiler (NVRTC) to PTX, run by the PTX engine.

``k = simtlab.cuda_c(source_or_path, "name")`` compiles a CUDA C source (a string, a path to
a ``.cu`` file, or a course topic such as ``"reduction"``) with NVRTC from its pip wheels (no
GPU, no driver) and returns a :class:`CudaCKernel`; ``simtlab.emulate(k, grid, block, *args)``
runs it in the PTX engine (``simtlab/emulator/ptx/``) and returns the same ``Run`` a numba
kernel gives, its lines being CUDA C lines (from the PTX's ``.loc`` directives).

NVRTC comes with the ``cuda-c`` extra, which the README's set-up installs (its wheel is 58 MB to
download, 149 MB installed; NVIDIA builds none for macOS). A missing compiler raises
:class:`CompilerMissing` naming the command that installs it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import linecache
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["cuda_c", "CudaCKernel", "compile_ptx", "CompilerMissing", "CudaCompileError",
           "PTX_OPTIONS", "PTX_OPTIONS_SM90A", "ptx_options", "INSTALL_HINT", "kernel_only_source", "course_kernel", "emulate_launches",
           "emulate_version"]

#: compute_90 PTX (the H100's) with a .loc directive before every instruction's CUDA C line
PTX_OPTIONS = ("--gpu-architecture=compute_90", "-lineinfo", "-std=c++17")
#: the same for a source with Hopper-only code (wgmma, TMA, mbarrier's expect_tx: guarded by
#: ``__CUDA_ARCH_FEAT_SM90_ALL``, which only compute_90a defines). Only such a source gets it:
#: sm_90a PTX runs on sm_90 GPUs alone (no later GPU JITs it), and NVRTC's compute_90a PTX of
#: kernels/gemm.cu's v8 differs from its compute_90 PTX although gemm.cu has no such code
#: (register numbering and instruction order), while tensor_cores.cu's v1-v6 are identical
#: under both but for the .target line (measured with NVRTC 13.0)
PTX_OPTIONS_SM90A = ("--gpu-architecture=compute_90a",) + PTX_OPTIONS[1:]
#: the macro that marks a source as needing compute_90a
ARCH_SPECIFIC_MACRO = "__CUDA_ARCH_FEAT_SM90_ALL"
INSTALL_HINT = ("pip install -e '.[cuda-c]' in the course's folder (or: pip install cuda-bindings "
                "nvidia-cuda-nvrtc lark)")
if sys.platform == "darwin":     # NVIDIA builds NVRTC and cuda-bindings for Linux and Windows only
    INSTALL_HINT = ("nothing on macOS: NVIDIA builds NVRTC for Linux and Windows only; run the "
                    "course's CUDA C cells on a Linux or Windows machine (or a Linux container), "
                    "the numba kernels of every chapter run here")
#: the CUDA headers a kernel may include (cuda_fp16.h, cuda_pipeline.h, cooperative_groups.h and
#: the libcu++ headers it needs): NVRTC's wheel has none of them; these two wheels do (6.6 MB to
#: download, 28 MB installed)
HEADER_PACKAGES = "nvidia-cuda-runtime nvidia-cuda-cccl"


class CompilerMissing(RuntimeError):
    """NVRTC (the cuda-bindings package and NVIDIA's NVRTC library wheel) is not installed."""


class CudaCompileError(RuntimeError):
    """NVRTC refused the source; the message is NVRTC's log (``file(line): error: ...``)."""

    def __init__(self, log: str, filename: str):
        self.log = log
        self.filename = filename
        super().__init__(f"CUDA C compile error in {filename}:\n{log.strip()}")


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:
        raise CompilerMissing(f"NVRTC is not installed (no cuda.bindings: {exc}); "
                              f"install it with: {INSTALL_HINT}") from None
    try:
        err, *_ = nvrtc.nvrtcVersion()
    except Exception as exc:       # cuda.pathfinder's DynamicLibNotFoundError and friends
        raise CompilerMissing(f"NVRTC's library is not installed ({type(exc).__name__}: "
                              f"{str(exc).splitlines()[0]}); install it with: "
                              f"{INSTALL_HINT}") from None
    return nvrtc


def nvrtc_version() -> tuple[int, int]:
    _, major, minor = _nvrtc().nvrtcVersion()
    return int(major), int(minor)


def _check(result, what):
    err = result[0] if isinstance(result, tuple) else result
    if int(err) != 0:
        raise RuntimeError(f"NVRTC {what} failed: {err!r}")
    return result[1] if isinstance(result, tuple) and len(result) > 1 else None


def _cache_path(source: str, filename: str, options: tuple) -> Path:
    """Where the PTX of one compile is kept between sessions (NVRTC takes a minute for the
    largest course file on a 2-core machine): ``$SIMTLAB_CACHE`` or ``~/.cache/simtlab``."""
    root = Path(os.environ.get("SIMTLAB_CACHE") or Path.home() / ".cache" / "simtlab") / "ptx"
    key = hashlib.sha256("\0".join((source, filename, *options,
                                     str(nvrtc_version()))).encode()).hexdigest()
    return root / f"{key}.ptx"


@functools.lru_cache(maxsize=1)
def header_options() -> tuple:
    """``-I`` options for the CUDA toolkit headers of the ``nvidia-cuda-runtime`` and
    ``nvidia-cuda-cccl`` wheels (``nvidia/cu*/include`` and its ``cccl`` folder), where they are
    installed; () where not."""
    try:
        import nvidia
    except ImportError:
        return ()
    # the two wheels may sit in different site folders (the nvidia namespace spans them): look
    # for each on its own
    runtime = cccl = None
    for root in getattr(nvidia, "__path__", []):
        for include in sorted(Path(root).glob("cu*/include"), reverse=True):
            if runtime is None and (include / "cuda_fp16.h").exists():
                runtime = include
            if cccl is None and (include / "cccl" / "nv" / "target").exists():
                cccl = include / "cccl"
    found = [f"-I{d}" for d in (runtime, cccl) if d is not None]
    return tuple(found)


def ptx_options(source: str) -> tuple:
    """NVRTC's options for ``source``: ``PTX_OPTIONS_SM90A`` where the source has code for
    sm_90a only (it tests ``ARCH_SPECIFIC_MACRO``), else ``PTX_OPTIONS``."""
    return PTX_OPTIONS_SM90A if ARCH_SPECIFIC_MACRO in source else PTX_OPTIONS


@functools.lru_cache(maxsize=64)
def compile_ptx(source: str, filename: str = "kernel.cu", options: tuple | None = None) -> str:
    """The PTX NVRTC makes of ``source`` (``filename`` is what its ``.file`` directive and its
    error messages name). Raises :class:`CudaCompileError` with NVRTC's log on an error.
    ``options`` default to ``ptx_options(source)`` (compute_90, or compute_90a for a source
    with sm_90a-only code). A source that includes headers gets the toolkit headers' folders
    (``header_options``). Kept on disk per source, options (the architecture with them) and
    NVRTC version (see ``_cache_path``)."""
    if options is None:
        options = ptx_options(source)
    if "#include" in source:
        options = tuple(options) + header_options()
    cached = _cache_path(source, filename, options)
    if cached.exists():
        return cached.read_text()
    with _compile_lock(cached):                  # a parallel worker compiling it: wait, then read
        if cached.exists():
            return cached.read_text()
        ptx = _compile(source, filename, options)
        try:
            tmp = cached.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(ptx)
            tmp.replace(cached)                  # atomic: a parallel test worker reads all or nothing
        except OSError:
            pass                                 # a read-only home: compile again next time
    return ptx


@contextlib.contextmanager
def _compile_lock(cached: Path):
    """One compile of a source at a time across processes (pytest-xdist's workers each reach
    kernels/conv.cu, a minute of NVRTC on 2 cores): an exclusive lock on a file beside the
    cached PTX; none where the cache cannot be written."""
    try:
        import fcntl

        cached.parent.mkdir(parents=True, exist_ok=True)
        handle = open(cached.with_suffix(".lock"), "w")
    except (ImportError, OSError):
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _compile(source: str, filename: str, options: tuple) -> str:
    nvrtc = _nvrtc()
    prog = _check(nvrtc.nvrtcCreateProgram(source.encode(), filename.encode(), 0, [], []),
                  "nvrtcCreateProgram")
    try:
        opts = [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        size = _check(nvrtc.nvrtcGetProgramLogSize(prog), "log size")
        log = b" " * size
        _check(nvrtc.nvrtcGetProgramLog(prog, log), "log")
        log_text = log.rstrip(b"\x00").decode(errors="replace")
        if int(err) != 0:
            if "cannot open source file" in log_text or "could not open source file" in log_text:
                log_text += (f"\n(the CUDA headers come from the wheels {HEADER_PACKAGES}: "
                             f"pip install {HEADER_PACKAGES})")
            raise CudaCompileError(log_text, filename)
        size = _check(nvrtc.nvrtcGetPTXSize(prog), "PTX size")
        ptx = b" " * size
        _check(nvrtc.nvrtcGetPTX(prog, ptx), "PTX")
        return ptx.rstrip(b"\x00").decode()
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


@dataclass(frozen=True)
class _SourceCode:
    """What ``Run.source`` and the source view read from a kernel's code object: the file
    (real, or a ``<cuda_c ...>`` name registered in ``linecache``), the kernel's name and
    the lines of its definition (``source_lines``, as ``inspect.getsourcelines`` gives a
    Python function's)."""

    co_filename: str
    co_name: str
    co_firstlineno: int = 1
    co_lastlineno: int = 0

    def source_lines(self) -> tuple[list[str], int]:
        lines = linecache.getlines(self.co_filename)
        if not lines:
            raise OSError(f"no source for {self.co_filename}")
        last = self.co_lastlineno or len(lines)
        return lines[self.co_firstlineno - 1:last], self.co_firstlineno


#: what may stand between ``__global__`` and a kernel's name: its type and qualifiers, and
#: ``__launch_bounds__(...)`` (one level of parentheses)
_DECLARATION_HEAD = r"__global__(?:[^;{()]|\([^()]*\))*?"


def kernel_line_span(source: str, name: str) -> tuple[int, int]:
    """``(first, last)`` 1-based lines of the ``__global__`` function ``name`` in ``source``:
    from the line of its declaration to the line of its closing brace (braces counted outside
    comments and strings); the whole file when the declaration cannot be found."""
    m = re.search(_DECLARATION_HEAD + r"\b" + re.escape(name) + r"\s*\(", source)
    if m is None:
        return 1, source.count("\n") + 1
    start = source.rfind("\n", 0, m.start()) + 1
    text = re.sub(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\])*\"",
                  lambda c: re.sub(r"[^\n]", " ", c.group()), source[m.start():], flags=re.S)
    depth, seen = 0, False
    for pos, ch in enumerate(text):
        if ch == "{":
            depth, seen = depth + 1, True
        elif ch == "}":
            depth -= 1
            if seen and depth == 0:
                end = m.start() + pos
                return source.count("\n", 0, start) + 1, source.count("\n", 0, end) + 1
    return source.count("\n", 0, start) + 1, source.count("\n") + 1


_EXPORTED_KERNEL = re.compile(r'^[ \t]*extern "C" ' + _DECLARATION_HEAD
                              + r"\b(?!__launch_bounds__\b)(\w+)\s*\(", re.M)
_KERNEL_MACRO = re.compile(r"^#define[ \t]+(\w+)\((?:[^\n]*\\\n)*?[^\n]*__global__", re.M)
#: any function-like macro's name and its whole definition (continuation lines included)
_MACRO_DEFINITION = re.compile(r"^#define[ \t]+(\w+)\(((?:[^\n]*\\\n)*[^\n]*)", re.M)


def _kernel_macros(source: str) -> set:
    """The macros whose instances define kernels: those whose definition writes ``__global__``, and those that
    expand to one of them (tensor_cores.cu's V6W_PRODUCER_KERNEL_TMA_RN is V6W_PRODUCER_KERNEL under another name)."""
    macros = {m.group(1) for m in _KERNEL_MACRO.finditer(source)}
    definitions = [(m.group(1), m.group(2)) for m in _MACRO_DEFINITION.finditer(source)]
    grew = True
    while grew:
        grew = False
        for name, body in definitions:
            if name not in macros and any(re.search(rf"\b{re.escape(k)}\s*\(", body) for k in macros):
                macros.add(name)
                grew = True
    return macros


def _blank(lines: list[str], first: int, last: int) -> None:
    for i in range(first - 1, last):
        lines[i] = "\n" if lines[i].endswith("\n") else ""


def kernel_only_source(source: str, name: str) -> str:
    """The part of ``source`` NVRTC needs for the kernel ``name``: every other ``extern "C"
    __global__`` kernel and every instantiation of a macro that defines kernels blanked to an
    empty line, so the file keeps its line numbers (the PTX's ``.loc`` lines) and its shared
    preamble (defines, ``__device__`` helpers, ``__constant__`` variables). NVRTC's time grows
    with the kernels it compiles: kernels/conv.cu's template instantiations take half a minute,
    one plain kernel of it a second. The whole source where ``name`` is not written out as an
    ``extern "C"`` kernel (a macro's instantiation)."""
    kernels = [m.group(1) for m in _EXPORTED_KERNEL.finditer(source)
               if not source[m.start():source.find("\n", m.start())].rstrip().endswith("\\")]
    if name not in kernels:
        return source
    lines = source.splitlines(keepends=True)
    for other in kernels:
        if other != name:
            _blank(lines, *kernel_line_span(source, other))
    macros = _kernel_macros(source)
    for i, line in enumerate(lines):
        call = re.match(r"(\w+)\s*\(", line)
        if call and call.group(1) in macros:
            _blank(lines, i + 1, i + 1)
    return "".join(lines)


class CudaCKernel:
    """One ``__global__`` kernel of a CUDA C source, compiled to PTX and parsed.

    ``simtlab.emulate(kernel, grid, block, *args)`` runs it in the PTX engine. ``ptx`` is the
    module's PTX text, ``entry`` the parsed kernel (params, instructions), ``filename`` the
    CUDA C file its lines refer to."""

    is_cuda_c = True             # what emulate() looks for

    def __init__(self, source: str, name: str, filename: str, compile_source: str | None = None):
        """``compile_source``: what NVRTC compiles when not the whole ``source`` (the same
        lines with the kernels not asked for blanked: ``kernel_only_source``)."""
        try:
            from .emulator.ptx.parser import parse_module
        except ImportError as exc:                  # lark: part of the same extra
            raise CompilerMissing(f"the PTX engine's parser needs lark ({exc}); install it "
                                  f"with: {INSTALL_HINT}") from None

        self.source = source
        self.name = name
        self.filename = filename
        self.ptx = compile_ptx(compile_source or source, filename)
        self.module = parse_module(self.ptx)
        if name not in self.module.entries:
            known = ", ".join(self.module.entries) or "none"
            raise KeyError(f"no __global__ kernel named {name!r} in {filename} (its PTX entries: "
                           f"{known}; a kernel needs extern \"C\" to keep its plain name)")
        self.entry = self.module.entries[name]
        self.code = _SourceCode(filename, name, *kernel_line_span(source, name))
        self.constants: dict = {}
        # cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, n), by
        # CuPy's name: above 48 KiB of dynamic shared memory a launch needs it, as on the GPU
        self.max_dynamic_shared_size_bytes = 0

    def set_constant(self, name: str, values) -> None:
        """Fill a ``__constant__`` variable before a launch (``cudaMemcpyToSymbol``)."""
        import numpy as np

        from .emulator.ptx.engine import _demangle

        for v in self.module.variables:
            if v.space == "const" and (v.name == name or _demangle(v.name) == name):
                data = np.ascontiguousarray(values)
                if data.nbytes > v.nbytes:
                    raise ValueError(f"{name} holds {v.nbytes} bytes, not {data.nbytes}")
                self.constants[v.name] = data
                return
        raise KeyError(f"no __constant__ variable {name!r} in {self.filename}")

    @property
    def __name__(self):          # what emulate() and the playground call a kernel by
        return self.name

    @property
    def parameter_names(self) -> list[str]:
        """The CUDA C names of the kernel's parameters (the PTX's ``name_param_0`` ... when
        the declaration cannot be read: a macro, a template)."""
        from .emulator.ptx.engine import c_signature

        signature = c_signature(self.source, self.name)
        if signature is None or len(signature) != len(self.entry.params):
            return [p.name for p in self.entry.params]
        return [name for name, _, _ in signature]

    def __repr__(self):
        params = ", ".join(f"{p.type} {p.name}" for p in self.entry.params)
        return f"<CUDA C kernel {self.name}({params}) from {self.filename}>"


def _register_source(source: str) -> str:
    """A ``linecache`` name for a source string, so ``Run.source(line)`` finds its lines."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = f"<cuda_c {digest}>"
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)   # mtime None: kept
    return filename


def cuda_c(source_or_path, name: str) -> CudaCKernel:
    """The kernel ``name`` of a CUDA C source: a string of code, a path to a ``.cu`` file, or
    the topic of a course file (``"reduction"`` for ``kernels/reduction.cu``)."""
    text = str(source_or_path)
    looks_like_code = "\n" in text or "__global__" in text or "{" in text
    if not looks_like_code:
        from .cuda_source import cu_path

        path = cu_path(source_or_path).resolve()
        return CudaCKernel(path.read_text(), name, str(path))
    return CudaCKernel(text, name, _register_source(text))


@functools.lru_cache(maxsize=None)
def course_kernel(topic: str, name: str) -> CudaCKernel:
    """``kernels/<topic>.cu``'s kernel ``name``, compiled and parsed once per session; NVRTC
    compiles that kernel alone with the file's preamble (``kernel_only_source``), so a chapter
    that runs three kernels of a file does not wait for all of them."""
    from .cuda_source import cu_path

    path = cu_path(topic).resolve()
    source = path.read_text()
    return CudaCKernel(source, name, str(path), compile_source=kernel_only_source(source, name))


def emulate_launches(topic: str, launches, **options) -> list:
    """Run a plan's CUDA C launches (``simtlab.versions.Launch``, NumPy arrays) one after
    another on the PTX engine, as the GPU would: the arrays in ``zero`` zeroed and the
    ``__constant__`` variables in ``constants`` filled (``cudaMemcpyToSymbol``) before each
    launch. ``options`` go to ``simtlab.emulate``. Returns the runs."""
    from .emulator import emulate
    from .emulator.limits import MAX_STATIC_SHARED_BYTES

    runs = []
    for step in launches:
        for a in step.zero:
            a[...] = 0
        kernel = course_kernel(topic, step.kernel)
        for name, values in step.constants.items():
            kernel.set_constant(name, values)
        if step.shared > MAX_STATIC_SHARED_BYTES:          # the opt-in a GPU program makes
            kernel.max_dynamic_shared_size_bytes = step.shared
        extra = {"shared_bytes": step.shared} if step.shared else {}
        runs.append(emulate(kernel, step.grid, step.block, *step.args, **extra, **options))
    return runs


def emulate_version(topic: str, version, *inputs, **options):
    """Run a course version's CUDA C twin on the PTX engine with its launch plan (the plan's
    ``impl="cuda-c"`` launches, NumPy temporaries): ``(out, runs)``. ``options`` go to the
    plan when it takes them, the rest to ``simtlab.emulate``."""
    import inspect

    import numpy as np

    accepted = inspect.signature(version.plan).parameters
    plan_opts = {k: options.pop(k) for k in list(options) if k in accepted}
    launches, out = version.launches("cuda-c", np, *inputs, **plan_opts)
    return out, emulate_launches(topic, launches, **options)
