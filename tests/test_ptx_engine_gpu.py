"""The PTX engine against the GPU, bit for bit: the instructions added here (bit
manipulation, activemask, float4 accesses), the same CUDA C source compiled by NVRTC through
CuPy; and every kernel of kernels/*.cu, the very PTX the engine ran loaded on the GPU (below).
Skipped without a GPU (the lead runs them on an H100)."""

from __future__ import annotations

import functools
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest

from gpu_support import requires_gpu
import simtlab
from test_ptx_engine import BITS, VEC4

pytestmark = [pytest.mark.gpu, requires_gpu]


def _gpu(source, name, grid, block, *args):
    import cupy

    from simtlab.cuda_source import source_kernel

    device = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    source_kernel(source, name)((grid,), (block,), tuple(device))
    return [cupy.asnumpy(d) if isinstance(a, np.ndarray) else None for a, d in zip(args, device)]


def _both(source, name, grid, block, *args):
    gpu = _gpu(source, name, grid, block, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    cpu = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    simtlab.emulate(simtlab.cuda_c(source, name), grid, block, *cpu)
    return cpu, gpu


def test_bit_instructions_equal_the_gpus():
    n = 1000
    rng = np.random.default_rng(9)
    a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    w = rng.integers(0, 2**63, n, dtype=np.uint64)
    cpu, gpu = _both(BITS, "bits", 8, 128, a, b, w, np.zeros(8 * n, np.uint32), np.zeros(n, np.uint64),
                     np.int32(n))
    assert np.array_equal(cpu[3], gpu[3]) and np.array_equal(cpu[4], gpu[4])


def test_activemask_equals_the_gpus():
    cpu, gpu = _both(BITS, "mask", 1, 40, np.zeros(64, np.uint32))
    assert np.array_equal(cpu[0], gpu[0])


def test_float4_copy_equals_the_gpus():
    a = np.random.default_rng(1).random(4 * 256, dtype=np.float32)
    cpu, gpu = _both(VEC4, "copy4", 2, 128, a, np.zeros_like(a), np.int32(256))
    assert np.array_equal(cpu[1], gpu[1])


# --- every kernel of the course: the PTX the engine ran, on the GPU -----------------------------------
# tests/cuda_c_cases.py's cases at their GPU size: the engine runs the launches on this machine's
# CPU, the GPU runs the same PTX text (each kernel's course_kernel(...).ptx, which the engine parsed), loaded with
# cuModuleLoad through cupy.RawModule(path=...), with the same inputs, grids and constants.
# Same PTX, same arithmetic: every output must have the same bits, except
#  - float atomics (case.atomic_bounds): the GPU adds in its own order; the two results are
#    within the bound each case states (the rounding two orders of the same adds can differ by);
#  - outputs through an .approx instruction (case.approx: ex2 of expf): the engine rounds the
#    exact value, the GPU's unit is within the PTX ISA's 2 ulp, so within APPROX_ULPS;
#  - nothing else: the racy kernels (reduce_last_warp_unsafe, scan_in_place_racy) race inside
#    one warp only, where the PTX's order (all lanes load, then all store) decides the result.
from cuda_c_cases import APPROX_ULPS, CASES, GPU, outputs_of  # noqa: E402
from simtlab.emulator.ptx.tma import TensorMap  # noqa: E402


def _ptx_versions(version: str):
    """The PTX ISA versions to try, the PTX's own first: a driver older than the NVRTC wheel
    refuses a newer `.version` (CUDA_ERROR_UNSUPPORTED_PTX_VERSION) although the instructions
    are the same; each lower one keeps every instruction and only changes that line."""
    major, minor = map(int, version.split("."))
    tried = [f"{major}.{m}" for m in range(minor, -1, -1)]
    return tried + [f"{major - 1}.{m}" for m in range(9, -1, -1)]


@functools.lru_cache(maxsize=None)
def _ptx_module(topic: str, kernel: str):
    """The PTX the engine parsed for ``kernel`` of kernels/<topic>.cu (``course_kernel`` compiles
    a kernel alone with the file's preamble), loaded on the GPU: ``(cupy.RawModule, the
    .version it loaded with)``."""
    import cupy

    from simtlab import cuda_c_kernels as CC

    ptx = CC.course_kernel(topic, kernel).ptx
    own = re.search(r"^\.version (\d+\.\d+)", ptx, re.M).group(1)
    entry = re.search(r"\.entry (\w+)\(", ptx).group(1)
    folder = Path(tempfile.mkdtemp(prefix="simtlab-ptx-"))
    last = None
    for version in _ptx_versions(own):
        file = folder / f"{topic}-{version}.ptx"
        file.write_text(ptx.replace(f".version {own}", f".version {version}", 1))
        module = cupy.RawModule(path=str(file))
        try:
            module.get_function(entry)                           # loads the module: cuModuleLoad
            return module, version
        except cupy.cuda.driver.CUDADriverError as err:
            if "UNSUPPORTED_PTX_VERSION" not in str(err):
                raise
            last = err
    raise last


def _run_on_gpu(case, inputs) -> dict:
    import cupy

    launches, outputs = case.plan(cupy, *[cupy.asarray(a) for a in inputs])
    for step in launches:
        module, _ = _ptx_module(case.topic, step.kernel)
        for a in step.zero:
            a.fill(0)
        for name, values in step.constants.items():              # cudaMemcpyToSymbol
            values = cupy.asarray(values).ravel()
            cupy.ndarray(values.shape, values.dtype, module.get_global(name))[...] = values
        grid = step.grid if isinstance(step.grid, tuple) else (step.grid,)
        block = step.block if isinstance(step.block, tuple) else (step.block,)
        function = module.get_function(step.kernel)
        if step.shared > 48 * 1024:                              # cudaFuncSetAttribute's opt-in
            function.max_dynamic_shared_size_bytes = step.shared
        if any(isinstance(x, TensorMap) for x in step.args):
            _launch_with_tensor_maps(function, grid, block, step)
            continue
        function(grid, block, step.args, shared_mem=step.shared)
    cupy.cuda.runtime.deviceSynchronize()
    return {name: cupy.asnumpy(a) for name, a in outputs.items()}


def _launch_with_tensor_maps(function, grid, block, step):
    """A TMA kernel (v8, v6w): its TensorMaps encoded by the driver (cuTensorMapEncodeTiled, 128-byte
    swizzle, FP32 or TF32 elements, as the benchmark does), passed by value with the driver's cuLaunchKernel; then C, the
    sizes and, for a stream-K version, its workspace and counters."""
    import cupy

    from simtlab.gpubench.tensor_cores import launch_with_tensor_maps, tensor_map

    maps = [x for x in step.args if isinstance(x, TensorMap)]
    assert [m.swizzle for m in maps] == [128] * len(maps) and step.args[:len(maps)] == tuple(maps)
    c, *rest = step.args[len(maps):]
    sizes = [x for x in rest if not isinstance(x, cupy.ndarray)]
    buffers = [x for x in rest if isinstance(x, cupy.ndarray)]
    assert rest[:len(sizes)] == sizes, "the sizes come before the buffers"
    encoded = [tensor_map(m.tensor, m.box, rounds_to_tf32=m.tf32) for m in maps]
    launch_with_tensor_maps(function, grid, block, step.shared, encoded, c, sizes, buffers)


def _run_on_engine(case):
    from simtlab import cuda_c_kernels as CC

    inputs, launches, outputs = outputs_of(case, GPU)
    CC.emulate_launches(case.topic, launches, trace=False)
    return inputs, outputs


def _ulps(a, b):
    """ulps between float32 arrays of one sign convention: their bits as ordered integers."""
    def ordered(x):
        i = x.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    return np.abs(ordered(a) - ordered(b))


def _different(cpu, gpu):
    """Where the bits differ (two NaNs count as equal: NumPy's and the GPU's NaN bits differ)."""
    differ = cpu.view(np.uint8).reshape(cpu.size, -1) != gpu.view(np.uint8).reshape(gpu.size, -1)
    differ = differ.any(axis=1).reshape(cpu.shape)
    if cpu.dtype.kind == "f":
        differ &= ~(np.isnan(cpu) & np.isnan(gpu))
    return differ


def _gpu_marks(case):
    if case.gpu_skip:                  # a case with nothing the GPU can compare
        return [pytest.mark.skip(reason=case.gpu_skip)]
    return [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []


def _gpu_params():
    return [pytest.param(c, id=c.name, marks=_gpu_marks(c)) for c in CASES]


@pytest.mark.parametrize("case", _gpu_params())
def test_course_kernel_equals_the_gpu_bit_for_bit(case):
    inputs, cpu = _run_on_engine(case)
    gpu = _run_on_gpu(case, inputs)
    for name in cpu:
        a, b = np.ascontiguousarray(cpu[name]), np.ascontiguousarray(gpu[name])
        assert a.shape == b.shape and a.dtype == b.dtype, name
        differ = _different(a, b)
        if case.atomic_bounds and name in case.atomic_bounds:
            bound = case.atomic_bounds[name](*inputs)
            worst = float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max())
            assert worst <= bound, f"{name}: {worst} apart, more than two orders' rounding {bound}"
        elif case.tensor_core_bound and name in case.tensor_core_bound:
            # the tensor cores add with their own internal precision: within the derived bound
            # (tests/cuda_c_cases.py: tensor_core_bound), not bit for bit
            bound = case.tensor_core_bound[name](*inputs)
            gap = np.abs(a.astype(np.float64) - b.astype(np.float64))
            worst = np.unravel_index(np.argmax(gap - bound), gap.shape)
            assert (gap <= bound).all(), (f"{name}: {int((gap > bound).sum())} elements apart by more than the "
                                          f"bound; the worst at {worst}: engine {a[worst]!r}, GPU {b[worst]!r}, "
                                          f"bound {bound[worst]:.3g}")
        elif name in case.approx:
            worst = int(_ulps(a, b).max())
            assert worst <= APPROX_ULPS, f"{name}: {worst} ulp apart (.approx allows {APPROX_ULPS})"
        else:
            where = np.argwhere(differ)
            assert not len(where), (f"{name}: {len(where)} of {a.size} elements differ; the first at "
                                    f"{tuple(where[0])}: engine {a[tuple(where[0])]!r}, GPU {b[tuple(where[0])]!r}")


# --- the features of tests/test_ptx_features.py against the GPU -----------------------------------
HALF_BITS = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void half_bits(const unsigned short* h, const unsigned short* b,
                                     const float* f, float* fh, float* fb,
                                     unsigned short* out) {
    int t = threadIdx.x;
    __half x = __ushort_as_half(h[t]);
    __nv_bfloat16 y = __ushort_as_bfloat16(b[t]);
    fh[t] = __half2float(x);
    fb[t] = __bfloat162float(y);
    out[6 * t + 0] = __half_as_ushort(__hadd(x, __ushort_as_half(h[(t + 1) % blockDim.x])));
    out[6 * t + 1] = __half_as_ushort(__hmul(x, x));
    out[6 * t + 2] = __bfloat16_as_ushort(__hadd(y, __ushort_as_bfloat16(b[(t + 1) % blockDim.x])));
    out[6 * t + 3] = __bfloat16_as_ushort(__hmul(y, y));
    out[6 * t + 4] = __half_as_ushort(__float2half(f[t]));
    out[6 * t + 5] = __bfloat16_as_ushort(__float2bfloat16(f[t]));
}
'''


def _half_inputs(n, rng):
    """Random bits plus the edge cases: NaNs with payloads, infinities, zeros, subnormals."""
    special = [0x7E00, 0x7C01, 0xFE55, 0x7C00, 0xFC00, 0x0000, 0x8000, 0x0001, 0x03FF, 0x3C00]
    h = np.concatenate([np.uint16(special), rng.integers(0, 2**16, n - len(special))])
    return h.astype(np.uint16)


def test_half_precision_bits_equal_the_gpus():
    """f16/bf16 add, mul and conversions, NaN results included: the engine writes the
    canonical NaN 0x7FFF (and 0x7FFFFFFF for a widened NaN); the GPU's bits decide."""
    rng = np.random.default_rng(21)
    n = 256
    h = _half_inputs(n, rng)
    b = _half_inputs(n, rng)
    f = np.concatenate([np.float32([np.nan, -np.nan, np.inf, 1e-40, 65520, 3.0e38]),
                        (rng.standard_normal(n - 6) * 100).astype(np.float32)])
    cpu, gpu = _both(HALF_BITS, "half_bits", 1, n, h, b, f, np.zeros(n, np.float32),
                     np.zeros(n, np.float32), np.zeros(6 * n, np.uint16))
    for k in (3, 4):
        assert np.array_equal(cpu[k].view(np.uint32), gpu[k].view(np.uint32)), k
    assert np.array_equal(cpu[5], gpu[5])


def test_cp_async_kernels_equal_the_gpus():
    from test_ptx_features import STAGED

    rng = np.random.default_rng(8)
    x = rng.random(256, dtype=np.float32)
    d = rng.random(64)
    cpu, gpu = _both(STAGED, "staged", 1, 64, x, d, np.zeros(64, np.float32), np.int32(40))
    assert np.array_equal(cpu[2], gpu[2])


def test_cluster_pairs_equal_the_gpus():
    source = (Path(__file__).resolve().parents[1] / "kernels" / "cooperation.cu").read_text()
    n = 8 * 256 * 3 + 77
    x = np.random.default_rng(5).random(n, dtype=np.float32)
    cpu, gpu = _both(source, "reduce_cluster_pairs", 8, 256, x, np.zeros(4, np.float32),
                     np.int64(n))
    assert np.array_equal(cpu[1], gpu[1])


def test_stack_array_equals_the_gpus():
    from test_ptx_features import STACK

    idx = np.random.default_rng(3).integers(0, 1000, 100).astype(np.int32)
    cpu, gpu = _both(STACK, "stack", 2, 64, idx, np.zeros(100, np.float32), np.int32(100))
    assert np.array_equal(cpu[1], gpu[1])


@pytest.mark.parametrize("kind", ["ex2", "lg2", "rsqrt", "sqrt_approx", "rcp", "sin_approx",
                                  "cos_approx", "tanh_approx"])
def test_gpu_approx_functions_are_within_the_bounds_the_engine_documents(kind):
    """The bounds numerics.py cites from the PTX ISA, checked on the GPU's own results: the
    engine (correctly rounded) is within them (test_ptx_features), and so must the GPU be."""
    from decimal import Decimal

    from test_ptx_features import APPROX, APPROX_CASES, _exact

    _, inputs, within = next(c for c in APPROX_CASES if c[0] == kind)
    x = np.asarray(inputs, np.float32)
    _, gpu = _both(APPROX, f"k_{kind}", -(-len(x) // 128), 128, x, np.zeros(len(x), np.float32),
                   np.int32(len(x)))
    for xi, yi in zip(x.tolist(), gpu[1].tolist()):
        assert within(xi, _exact(kind, xi), Decimal(yi)), (kind, xi, yi)
