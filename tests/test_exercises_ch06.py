"""Chapter 6 checks: pass on correct answers, fail with a precise message on the stub and typical mistakes."""

from __future__ import annotations

import pytest
from numba import cuda, float32

from simtlab.exercises import ch06
from simtlab.exercises.report import CheckFailed, ExerciseNotWritten, NotWrittenYet
from simtlab.kernels import gemm as G
from simtlab.kernels.gemm import ACT_NONE, activate, tiled_dot

TILE = 16
BM, BN, BK, TM = 32, 32, 8, 4
THREADS = BM * BN // TM


# ------------------------------------------------------------------ exercise 1: tiled GEMM
@cuda.jit
def tiled_stub(a, b, c):
    raise NotWrittenYet("ch06.tiled")


@cuda.jit
def tiled_no_zero_fill(a, b, c):
    # skips the load outside A/B: the tile keeps the previous phase's values
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
    acc = float32(0.0)
    for t in range((a.shape[1] + TILE - 1) // TILE):
        k0 = t * TILE
        if row < a.shape[0] and k0 + tx < a.shape[1]:
            sa[ty, tx] = a[row, k0 + tx]
        if k0 + ty < b.shape[0] and col < b.shape[1]:
            sb[ty, tx] = b[k0 + ty, col]
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if row < c.shape[0] and col < c.shape[1]:
        c[row, col] = acc


@cuda.jit
def tiled_no_second_barrier(a, b, c):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
    m, kk, n = a.shape[0], a.shape[1], b.shape[1]
    acc = float32(0.0)
    for t in range((kk + TILE - 1) // TILE):
        k0 = t * TILE
        sa[ty, tx] = a[row, k0 + tx] if row < m and k0 + tx < kk else float32(0.0)
        sb[ty, tx] = b[k0 + ty, col] if k0 + ty < kk and col < n else float32(0.0)
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
    if row < m and col < n:
        c[row, col] = acc


def test_tiled_passes_on_the_course_kernel(capsys):
    ch06.check_tiled_gemm(G.gemm_v3_tiled)
    assert "Tiled GEMM right" in capsys.readouterr().out


def test_tiled_stub_is_not_written():
    with pytest.raises(ExerciseNotWritten):
        ch06.check_tiled_gemm(tiled_stub)


def test_tiled_without_shared_memory_fails_on_loads():
    with pytest.raises(CheckFailed, match="no shared memory"):
        ch06.check_tiled_gemm(G.gemm_v2_coalesced)


def test_tiled_without_zero_fill_fails_or_reads_out_of_bounds():
    with pytest.raises(CheckFailed):
        ch06.check_tiled_gemm(tiled_no_zero_fill)


def test_tiled_missing_barrier_is_a_race():
    with pytest.raises(CheckFailed, match="race|never written|wrong"):
        ch06.check_tiled_gemm(tiled_no_second_barrier)


# ------------------------------------------------------------------ exercise 2: register blocking
@cuda.jit
def blocked_right(a, b, c):
    sa = cuda.shared.array((BK, BM), float32)
    sb = cuda.shared.array((BK, BN), float32)
    acc = cuda.local.array(TM, float32)
    t = cuda.threadIdx.x
    tx, ty = t % BN, t // BN
    row0, col0 = cuda.blockIdx.y * BM, cuda.blockIdx.x * BN
    m, kk, n = a.shape[0], a.shape[1], b.shape[1]
    for i in range(TM):
        acc[i] = float32(0.0)
    for k0 in range(0, kk, BK):
        r, q = t // BK, t % BK
        sa[q, r] = a[row0 + r, k0 + q] if row0 + r < m and k0 + q < kk else float32(0.0)
        r, q = t // BN, t % BN
        sb[r, q] = b[k0 + r, col0 + q] if k0 + r < kk and col0 + q < n else float32(0.0)
        cuda.syncthreads()
        for k in range(BK):
            bv = sb[k, tx]
            for i in range(TM):
                acc[i] += sa[k, ty + (THREADS // BN) * i] * bv
        cuda.syncthreads()
    for i in range(TM):
        row = row0 + ty + (THREADS // BN) * i
        if row < m and col0 + tx < n:
            c[row, col0 + tx] = acc[i]


@cuda.jit
def blocked_stub(a, b, c):
    raise NotWrittenYet("ch06.blocked")


def right_formula(bm, bn):
    return (bm + bn) / (2 * bm * bn)


def test_blocked_passes_with_the_right_formula(capsys):
    ch06.check_register_blocked(blocked_right, right_formula)
    assert "1-D register blocking right" in capsys.readouterr().out


def test_blocked_stub_is_not_written():
    with pytest.raises(ExerciseNotWritten):
        ch06.check_register_blocked(blocked_stub, right_formula)


def test_blocked_wrong_formula_is_named():
    with pytest.raises(CheckFailed, match="loads_per_flop"):
        ch06.check_register_blocked(blocked_right, lambda bm, bn: 1 / (bm * bn))


def test_blocked_one_output_per_thread_kernel_is_refused():
    # a 16 x 16 tiled kernel launched as 256 threads in 1-D: wrong mapping, wrong answer or out of bounds
    with pytest.raises(CheckFailed):
        ch06.check_register_blocked(G.gemm_v3_tiled, right_formula)


# ------------------------------------------------------------------ exercise 3: the epilogue
@cuda.jit
def epilogue_stub(a, b, c, bias, use_bias, activation):
    raise NotWrittenYet("ch06.epilogue")


@cuda.jit
def epilogue_bias_after_activation(a, b, c, bias, use_bias, activation):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    col = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    row = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    p = tiled_dot(a, b, row, col, sa, sb)
    if row < c.shape[0] and col < c.shape[1]:
        p = activate(p, activation)
        if use_bias:
            p = p + bias[row]
        c[row, col] = p


def test_epilogue_passes_on_the_fixed_kernel(capsys):
    ch06.check_bias_epilogue(G.gemm_bias_act)
    assert "one store per output" in capsys.readouterr().out


def test_epilogue_seed_loses_its_bias():
    with pytest.raises(CheckFailed, match="the Cairo graduation report's bug"):
        ch06.check_bias_epilogue(G.gemm_bias_act_seed)


def test_epilogue_wrong_order_fails():
    with pytest.raises(CheckFailed, match="p"):
        ch06.check_bias_epilogue(epilogue_bias_after_activation)


def test_epilogue_stub_is_not_written():
    with pytest.raises(ExerciseNotWritten):
        ch06.check_bias_epilogue(epilogue_stub)


def test_activation_constants_match_the_kernels():
    assert ACT_NONE == 0 and G.ACTIVATIONS == {"none": 0, "swish": 1, "sigmoid": 2}


# ------------------------------------------------------------------ prediction: the shared-memory ceiling
def ceiling_ok(peak, loads):
    return peak * min(1 / loads, 4 / (1 + loads), 4) / 4


def test_shared_ceiling_passes_on_the_model():
    ch06.check_shared_ceiling(ceiling_ok)


def test_shared_ceiling_stub_fails():
    def stub(*a):
        raise NotWrittenYet("ch06.predict")
    with pytest.raises(CheckFailed, match="not written yet"):
        ch06.check_shared_ceiling(stub)


@pytest.mark.parametrize("answer, match", [
    (lambda peak, loads: peak / (4 * loads), "issue slots"),
    (lambda peak, loads: peak * min(1.0, 1 / loads), "1 wavefront per clock"),
    (lambda peak, loads: "8.4", "expected"),
])
def test_shared_ceiling_typical_mistakes_are_named(answer, match):
    with pytest.raises(CheckFailed, match=match):
        ch06.check_shared_ceiling(answer)


def test_v3_ceiling_is_one_eighth_of_the_peak():
    """v3: 2 shared loads per FFMA (counted in the emulator's trace below), one shared wavefront
    per clock against four issue slots: 66.9 / 8 TFLOP/s, the figure issue 8 of the review names."""
    assert ch06.shared_ceiling(66.9, 2.0) == pytest.approx(66.9 / 8)


@pytest.mark.parametrize("version, shape, loads", [
    ("v3 shared tiles", (32, 32, 16), 2.0),        # sa[ty, j] and sb[j, tx] per multiply-add
    ("v4 1-D blocking", (64, 64, 8), 9 / 8),       # 1 B value + 8 A values per 8 multiply-adds
    ("v5 2-D blocking", (128, 128, 8), 16 / 64),   # 8 A + 8 B values per 64 multiply-adds
])
def test_shared_loads_per_fma_counted_from_the_trace(version, shape, loads):
    from simtlab.analysis.gemm import shared_loads_per_fma, trace_version

    assert shared_loads_per_fma(trace_version(version, *shape)) == loads


# ------------------------------------------------------------------ exercises 6.4 and 6.5: the master's answer
# cells and the student's blanks, as `simtlab build` made them (solutions/ and chapters/)
def _answer_cell(folder: str, exercise: str) -> str:
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parent.parent / folder / "06_gemm.ipynb").read_text())
    return next("".join(c["source"]) for c in nb["cells"] if c["metadata"].get("simtlab", {}).get("id") == exercise)


def _load_cell(folder: str, exercise: str, tmp_path, name: str):
    """An answer cell as a module of its own file (the emulator reads a kernel's source from its file)."""
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text("from numba import cuda, float32\n" + _answer_cell(folder, exercise))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- 6.4: the swizzled A tile
def test_swizzle_passes_on_the_master(tmp_path, capsys):
    master = _load_cell("solutions", "ch06.swizzle", tmp_path, "swizzle_master")
    ch06.check_swizzled_tile(master.gemm_swizzled)
    assert "each 1 wavefront" in capsys.readouterr().out


def test_swizzle_blank_is_not_written(tmp_path):
    blank = _load_cell("chapters", "ch06.swizzle", tmp_path, "swizzle_blank")
    with pytest.raises(ExerciseNotWritten):
        ch06.check_swizzled_tile(blank.gemm_swizzled)


def _with_swizzle(tmp_path, name, body):
    """The master's kernel with another swizzled(k, row)."""
    source = _answer_cell("solutions", "ch06.swizzle")
    start = source.index("    ### BEGIN SOLUTION")
    end = source.index("    ### END SOLUTION") + len("    ### END SOLUTION")
    path = tmp_path / f"{name}.py"
    path.write_text("from numba import cuda, float32\n" + source[:start] + body + source[end:])
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.gemm_swizzled


def test_swizzle_without_a_swizzle_has_bank_conflicts(tmp_path):
    # v4's own layout: 8 lanes of one row r write words q*64 + r, all in bank r: 8 wavefronts
    plain = _with_swizzle(tmp_path, "swizzle_identity", "    return row")
    with pytest.raises(CheckFailed, match="bank conflicts.*8 wavefronts"):
        ch06.check_swizzled_tile(plain)


def test_swizzle_that_is_not_a_permutation_loses_rows(tmp_path):
    lossy = _with_swizzle(tmp_path, "swizzle_lossy", "    return (row + 4 * k) % 32")
    with pytest.raises(CheckFailed, match="permutation"):
        ch06.check_swizzled_tile(lossy)


def test_swizzle_xor_with_k_alone_still_conflicts(tmp_path):
    # row ^ k sends the 4 rows of a request to 8 banks only: 4 words a bank
    weak = _with_swizzle(tmp_path, "swizzle_weak", "    return row ^ k")
    with pytest.raises(CheckFailed, match="4 wavefronts"):
        ch06.check_swizzled_tile(weak)


# ---- 6.5: float4 loads in CUDA C
def _nvrtc():
    from simtlab import cuda_c_kernels as CC

    try:
        CC.nvrtc_version()
    except CC.CompilerMissing as why:
        pytest.skip(f"NVRTC is not installed ({why})")


def _f4_source(folder: str) -> str:
    namespace: dict = {}
    exec(_answer_cell(folder, "ch06.float4").replace("from simtlab.student import NotWrittenYet, hint\n", ""), namespace)
    return namespace["TILE_LOADS"]


def _f4_with_loads(loads: str) -> str:
    return loads


def test_float4_passes_on_the_master(capsys):
    _nvrtc()
    ch06.check_float4_loads(_f4_source("solutions"))
    assert "every lane load of A and B moves 16 bytes" in capsys.readouterr().out


def test_float4_blank_is_not_written():
    # the blank holds simtlab build's C stub: refused before NVRTC is needed
    source = _f4_source("chapters")
    assert ch06.C_STUB in source
    with pytest.raises(ExerciseNotWritten):
        ch06.check_float4_loads(source)


SCALAR_LOADS = """
        for (int e = threadIdx.x; e < BM * BK; e += blockDim.x) {      // right, but 4 bytes a load
            const int r = e / BK, q = e % BK;
            sa[q][r] = (row0 + r < M && k0 + q < K) ? A[(size_t)(row0 + r) * K + k0 + q] : 0.0f;
        }
        for (int e = threadIdx.x; e < BK * BN; e += blockDim.x) {
            const int r = e / BN, q = e % BN;
            sb[r][q] = (k0 + r < K && col0 + q < N) ? B[(size_t)(k0 + r) * N + col0 + q] : 0.0f;
        }
"""

STRIDED_FLOAT4 = """
        {   // float4 of A, but lanes walk down the rows: each lane's 16 bytes alone in its sector
            const int r = t % BM, q = (t / BM) * 4;
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (row0 + r < M && k0 + q < K) v = *reinterpret_cast<const float4*>(&A[(size_t)(row0 + r) * K + k0 + q]);
            sa[q + 0][r] = v.x; sa[q + 1][r] = v.y; sa[q + 2][r] = v.z; sa[q + 3][r] = v.w;
        }
        {
            const int r = t / (BN / 4), q = (t % (BN / 4)) * 4;
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (k0 + r < K && col0 + q < N) v = *reinterpret_cast<const float4*>(&B[(size_t)(k0 + r) * N + col0 + q]);
            *reinterpret_cast<float4*>(&sb[r][q]) = v;
        }
"""


def test_float4_scalar_loads_are_refused():
    _nvrtc()
    with pytest.raises(CheckFailed, match="lane loads of A are 4 bytes wide"):
        ch06.check_float4_loads(_f4_with_loads(SCALAR_LOADS))


def test_float4_loads_that_waste_sectors_are_refused():
    _nvrtc()
    with pytest.raises(CheckFailed, match="touches 32 sectors .* for 512 bytes"):
        ch06.check_float4_loads(_f4_with_loads(STRIDED_FLOAT4))


def test_float4_missing_tile_loads_read_uninitialised_shared_memory():
    _nvrtc()
    with pytest.raises(CheckFailed, match="load the whole A tile"):
        ch06.check_float4_loads(_f4_with_loads("        // nothing loaded\n"))
