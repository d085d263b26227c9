"""The PTX engine's memory features and instruction families beyond the course's first kernels:
thread-block clusters (chapter 5's cluster kernel), local memory, cp.async, half precision,
the .approx functions against the PTX ISA's error bounds, the deterministic limit on loop
iterations and uninitialised shared reads. Expected values come from NumPy, exact Python
arithmetic (fractions, decimal) and the PTX ISA's definitions. Skipped without NVRTC."""

from __future__ import annotations

import math
from decimal import Decimal, getcontext
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import simtlab
from simtlab import cuda_c_kernels as CC
from simtlab.emulator import EmulationError
from simtlab.emulator.errors import RunawayKernelError, UninitializedReadError

try:
    CC.nvrtc_version()
except CC.CompilerMissing as why:
    pytest.skip(f"NVRTC is not installed ({why})", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
needs_headers = pytest.mark.skipif(not CC.header_options(),
                                   reason="the CUDA headers' wheels are not installed")


def line_of(source: str, text: str) -> int:
    """The 1-based line of ``source`` holding ``text`` (where an error must point)."""
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


# --- thread-block clusters -------------------------------------------------------------------------
@needs_headers
def test_cluster_pairs_add_the_other_blocks_shared_total():
    """kernels/cooperation.cu: block 0 of each cluster of 2 reads block 1's total from block
    1's shared memory (mapa + ld.shared::cluster) between two cluster barriers."""
    k = simtlab.cuda_c("cooperation", "reduce_cluster_pairs")
    n = 8 * 256 * 3 + 77
    x = np.random.default_rng(5).integers(0, 10, n).astype(np.float32)   # sums exact in float32
    partial = np.zeros(4, np.float32)
    run = simtlab.emulate(k, 8, 256, x, partial, np.int64(n))
    block_of = (np.arange(n) // 256) % 8                  # the grid-stride loop's blocks
    block_sums = np.bincount(block_of, weights=x, minlength=8)
    assert np.array_equal(partial, (block_sums[0::2] + block_sums[1::2]).astype(np.float32))
    assert run.metrics["races"] == 0


CLUSTER_DEADLOCK = r'''
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void __cluster_dims__(2, 1, 1) half_sync(int* out) {
    cg::cluster_group cluster = cg::this_cluster();
    if (cluster.block_rank() == 1) return;
    cluster.sync();
    out[blockIdx.x] = 1;
}
'''


@needs_headers
def test_cluster_barrier_that_a_block_never_reaches_is_reported():
    with pytest.raises(EmulationError) as err:
        simtlab.emulate(simtlab.cuda_c(CLUSTER_DEADLOCK, "half_sync"), 2, 32,
                        np.zeros(2, np.int32))
    assert "cluster" in str(err.value) and err.value.line == line_of(CLUSTER_DEADLOCK,
                                                                     "cluster.sync()")


def test_cluster_grid_must_be_whole_clusters():
    src = 'extern "C" __global__ void __cluster_dims__(2, 1, 1) k(int* o) { o[blockIdx.x] = 1; }'
    with pytest.raises(simtlab.emulator.LaunchError, match="whole number of clusters"):
        simtlab.emulate(simtlab.cuda_c(src, "k"), 3, 32, np.zeros(3, np.int32))


# --- local memory -----------------------------------------------------------------------------------
STACK = r'''
extern "C" __global__ void stack(const int* idx, float* out, int n) {
    float buf[16];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    for (int k = 0; k < 16; k++) buf[k] = k * 0.5f + i;
    if (i < n) out[i] = buf[idx[i] & 15];
}
'''


def test_stack_array_indexed_at_run_time_lives_in_local_memory():
    k = simtlab.cuda_c(STACK, "stack")
    assert any(v.space == "local" for v in k.entry.variables)       # NVRTC's __local_depot
    n = 100
    idx = np.random.default_rng(3).integers(0, 1000, n).astype(np.int32)
    out = np.zeros(n, np.float32)
    run = simtlab.emulate(k, 2, 64, idx, out, np.int32(n))
    i = np.arange(n)
    assert np.array_equal(out, np.float32(0.5) * (idx & 15).astype(np.float32) + i.astype(np.float32))
    local = run.memory[run.memory["space"] == 2]
    read_line = line_of(STACK, "out[i] = buf")
    reads = local[(local["kind"] == 0)]
    assert len(reads) == n and set(reads["line"]) == {read_line}
    assert run.metrics["races"] == 0          # each thread's own stack: no races between them


# --- cp.async -----------------------------------------------------------------------------------------
STAGED = r'''
#include <cuda_pipeline.h>
extern "C" __global__ void staged(const float* x, const double* d, float* y, int n) {
    __shared__ float4 s4[64];
    __shared__ float s1[64];
    __shared__ double s2[64];
    int t = threadIdx.x;
    __pipeline_memcpy_async(&s4[t], &reinterpret_cast<const float4*>(x)[t], 16);
    __pipeline_memcpy_async(&s1[t], &x[t], 4, t < n ? 0 : 4);
    __pipeline_memcpy_async(&s2[t], &d[t], 8);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    y[t] = s4[t].x + s4[t].w + s1[t] + (float)s2[t];
}

extern "C" __global__ void early(const float* x, float* y) {
    __shared__ float s[32];
    int t = threadIdx.x;
    s[t] = -1.0f;
    __pipeline_memcpy_async(&s[t], &x[t], 4);
    __pipeline_commit();
    y[t] = s[t];
    __pipeline_wait_prior(0);
    y[32 + t] = s[t];
}

extern "C" __global__ void unwritten(const float* x, float* y) {
    __shared__ float s[32];
    int t = threadIdx.x;
    __pipeline_memcpy_async(&s[t], &x[t], 4);
    __pipeline_commit();
    y[t] = s[t];            // the copy has not landed
    __pipeline_wait_prior(0);
}
'''


@needs_headers
def test_cp_async_sizes_4_8_16_and_zero_fill():
    k = simtlab.cuda_c(STAGED, "staged")
    ops = {i.opcode for i in k.entry.instructions}
    assert {"cp.async.cg.shared.global", "cp.async.ca.shared.global", "cp.async.commit_group",
            "cp.async.wait_group"} <= ops
    rng = np.random.default_rng(8)
    x = rng.random(256, dtype=np.float32)
    d = rng.random(64)
    y = np.zeros(64, np.float32)
    n = 40                                        # threads 40.. copy 0 bytes: zero fill
    run = simtlab.emulate(k, 1, 64, x, d, y, np.int32(n))
    t = np.arange(64)
    s1 = np.where(t < n, x[:64], np.float32(0))
    assert np.array_equal(y, ((x[4 * t] + x[4 * t + 3]) + s1) + d.astype(np.float32))
    reads = run.accesses("x", kind="read")
    # 64 16-byte copies and 40 4-byte copies read x; the zero-filled ones read nothing
    assert sorted(np.unique(reads["width"], return_counts=True)[1].tolist()) == [40, 64]


@needs_headers
def test_cp_async_lands_at_the_wait_not_before():
    """A read of the destination before the wait sees the old bytes (on the GPU it is a race
    with the copy; the engine never shows the new data early)."""
    x = np.arange(32, dtype=np.float32) + 1
    y = np.zeros(64, np.float32)
    simtlab.emulate(simtlab.cuda_c(STAGED, "early"), 1, 32, x, y)
    assert np.array_equal(y[:32], np.full(32, -1, np.float32)) and np.array_equal(y[32:], x)


@needs_headers
def test_cp_async_destination_read_before_the_wait_is_uninitialised():
    with pytest.raises(UninitializedReadError) as err:
        simtlab.emulate(simtlab.cuda_c(STAGED, "unwritten"), 1, 32,
                        np.ones(32, np.float32), np.zeros(32, np.float32))
    assert err.value.line == line_of(STAGED, "the copy has not landed") and err.value.array == "s"


# --- half precision -----------------------------------------------------------------------------------
SEEDS = ROOT / "tests" / "cuda_c" / "seed_kernels.cu"


@needs_headers
def test_float_to_half_rounds_to_nearest_even():
    k = simtlab.cuda_c(SEEDS, "float_to_half")
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.standard_normal(500).astype(np.float32) * 1000,
                        np.float32([65504, 65520, 1e-8, -3e-5, np.inf, 2.0 ** -25])])
    out = np.zeros(len(x), np.float16)
    simtlab.emulate(k, (4, 1), (64, 2), out, x, np.int32(len(x)))
    # NumPy's float32 -> float16 conversion rounds once to nearest even (65520 -> inf)
    with np.errstate(over="ignore"):
        expect = x.astype(np.float16)
    assert np.array_equal(out.view(np.uint16), expect.view(np.uint16))


@needs_headers
def test_half_multiply_add_rounds_each_operation_once():
    k = simtlab.cuda_c(SEEDS, "half_dot")
    rng = np.random.default_rng(6)
    n, K = 70, 9
    a = (rng.standard_normal(n * K) * 4).astype(np.float16)
    b = (rng.standard_normal(K) * 4).astype(np.float16)
    out = np.zeros(n, np.float32)
    simtlab.emulate(k, 2, 64, a, b, out, np.int32(n), np.int32(K))
    expect = np.zeros(n, np.float16)
    for i in range(n):
        acc = np.float16(0)
        for j in range(K):
            p = np.float16(np.float64(a[i * K + j]) * np.float64(b[j]))        # exact, then once
            acc = np.float16(np.float64(acc) + np.float64(p))
        expect[i] = acc
    assert np.array_equal(out, expect.astype(np.float32))


BF16 = r'''
#include <cuda_bf16.h>
extern "C" __global__ void bf(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* s,
                              __nv_bfloat16* p, const float* f, __nv_bfloat16* c) {
    int t = threadIdx.x;
    s[t] = __hadd(a[t], b[t]);
    p[t] = __hmul(a[t], b[t]);
    c[t] = __float2bfloat16(f[t]);
}
'''


def bf16_round(x: Fraction) -> np.uint16:
    """The bits of the bfloat16 nearest ``x`` (ties to even; normal range), from exact
    arithmetic."""
    if x == 0:
        return np.uint16(0)
    sign = 0x8000 if x < 0 else 0
    x = abs(x)
    e = math.floor(math.log2(x))
    while Fraction(2) ** e > x:
        e -= 1
    while Fraction(2) ** (e + 1) <= x:
        e += 1
    scaled = x / Fraction(2) ** (e - 7)               # 8 significant bits
    q = round(scaled)                                # Fraction's round: ties to even
    value = float(q * Fraction(2) ** (e - 7))
    return np.uint16(sign | int(np.float32(value).view(np.uint32)) >> 16)


def bf16_value(bits) -> Fraction:
    return Fraction(float((np.uint32(bits) << np.uint32(16)).view(np.float32)))


@needs_headers
def test_bfloat16_add_mul_and_conversion_round_once_to_nearest_even():
    rng = np.random.default_rng(12)
    n = 256
    f = (rng.standard_normal(3 * n) * 8).astype(np.float32)
    a = (f[:n].view(np.uint32) >> 16).astype(np.uint16)
    b = (f[n:2 * n].view(np.uint32) >> 16).astype(np.uint16)
    s, p, c = (np.zeros(n, np.uint16) for _ in range(3))
    k = simtlab.cuda_c(BF16, "bf")
    # the kernel's pointers are __nv_bfloat16 (a struct): the engine takes their bits as uint16
    simtlab.emulate(k, 1, n, a, b, s, p, f[2 * n:], c)
    for i in range(n):
        x, y = bf16_value(a[i]), bf16_value(b[i])
        assert s[i] == bf16_round(x + y), i
        assert p[i] == bf16_round(x * y), i
        assert c[i] == bf16_round(Fraction(float(f[2 * n + i]))), i


# --- the .approx functions against the PTX ISA's bounds ---------------------------------------------
APPROX = r'''
#define APPROX(name, insn) \
extern "C" __global__ void name(const float* x, float* y, int n) { \
    int i = blockIdx.x * blockDim.x + threadIdx.x; \
    if (i < n) { float r; asm(insn " %0, %1;" : "=f"(r) : "f"(x[i])); y[i] = r; } }
APPROX(k_ex2, "ex2.approx.f32")
APPROX(k_lg2, "lg2.approx.f32")
APPROX(k_rsqrt, "rsqrt.approx.f32")
APPROX(k_sqrt_approx, "sqrt.approx.f32")
APPROX(k_rcp, "rcp.approx.f32")
APPROX(k_sin_approx, "sin.approx.f32")
APPROX(k_cos_approx, "cos.approx.f32")
APPROX(k_tanh_approx, "tanh.approx.f32")
extern "C" __global__ void div_full(const float* a, const float* b, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float r; asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a[i]), "f"(b[i])); y[i] = r; }
}
'''

getcontext().prec = 60
D_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
D_LN2 = Decimal(2).ln()


def _d_sin(x: Decimal) -> Decimal:
    """sin by its Taylor series after reduction to [-pi, pi] (60 digits)."""
    x = x - 2 * D_PI * (x / (2 * D_PI)).to_integral_value()
    term, total, k = x, x, 1
    while abs(term) > Decimal(10) ** -55:
        term = -term * x * x / ((2 * k) * (2 * k + 1))
        total += term
        k += 1
    return total


def _exact(kind, x: float) -> Decimal:
    d = Decimal(x)
    if kind == "ex2":
        return (d * D_LN2).exp()
    if kind == "lg2":
        return d.ln() / D_LN2
    if kind == "rsqrt":
        return 1 / d.sqrt()
    if kind == "sqrt_approx":
        return d.sqrt()
    if kind == "rcp":
        return 1 / d
    if kind == "sin_approx":
        return _d_sin(d)
    if kind == "cos_approx":
        return _d_sin(d + D_PI / 2)
    if kind == "tanh_approx":
        e = (2 * d).exp()
        return (e - 1) / (e + 1)
    raise ValueError(kind)


def _ulp(v: Decimal) -> Decimal:
    """The float32 ulp at ``v`` (normal range)."""
    return Decimal(2) ** (math.floor(math.log2(abs(float(v)))) - 23)


# (kind, inputs, bound(x, exact, result) -> ok): the PTX ISA's stated maximum errors
_RNG = np.random.default_rng(31)
APPROX_CASES = [
    ("ex2", _RNG.uniform(-120, 120, 400), lambda x, e, r: abs(r - e) <= 2 * _ulp(e)),
    ("lg2", np.concatenate([_RNG.uniform(0.5, 2, 200), 2.0 ** _RNG.uniform(-120, 120, 200)]),
     lambda x, e, r: abs(r - e) <= Decimal(2) ** -22 if 0.5 <= x <= 2
     else abs(r - e) <= abs(e) * Decimal(2) ** -22),
    ("rsqrt", 2.0 ** _RNG.uniform(-120, 120, 400),
     lambda x, e, r: abs(r - e) <= abs(e) * Decimal(2) ** Decimal("-22.9")),
    ("sqrt_approx", 2.0 ** _RNG.uniform(-120, 120, 400),
     lambda x, e, r: abs(r - e) <= abs(e) * Decimal(2) ** -23),
    ("rcp", 2.0 ** _RNG.uniform(-120, 120, 400) * _RNG.choice([-1, 1], 400),
     lambda x, e, r: abs(r - e) <= _ulp(e)),
    # the ISA bounds sin/cos only over [-pi, pi]: beyond it the H100's error grows with |x|
    ("sin_approx", _RNG.uniform(-np.pi, np.pi, 300),
     lambda x, e, r: abs(r - e) <= Decimal(2) ** Decimal("-20.9")),
    ("cos_approx", _RNG.uniform(-np.pi, np.pi, 300),
     lambda x, e, r: abs(r - e) <= Decimal(2) ** Decimal("-20.9")),
    ("tanh_approx", _RNG.uniform(-6, 6, 400),
     lambda x, e, r: abs(r - e) <= abs(e) * Decimal(2) ** Decimal("-10.987")),
]


@pytest.mark.parametrize("kind, inputs, within", APPROX_CASES, ids=[c[0] for c in APPROX_CASES])
def test_approx_functions_are_within_the_isa_bounds(kind, inputs, within):
    x = np.asarray(inputs, np.float32)
    y = np.zeros(len(x), np.float32)
    simtlab.emulate(simtlab.cuda_c(APPROX, f"k_{kind}"), -(-len(x) // 128), 128, x, y, np.int32(len(x)))
    for xi, yi in zip(x.tolist(), y.tolist()):
        exact = _exact(kind, xi)
        assert within(xi, exact, Decimal(yi)), (kind, xi, yi, float(exact))


def test_div_full_is_within_two_ulp():
    a = (_RNG.standard_normal(400) * 2.0 ** _RNG.uniform(-60, 60, 400)).astype(np.float32)
    b = (_RNG.standard_normal(400) * 2.0 ** _RNG.uniform(-60, 60, 400)).astype(np.float32)
    y = np.zeros(400, np.float32)
    simtlab.emulate(simtlab.cuda_c(APPROX, "div_full"), 4, 128, a, b, y, np.int32(400))
    for ai, bi, yi in zip(a.tolist(), b.tolist(), y.tolist()):
        exact = Decimal(ai) / Decimal(bi)
        assert abs(Decimal(yi) - exact) <= 2 * _ulp(exact), (ai, bi, yi)


# --- device functions that stay calls -------------------------------------------------------------
NOINLINE = r'''
__device__ __noinline__ float helper(float a, int b) { return a * b + 1.0f; }
extern "C" __global__ void calls(float* out) {
    int i = threadIdx.x;
    out[i] = helper(out[i], i);
}
'''


def test_call_of_a_noinline_function_names_it_and_the_line():
    with pytest.raises(EmulationError) as err:
        simtlab.emulate(simtlab.cuda_c(NOINLINE, "calls"), 1, 32, np.ones(32, np.float32))
    assert "call" in str(err.value) and "helper" in str(err.value) and "__noinline__" in str(err.value)
    assert err.value.line == line_of(NOINLINE, "out[i] = helper")


# --- the deterministic limit on loop iterations ---------------------------------------------------
SPIN = r'''
extern "C" __global__ void spin(volatile int* flag, int* out) {
    int k = 0;
    while (flag[0] == 0) {
        k++;
    }
    out[threadIdx.x] = k;
}

extern "C" __global__ void count_to(const int* x, int* out, int n) {
    int acc = 0;
    #pragma unroll 1
    for (int k = 0; k < n; k++) {
        acc += x[k];
    }
    out[threadIdx.x] = acc;
}
'''


@pytest.mark.parametrize("trace", [True, False])
def test_a_loop_that_never_ends_stops_at_max_iterations_with_its_partial_run(trace):
    with pytest.raises(RunawayKernelError) as err:
        simtlab.emulate(simtlab.cuda_c(SPIN, "spin"), 1, 32, np.zeros(1, np.int32),
                        np.zeros(32, np.int32), max_iterations=500, trace=trace, time_limit=None)
    e = err.value
    assert e.limit == "max_iterations" and e.count == 500
    assert e.line in range(line_of(SPIN, "while (flag"), line_of(SPIN, "k++;") + 2)
    assert e.block == (0, 0, 0) and e.thread == (0, 0, 0)
    assert e.run is not None
    if trace:                                       # every pass read the flag: 501 reads a lane
        reads = e.run.accesses("flag", kind="read")
        assert len(reads) == 32 * 501


def test_iterations_are_counted_per_taken_backward_branch():
    """A loop of n passes jumps back n - 1 times (its first pass is reached by falling in):
    max_iterations=n-1 lets it finish, n-2 stops it, whatever the machine's speed."""
    n = 40
    k = simtlab.cuda_c(SPIN, "count_to")
    x = np.arange(n, dtype=np.int32)
    out = np.zeros(32, np.int32)
    simtlab.emulate(k, 1, 32, x, out, np.int32(n), max_iterations=n - 1)
    assert (out == x.sum()).all()
    with pytest.raises(RunawayKernelError) as err:
        simtlab.emulate(k, 1, 32, x, out, np.int32(n), max_iterations=n - 2)
    assert err.value.count == n - 2 and err.value.line == line_of(SPIN, "for (int k = 0")


# --- uninitialised shared memory ------------------------------------------------------------------
HALF_FILLED = r'''
extern "C" __global__ void half_filled(const float* x, float* y) {
    __shared__ float s[64];
    int t = threadIdx.x;
    if (t < 32) s[t] = x[t];
    __syncthreads();
    y[t] = s[t];
}
'''


def test_read_of_shared_memory_no_thread_wrote_is_reported_when_traced():
    k = simtlab.cuda_c(HALF_FILLED, "half_filled")
    x = np.ones(64, np.float32)
    with pytest.raises(UninitializedReadError) as err:
        simtlab.emulate(k, 1, 64, x, np.zeros(64, np.float32))
    e = err.value
    assert (e.array, e.index, e.thread) == ("s", 32, (32, 0, 0))
    assert e.line == line_of(HALF_FILLED, "y[t] = s[t]") and e.run is not None
    simtlab.emulate(k, 1, 64, x, np.zeros(64, np.float32), trace=False)   # untraced: no check


def test_trace_blocks_runs_every_block():
    """A traced sample that ends inside a chunk: the blocks after it still run (untraced)."""
    src = 'extern "C" __global__ void fill(int* o) { o[blockIdx.x * 32 + threadIdx.x] = 7; }'
    out = np.zeros(4 * 32, np.int32)
    run = simtlab.emulate(simtlab.cuda_c(src, "fill"), 4, 32, out, trace_blocks=1)
    assert (out == 7).all() and set(run.memory["block"]) == {0}


def test_bf16_widens_to_float32_by_a_shift_keeping_nan_payloads():
    # bf16 is the top half of a float32: widening is the 16-bit shift, a NaN's sign and payload
    # kept (the H100 does so; an f16 NaN widens to the canonical NaN instead)
    k = simtlab.cuda_c("#include <cuda_bf16.h>\n"
                       'extern "C" __global__ void widen(const unsigned short* b, float* f) {\n'
                       "    f[threadIdx.x] = __bfloat162float(__ushort_as_bfloat16(b[threadIdx.x]));\n}\n",
                       "widen")
    bits = np.array([0x7FC1, 0xFF81, 0x7F80, 0x3F80, 0x8001, 0x0000, 0xFFFF, 0x4049] * 4, np.uint16)
    out = np.zeros(bits.size, np.float32)
    simtlab.emulate(k, 1, bits.size, bits, out)
    assert out.view(np.uint32).tolist() == (bits.astype(np.uint32) << 16).tolist()


def test_a_loop_that_never_ends_stops_at_the_time_limit_with_its_partial_run():
    # the wall-clock backstop (no iteration limit): the same error kind, the partial trace with it
    with pytest.raises(RunawayKernelError) as err:
        simtlab.emulate(simtlab.cuda_c(SPIN, "spin"), 1, 32, np.zeros(1, np.int32),
                        np.zeros(32, np.int32), max_iterations=None, time_limit=0.2)
    e = err.value
    assert e.limit == "time_limit"
    assert e.run is not None and len(e.run.accesses("flag", kind="read")) > 0
