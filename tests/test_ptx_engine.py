"""CUDA C on the CPU: NVRTC's PTX, parsed and run by the PTX engine, against NumPy references,
the numba twins' traces, and exact arithmetic. Skipped when NVRTC (the cuda-c extra, which
the test extra installs) is missing."""

from __future__ import annotations

import glob
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import simtlab
from simtlab import cuda_c_kernels as CC
from simtlab.emulator import LaunchError, OutOfBoundsError, BarrierError, EmulationError

try:
    CC.nvrtc_version()
except CC.CompilerMissing as why:
    pytest.skip(f"NVRTC is not installed ({why})", allow_module_level=True)

from simtlab.emulator.ptx import numerics as fp  # noqa: E402
from simtlab.emulator.ptx.instructions import Layout, UnsupportedInstruction, _compile  # noqa: E402
from simtlab.emulator.ptx.engine import _param_offsets  # noqa: E402
from simtlab.emulator.ptx.parser import PtxSyntaxError, parse_module  # noqa: E402
from simtlab.kernels import gemm as GM, patterns as P, reduction as R, scan as S  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RNG = np.random.default_rng(2024)

AXPY = r'''
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
'''


def rnd(shape):
    return RNG.random(shape, dtype=np.float32) + np.float32(0.5)


# --- the compiler ---------------------------------------------------------------------------------
def test_ptx_maps_every_instruction_to_a_cuda_c_line():
    k = simtlab.cuda_c(AXPY, "axpy")
    assert ".loc" in k.ptx and k.module.target.startswith("sm_90")
    lines = {ins.line for ins in k.entry.instructions}
    assert 0 not in lines and lines <= {2, 3, 4, 5, 7}
    load = next(i for i in k.entry.instructions if i.opcode == "ld.global.f32")
    assert load.line == 5


def test_compile_error_shows_nvrtcs_message_with_the_line():
    src = "extern \"C\" __global__ void k(float* x) {\n    x[0] = 1.0f\n    x[1] = 2.0f;\n}\n"
    with pytest.raises(CC.CudaCompileError) as err:
        simtlab.cuda_c(src, "k")
    assert "(3): error" in str(err.value) and "expected a \";\"" in str(err.value)


def test_missing_compiler_names_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)     # import fails as if absent
    with pytest.raises(CC.CompilerMissing) as err:
        CC._nvrtc()
    assert "pip install -e '.[cuda-c]'" in str(err.value)


def test_unknown_kernel_name_lists_the_entries():
    with pytest.raises(KeyError, match="axpy"):
        simtlab.cuda_c(AXPY, "saxpy")


# --- the parser -------------------------------------------------------------------------------------
COURSE_CU = sorted(Path(p).stem for p in glob.glob(str(ROOT / "kernels" / "*.cu")))
HEAVY = {"conv"}          # NVRTC takes about a minute for conv.cu (every tuned instance)


@pytest.mark.parametrize("topic", [t for t in COURSE_CU if t not in HEAVY] +
                         [pytest.param(t, marks=pytest.mark.slow) for t in COURSE_CU if t in HEAVY])
def test_every_course_kernel_parses_and_every_instruction_compiles(topic):
    path = (ROOT / "kernels" / f"{topic}.cu").resolve()
    source = path.read_text()
    module = parse_module(CC.compile_ptx(source, str(path)))    # as cuda_c() names it
    assert not _unsupported_instructions(module)


def _unsupported_instructions(module):
    """``entry: instruction (why)`` for each instruction of the module the engine refuses."""
    assert module.entries
    unsupported = []
    for entry in module.entries.values():
        shared = {v.name: 0 for v in module.variables + entry.variables if v.space == "shared"}
        const = {v.name: 0 for v in module.variables if v.space == "const"}
        local = {v.name: 0 for v in entry.variables if v.space == "local"}
        layout = Layout(shared, const, {}, {p.name: p for p in entry.params}, entry.registers,
                        local, param_offsets=_param_offsets(entry))
        assert entry.instructions and all(i.line > 0 for i in entry.instructions)
        for ins in entry.instructions:
            try:
                _compile(ins, entry, layout)
            except UnsupportedInstruction as why:
                unsupported.append(f"{entry.name}: {ins} ({why})")
    return unsupported[:10]


def test_every_seed_kernel_parses_and_every_instruction_compiles():
    """The reference material's kernels (tests/cuda_c/seed_kernels.cu: conv loops in double
    and float, shared reductions, im2col, FP16 conversion and arithmetic)."""
    path = ROOT / "tests" / "cuda_c" / "seed_kernels.cu"
    module = parse_module(CC.compile_ptx(path.read_text(), str(path)))
    assert len(module.entries) == 9
    assert not _unsupported_instructions(module)


def test_parser_reads_the_forms_nvrtc_emits():
    ptx = r"""
.version 8.5
.target sm_90
.address_size 64
.extern .shared .align 16 .b8 smem[];
.const .align 4 .b8 table[8] = {1, 0, 0, 0, 2, 0, 0, 0};
.visible .entry k(
    .param .u64 k_param_0,
    .param .u32 k_param_1
)
.maxntid 128, 1, 1
{
    .reg .pred %p<3>;
    .reg .f32 %f<4>;
    .reg .b32 %r<5>;
    .reg .b64 %rd<3>;
    .loc 1 7 3
    ld.param.u64 %rd1, [k_param_0];
    mov.f32 %f1, 0f3F800000;
    mov.u32 %r1, smem;
    ld.shared.v4.f32 {%f0, %f1, %f2, %f3}, [%r1+-16];
    shfl.sync.down.b32 %r2|%p1, %r1, 16, 31, -1;
    @!%p1 bra $L__BB0_2;
    st.global.f32 [%rd1+4], %f1;
$L__BB0_2:
    .loc 1 9 1, function_name $L__info_string0, inlined_at 1 20 5
    ret;
}
.file 1 "k.cu"
"""
    module = parse_module(ptx)
    entry = module.entries["k"]
    assert [p.name for p in entry.params] == ["k_param_0", "k_param_1"]
    assert entry.registers["%r4"] == "b32" and entry.registers["%p2"] == "pred"
    assert entry.labels == {"$L__BB0_2": 7}
    smem = next(v for v in module.variables if v.name == "smem")
    assert smem.extern and smem.count is None and smem.align == 16
    table = next(v for v in module.variables if v.name == "table")
    assert table.space == "const" and table.init == (1, 0, 0, 0, 2, 0, 0, 0)
    mov = entry.instructions[1]
    assert mov.operands[1].value == 0x3F800000 and mov.line == 7
    ld = entry.instructions[3]
    assert len(ld.operands[0].items) == 4 and ld.operands[1].offset == -16
    bra = entry.instructions[5]
    assert bra.guard == "%p1" and bra.guard_negated
    assert entry.instructions[7].line == 9 and module.files == {1: "k.cu"}
    with pytest.raises(PtxSyntaxError, match="line 2"):
        parse_module(".version 8.5\n.target sm_90 ???\n")


# --- runs against NumPy ----------------------------------------------------------------------------
def test_axpy_fuses_like_the_gpu_and_writes_back():
    k = simtlab.cuda_c(AXPY, "axpy")
    n = 1001
    x, y = rnd(n), rnd(n)
    y0 = y.copy()
    run = simtlab.emulate(k, 8, 128, np.float32(2.5), x, y, np.int32(n))
    # NVRTC contracts a * x[i] + y[i] into one fma.rn.f32: one rounding of the exact value
    exact = (np.float64(2.5) * x.astype(np.float64) + y0.astype(np.float64))
    want = np.array([np.float32(float(Fraction(2.5) * Fraction(float(a)) + Fraction(float(b))))
                     for a, b in zip(x, y0)], np.float32)
    assert np.array_equal(y, want)
    assert np.allclose(y, exact, rtol=1e-6)
    assert run.engine == "ptx" and run.source(5).strip() == "y[i] = a * x[i] + y[i];"
    assert {a.name for a in run.arrays} == {"x", "y"}
    reads = run.accesses("x", "read")
    assert sorted(reads["index"].tolist()) == list(range(n))
    assert set(reads["line"].tolist()) == {5}


SUM_SIZES = [1, R.BLOCK + 1, 2 * R.BLOCK - 1, 3001]


@pytest.mark.parametrize("version", [v for v in R.VERSIONS if v.cuda_c and v.group == "sum"],
                         ids=lambda v: v.label)
@pytest.mark.parametrize("n", SUM_SIZES)
def test_reduction_sums_integers_exactly(version, n):
    x = np.random.default_rng(n).integers(0, 16, n).astype(np.float32)
    out, _ = CC.emulate_version("reduction", version, x, trace=False)
    assert out[0] == np.float32(x.astype(np.int64).sum())


@pytest.mark.parametrize("version", [v for v in R.VERSIONS if v.group == "vecmat"],
                         ids=lambda v: v.label)
@pytest.mark.parametrize("n", [3001, 40_001])
def test_vecmat_runs_as_written(version, n):
    from simtlab.versions import emulate as emulate_numba

    rows, cols = R.vecmat_shape(n)
    v, w = rnd(cols), rnd((rows, cols))
    out, _ = CC.emulate_version("reduction", version, v, w, trace=False)
    if version.numba == "vecmat_v1_seed" and cols > 2 * R.BLOCK:
        # the seed's grid stride (blockDim.x squared) skips segments: the same wrong sums
        # as its numba twin
        numba_out, _ = emulate_numba("reduction", version, v, w, trace=False)
        assert not np.allclose(out, R.vecmat_cpu(v, w), rtol=1e-2)
        assert np.allclose(out, numba_out, rtol=1e-5)
    else:
        assert np.allclose(out, R.vecmat_cpu(v, w), rtol=1e-5)


def test_blocks_that_exit_leave_the_others_at_their_barrier():
    # block 1 has no segment and returns at once while block 0 waits at a barrier: block 0
    # must still be released and finish
    k = CC.course_kernel("reduction", "vecmat_v1_seed")
    n = 64
    out = np.zeros((1, 2), np.float32)
    simtlab.emulate(k, (2, 1), 256, np.ones(n, np.float32), np.ones((1, n), np.float32), out,
                    np.int32(n))
    assert out.tolist() == [[64.0, 0.0]]


def _pattern_inputs(v, n):
    g = v.group
    if g == "copy":
        return (rnd(n),)
    if g == "transpose":
        return (rnd(P.matrix_shape(n)),)
    if g == "stencil1d":
        return rnd(n), rnd(2 * P.RADIUS + 1)
    if g == "stencil2d":
        side = 2 * P.RADIUS_2D + 1
        return rnd(P.matrix_shape(n)), rnd((side, side))
    return rnd(n), RNG.permutation(n).astype(np.int32)


@pytest.mark.parametrize("version", [v for v in P.VERSIONS if v.cuda_c], ids=lambda v: v.label)
@pytest.mark.parametrize("n", [1, 1001, 3001])
def test_patterns_against_numpy(version, n):
    from simtlab.gpubench.patterns import check

    inputs = _pattern_inputs(version, n)
    out, _ = CC.emulate_version("patterns", version, *inputs, trace=False)
    assert check(version, out, *inputs) is None


@pytest.mark.parametrize("version", [v for v in S.VERSIONS if v.cuda_c], ids=lambda v: v.label)
@pytest.mark.parametrize("n", [1, 33, 1001, 5003])
def test_scan_exact(version, n):
    from simtlab.gpubench.scan import first_mismatch

    x = np.array([-2, -1, 1, 2], np.float32)[np.random.default_rng(n).integers(0, 4, n)]
    out, _ = CC.emulate_version("scan", version, x, trace=False)
    assert first_mismatch(out, x) is None


@pytest.mark.parametrize("version", [v for v in GM.VERSIONS if v.cuda_c], ids=lambda v: v.label)
@pytest.mark.parametrize("shape", [(37, 45, 29), (36, 44, 28)])   # odd; and float4-aligned
def test_gemm_against_numpy(version, shape):
    m, k, n = shape
    a, b = rnd((m, k)), rnd((k, n))
    out, _ = CC.emulate_version("gemm", version, a, b, trace=False)
    assert np.allclose(out, GM.gemm_cpu(a, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("conv", ["implicit", "fused"])
def test_cnn_forward_against_numpy(conv):
    from simtlab.kernels import cnn as CN

    params = CN.init_params(0)
    x = rnd((2, 1, 28, 28))
    steps, out = CN.network_plan(params, x, np, "cuda-c", conv, "gemm")
    for _, launches in steps:
        for step in launches:
            for z in step.zero:
                z[...] = 0
            simtlab.emulate(CC.course_kernel("cnn", step.kernel), step.grid, step.block,
                            *step.args, shared_bytes=step.shared, trace=False)
    want = CN.forward_cpu(params, x)
    # softmax uses expf: ex2.approx.ftz.f32, computed here as the float64 value rounded
    assert np.allclose(out["softmax"], want["softmax"], rtol=1e-4, atol=1e-6)
    assert np.array_equal(out["labels"], want["labels"])


@pytest.mark.slow
@pytest.mark.parametrize("label", ["v0 blog grid-stride", "v1 direct", "v2 im2col + GEMM",
                                   "v3 implicit GEMM", "v6 image per block"])
def test_conv_against_numpy(label):
    from simtlab.kernels import conv as CV
    from simtlab.versions import find

    x, w = rnd((2, 1, 13, 15)), rnd((4, 1, 7, 7))
    out, _ = CC.emulate_version("conv", find(CV.VERSIONS, label), x, w, trace=False)
    assert np.allclose(out, CV.conv2d_cpu(x, w), rtol=1e-5, atol=1e-4)


# --- the same trace as the numba twin ----------------------------------------------------------------
@pytest.mark.parametrize("label", ["copy v1 strided (32 apart)", "copy v2 coalesced",
                                   "transpose v1 naive", "transpose v3 padded tile"])
def test_sectors_and_wavefronts_per_request_equal_the_numba_twins(label):
    from simtlab.versions import emulate as emulate_numba, find

    version = find(P.VERSIONS, label)
    inputs = _pattern_inputs(version, 2049)
    _, numba_runs = emulate_numba("patterns", version, *[a.copy() for a in inputs])
    out, runs = CC.emulate_version("patterns", version, *inputs)
    for key in ("global_requests", "global_sectors_per_request", "shared_requests",
                "shared_wavefronts_per_request", "shared_bank_conflicts", "races"):
        assert runs[0].metrics[key] == numba_runs[0].metrics[key], key


def _line_of(run, text):
    for line in sorted(set(run.lines["line"].tolist())):
        if run.source(line).strip() == text:
            return line
    raise AssertionError(f"no line {text!r} ran")


@pytest.mark.parametrize("label, body", [("v1 interleaved", "s[t] += s[t + stride]"),
                                         ("v2 strided index", "s[k] += s[k + stride]"),
                                         ("v3 sequential", "s[t] += s[t + step]")])
def test_divergent_line_runs_on_the_same_lanes_as_the_numba_twin(label, body):
    from simtlab.versions import emulate as emulate_numba, find

    version = find(R.VERSIONS, label)
    x = rnd(2 * R.BLOCK)
    _, numba_runs = emulate_numba("reduction", version, x.copy())
    _, runs = CC.emulate_version("reduction", version, x)
    cu, py = runs[0], numba_runs[0]
    assert cu.metrics["shared_bank_conflicts"] == py.metrics["shared_bank_conflicts"]
    assert cu.metrics["shared_requests"] == py.metrics["shared_requests"]
    body_cu = _line_of(cu, body + ";")
    body_py = _line_of(py, body)
    rows_cu = cu.lines[cu.lines["line"] == body_cu]
    rows_py = py.lines[py.lines["line"] == body_py]
    # the same threads run the tree's add, in the same barrier epochs
    assert sorted(zip(rows_cu["block"], rows_cu["thread"], rows_cu["epoch"])) == \
        sorted(zip(rows_py["block"], rows_py["thread"], rows_py["epoch"]))


# --- errors -------------------------------------------------------------------------------------------
def test_wrong_argument_count_names_the_parameters():
    k = simtlab.cuda_c(AXPY, "axpy")
    with pytest.raises(LaunchError, match=r"axpy\(a, x, y, n\) takes 4 arguments, the launch passes 3"):
        simtlab.emulate(k, 1, 32, np.float32(1), rnd(4), rnd(4))


def test_wrong_argument_types_name_the_parameter():
    k = simtlab.cuda_c(AXPY, "axpy")
    with pytest.raises(LaunchError, match="parameter x is a pointer"):
        simtlab.emulate(k, 1, 32, np.float32(1), 3, rnd(4), 4)
    with pytest.raises(LaunchError, match="parameter y points to float32 elements.*float64"):
        simtlab.emulate(k, 1, 32, np.float32(1), rnd(4), np.zeros(4), 4)
    with pytest.raises(LaunchError, match="parameter n is an integer"):
        simtlab.emulate(k, 1, 32, np.float32(1), rnd(4), rnd(4), 4.0)


def test_out_of_bounds_write_names_block_thread_and_line():
    src = r'''
extern "C" __global__ void fill(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = 1.0f;   // no bounds check
}
'''
    out = np.zeros(100, np.float32)
    with pytest.raises(OutOfBoundsError) as err:
        simtlab.emulate(simtlab.cuda_c(src, "fill"), 2, 64, out, np.int32(100))
    e = err.value
    assert e.block == (1, 0, 0) and e.thread == (36, 0, 0) and e.line == 4
    assert "past the end of out" in str(e) and "out[i] = 1.0f;" in str(e)
    assert e.run.memory_columns is not None          # the partial trace comes with it


def test_unsupported_instruction_names_it_and_the_line():
    src = r'''
extern "C" __global__ void rev(unsigned* x) {
    unsigned v = x[threadIdx.x];
    unsigned r;
    asm("bfind.u32 %0, %1;" : "=r"(r) : "r"(v));
    x[threadIdx.x] = r;
}
'''
    with pytest.raises(EmulationError) as err:
        simtlab.emulate(simtlab.cuda_c(src, "rev"), 1, 32, np.arange(32, dtype=np.uint32))
    assert "bfind.u32" in str(err.value) and err.value.line == 5


def test_divergent_barrier_is_reported():
    src = r'''
extern "C" __global__ void early(float* x, int n) {
    __shared__ float s[64];
    int i = threadIdx.x;
    if (i >= n) return;
    s[i] = x[i];
    __syncthreads();
    x[i] = s[63 - i];
}
'''
    with pytest.raises(BarrierError, match="exited"):
        simtlab.emulate(simtlab.cuda_c(src, "early"), 1, 64, rnd(64), np.int32(40))


# --- exact arithmetic ---------------------------------------------------------------------------------
def _exact_f32(q: Fraction, mode: str) -> np.float32:
    """A rational rounded to float32 by ``mode``, from float64 candidates around it."""
    import math

    if q == 0:
        return np.float32(0)
    near = np.float32(float(q))                   # within an ulp of q
    cands = [near, np.nextafter(near, np.float32(np.inf)), np.nextafter(near, np.float32(-np.inf))]
    below = max((c for c in cands if Fraction(float(c)) <= q), key=lambda c: Fraction(float(c)))
    above = min((c for c in cands if Fraction(float(c)) >= q), key=lambda c: Fraction(float(c)))
    if mode == "rm":
        return below
    if mode == "rp":
        return above
    if mode == "rz":
        return below if q > 0 else above
    lo, hi = Fraction(float(below)), Fraction(float(above))
    if q - lo != hi - q:
        return below if q - lo < hi - q else above
    return below if int(np.float32(below).view(np.uint32)) % 2 == 0 else above
    del math


def _hard_f32_triples(n):
    rng = np.random.default_rng(5)
    a = rng.standard_normal(n).astype(np.float32) * np.float32(2) ** rng.integers(-20, 20, n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    # c cancels most of a*b: the bits below float32's precision decide the rounding
    c = (-(a.astype(np.float64) * b)).astype(np.float32) + rng.standard_normal(n).astype(np.float32) * np.float32(1e-7)
    return a, b, c.astype(np.float32)


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_fma_f32_rounds_the_exact_value_once(mode):
    a, b, c = _hard_f32_triples(400)
    got = fp.fma_f32(a, b, c, mode)
    want = [_exact_f32(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), mode)
            for x, y, z in zip(a, b, c)]
    assert np.array_equal(got.view(np.uint32), np.array(want, np.float32).view(np.uint32))


def test_fma_f32_rn_rounds_once_where_the_float64_sum_lands_halfway():
    """fma.rn.f32 rounds the float64 sum straight to float32 except where that sum sits halfway
    between two float32s (and in the subnormal range): exactly the lanes where rounding twice
    goes wrong. a * b = 2^-24 +- 2^-60 (4097 * 16773121 = 2^36 + 1; (1 + 2^-18)(1 - 2^-18))."""
    a = np.array([1 + 2.0 ** -12, 1 + 2.0 ** -18, 2.0 ** -70, -(2.0 ** -75), 3.0, -0.0, 2.0,
                  -2.0], np.float32)
    b = np.array([16773121 * 2.0 ** -48, 2.0 ** -24 * (1 - 2.0 ** -18), 1.5 * 2.0 ** -70,
                  2.0 ** -74 * 1.25, 2.0 ** -130, 5.0, 3.0, 3.0], np.float32)
    c = np.array([1.0, 1 + 2.0 ** -23, 3 * 2.0 ** -149, 2.0 ** -140, -(2.0 ** -128), -0.0,
                  -6.0, 6.0], np.float32)
    got = fp.fma_f32(a, b, c, "rn")
    want = [_exact_f32(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), "rn")
            for x, y, z in zip(a[:5], b[:5], c[:5])]
    # an exact zero sum is +0 unless both addends are -0 (IEEE 754, 6.3)
    want += [np.float32(-0.0), np.float32(0.0), np.float32(0.0)]
    assert np.array_equal(got.view(np.uint32), np.array(want, np.float32).view(np.uint32))
    # rounding the float64 sum to float32 directly is wrong on the two halfway lanes
    twice = (a.astype(np.float64) * b + c).astype(np.float32)
    assert not np.array_equal(twice[:2], np.array(want[:2], np.float32))


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_add_and_mul_f32_round_the_exact_value_once(mode):
    a, b, _ = _hard_f32_triples(300)
    got = fp.add_f32(a, -b * np.float32(3e-5), mode)
    want = [_exact_f32(Fraction(float(x)) + Fraction(float(np.float32(-y * np.float32(3e-5)))), mode)
            for x, y in zip(a, b)]
    assert np.array_equal(got.view(np.uint32), np.array(want, np.float32).view(np.uint32))
    got = fp.mul_f32(a, b, mode)
    want = [_exact_f32(Fraction(float(x)) * Fraction(float(y)), mode) for x, y in zip(a, b)]
    assert np.array_equal(got.view(np.uint32), np.array(want, np.float32).view(np.uint32))


@pytest.mark.parametrize("mode", ["rz", "rm", "rp"])
def test_directed_add_f32(mode):
    a, b, _ = _hard_f32_triples(300)
    got = fp.add_f32(a, -b * np.float32(3e-5), mode)
    want = [_exact_f32(Fraction(float(x)) + Fraction(float(np.float32(-y * np.float32(3e-5)))), mode)
            for x, y in zip(a, b)]
    assert np.array_equal(got.view(np.uint32), np.array(want, np.float32).view(np.uint32))


def test_fma_f64_is_exact():
    rng = np.random.default_rng(9)
    a, b = rng.standard_normal(200), rng.standard_normal(200)
    c = -(a * b) + rng.standard_normal(200) * 1e-17
    got = fp.fma_f64(a, b, c)
    want = [float(Fraction(x) * Fraction(y) + Fraction(z)) for x, y, z in zip(a, b, c)]
    assert np.array_equal(got, np.array(want))
    # the unfused expression differs somewhere: the test can tell the two apart
    assert not np.array_equal(a * b + c, np.array(want))


# --- vector accesses: one access of 8/16 bytes, as the GPU issues it ----------------------------
VEC4 = r'''
extern "C" __global__ void copy4(const float4* a, float4* out, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) out[i] = a[i];
}
extern "C" __global__ void race4(float* a) {
    int i = threadIdx.x;
    if (i == 0) reinterpret_cast<float4*>(a)[0] = make_float4(1, 2, 3, 4);
    if (i == 32) a[2] = 5.0f;
}
'''


def test_float4_access_is_one_request_of_16_byte_lanes():
    blocks, tpb = 2, 128
    a = rnd(4 * blocks * tpb)
    out = np.zeros_like(a)
    run = simtlab.emulate(simtlab.cuda_c(VEC4, "copy4"), blocks, tpb, a, out, blocks * tpb)
    assert np.array_equal(out, a)
    m = run.metrics
    warps = blocks * tpb // 32
    assert m["global_requests"] == 2 * warps, "one load and one store request per warp"
    assert m["global_sectors_per_request"] == 32 * 16 / 32, "32 lanes x 16 bytes = 16 sectors"
    rows = run.accesses("out", "write")
    assert len(rows) == blocks * tpb and set(rows.width) == {16}
    assert np.array_equal(rows.address - run.array("out").base, 16 * rows.thread + 16 * tpb * rows.block)
    from simtlab.plots.mapping import mapping_from_run
    from simtlab.analysis.gemm import loads_per_element
    thread = mapping_from_run(run, "out")["thread"].reshape(-1)
    assert np.array_equal(thread, np.tile(np.arange(tpb).repeat(4), blocks)), "every float of a float4"
    assert (loads_per_element(run, "a") == 1).all()


def test_float4_write_races_with_a_scalar_write_to_any_of_its_floats():
    run = simtlab.emulate(simtlab.cuda_c(VEC4, "race4"), 1, 64, np.zeros(4, np.float32))
    assert run.metrics["races"] == 1
    race = run.races[0]
    assert race.index == (2,) and sorted(race.lines) == [8, 9]


# --- bit manipulation and activemask, against Python's integers -----------------------------------
BITS = r'''
extern "C" __global__ void bits(const unsigned* a, const unsigned* b, const unsigned long long* w,
                                unsigned* out, unsigned long long* out64, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = b[i];
    unsigned pos = y & 0x3f, len = (y >> 8) & 0x3f;
    int s;
    unsigned u, f, p, sel = y >> 16;
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(p) : "r"(x), "r"(y), "r"(sel));   // with sign bits
    asm("bfe.s32 %0, %1, %2, %3;" : "=r"(s) : "r"(x), "r"(pos), "r"(len));
    asm("bfe.u32 %0, %1, %2, %3;" : "=r"(u) : "r"(x), "r"(pos), "r"(len));
    asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(f) : "r"(y), "r"(x), "r"(pos), "r"(len));
    out[8 * i + 0] = __popc(x);
    out[8 * i + 1] = __clz(x);
    out[8 * i + 2] = __brev(x);
    out[8 * i + 3] = (unsigned)s;
    out[8 * i + 4] = u;
    out[8 * i + 5] = f;
    out[8 * i + 6] = p ^ __byte_perm(x, y, y >> 16);      // __byte_perm: selectors & 0x7777
    out[8 * i + 7] = __popcll(w[i]) + 100u * __clzll(w[i]);
    out64[i] = __brevll(w[i]);
}
extern "C" __global__ void mask(unsigned* out) {
    if (threadIdx.x % 3 == 0) out[threadIdx.x] = __activemask();
}
'''


def _bit(v, i):
    return (v >> i) & 1


def _bfe(x, pos, length, signed):
    pos, length = pos & 0xFF, length & 0xFF
    sbit = 0 if not signed or length == 0 else _bit(x, min(pos + length - 1, 31))
    return sum(((_bit(x, pos + i) if i < length and pos + i <= 31 else sbit) << i) for i in range(32))


def _bfi(f, base, pos, length):
    out = base
    for i in range(length & 0xFF):
        if (pos & 0xFF) + i <= 31:
            out = (out & ~(1 << (pos + i))) | (_bit(f, i) << (pos + i))
    return out & 0xFFFFFFFF


def _prmt(a, b, c):
    both = (b << 32) | a
    out = 0
    for i in range(4):
        s = (c >> (4 * i)) & 0xF
        byte = (both >> (8 * (s & 7))) & 0xFF
        if s & 8:
            byte = 0xFF if byte & 0x80 else 0
        out |= byte << (8 * i)
    return out


def test_bit_instructions_match_their_ptx_definitions():
    n = 200
    rng = np.random.default_rng(5)
    a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    a[:4] = [0, 1, 0x80000000, 0xFFFFFFFF]
    b = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    w = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    w[0] = 0
    out, out64 = np.zeros(8 * n, np.uint32), np.zeros(n, np.uint64)
    simtlab.emulate(simtlab.cuda_c(BITS, "bits"), 4, 64, a, b, w, out, out64, n, trace=False)
    got = out.reshape(n, 8)
    for i in range(n):
        x, y, v = int(a[i]), int(b[i]), int(w[i])
        pos, length = y & 0x3F, (y >> 8) & 0x3F
        expected = [bin(x).count("1"), 32 - x.bit_length(), int(f"{x:032b}"[::-1], 2),
                    _bfe(x, pos, length, True), _bfe(x, pos, length, False), _bfi(y, x, pos, length),
                    _prmt(x, y, y >> 16) ^ _prmt(x, y, (y >> 16) & 0x7777), bin(v).count("1") + 100 * (64 - v.bit_length())]
        assert [int(g) for g in got[i]] == expected, i
        assert int(out64[i]) == int(f"{v:064b}"[::-1], 2)


def test_activemask_is_the_lanes_running_together():
    out = np.zeros(64, np.uint32)
    simtlab.emulate(simtlab.cuda_c(BITS, "mask"), 1, 40, out)
    lanes = [t for t in range(40) if t % 3 == 0]
    for t in lanes:
        expected = sum(1 << (u % 32) for u in lanes if u // 32 == t // 32)
        assert out[t] == expected


def test_interleaved_instructions_of_a_line_give_one_line_row():
    """NVRTC interleaves line 2's address arithmetic (cvta) with lines 4 and 5 in the block
    after the branch (lines 2, 4, 5, 2, 5): a lane runs line 5 once, so one line row, not two.
    (Line 2's first fragment in that block still gives a second row for line 2: a fragment
    that starts a basic block cannot be told from a new execution without the CFG.)"""
    src = ('extern "C" __global__ void scale(const float* x, float* y, int n) {\n'
           '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
           '    if (i < n) {\n'
           '        float v = x[i] * 2.0f;\n'
           '        y[i] = v + 1.0f;\n'
           '    }\n'
           '}\n')
    k = simtlab.cuda_c(src, "scale")
    after_branch = [ins.line for ins in k.entry.instructions][9:17]
    assert after_branch.count(2) == 2 and 2 in after_branch[after_branch.index(5):], after_branch
    run = simtlab.emulate(k, 1, 32, rnd(32), np.zeros(32, np.float32), 32)
    rows = run.line_columns
    for thread in range(32):
        mine = rows.line[rows.thread == thread].tolist()
        assert mine.count(4) == 1 and mine.count(5) == 1, mine
        assert mine.count(2) == 2, mine


def test_blocks_past_the_traced_sample_still_run():
    # trace_blocks cuts a chunk at the sample's end: the blocks after it run untraced, all of them
    fill = simtlab.cuda_c('extern "C" __global__ void fill(float* out, int n) {\n'
                          '    int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
                          '    if (i < n) out[i] = 1.0f;\n}\n', "fill")
    out = np.zeros(7 * 64, np.float32)
    run = simtlab.emulate(fill, 7, 64, out, np.int32(out.size), trace_blocks=3)
    assert out.reshape(7, 64).sum(axis=1).tolist() == [64.0] * 7
    assert sorted(set(run.accesses("out", "write")["index"].tolist())) == list(range(3 * 64))


# --- the trace's counters, kept as the kernel runs ----------------------------------------------
@pytest.mark.parametrize("label, trace_blocks", [
    ("v3 sequential", None), ("v3 sequential", 3), ("v5 warp shuffle", None),
    ("v6 grid-stride, second pass", None), ("v7 grid-stride, atomicAdd", None)])
def test_recorded_line_steps_and_access_seqs_are_what_sorting_the_rows_gives(label, trace_blocks):
    """The executor counts each line row's ``step`` and each access's ``seq`` while it runs
    (no sort afterwards); they must be what the other engines derive from the rows: a thread's
    rows numbered in order, and its earlier accesses on the same line (``keys.occurrence``)."""
    from simtlab import keys
    from simtlab.emulator.tracing import _steps
    from simtlab.versions import find

    x = rnd(3001)
    _, runs = CC.emulate_version("reduction", find(R.VERSIONS, label), x,
                                 trace_blocks=trace_blocks)
    for run in runs:
        lines, mem = run.line_columns, run.memory_columns
        assert len(lines) and len(mem)
        assert np.array_equal(lines.step, _steps(lines.gtid))
        assert np.array_equal(np.diff(lines.gtid) >= 0, np.ones(len(lines) - 1, bool))
        assert np.array_equal(mem.seq, keys.occurrence(mem.gtid, mem.site))
