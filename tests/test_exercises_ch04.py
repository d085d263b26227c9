"""Chapter 4 checks: pass on correct answers, fail with a precise message on the stub and typical mistakes."""

from __future__ import annotations

import math

import pytest
from numba import cuda, float32

from simtlab.exercises import ch04
from simtlab.exercises.report import CheckFailed, ExerciseNotWritten, NotWrittenYet


# ------------------------------------------------------------------ exercise 1: race-free Hillis-Steele
@cuda.jit
def scan_two_barriers(x, out):
    temp = cuda.shared.array(0, float32)
    t = cuda.threadIdx.x
    temp[t] = x[t]
    cuda.syncthreads()
    d = 1
    while d < cuda.blockDim.x:
        v = temp[t - d] if t >= d else float32(0)
        cuda.syncthreads()
        temp[t] += v
        cuda.syncthreads()
        d *= 2
    out[t] = temp[t]


@cuda.jit
def scan_double_buffer(x, out):
    temp = cuda.shared.array(0, float32)
    t = cuda.threadIdx.x
    b = cuda.blockDim.x
    src = 0
    temp[t] = x[t]
    cuda.syncthreads()
    d = 1
    while d < b:
        dst = b - src
        if t >= d:
            temp[dst + t] = temp[src + t] + temp[src + t - d]
        else:
            temp[dst + t] = temp[src + t]
        cuda.syncthreads()
        src = dst
        d *= 2
    out[t] = temp[src + t]


@cuda.jit
def scan_racy(x, out):
    temp = cuda.shared.array(0, float32)
    t = cuda.threadIdx.x
    temp[t] = x[t]
    cuda.syncthreads()
    d = 1
    while d < cuda.blockDim.x:
        if t >= d:
            temp[t] += temp[t - d]
        cuda.syncthreads()
        d *= 2
    out[t] = temp[t]


@cuda.jit
def scan_one_step_short(x, out):
    temp = cuda.shared.array(0, float32)
    t = cuda.threadIdx.x
    temp[t] = x[t]
    cuda.syncthreads()
    d = 1
    while 2 * d < cuda.blockDim.x:          # misses the last step
        v = temp[t - d] if t >= d else float32(0)
        cuda.syncthreads()
        temp[t] += v
        cuda.syncthreads()
        d *= 2
    out[t] = temp[t]


@cuda.jit
def scan_stub(x, out):
    raise NotWrittenYet("ch04.race_free")


def test_race_free_passes(capsys):
    ch04.check_race_free_scan(scan_two_barriers)
    ch04.check_race_free_scan(scan_double_buffer)
    assert "no data race" in capsys.readouterr().out


def test_race_free_stub():
    with pytest.raises(ExerciseNotWritten, match=r"^Exercise ch04.race_free is not written yet"):
        ch04.check_race_free_scan(scan_stub)


def test_race_free_names_the_race():
    with pytest.raises(CheckFailed) as e:
        ch04.check_race_free_scan(scan_racy)
    msg = str(e.value)
    assert "Data race on shared array temp[" in msg
    assert "`temp[t] += temp[t - d]`" in msg and "with no barrier between them" in msg
    assert "cuda.syncthreads()" in msg and "1 block of 32 threads" in msg


def test_race_free_wrong_values():
    with pytest.raises(CheckFailed) as e:
        ch04.check_race_free_scan(scan_one_step_short)
    msg = str(e.value)
    assert "out: " in msg and "elements have the wrong value" in msg and "(i=16)" in msg
    assert "inclusive" in msg


# ------------------------------------------------------------------ exercise 2: warp exclusive max
@cuda.jit
def warp_max_good(x, out):
    i = cuda.grid(1)
    lane = cuda.threadIdx.x % 32
    v = x[i]
    d = 1
    while d < 32:
        y = cuda.shfl_up_sync(0xFFFFFFFF, v, d)
        if lane >= d:
            v = max(v, y)
        d *= 2
    before = cuda.shfl_up_sync(0xFFFFFFFF, v, 1)
    out[i] = before if lane > 0 else -math.inf


@cuda.jit
def warp_max_zero_identity(x, out):
    i = cuda.grid(1)
    lane = cuda.threadIdx.x % 32
    v = x[i]
    d = 1
    while d < 32:
        y = cuda.shfl_up_sync(0xFFFFFFFF, v, d)
        if lane >= d:
            v = max(v, y)
        d *= 2
    before = cuda.shfl_up_sync(0xFFFFFFFF, v, 1)
    out[i] = before if lane > 0 else 0.0


@cuda.jit
def warp_max_inclusive(x, out):
    i = cuda.grid(1)
    lane = cuda.threadIdx.x % 32
    v = x[i]
    d = 1
    while d < 32:
        y = cuda.shfl_up_sync(0xFFFFFFFF, v, d)
        if lane >= d:
            v = max(v, y)
        d *= 2
    out[i] = v


@cuda.jit
def warp_max_shared(x, out):
    s = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i]
    cuda.syncthreads()
    lane = t % 32
    m = -math.inf
    for k in range(t - lane, t):
        m = max(m, s[k])
    out[i] = m


def test_warp_max_passes(capsys):
    ch04.check_warp_exclusive_max(warp_max_good)
    assert "using only shuffles" in capsys.readouterr().out


def test_warp_max_zero_identity():
    with pytest.raises(CheckFailed) as e:
        ch04.check_warp_exclusive_max(warp_max_zero_identity)
    msg = str(e.value)
    assert "lane 0" in msg and "-inf" in msg and "not 0" in msg


def test_warp_max_inclusive():
    with pytest.raises(CheckFailed, match="out is the inclusive scan: shift it by one lane"):
        ch04.check_warp_exclusive_max(warp_max_inclusive)


def test_warp_max_shared_memory():
    with pytest.raises(CheckFailed, match="values are right, but the kernel made [0-9]+ shared-memory accesses"):
        ch04.check_warp_exclusive_max(warp_max_shared)


# ------------------------------------------------------------------ exercise 3: add-back
@cuda.jit
def add_good(out, scanned_sums):
    b = cuda.blockIdx.x
    i = cuda.grid(1)
    if b > 0 and i < out.size:
        out[i] += scanned_sums[b - 1]


@cuda.jit
def add_wrong_block(out, scanned_sums):
    b = cuda.blockIdx.x
    i = cuda.grid(1)
    if i < out.size:
        out[i] += scanned_sums[b]                # its own block's sum too


@cuda.jit
def add_twice(out, scanned_sums):
    b = cuda.blockIdx.x
    i = cuda.grid(1)
    if b > 0 and i < out.size:
        out[i] += scanned_sums[b - 1] * 0.5
        out[i] += scanned_sums[b - 1] * 0.5


@cuda.jit
def add_no_guard(out, scanned_sums):
    b = cuda.blockIdx.x
    i = cuda.grid(1)
    if b > 0:
        out[i] += scanned_sums[b - 1]


def test_add_back_passes(capsys):
    ch04.check_add_block_prefix(add_good)
    assert "one write per element" in capsys.readouterr().out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_add_back_wrong_block(seed):
    """Block 0 adds scanned_sums[0] where it needs nothing. Seeded: with fresh inputs, block 0's
    sum was sometimes 0 (small ints of either sign), so element 0 came out right by chance and
    the first wrong element was in block 1 (one CI run)."""
    with pytest.raises(CheckFailed) as e:
        ch04.check_add_block_prefix(add_wrong_block, seed=seed)
    msg = str(e.value)
    assert "Element i = 0 is thread 0 of block 0; it needs nothing added" in msg


def test_add_back_written_twice():
    with pytest.raises(CheckFailed, match=r"result is right, but out\[[0-9]+\] was written 2 times"):
        ch04.check_add_block_prefix(add_twice)


def test_add_back_out_of_bounds():
    with pytest.raises(CheckFailed, match="the last block is partial, so guard with i < out.size"):
        ch04.check_add_block_prefix(add_no_guard)
