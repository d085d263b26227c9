"""Chapter 2 checks: pass on correct answers, fail with a precise message on the stub and typical mistakes."""

from __future__ import annotations

import pytest
from numba import cuda

from simtlab.exercises import ch02
from simtlab.exercises.report import CheckFailed, ExerciseNotWritten, NotWrittenYet
from simtlab.hardware import occupancy
from simtlab.kernels.divergence import branch_by_parity


# ------------------------------------------------------------------ exercise 1: no divergence
@cuda.jit
def parity_no_divergence(x, out):
    t = cuda.grid(1)
    half = x.size // 2
    if t < half:                      # whole warps: half is a multiple of 32
        i = 2 * t
        out[i] = 2 * x[i]
    elif t < x.size:
        i = 2 * (t - half) + 1
        out[i] = -x[i]


@cuda.jit
def parity_two_per_thread(x, out):
    # another right answer: each of the first n/2 threads does one even and one odd element
    t = cuda.grid(1)
    if t < x.size // 2:
        out[2 * t] = 2 * x[2 * t]
        out[2 * t + 1] = -x[2 * t + 1]


@cuda.jit
def parity_stub(x, out):
    raise NotWrittenYet("ch02.no_divergence")


@cuda.jit
def parity_wrong_mapping(x, out):
    # no divergence, but the odd half writes the even elements again
    t = cuda.grid(1)
    half = x.size // 2
    if t < half:
        out[2 * t] = 2 * x[2 * t]
    else:
        i = 2 * (t - half)
        out[i] = -x[i]


def test_no_divergence_passes(capsys):
    for _ in range(2):
        ch02.check_no_divergence(parity_no_divergence)
    ch02.check_no_divergence(parity_two_per_thread)
    assert "SIMT efficiency 100%" in capsys.readouterr().out


def test_no_divergence_stub():
    with pytest.raises(ExerciseNotWritten, match=r"^Exercise ch02.no_divergence is not written yet"):
        ch02.check_no_divergence(parity_stub)


def test_no_divergence_rejects_the_divergent_kernel():
    with pytest.raises(CheckFailed) as e:
        ch02.check_no_divergence(branch_by_parity)
    msg = str(e.value)
    assert "The results are right, but warps diverge: SIMT efficiency is 80.0%" in msg
    assert "warp 0 of block 0 (threads 0..31 of the block)" in msg
    assert "`out[i] = 2 * x[i]` with only 16 of 32 lanes active (lanes 0, 2, 4, ..., 30)" in msg


def test_no_divergence_wrong_values():
    with pytest.raises(CheckFailed) as e:
        ch02.check_no_divergence(parity_wrong_mapping)
    msg = str(e.value)
    assert "elements were never written" in msg and "(i=1)" in msg
    assert "every element gets exactly one thread" in msg


# ------------------------------------------------------------------ exercise 2: balanced loops
@cuda.jit
def triangle_sum_sorted(n_terms, order, out):
    t = cuda.grid(1)
    if t < n_terms.size:
        i = order[t]
        acc = 0
        for k in range(n_terms[i]):
            acc += k
        out[i] = acc


@cuda.jit
def triangle_sum_closed_form(n_terms, order, out):
    t = cuda.grid(1)
    if t < n_terms.size:
        m = n_terms[t]
        out[t] = m * (m - 1) // 2


@cuda.jit
def triangle_sum_stub(n_terms, order, out):
    raise NotWrittenYet("ch02.balanced_loops")


@cuda.jit
def triangle_sum_ignores_order(n_terms, order, out):
    t = cuda.grid(1)
    if t < n_terms.size:
        acc = 0
        for k in range(n_terms[t]):
            acc += k
        out[t] = acc


@cuda.jit
def triangle_sum_writes_out_t(n_terms, order, out):
    t = cuda.grid(1)
    if t < n_terms.size:
        i = order[t]
        acc = 0
        for k in range(n_terms[i]):
            acc += k
        out[t] = acc


def test_balanced_loops_passes(capsys):
    ch02.check_balanced_loops(triangle_sum_sorted)
    ch02.check_balanced_loops(triangle_sum_closed_form)   # no loop at all is balanced too
    assert "warps are balanced" in capsys.readouterr().out


def test_balanced_loops_stub():
    with pytest.raises(ExerciseNotWritten, match=r"^Exercise ch02.balanced_loops is not written yet"):
        ch02.check_balanced_loops(triangle_sum_stub)


def test_balanced_loops_unbalanced():
    with pytest.raises(CheckFailed) as e:
        ch02.check_balanced_loops(triangle_sum_ignores_order)
    msg = str(e.value)
    assert "The sums are right, but the warps are unbalanced" in msg
    assert "the given triangle_sum gets" in msg and "sorted work gets" in msg
    assert "`acc += k`" in msg and "of 32 lanes active" in msg
    assert "i = order[t]" in msg


def test_balanced_loops_writes_sorted_positions():
    with pytest.raises(CheckFailed, match="it must write out\\[i\\], not out\\[t\\]"):
        ch02.check_balanced_loops(triangle_sum_writes_out_t)


def test_balanced_threshold_separates_the_two_kernels():
    import numpy as np

    n_terms = np.random.default_rng(1).integers(0, 64, 1024).astype(np.int32)
    ref = ch02.balanced_threshold(n_terms, 4, 256)
    assert 0.45 < ref["given"] < 0.65
    assert ref["sorted"] > 0.9
    assert ref["given"] < ref["needed"] < ref["sorted"]


# ------------------------------------------------------------------ exercise 3: occupancy by hand
def warps_per_sm(block_size, registers_per_thread):
    warps_per_block = (block_size + 31) // 32
    by_threads = 2048 // block_size
    by_warps = 64 // warps_per_block
    by_blocks = 32
    regs_per_warp = (registers_per_thread * 32 + 255) // 256 * 256
    if regs_per_warp * warps_per_block > 65536:
        return 0
    warps_by_regs = 65536 // regs_per_warp
    warps_by_regs -= warps_by_regs % 4
    by_regs = warps_by_regs // warps_per_block
    return min(by_threads, by_warps, by_blocks, by_regs) * warps_per_block


def test_occupancy_passes(capsys):
    ch02.check_occupancy(warps_per_sm)
    ch02.check_occupancy(lambda b, r: occupancy(b, r).warps_per_sm)
    assert "agrees with the occupancy calculator" in capsys.readouterr().out


def test_occupancy_stub():
    def stub(block_size, registers_per_thread):
        raise NotWrittenYet("ch02.occupancy")

    with pytest.raises(ExerciseNotWritten, match="is not written yet"):
        ch02.check_occupancy(stub)


def test_occupancy_forgets_the_block_limit():
    def no_block_limit(block_size, registers_per_thread):
        return min(64, 2048 // block_size * ((block_size + 31) // 32))

    with pytest.raises(CheckFailed) as e:
        ch02.check_occupancy(no_block_limit)
    msg = str(e.value)
    assert "warps_per_sm(32, 16) returned 64, expected 32" in msg
    assert "- blocks: at most 32 blocks" in msg


def test_occupancy_forgets_register_granularity():
    def no_rounding(block_size, registers_per_thread):
        wpb = (block_size + 31) // 32
        by_regs = 65536 // (registers_per_thread * 32) // wpb
        return min(2048 // block_size, 64 // wpb, 32, by_regs) * wpb

    with pytest.raises(CheckFailed) as e:
        ch02.check_occupancy(no_rounding)
    msg = str(e.value)
    # (256, 40) comes out right by luck (51 // 8 = 48 // 8 = 6 blocks); (128, 33) does not
    assert "warps_per_sm(128, 33) returned 60, expected 48" in msg
    assert "rounded up to 1280" in msg and "rounded down to a multiple of 4" in msg


def test_occupancy_float():
    with pytest.raises(CheckFailed, match="use // for the divisions"):
        ch02.check_occupancy(lambda b, r: float(occupancy(b, r).warps_per_sm))
