"""The PTX engine's tensor-core instructions (simtlab/emulator/ptx/tensor_ops.py): fragment
layouts against the PTX ISA's formulas, the arithmetic, ldmatrix's bank conflicts in chapter
9's v4 and their removal by v5's XOR swizzle."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simtlab import cuda_c_kernels as CC

try:
    CC.nvrtc_version()
except CC.CompilerMissing as why:
    pytest.skip(f"NVRTC is not installed ({why})", allow_module_level=True)

from cuda_c_cases import BY_NAME, CPU, outputs_of  # noqa: E402
from simtlab.analysis.bank_conflicts import requests  # noqa: E402
from simtlab.analysis.fragments import fragment_map  # noqa: E402
from simtlab.emulator.errors import WarpCollectiveError  # noqa: E402
from simtlab.emulator.ptx.tensor_ops import tf32_round_nearest_away  # noqa: E402
from simtlab.kernels import tensor_cores as T  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


# --- fragment layouts: PTX ISA 9.7.14.5.7 / 9.7.14.5.8, written out here -----------------------
def isa_layout(matrix, precision):
    """``(32, elements, 2)``: the ISA's row and col of each element, lane by lane."""
    out = []
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        if matrix == "c":                                 # c0..c3, both shapes
            out.append([(g if i < 2 else g + 8, t * 2 + (i & 1)) for i in range(4)])
        elif precision == "tf32" and matrix == "a":       # m16n8k8 .tf32: a0..a3
            out.append([(g if i in (0, 2) else g + 8, t if i < 2 else t + 4) for i in range(4)])
        elif precision == "tf32":                         # b0, b1
            out.append([(t if i == 0 else t + 4, g) for i in range(2)])
        elif matrix == "a":                               # m16n8k16 .f16/.bf16: a0..a7
            out.append([(g if i in (0, 1, 4, 5) else g + 8, t * 2 + (i & 1) + (8 if i >= 4 else 0))
                        for i in range(8)])
        else:                                             # b0..b3
            out.append([(t * 2 + (i & 1) + (8 if i >= 2 else 0), g) for i in range(4)])
    return np.array(out)


@pytest.mark.parametrize("precision", ["tf32", "f16", "bf16"])
def test_fragment_map_from_the_engine_is_the_isa_layout(precision):
    fm = fragment_map(precision)
    for matrix in "abc":
        assert np.array_equal(getattr(fm, matrix), isa_layout(matrix, precision)), matrix
    # one element, by name: C[9][3] sits in lane 4 * (9 - 8) + 3 // 2 = 5, element 3 (c3)
    assert fm.lane_of("c", 9, 3) == [(5, 3)]


# --- arithmetic --------------------------------------------------------------------------------------
def test_cvt_rna_tf32_rounds_ties_away_from_zero():
    x = np.array([1 + 2.0 ** -11, -(1 + 2.0 ** -11), 1 + 2.0 ** -12, np.inf, 3.4028235e38], np.float32)
    got = tf32_round_nearest_away(x.view(np.uint32)).view(np.float32)
    assert got[0] == 1 + 2.0 ** -10 and got[1] == -(1 + 2.0 ** -10) and got[2] == 1.0
    assert np.isinf(got[3]) and np.isinf(got[4])          # the max float rounds up past TF32's max
    assert tf32_round_nearest_away(np.float32(np.nan).view(np.uint32)) == 0x7FFFFFFF


def _gemm(case_name, a, b):
    case = BY_NAME[case_name]
    launches, outputs = case.plan(np, a, b)
    CC.emulate_launches("tensor_cores", launches)
    return outputs["out"]


def test_mma_truncates_raw_tf32_bits_and_wmma_kernels_round_first():
    """A = 1 + 3 * 2^-12 everywhere, B = ones in row 0 only: C = A's TF32 value. v4 hands the raw
    float bits to mma.sync (truncated: 1.0); v1 rounds with cvt.rna first (1 + 2^-10)."""
    x = np.float32(1 + 3 * 2.0 ** -12)
    for name, m, n, k, want in (("tc_v4_mma_tf32", 128, 128, 64, 1.0), ("tc_v1_wmma_tf32", 16, 64, 16, 1 + 2.0 ** -10)):
        a = np.full((m, k), x, np.float32)
        b = np.zeros((k, n), np.float32)
        b[0] = 1
        assert (_gemm(f"tensor_cores/{name}", a, b) == np.float32(want)).all(), name


def test_mma_sums_exactly_and_rounds_once():
    """C = 2^24 + 1 + 1 with FP16 ones: one rounding of the exact sum gives 2^24 + 2; adding in
    float32 one product at a time would give 2^24 (each + 1 a tie, rounded to even)."""
    m, n, k = 16, 64, 32
    a = np.zeros((m, k), np.float32)
    a[:, 0], a[:, 1], a[:, 2] = 2.0 ** 12, 1, 1
    b = np.zeros((k, n), np.float32)
    b[0], b[1], b[2] = 2.0 ** 12, 1, 1
    out = _gemm("tensor_cores/tc_v2_wmma_f16", T.encode(a, "fp16"), T.encode(b, "fp16"))
    assert (out == np.float32(2.0 ** 24 + 2)).all()


def test_an_mma_reached_by_half_a_warp_is_an_error():
    src = r'''
    extern "C" __global__ void half_warp(float* out) {
        float d[4] = {0.f, 0.f, 0.f, 0.f};
        unsigned a = 0x3C003C00u, b = 0x3C003C00u;
        if (threadIdx.x < 16)
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
                         "{%4, %4, %4, %4}, {%5, %5}, {%0, %1, %2, %3};\n"
                         : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a), "r"(b));
        out[threadIdx.x] = d[0];
    }'''
    import simtlab

    with pytest.raises(WarpCollectiveError, match="only 16 of the warp's 32 lanes"):
        simtlab.emulate(simtlab.cuda_c(src, "half_warp"), 1, 32, np.zeros(32, np.float32))


# --- ldmatrix bank conflicts: v4 (plain rows) against v5 (XOR swizzle) -------------------------------
def _asm_line(text):
    lines = (ROOT / "kernels" / "tensor_cores.cu").read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if text in line)


LDMATRIX_A = _asm_line('"ldmatrix.sync.aligned.m8n8.x4.shared.b16')
LDMATRIX_B = _asm_line('"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16')


def _ldmatrix_wavefronts(kernel):
    """``{line: set of wavefronts per request}`` of the ldmatrix lines of a traced CPU run."""
    inputs, launches, _ = outputs_of(BY_NAME[f"tensor_cores/{kernel}"], CPU)
    (run,) = CC.emulate_launches("tensor_cores", launches, trace=True)
    table = requests(run.memory_columns)
    return {line: set(table.wavefronts[table.line == line].tolist()) for line in (LDMATRIX_A, LDMATRIX_B)}


def _model_wavefronts(row_bytes, rows_and_chunks, swizzle):
    """Wavefronts of one 8 x 8 matrix from kernels/tensor_cores.py's model: the 8 rows' 16-byte
    chunks (``swizzle(row, chunk)`` their place) and the most distinct words on one bank."""
    words = {}
    for row, chunk in rows_and_chunks:
        start = row * row_bytes + swizzle(row, chunk) * 16
        for w in range(4):
            word = start // 4 + w
            words.setdefault(word % 32, set()).add(word)
    return max(len(s) for s in words.values())


@pytest.mark.parametrize("precision, plain, swizzled", [("tf32", 8, 1), ("f16", 4, 1)])
def test_ldmatrix_of_a_conflicts_in_v4_and_not_in_v5(precision, plain, swizzled):
    bk = T.MMA_TILE["tf32" if precision == "tf32" else "fp16"][2]
    row_bytes = bk * (4 if precision == "tf32" else 2)
    chunks = row_bytes // 16
    rows = [(r, 0) for r in range(8)]                       # one matrix: 8 rows, one chunk column
    assert _model_wavefronts(row_bytes, rows, lambda r, c: c) == plain
    assert _model_wavefronts(row_bytes, rows, lambda r, c: T.swizzle_a(r, c, chunks)) == swizzled
    suffix = "tf32" if precision == "tf32" else "f16"
    assert _ldmatrix_wavefronts(f"tc_v4_mma_{suffix}")[LDMATRIX_A] == {plain}
    assert _ldmatrix_wavefronts(f"tc_v5_mma_swizzle_{suffix}")[LDMATRIX_A] == {swizzled}


def test_ldmatrix_trans_of_b_conflicts_in_v4_and_not_in_v5():
    bn = T.MMA_TILE["fp16"][1]
    rows = [(k, 0) for k in range(8)]                       # 8 k-rows of one 16-byte column chunk
    assert _model_wavefronts(bn * 2, rows, lambda r, c: c) == 8
    assert _model_wavefronts(bn * 2, rows, lambda r, c: T.swizzle_b(r, c, False)) == 1
    assert _ldmatrix_wavefronts("tc_v4_mma_f16")[LDMATRIX_B] == {8}
    assert _ldmatrix_wavefronts("tc_v5_mma_swizzle_f16")[LDMATRIX_B] == {1}


def test_mma_sync_reads_no_memory():
    """mma.sync works on registers: no trace row carries an mma line."""
    _, launches, _ = outputs_of(BY_NAME["tensor_cores/tc_v4_mma_f16"], CPU)
    (run,) = CC.emulate_launches("tensor_cores", launches, trace=True)
    mma_line = _asm_line('asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32')
    lines = run.memory_columns.line
    assert (lines == LDMATRIX_A).any() and not (lines == mma_line).any()


def test_dynamic_shared_memory_past_48_kib_needs_the_kernels_opt_in():
    """v6 FP16 asks for 96 KB: refused as on the GPU until the kernel opts in
    (cudaFuncSetAttribute, CuPy's max_dynamic_shared_size_bytes), then it runs."""
    import simtlab
    from simtlab.emulator.errors import LaunchError

    v = T.find("tc_v6_pipeline_f16")
    kernel = simtlab.cuda_c(str(ROOT / "kernels" / "tensor_cores.cu"), v.kernel)
    m, n, k = v.multiple
    grid, block, smem = T.launch_config(v, m, n, 2 * k)
    args = (np.zeros((m, 2 * k), np.uint16), np.zeros((2 * k, n), np.uint16), np.zeros((m, n), np.float32),
            *map(np.int32, (m, n, 2 * k)))
    assert smem > 48 * 1024
    with pytest.raises(LaunchError, match="without opting in"):
        simtlab.emulate(kernel, grid, block, *args, shared_bytes=smem, trace=False)
    kernel.max_dynamic_shared_size_bytes = smem
    simtlab.emulate(kernel, grid, block, *args, shared_bytes=smem, trace=False)


# --- v6t: TF32 with B^T in shared memory, every fragment by ldmatrix ---------------------------------
@pytest.mark.parametrize("cfg", T.V6T_CONFIGS, ids=lambda c: c.kernel)
def test_v6t_loads_every_fragment_with_ldmatrix_and_no_shared_request_conflicts(cfg):
    """The trace of a CPU run: the only shared-memory loads are ldmatrix (v6's 32-bit B loads are
    gone), and every shared request (the ldmatrix phases, the cp.async writes of A and of the
    transposed B, B_REGS' 16-byte stores) needs no more wavefronts than its bytes do."""
    _, launches, _ = outputs_of(BY_NAME[f"tensor_cores/{cfg.kernel}"], CPU)
    (run,) = CC.emulate_launches("tensor_cores", launches, trace=True)
    table = requests(run.memory_columns)
    loads = table[table.kind == 0]
    assert len(loads) and set(loads.line.tolist()) == {LDMATRIX_A}, set(loads.line.tolist())
    conflicted = table[table.wavefronts > table.ideal]
    assert len(conflicted) == 0, sorted(set(zip(conflicted.line.tolist(), conflicted.wavefronts.tolist())))


@pytest.mark.parametrize("cfg", T.V6T_CONFIGS, ids=lambda c: c.kernel)
def test_v6t_truncates_tf32_inputs_unless_it_rounds_them_to_nearest(cfg):
    """A = x = 1 + 3 * 2^-12 everywhere, B = x in row 0 and zeros below: C = TF32(x)^2, 1.0 when
    the tensor core truncates the raw bits, (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20 (exact in FP32) when
    both operands are rounded to nearest first (the _rna configurations, as cuBLAS TF32)."""
    x = np.float32(1 + 3 * 2.0 ** -12)
    m, n, k = cfg.bm, cfg.bn, (cfg.stages + 1) * cfg.bk          # the ring wraps
    a = np.full((m, k), x, np.float32)
    b = np.zeros((k, n), np.float32)
    b[0] = x
    want = np.float32(1 + 2.0 ** -9 + 2.0 ** -20) if cfg.round_inputs else np.float32(1.0)
    assert (_gemm(f"tensor_cores/{cfg.kernel}", a, b) == want).all()
# --- v6w: a tensor map that says TF32 makes the TMA round the inputs --------------------------------
RN_KERNELS = [v.kernel for v in T.SWEEP if v.tma_rounds]


def test_every_tma_rounding_kernel_is_its_fp32_twin_with_tf32_maps():
    """A _rn kernel is the same instantiation as the kernel without the suffix; only its maps differ."""
    import dataclasses

    assert len(RN_KERNELS) >= 2
    by_kernel = {v.kernel: v for v in T.SWEEP}
    for name in RN_KERNELS:
        rn, twin = by_kernel[name], by_kernel[name[:-len("_rn")]]
        assert not twin.tma_rounds and twin.tma
        same = lambda v: {f.name: getattr(v, f.name) for f in dataclasses.fields(v)
                          if f.name not in ("label", "kernel", "note", "tma_rounds")}
        assert same(rn) == same(twin)
        assert rn.note.startswith(twin.note.split(":")[0]) and "rounds the inputs to nearest TF32" in rn.note


@pytest.mark.parametrize("kernel", RN_KERNELS)
def test_v6w_truncates_tf32_inputs_unless_its_tensor_maps_say_tf32(kernel):
    """B = ones in row 0: C = A's value as the tensor core read it. The top half of A holds 1 + 3 * 2^-12 (TF32 keeps
    1 + 2^-10 when rounded to nearest, 1 when truncated), the bottom half the tie 1 + 2^-11 (1 to nearest even, as the
    H100's TMA rounds; 1 + 2^-10 had it rounded ties away like cvt.rna). With FP32 maps (the twin) both halves are 1:
    the MMAs drop the low bits."""
    m, n, k = 256, 256, 5 * 32                                     # one cluster's tiles, the 4-slot ring wraps
    a = np.full((m, k), 1 + 3 * 2.0 ** -12, np.float32)
    a[m // 2:] = 1 + 2.0 ** -11
    b = np.zeros((k, n), np.float32)
    b[0] = 1
    rounded = _gemm(f"tensor_cores/{kernel}", a, b)
    assert (rounded[:m // 2] == np.float32(1 + 2.0 ** -10)).all() and (rounded[m // 2:] == 1).all()
    assert (_gemm(f"tensor_cores/{kernel[:-len('_rn')]}", a, b) == 1).all()


@pytest.mark.parametrize("precision, shape", [("fp16", "m16n8k16"), ("bf16", "m16n8k16"), ("tf32", "m16n8k8")])
def test_the_chapters_traced_layouts_are_the_ptx_isas(precision, shape):
    """Chapter 9 draws the layouts read from the probe's run; the PTX ISA's formulas must agree."""
    from simtlab import tensorcores as TC

    for traced, formula in zip(TC.traced_layouts(precision), (TC.fragment_layout(shape, precision, o) for o in "abc")):
        assert traced.operand == formula.operand and traced.shape == formula.shape
        np.testing.assert_array_equal(traced.lane, formula.lane)
        np.testing.assert_array_equal(traced.element, formula.element)
