"""Chapter 5 checks: pass on correct answers, fail with a precise message on the stub and typical mistakes."""

from __future__ import annotations

import re

import pytest
from numba import cuda, float32

from simtlab.exercises import ch05
from simtlab.exercises.report import CheckFailed, ExerciseNotWritten, NotWrittenYet
from simtlab.kernels import reduction as R
from simtlab.kernels.reduction import block_sum

BLOCK = 256


# ------------------------------------------------------------------ exercise 1: sequential tree
@cuda.jit
def tree_stub(x, partial):
    raise NotWrittenYet("ch05.sequential")


@cuda.jit
def tree_barrier_at_top(x, partial):
    # another right answer: the barrier at the top of each level instead of the bottom
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * BLOCK + t
    s[t] = x[i] if i < x.size else 0.0
    step = BLOCK // 2
    while step > 0:
        cuda.syncthreads()
        if t < step:
            s[t] += s[t + step]
        step //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


@cuda.jit
def tree_no_padding(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * BLOCK + t
    s[t] = x[min(i, x.size - 1)]             # repeats the last element instead of adding 0
    cuda.syncthreads()
    step = BLOCK // 2
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


@cuda.jit
def tree_one_thread(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * BLOCK + t
    s[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    if t == 0:
        acc = float32(0.0)
        for k in range(BLOCK):
            acc += s[k]
        partial[cuda.blockIdx.x] = acc


def test_sequential_passes(capsys):
    ch05.check_sequential_tree(R.reduce_v3_sequential)
    ch05.check_sequential_tree(tree_barrier_at_top)
    assert "no divergence" in capsys.readouterr().out


def test_sequential_stub():
    with pytest.raises(ExerciseNotWritten, match=r"^Exercise ch05.sequential is not written yet"):
        ch05.check_sequential_tree(tree_stub)


def test_sequential_rejects_the_interleaved_tree():
    with pytest.raises(CheckFailed) as e:
        ch05.check_sequential_tree(R.reduce_v1_interleaved)
    msg = str(e.value)
    assert "tree level 1 (barrier epoch 1) diverges" in msg
    assert "Warp 0 of block 0 ran line" in msg and "`s[t] += s[t + stride]` with 16 of 32 lanes" in msg
    assert "(lanes 0, 2, 4, ..., 30)" in msg


def test_sequential_rejects_wrong_padding_and_serial_sum():
    with pytest.raises(CheckFailed, match=r"(?s)partial: .*element \(block=\d+\)"):
        ch05.check_sequential_tree(tree_no_padding)
    with pytest.raises(CheckFailed, match="Do not let one thread add everything"):
        ch05.check_sequential_tree(tree_one_thread)


# ---------------------------------------- broken answers: races before values, guard bugs as guard bugs
@cuda.jit
def tree_guard_skips_slot(x, partial):
    # the guard skips the load past the end of x, so those slots are never written
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * BLOCK + t
    if i < x.size:
        s[t] = x[i]
    cuda.syncthreads()
    step = BLOCK // 2
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


@cuda.jit
def tree_guard_off_by_one(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * BLOCK + t
    s[t] = x[i] if i <= x.size else 0.0
    cuda.syncthreads()
    step = BLOCK // 2
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


@cuda.jit
def shuffle_no_barrier_after_load(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * BLOCK + t
    s[t] = x[i] if i < x.size else 0.0
    step = BLOCK // 2                        # no syncthreads() between the load and the first level
    while step > 32:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t < 32:
        v = s[t] + s[t + 32]
        for offset in (16, 8, 4, 2, 1):
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        if t == 0:
            partial[cuda.blockIdx.x] = v


def test_missing_barrier_in_the_tree_is_reported_as_the_race_not_as_wrong_sums():
    with pytest.raises(CheckFailed) as e:
        ch05.check_sequential_tree(R.reduce_v3_missing_barrier)
    msg = str(e.value)
    assert msg.startswith("Launch: n = ")
    assert "Data race on shared array s[" in msg
    # the two threads and the source line of both accesses
    assert re.search(r"thread \d+ of block 0 reads it at line \d+ `s\[t\] \+= s\[t \+ step\]` and thread \d+ "
                     r"writes it at line \d+ `s\[t\] \+= s\[t \+ step\]`", msg), msg
    assert "end every level with cuda.syncthreads()" in msg
    assert "wrong value" not in msg and "partial sums" not in msg


def test_missing_barrier_after_the_load_is_a_race_naming_reader_and_writer():
    with pytest.raises(CheckFailed) as e:
        ch05.check_warp_shuffle(shuffle_no_barrier_after_load)
    msg = str(e.value)
    assert "A race: thread 0 of block 0 read s[128] at line" in msg
    assert "before thread 128 of the block wrote it in the load" in msg
    assert "uninitialised" not in msg


def test_a_guard_that_skips_the_slot_is_a_bounds_check_bug_not_a_barrier_bug():
    with pytest.raises(CheckFailed) as e:
        ch05.check_sequential_tree(tree_guard_skips_slot)
    msg = str(e.value)
    n = int(re.search(r"n = (\d+) elements", msg).group(1))
    assert "A bounds-check bug (not a missing barrier)" in msg
    element = int(re.search(r"It belongs to element x\[(\d+)\], past the end of x \(n = (\d+)\)", msg).group(1))
    assert element >= n
    assert "s[t] = x[i] if i < x.size else 0.0" in msg
    # not the emulator's generic advice to add a barrier
    assert "uninitialised" not in msg and "put cuda.syncthreads() between" not in msg


def test_an_off_by_one_guard_is_a_bounds_check_bug_naming_the_thread():
    with pytest.raises(CheckFailed) as e:
        ch05.check_sequential_tree(tree_guard_off_by_one)
    msg = str(e.value)
    n = int(re.search(r"n = (\d+) elements", msg).group(1))
    assert f"reads x[{n}]" in msg                                   # the emulator's own line
    assert f"A bounds-check bug: thread {n} went out of bounds (n = {n})" in msg


# ------------------------------------------------------------------ exercise 2: warp shuffle
@cuda.jit
def shuffle_ok(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * BLOCK + t
    s[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    step = BLOCK // 2
    while step > 32:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t < 32:
        v = s[t] + s[t + 32]
        for offset in (16, 8, 4, 2, 1):
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        if t == 0:
            partial[cuda.blockIdx.x] = v


@cuda.jit
def shuffle_block_sum(x, partial):
    # another right answer: the course's block_sum (shuffles in every warp, then in warp 0)
    i = cuda.grid(1)
    v = x[i] if i < x.size else float32(0.0)
    total = block_sum(v)
    if cuda.threadIdx.x == 0:
        partial[cuda.blockIdx.x] = total


@cuda.jit
def shuffle_serial_finish(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * BLOCK + t
    s[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    step = BLOCK // 2
    while step >= 32:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        v = float32(0.0)
        for k in range(32):
            v += s[k]
        partial[cuda.blockIdx.x] = v


def test_shuffle_passes(capsys):
    ch05.check_warp_shuffle(shuffle_ok)
    ch05.check_warp_shuffle(shuffle_block_sum)
    assert "passes no barrier" in capsys.readouterr().out


def test_shuffle_rejects_the_shared_tree():
    with pytest.raises(CheckFailed) as e:
        ch05.check_warp_shuffle(R.reduce_v3_sequential)
    assert "still writes 16, 8, 4, 2, 1 elements of its shared array s in barrier epochs 4, 5, 6, 7, 8" in str(e.value)


def test_shuffle_rejects_a_serial_finish():
    with pytest.raises(CheckFailed, match="ran a warp shuffle only 0 times"):
        ch05.check_warp_shuffle(shuffle_serial_finish)


def test_shuffle_wrong_sum_names_the_block():
    with pytest.raises(CheckFailed, match=r"\(block=0\)"):
        ch05.check_warp_shuffle(R.reduce_v5_warp_shuffle)     # v5 covers 512 elements per block


# ------------------------------------------------------------------ exercise 3: vecmat
@cuda.jit
def vecmat_ok(v, w, block_out):
    row = cuda.blockIdx.y
    k = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    acc = float32(0.0)
    while k < v.size:
        acc += w[row, k] * v[k]
        k += cuda.gridDim.x * cuda.blockDim.x
    total = block_sum(acc)
    if cuda.threadIdx.x == 0:
        block_out[row, cuda.blockIdx.x] = total


@cuda.jit
def vecmat_no_write(v, w, block_out):
    row = cuda.blockIdx.y
    k = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    acc = float32(0.0)
    while k < v.size:
        acc += w[row, k] * v[k]
        k += cuda.gridDim.x * cuda.blockDim.x
    total = block_sum(acc)
    if cuda.threadIdx.x == 0 and cuda.blockIdx.x == 0:
        block_out[row, 0] = total


def test_vecmat_passes(capsys):
    ch05.check_vecmat(vecmat_ok)
    ch05.check_vecmat(R.vecmat_v2_grid_stride)
    assert "exactly once" in capsys.readouterr().out


def test_vecmat_rejects_the_seed():
    # the seed's kernel also needs block_out zeroed; the check's first complaint is the skipped columns
    with pytest.raises(CheckFailed) as e:
        ch05.check_vecmat(R.vecmat_v1_seed)
    msg = str(e.value)
    assert "elements of w were never read, the first w[0, 512]" in msg
    assert "k += gridDim.x * blockDim.x" in msg


@cuda.jit
def vecmat_every_thread_writes(v, w, block_out):
    row = cuda.blockIdx.y
    k = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    acc = float32(0.0)
    while k < v.size:
        acc += w[row, k] * v[k]
        k += cuda.gridDim.x * cuda.blockDim.x
    total = block_sum(acc)
    block_out[row, cuda.blockIdx.x] = total          # every thread writes, not only thread 0


def test_vecmat_every_thread_writing_is_reported_as_a_race():
    with pytest.raises(CheckFailed) as e:
        ch05.check_vecmat(vecmat_every_thread_writes)
    msg = str(e.value)
    assert "Data race on global array block_out[" in msg
    assert "only thread 0 writes it" in msg and "wrong value" not in msg


def test_vecmat_unwritten_partial():
    with pytest.raises(CheckFailed, match=r"block_out\[0, 1\] was never written"):
        ch05.check_vecmat(vecmat_no_write)
