"""Chapter 9 on the GPU: every tensor-core version against cuBLAS with the same precision.

``kernels/tensor_cores.cu`` is compiled here to a CUBIN for ``sm_90a`` (wgmma exists only there;
CuPy's own RawModule compiles for the plain ``sm_90``), with ptxas's resource report kept
(:func:`compile_cubin`: NVRTC from cuda-bindings, else nvcc), and loaded with CuPy.

The references are cuBLAS's GEMM with the same inputs and an FP32 output (``cublasGemmEx``
through CuPy's binding: FP32 with ``CUBLAS_COMPUTE_32F``, TF32 with ``CUBLAS_COMPUTE_32F_FAST_TF32``,
FP16 and BF16 inputs with FP32 compute and an FP32 C, exactly what the kernels do), and
torch.matmul as a second opinion (its FP16/BF16 output is 16-bit).

Each version is checked against a float64 product on the GPU with the bound of
``kernels/tensor_cores.py: tolerance``, then timed with the course's timer
(``harness.time_launches``: CUDA events, warm-up, median). :func:`run` does it all, every
version in its own ``try``: one that fails is reported and the rest still run.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from ..kernels import tensor_cores as T
from .harness import stamp, time_launches

TOPIC = "tensor_cores"
DEFAULT_SHAPE = (4096, 4096, 4096)
#: not square, not a power of two, K of 3 tiles (fewer than v6's 4 stages) and of 6 for v7's BK = 64
CHECK_SHAPES = ((384, 768, 96), (256, 512, 384))
CUBIN_OPTIONS = ("--gpu-architecture=sm_90a", "-std=c++17", "--ptxas-options=-v")

__all__ = ["compile_cubin", "module", "runner", "cublas_runner", "check_version", "run", "resource_usage",
           "DEFAULT_SHAPE", "CHECK_SHAPES"]


# ------------------------------------------------------------------------------------------
# compile to a CUBIN for sm_90a, keep ptxas's report
# ------------------------------------------------------------------------------------------
def _nvrtc_cubin(source: str, name: str, options) -> tuple[bytes, str, str]:
    from cuda.bindings import nvrtc

    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    try:
        opts = [o.encode() for o in options]
        (status,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        log_text = log.rstrip(b"\x00").decode(errors="replace")
        if int(status) != 0:
            raise RuntimeError(f"NVRTC could not compile {name}:\n{log_text}")
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * size
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        _, major, minor = nvrtc.nvrtcVersion()
        return cubin, log_text, f"NVRTC {major}.{minor} (cuda-bindings)"
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _nvcc_cubin(path: Path) -> tuple[bytes, str, str]:
    from ..cuda_source import find_nvcc

    nvcc = find_nvcc()
    if nvcc is None:
        raise RuntimeError("no nvcc")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "tc.cubin"
        proc = subprocess.run([nvcc, "-arch=sm_90a", "-std=c++17", "-cubin", "-Xptxas", "-v", "-o", str(out), str(path)],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"nvcc could not compile {path.name}:\n{proc.stderr}")
        version = subprocess.run([nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
        return out.read_bytes(), proc.stdout + proc.stderr, f"nvcc ({version})"


def compile_cubin(path: Path | str = T.CU_PATH) -> dict:
    """``{"cubin", "log", "tool"}``: tensor_cores.cu as an sm_90a CUBIN, by NVRTC (cuda-bindings)
    or, failing that, nvcc; ``log`` is ptxas's report (registers, spills, per kernel)."""
    path = Path(path)
    errors = []
    for attempt in (lambda: _nvrtc_cubin(path.read_text(), path.name, CUBIN_OPTIONS), lambda: _nvcc_cubin(path)):
        try:
            cubin, log, tool = attempt()
            return {"cubin": cubin, "log": log, "tool": tool}
        except Exception as e:                              # the next compiler may be there
            errors.append(f"{type(e).__name__}: {e}")
    raise RuntimeError("cannot compile tensor_cores.cu for sm_90a:\n" + "\n".join(errors))


def resource_usage(log: str) -> dict:
    """ptxas's report per kernel: registers, spill stores/loads (bytes), stack frame, shared."""
    out: dict[str, dict] = {}
    current = None
    for line in log.splitlines():
        m = re.search(r"Function properties for (\w+)", line)
        if m:
            current = out.setdefault(m.group(1), {})
            continue
        if current is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            current.update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            current["registers"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            current["static_smem"] = int(s.group(1)) if s else 0
    return out


_MODULE = {}
#: environment variable naming a CUBIN of tensor_cores.cu that module() loads instead of compiling
CUBIN_ENV = "SIMTLAB_TC_CUBIN"


def module():
    """The CuPy module of tensor_cores.cu for sm_90a (compiled once per process) and its compile report."""
    if "module" not in _MODULE:
        import os

        import cupy

        cached = os.environ.get(CUBIN_ENV)
        if cached:                                          # a child of run() / check_isolated: the parent's CUBIN
            built = {"cubin": Path(cached).read_bytes(), "log": "", "tool": f"the parent's CUBIN ({cached})"}
        else:
            built = compile_cubin()
        tmp = Path(tempfile.mkdtemp(prefix="simtlab_tc_")) / "tensor_cores.cubin"
        tmp.write_bytes(built["cubin"])
        mod = cupy.RawModule(path=str(tmp))
        ptxas = resource_usage(built["log"])
        source = "ptxas -v"
        if not ptxas and not cached:                        # the device's NVRTC gave no -v log (first H100 run)
            ptxas, source = cuobjdump_usage(tmp), "cuobjdump --dump-resource-usage"
        _MODULE["module"] = mod
        _MODULE["path"] = tmp
        _MODULE["report"] = {"tool": built["tool"], "ptxas": ptxas, "ptxas_source": source, "log": built["log"],
                             "attributes": kernel_attributes(mod, [v.kernel for v in T.VERSIONS + T.SWEEP]
                                                             + list(T.HELPER_KERNELS))}
    return _MODULE["module"], _MODULE["report"]


def kernel_attributes(mod, kernels) -> dict:
    """What the driver says of each loaded kernel (cuFuncGetAttribute through CuPy): registers,
    local memory (spills land there: these kernels have no local arrays, so any byte is a spill),
    static shared memory. Always there, whatever the compiler printed."""
    out = {}
    for name in kernels:
        try:
            attrs = mod.get_function(name).attributes
            out[name] = {k: attrs[k] for k in ("num_regs", "local_size_bytes", "shared_size_bytes",
                                               "max_threads_per_block") if k in attrs}
        except Exception as e:                              # a missing kernel is reported, not fatal
            out[name] = {"error": f"{type(e).__name__}: {e}"}
    return out


def cuobjdump_usage(cubin: Path) -> dict:
    """Registers, stack and local bytes per kernel from ``cuobjdump --dump-resource-usage`` (CUDA's
    bin folder or PATH), in resource_usage's keys; {} when there is no cuobjdump."""
    import shutil

    tool = shutil.which("cuobjdump") or next((str(p) for p in (Path("/usr/local/cuda/bin/cuobjdump"),) if p.exists()), None)
    if tool is None:
        return {}
    try:
        text = subprocess.run([tool, "--dump-resource-usage", str(cubin)], capture_output=True, text=True, timeout=60).stdout
    except Exception:
        return {}
    return parse_cuobjdump_usage(text)


def parse_cuobjdump_usage(text: str) -> dict:
    out, current = {}, None
    for line in text.splitlines():
        m = re.search(r"Function (\w+):", line)
        if m:
            current = m.group(1)
            continue
        m = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", line)
        if m and current:
            reg, stack, shared, local = (int(x) for x in m.groups())
            # cuobjdump has no spill counts: local bytes stand for them (no kernel here has local arrays)
            out[current] = {"registers": reg, "stack": stack, "static_smem": shared, "local": local,
                            "spill_stores": local, "spill_loads": local}
            current = None
    return out


# ------------------------------------------------------------------------------------------
# launches
# ------------------------------------------------------------------------------------------
def _check_operands(version_precision: str, a, b, c):
    import cupy

    want = cupy.float32 if version_precision == "tf32" else cupy.uint16
    for name, x, dtype in (("a", a, want), ("b", b, want), ("c", c, cupy.float32)):
        if x.dtype != dtype or x.ndim != 2 or not x.flags.c_contiguous:
            raise ValueError(f"{name} must be a C-contiguous 2-D {np.dtype(dtype).name} CuPy array "
                             f"(FP16/BF16 as uint16 bit patterns), got {x.dtype} {x.shape}")
    if b.shape[0] != a.shape[1] or c.shape != (a.shape[0], b.shape[1]):
        raise ValueError(f"shapes do not multiply: A {a.shape}, B {b.shape}, C {c.shape}")


def runner(version: T.TcVersion, a, b, c, *, transpose: bool = False):
    """``run()`` enqueues C = A @ B with ``version`` on CuPy arrays, without synchronising.

    A version that reads B^T (``b_transposed``) gets it made here, once, outside ``run()``; with
    ``transpose=True`` ``run()`` makes it itself (tc_transpose_f32, then the GEMM), so its time
    counts. A TMA version (v8, v6w) gets tensor maps of ``a`` and ``b`` (B^T) (:func:`tensor_map`) and is
    launched through the driver (:func:`launch_with_tensor_maps`): CuPy passes no structs by value."""
    import cupy

    _check_operands(version.precision, a, b, c)
    m, k = a.shape
    n = b.shape[1]
    grid, block, smem = T.launch_config(version, m, n, k, sms=cupy.cuda.Device().attributes["MultiProcessorCount"])
    mod, _ = module()
    kernel = mod.get_function(version.kernel)
    if smem > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = smem
    transpose_kernel = mod.get_function("tc_transpose_f32")
    if version.b_transposed:                                  # B^T, made once (or in run() with transpose)
        b_arg = cupy.empty((n, k), cupy.float32)
        t_grid, t_args = ((n + 31) // 32, (k + 31) // 32), (b, b_arg, np.int32(k), np.int32(n))
        if not transpose:
            transpose_kernel(t_grid, (32, 8), t_args)
    else:
        b_arg, transpose = b, False

    def make_b_transposed():
        if transpose:
            transpose_kernel(t_grid, (32, 8), t_args)
    if version.tma:                                           # tensor maps of A and B (B^T): v8, v6w
        boxes = version.tma_boxes or T.V8_BOXES               # v8: 64 k x 128 rows of A, 64 n x 64 k of B
        maps = tuple(tensor_map(x, box, rounds_to_tf32=version.tma_rounds) for x, box in zip((a, b_arg), boxes))
        sizes = (np.int32(m), np.int32(n), np.int32(k))
        buffers = ()
        if version.stream_k:                                  # partial sums, and counters zeroed once
            ws_floats, counters = T.stream_k_buffers(version, m, n, grid[0])
            buffers = (cupy.empty(ws_floats, cupy.float32), cupy.zeros(counters, cupy.int32))

        def run():
            make_b_transposed()
            launch_with_tensor_maps(kernel, grid, block, smem, maps, c, sizes, buffers)
        run.keep = (a, b, c, b_arg, maps, buffers)
        return run
    args = (a, b_arg, c, np.int32(m), np.int32(n), np.int32(k))

    def run():
        make_b_transposed()
        kernel(grid, block, args, shared_mem=smem)
    run.keep = (a, b, c, b_arg)
    return run


# cuda.h: CUtensorMapDataType UINT16 (FP16 and BF16 move as 16-bit patterns; no arithmetic or
# out-of-bounds fill here), FLOAT32, TFLOAT32 (the TMA rounds each FP32 element to nearest TF32, ties
# to even, on its way into shared memory: benchmarks/tensor_cores_tma_rounding.py measured it);
# CU_TENSOR_MAP_SWIZZLE_128B; L2 promotion 256 B
_TMA_UINT16, _TMA_FLOAT32, _TMA_TFLOAT32, _TMA_SWIZZLE_128B, _TMA_L2_256B = 1, 7, 11, 3, 3


def tensor_map(x, box, *, rounds_to_tf32: bool = False) -> bytes:
    """The 128 bytes of a CUtensorMap of the 2-D row-major CuPy array ``x``: ``box`` = (columns,
    rows) of one TMA copy, 128-byte swizzle (the layout v7's descriptors read). ``rounds_to_tf32``:
    a float32 ``x``'s map says TF32, so each copy rounds the elements to nearest TF32. cuda-bindings'
    cuTensorMapEncodeTiled, else the driver's through ctypes."""
    rows, cols = x.shape
    if rounds_to_tf32 and x.dtype != np.float32:
        raise ValueError(f"only float32 tensors round to TF32 on their way in, not {x.dtype}")
    dtype = _TMA_UINT16 if x.itemsize == 2 else _TMA_TFLOAT32 if rounds_to_tf32 else _TMA_FLOAT32
    if box[0] * x.itemsize != 128:
        raise ValueError(f"a 128-byte swizzle needs boxes 128 bytes wide, not {box[0]} x {x.itemsize} bytes")
    dims, strides = (cols, rows), (cols * x.itemsize,)
    errors = []
    for encode in (_tensor_map_bindings, _tensor_map_ctypes):
        try:
            return encode(x.data.ptr, dtype, dims, strides, box)
        except Exception as e:                              # the other way may work
            errors.append(f"{encode.__name__}: {type(e).__name__}: {e}")
    raise RuntimeError("cuTensorMapEncodeTiled failed:\n" + "\n".join(errors))


def _tensor_map_bindings(ptr, dtype, dims, strides, box) -> bytes:
    import ctypes

    from cuda.bindings import driver as d

    err, tmap = d.cuTensorMapEncodeTiled(
        d.CUtensorMapDataType(dtype), 2, ptr, [d.cuuint64_t(v) for v in dims], [d.cuuint64_t(v) for v in strides],
        [d.cuuint32_t(v) for v in box], [d.cuuint32_t(1), d.cuuint32_t(1)],
        d.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, d.CUtensorMapSwizzle(_TMA_SWIZZLE_128B),
        d.CUtensorMapL2promotion(_TMA_L2_256B), d.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if int(err) != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled returned {err}")
    return ctypes.string_at(tmap.getPtr(), 128)


def _libcuda():
    import ctypes

    return ctypes.CDLL("libcuda.so.1")


def _tensor_map_ctypes(ptr, dtype, dims, strides, box) -> bytes:
    import ctypes

    out = (ctypes.c_uint64 * 24)()                          # 128 bytes at a 64-byte boundary inside
    start = (ctypes.addressof(out) + 63) // 64 * 64
    u64, u32 = ctypes.c_uint64, ctypes.c_uint32
    status = _libcuda().cuTensorMapEncodeTiled(
        ctypes.c_void_p(start), ctypes.c_int(dtype), u32(2), ctypes.c_void_p(ptr), (u64 * 2)(*dims), (u64 * 1)(*strides),
        (u32 * 2)(*box), (u32 * 2)(1, 1), ctypes.c_int(0), ctypes.c_int(_TMA_SWIZZLE_128B), ctypes.c_int(_TMA_L2_256B),
        ctypes.c_int(0))
    if status != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled returned CUresult {status}")
    return ctypes.string_at(start, 128)


def launch_with_tensor_maps(kernel, grid, block, smem, maps, c, sizes, buffers=()):
    """cuLaunchKernel (the driver's, ctypes) of a CuPy-loaded kernel whose first parameters are
    CUtensorMaps passed by value, then C, the int sizes and any more CuPy arrays (``buffers``: a
    stream-K version's workspace and counters), on CuPy's current stream."""
    import ctypes

    import cupy

    values = [ctypes.create_string_buffer(m, 128) for m in maps]
    values.append(ctypes.c_uint64(c.data.ptr))
    values += [ctypes.c_int32(int(v)) for v in sizes]
    values += [ctypes.c_uint64(x.data.ptr) for x in buffers]
    params = (ctypes.c_void_p * len(values))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
    gx, gy = (tuple(grid) + (1,))[:2]
    status = _libcuda().cuLaunchKernel(
        ctypes.c_void_p(_function_ptr(kernel)), ctypes.c_uint(gx), ctypes.c_uint(gy), ctypes.c_uint(1),
        ctypes.c_uint(block[0]), ctypes.c_uint(1), ctypes.c_uint(1), ctypes.c_uint(smem),
        ctypes.c_void_p(cupy.cuda.get_current_stream().ptr), params, None)
    if status != 0:
        raise RuntimeError(f"cuLaunchKernel returned CUresult {status}")


def _function_ptr(kernel) -> int:
    """The CUfunction of a CuPy RawModule kernel (RawKernel.kernel is its cupy.cuda.Function)."""
    fn = getattr(kernel, "kernel", kernel)
    return int(fn.ptr)


def numba_runner(precision: str, a, b, c):
    """``run()`` of the numba kernel (linked CUDA C mma.sync) on CuPy uint16 / float32 arrays."""
    from numba import cuda

    _check_operands(precision, a, b, c)
    grid, block = T.numba_launch_config(a.shape[0], b.shape[1], a.shape[1])
    kernel = T.numba_mma_kernel(precision)[grid, block]
    views = [cuda.as_cuda_array(x, sync=False) for x in (a, b, c)]

    def run():
        kernel(*views)
    run.keep = (a, b, c)
    return run


# cuBLAS data and compute types (cublas_api.h, library_types.h)
_CUDA_R_32F, _CUDA_R_16F, _CUDA_R_16BF = 0, 2, 14
_COMPUTE_32F, _COMPUTE_32F_FAST_TF32 = 68, 77
_GEMM_DEFAULT = -1
CUBLAS_REFERENCES = {
    "fp32": ("cuBLAS SGEMM (FP32)", _CUDA_R_32F, _COMPUTE_32F),
    "tf32": ("cuBLAS TF32", _CUDA_R_32F, _COMPUTE_32F_FAST_TF32),
    "fp16": ("cuBLAS FP16 in, FP32 out", _CUDA_R_16F, _COMPUTE_32F),
    "bf16": ("cuBLAS BF16 in, FP32 out", _CUDA_R_16BF, _COMPUTE_32F),
}
#: the reference of the kernels that read B^T (both operands K-major): cuBLAS on that same layout
CUBLAS_BT_REFERENCE = "cuBLAS TF32, B^T given"


def cublas_bt_runner(a, b, c):
    """``run()`` of cuBLAS TF32 on A and B^T (made here, once, outside ``run()``): the layout the
    B^T-given kernels read, so their row is measured against the library on the same inputs."""
    import cupy

    return cublas_runner("tf32", a, cupy.ascontiguousarray(b.T), c, b_transposed=True)


def cublas_runner(precision: str, a, b, c, *, b_transposed: bool = False):
    """``run()``: cublasGemmEx with ``precision``'s inputs (``fp32``: plain SGEMM), FP32 compute
    and an FP32 C. Row-major C = A B is column-major C^T = B^T A^T: B is passed first.
    ``b_transposed``: ``b`` is B^T (N x K, row-major), the layout the v6t ``_bt`` kernels read, so
    both operands are K-major (cuBLAS's "TN"): the reference those kernels are measured against."""
    import cupy
    from cupy_backends.cuda.libs import cublas

    _name, dtype, compute = CUBLAS_REFERENCES[precision]
    m, k = a.shape
    n = b.shape[0] if b_transposed else b.shape[1]
    op_b, ld_b = (cublas.CUBLAS_OP_T, k) if b_transposed else (cublas.CUBLAS_OP_N, n)
    handle = cupy.cuda.device.get_cublas_handle()
    alpha, beta = np.ones(1, np.float32), np.zeros(1, np.float32)

    def run():
        cublas.gemmEx(handle, op_b, cublas.CUBLAS_OP_N, n, m, k, alpha.ctypes.data,
                      b.data.ptr, dtype, ld_b, a.data.ptr, dtype, k, beta.ctypes.data,
                      c.data.ptr, _CUDA_R_32F, n, compute, _GEMM_DEFAULT)
    run.keep = (a, b, c, alpha, beta)
    return run


def torch_runner(precision: str, a, b, c):
    """``run()`` of torch.matmul on the same memory (TF32 switched on or off for the call); FP16
    and BF16 write a 16-bit C (torch's own), so their C is a separate array, not ``c``."""
    import torch

    import cupy

    if precision in ("fp16", "bf16"):                     # DLPack has no uint16 in older torch: int16, then a view
        dtype = torch.float16 if precision == "fp16" else torch.bfloat16
        ta = torch.from_dlpack(a.view(cupy.int16)).view(dtype)
        tb = torch.from_dlpack(b.view(cupy.int16)).view(dtype)
        out = torch.empty((a.shape[0], b.shape[1]), dtype=dtype, device=ta.device)
    else:
        ta, tb = torch.from_dlpack(a), torch.from_dlpack(b)
        out = torch.from_dlpack(c)
    tf32 = precision == "tf32"

    def run():
        torch.backends.cuda.matmul.allow_tf32 = tf32
        # FP32 sums only (split-K partial sums in 16 bits would leave the bound of tolerance())
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
        torch.matmul(ta, tb, out=out)
    run.keep = (a, b, c, out)
    if precision in ("fp16", "bf16"):
        run.output = out
    return run


# ------------------------------------------------------------------------------------------
# check and time
# ------------------------------------------------------------------------------------------
def _device_errors(c, a, b, a32, b32, precision: str) -> dict:
    """Relative errors (kernels/tensor_cores.py: relative_error) computed on the GPU in float64:
    against the inputs the kernel read (``vs_inputs``) and against the FP32 sources (``vs_fp32``)."""
    import cupy

    def values(x):
        if precision in ("tf32", "fp32"):
            return x.astype(cupy.float64)
        if precision == "fp16":
            return x.view(cupy.float16).astype(cupy.float64)
        return (x.astype(cupy.uint32) << 16).view(cupy.float32).astype(cupy.float64)

    c64 = c.astype(cupy.float64)
    out = {}
    for key, (x, y) in (("vs_inputs", (values(a), values(b))), ("vs_fp32", (a32.astype(cupy.float64), b32.astype(cupy.float64)))):
        want = x @ y
        scale = cupy.abs(x) @ cupy.abs(y)
        out[key] = float(cupy.max(cupy.abs(c64 - want) / cupy.maximum(scale, 1e-300)))
        out[key + "_rms"] = float(cupy.sqrt(cupy.mean(((c64 - want) / cupy.maximum(scale, 1e-300)) ** 2)))
        del want, scale
    out["finite"] = bool(cupy.isfinite(c).all())
    return out


def device_inputs(shape, precision: str, seed: int = 0, positive: bool = False):
    """``(a32, b32, a, b)`` on the GPU: FP32 sources and what a ``precision`` kernel reads."""
    import cupy

    m, n, k = shape
    host = T.inputs(m, n, k, "tf32" if precision == "fp32" else precision, seed, positive=positive)
    return tuple(cupy.asarray(x) for x in host)


def _output(run, c):
    """What a run wrote: ``c``, or torch's 16-bit C (FP16/BF16 matmul) widened to float32."""
    import cupy

    out = getattr(run, "output", None)
    return c if out is None else cupy.from_dlpack(out.float())


def _output_precision(run, precision: str):
    """The precision C is stored in when it is not FP32 (torch.matmul's 16-bit C), else None."""
    return precision if getattr(run, "output", None) is not None else None


def check_version(make_run, precision: str, shape, seed: int = 1) -> dict:
    """Run ``make_run(a, b, c)`` once at ``shape`` on positive inputs and compare with float64;
    AssertionError when the error against the inputs read exceeds the precision's bound."""
    import cupy

    a32, b32, a, b = device_inputs(shape, precision, seed, positive=True)
    c = cupy.full((shape[0], shape[1]), cupy.nan, cupy.float32)      # an output never written stays NaN
    run = make_run(a, b, c)
    run()
    cupy.cuda.runtime.deviceSynchronize()
    err = _device_errors(_output(run, c), a, b, a32, b32, precision)
    bound = T.tolerance(precision, shape[2], output=_output_precision(run, precision))
    assert err["finite"], f"at {shape}: some outputs are not finite (never written?)"
    assert err["vs_inputs"] <= bound, f"at {shape}: relative error {err['vs_inputs']:.3e} above the bound {bound:.3e}"
    return {**err, "bound": bound}


def _row(name, precision, impl, make_run, shape, repeat, log, ref_name=None, check_shapes=CHECK_SHAPES):
    """One table row: check at the odd shapes, time at ``shape``, errors at ``shape``."""
    import cupy

    row = {"name": name, "precision": precision, "impl": impl, "reference": ref_name}
    t0 = time.perf_counter()
    try:
        row["checks"] = {"x".join(map(str, s)): check_version(make_run, precision, s) for s in check_shapes}
        a32, b32, a, b = device_inputs(shape, precision, seed=0)
        c = cupy.zeros((shape[0], shape[1]), cupy.float32)
        run = make_run(a, b, c)
        t = time_launches(run, warmup=3, repeat=repeat, batch_ms=20.0)
        row["errors"] = _device_errors(_output(run, c), a, b, a32, b32, precision)
        m, n, k = shape
        row.update(median_ms=t["median_ms"], min_ms=t["min_ms"], spread=t["spread"],
                   tflops=T.gemm_flops(m, n, k) / (t["median_ms"] * 1e-3) / 1e12)
        row["bound_vs_inputs"] = T.tolerance(precision, k, output=_output_precision(run, precision))
        del a32, b32, a, b, c, run
    except Exception as e:                                  # one broken version must not stop the others
        row["error"] = f"{type(e).__name__}: {str(e)[:2000]}"
    finally:
        cupy.get_default_memory_pool().free_all_blocks()
    row["seconds"] = round(time.perf_counter() - t0, 1)
    if "error" in row:
        log(f"  {name:<48} FAILED: {row['error'].splitlines()[0]}")
    else:
        log(f"  {name:<48} {row['median_ms']:8.3f} ms {row['tflops']:7.1f} TFLOP/s  "
            f"err {row['errors']['vs_inputs']:.2e} (bound {row['bound_vs_inputs']:.1e})  [{row['seconds']} s]")
    return row


# ------------------------------------------------------------------------------------------
# versions run in a child process (T.TcVersion.isolate): a kernel checked blind for the first
# time (wgmma TF32, TMA + mbarriers) that faults or traps kills its CUDA context, and with it
# every later row of a process; in a child it ends only that child. The child loads the
# parent's CUBIN (CUBIN_ENV) instead of compiling again.
# ------------------------------------------------------------------------------------------
ISOLATE_TIMEOUT_S = 90
_ROOT = Path(__file__).resolve().parents[2]


def _transpose_label(version: T.TcVersion) -> str:
    """The name of a B^T version's row with tc_transpose_f32 timed (v7's is the chapter's)."""
    return "v7 wgmma + B transpose kernel" if version.kernel.startswith("tc_v7") else f"{version.label} + B transpose kernel"


def version_rows(version: T.TcVersion, shape, repeat: int, log, check_shapes=None) -> list:
    """The table rows of one version, in this process: its own, and for a B^T version a second
    one that times tc_transpose_f32 with it."""
    check_shapes = check_shapes or [T.legal_shape(version, s) for s in CHECK_SHAPES]
    ref = CUBLAS_REFERENCES[version.precision][0]
    # a B^T kernel alone is measured against cuBLAS on B^T; with the transposition timed, against A @ B's
    own_ref = CUBLAS_BT_REFERENCE if version.b_transposed else ref
    rows = [_row(version.name, version.precision, "cuda-c", lambda a, b, c: runner(version, a, b, c), shape, repeat, log,
                 ref_name=own_ref, check_shapes=check_shapes)]
    if version.b_transposed:
        rows.append(_row(f"{_transpose_label(version)} {version.precision.upper()}", version.precision, "cuda-c",
                         lambda a, b, c: runner(version, a, b, c, transpose=True), shape, repeat, log,
                         ref_name=ref, check_shapes=check_shapes))
        rows[-1]["note"] = f"tc_transpose_f32 (B -> B^T) + {version.kernel}, both timed"
    for r in rows:
        r["kernel"] = version.kernel
        r.setdefault("note", version.note)
    return rows


def _child(request_json: str) -> None:
    """A child process's work (see _in_child): prints ``RESULT <json>`` last."""
    import json

    req = json.loads(request_json)
    version = T.find(req["kernel"])
    log = lambda text: print(text, file=sys.stderr, flush=True)     # noqa: E731
    if req["mode"] == "rows":
        out = version_rows(version, tuple(req["shape"]), req["repeat"], log)
    else:                                                   # "check": every shape, each in its own try
        out = {}
        for shape in req["shapes"]:
            key = "x".join(map(str, shape))
            try:
                out[key] = check_version(lambda a, b, c: runner(version, a, b, c), version.precision, tuple(shape))
                if version.b_transposed:
                    check_version(lambda a, b, c: runner(version, a, b, c, transpose=True), version.precision, tuple(shape))
            except Exception as e:
                out[key] = {"error": f"{type(e).__name__}: {str(e)[:2000]}"}
    print("RESULT " + json.dumps(out, default=str), flush=True)


def _in_child(request: dict, timeout: float) -> tuple:
    """``(result, None)`` of _child(request) in a fresh interpreter with the parent's CUBIN, or
    ``(None, why)`` when it crashed, trapped, timed out or printed no result."""
    import json
    import os

    module()                                                # compile here once; the child loads the file
    env = {**os.environ, CUBIN_ENV: str(_MODULE["path"])}
    code = (f"import sys; sys.path.insert(0, {str(_ROOT)!r}); from simtlab.gpubench import tensor_cores as b; "
            "b._child(sys.argv[1])")
    try:
        done = subprocess.run([sys.executable, "-c", code, json.dumps(request)], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=str(_ROOT))
    except subprocess.TimeoutExpired as e:
        tail = (e.stderr or b"")[-1500:]
        return None, f"TimeoutExpired: the child ran past {timeout:.0f} s (a hang?) {tail!r}"
    lines = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        return None, f"ChildFailed: exit status {done.returncode}: {(done.stderr or done.stdout)[-1500:]}"
    return json.loads(lines[-1][len("RESULT "):]), done.stderr


def isolated_rows(version: T.TcVersion, shape, repeat: int, log, timeout: float = ISOLATE_TIMEOUT_S) -> list:
    """version_rows in a child process; one error row (``error``) when the child did not come back."""
    result, info = _in_child({"mode": "rows", "kernel": version.kernel, "shape": list(shape), "repeat": repeat}, timeout)
    if result is None:
        log(f"  {version.name:<48} FAILED in its child process: {info.splitlines()[0][:300]}")
        return [{"name": version.name, "precision": version.precision, "impl": "cuda-c", "kernel": version.kernel,
                 "note": version.note, "error": info, "isolated": True}]
    for line in (info or "").splitlines():
        if line.startswith("  "):
            log(line)
    for r in result:
        r["isolated"] = True
    return result


def check_isolated(version: T.TcVersion, shapes, timeout: float = ISOLATE_TIMEOUT_S) -> dict:
    """check_version of ``version`` at each shape in a child process: ``{"MxNxK": errors or {"error"}}``;
    every shape ``{"error": why}`` when the child did not come back."""
    result, info = _in_child({"mode": "check", "kernel": version.kernel, "shapes": [list(s) for s in shapes]}, timeout)
    if result is None:
        return {"x".join(map(str, s)): {"error": info} for s in shapes}
    return result


def run(shape=DEFAULT_SHAPE, *, repeat: int = 10, numba: bool = True, sweep: bool = True, only=None,
        budget_s: float | None = None, torch: bool = True, log=print) -> dict:
    """Check and time every version, the v6 sweep (``sweep``) and the references at ``shape``;
    JSON-ready results, with ``best``: the fastest correct kernel per precision among the v6 rows
    (the chapter's and the sweep's) and the cuBLAS figure it is measured against. Rows not started
    within ``budget_s`` seconds are listed as skipped."""
    deadline = None if budget_s is None else time.perf_counter() + budget_s
    import cupy

    result = {**stamp(), "shape": list(shape), "rows": [], "compile": {}}
    try:
        t0 = time.perf_counter()
        _, report = module()
        result["compile"] = {"tool": report["tool"], "seconds": round(time.perf_counter() - t0, 1),
                             "ptxas": report["ptxas"], "ptxas_source": report["ptxas_source"],
                             "attributes": report["attributes"]}
        log(f"compiled tensor_cores.cu for sm_90a with {report['tool']} in {result['compile']['seconds']} s")
    except Exception as e:
        result["compile"] = {"error": f"{type(e).__name__}: {e}"}
        log(f"COMPILE FAILED: {e}")
    rows = result["rows"]
    for precision in ("fp32", "tf32", "fp16", "bf16"):
        name = CUBLAS_REFERENCES[precision][0]
        rows.append(_row(name, precision, "cublas", lambda a, b, c, p=precision: cublas_runner(p, a, b, c), shape, repeat, log))
        if torch:
            rows.append(_row(f"torch.matmul {precision.upper()}" + (" (16-bit out)" if precision in ("fp16", "bf16") else ""),
                             precision, "torch", lambda a, b, c, p=precision: torch_runner(p, a, b, c), shape, repeat, log))
        if precision == "tf32":
            rows.append(_row(CUBLAS_BT_REFERENCE, "tf32", "cublas", cublas_bt_runner, shape, repeat, log))
    versions = T.VERSIONS + (T.SWEEP if sweep else ())
    for v in versions:
        if only and not any(key in v.name or key in v.kernel for key in only):
            continue
        if deadline is not None and time.perf_counter() > deadline:      # the device run's time is bounded
            rows.append({"name": v.name, "precision": v.precision, "impl": "cuda-c", "kernel": v.kernel,
                         "error": "skipped: the benchmark's time budget ran out"})
            continue
        try:
            new_rows = isolated_rows(v, shape, repeat, log) if v.isolate else version_rows(v, shape, repeat, log)
        except Exception as e:                              # (version_rows' own rows catch their errors)
            new_rows = [{"name": v.name, "precision": v.precision, "impl": "cuda-c", "kernel": v.kernel,
                         "error": f"{type(e).__name__}: {str(e)[:2000]}"}]
        for r in new_rows:
            if "ptxas" in result["compile"]:
                r["ptxas"] = result["compile"]["ptxas"].get(v.kernel)
                r["attributes"] = result["compile"].get("attributes", {}).get(v.kernel)
        rows.extend(new_rows)
    if numba:
        for precision in ("fp16", "bf16"):
            rows.append(_row(f"numba + linked CUDA C mma.sync {precision.upper()}", precision, "numba",
                             lambda a, b, c, p=precision: numba_runner(p, a, b, c), shape, repeat, log,
                             ref_name=CUBLAS_REFERENCES[precision][0]))
    by_name = {r["name"]: r for r in rows}
    for r in rows:
        ref = by_name.get(r.get("reference") or "")
        if ref and "tflops" in r and "tflops" in ref:
            r["vs_cublas"] = r["tflops"] / ref["tflops"]
    result["best"] = best_v6(rows)
    for precision, b in result["best"].items():
        log(f"best v6 {precision.upper()}: {b['kernel']} {b['tflops']:.1f} TFLOP/s"
            + (f" ({100 * b['vs_cublas']:.1f}% of cuBLAS)" if "vs_cublas" in b else ""))
    result["best_wgmma"] = best_of(rows, ("tc_v7", "tc_v8"))
    for precision, b in result["best_wgmma"].items():
        log(f"best wgmma {precision.upper()}: {b['name']} {b['tflops']:.1f} TFLOP/s"
            + (f" ({100 * b['vs_cublas']:.1f}% of cuBLAS)" if "vs_cublas" in b else ""))
    cupy.get_default_memory_pool().free_all_blocks()
    return result


def best_v6(rows) -> dict:
    """Per precision, the fastest v6 row (chapter or sweep) that passed its checks: what the
    chapter's version table names as v6."""
    return best_of(rows, ("tc_v6",))


def best_of(rows, prefixes) -> dict:
    """Per precision, the fastest row that passed its checks among kernels starting with ``prefixes``."""
    out = {}
    for r in rows:
        if r.get("impl") != "cuda-c" or "tflops" not in r or not str(r.get("kernel", "")).startswith(tuple(prefixes)):
            continue
        if r["precision"] not in out or r["tflops"] > out[r["precision"]]["tflops"]:
            out[r["precision"]] = {k: r[k] for k in ("kernel", "name", "tflops", "median_ms", "note", "vs_cublas") if k in r}
    return out


def table(result: dict) -> str:
    """The results as text: TFLOP/s, % of cuBLAS with the same precision, errors vs FP64."""
    lines = [f"{result.get('device')}  {result.get('date')}  shape {'x'.join(map(str, result['shape']))}",
             f"{'version':<46} {'ms':>8} {'TFLOP/s':>8} {'% cuBLAS':>9} {'err vs in':>10} {'bound':>8} {'err vs fp32':>11} {'regs':>5}"]
    for r in result["rows"]:
        if "error" in r:
            lines.append(f"{r['name']:<46} FAILED: {r['error'].splitlines()[0][:150]}")
            continue
        pct = f"{100 * r['vs_cublas']:8.1f}%" if "vs_cublas" in r else f"{'':>9}"
        regs = (r.get("ptxas") or {}).get("registers", (r.get("attributes") or {}).get("num_regs", ""))
        lines.append(f"{r['name']:<46} {r['median_ms']:8.3f} {r['tflops']:8.1f} {pct} "
                     f"{r['errors']['vs_inputs']:10.2e} {r['bound_vs_inputs']:8.1e} {r['errors']['vs_fp32']:11.2e} {regs!s:>5}")
    for key, what in (("best", "v6"), ("best_wgmma", "wgmma (v7/v8)")):
        for precision, b in result.get(key, {}).items():
            pct = f" = {100 * b['vs_cublas']:.1f}% of cuBLAS" if "vs_cublas" in b else ""
            lines.append(f"best {what} {precision.upper()}: {b['kernel']} ({b['name']})  {b['tflops']:.1f} TFLOP/s{pct}  "
                         f"({b.get('note', '')})")
    return "\n".join(lines)
