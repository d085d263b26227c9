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
