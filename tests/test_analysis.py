"""Each analysis gives the values the hardware would, on small kernels written for the test."""

import numpy as np
import pytest
from numba import cuda, float32

import simtlab
from simtlab.analysis import bank_conflicts, coalescing, divergence
from atomic_cases import cas_loop_add


@cuda.jit
def strided_read(x, out, stride):
    i = cuda.grid(1)
    out[i] = x[i * stride]


@pytest.mark.parametrize("stride, sectors", [(1, 4), (2, 8), (4, 16), (8, 32), (32, 32)])
def test_sectors_per_warp_read(stride, sectors):
    x = np.zeros(32 * stride, np.float32)
    out = np.zeros(32, np.float32)
    run = simtlab.emulate(strided_read, 1, 32, x, out, stride)
    req = coalescing.requests(run.memory)
    reads = req[req.array == run.array("x").id]
    assert list(reads.sectors) == [sectors]
    writes = req[req.array == run.array("out").id]
    assert list(writes.sectors) == [4] and list(writes.lines) == [1]


def test_float64_and_misaligned_requests():
    @cuda.jit
    def k(x, y, out):
        i = cuda.grid(1)
        out[i] = x[i] + y[i + 1]

    x = np.zeros(32, np.float64)
    y = np.zeros(33, np.float64)
    run = simtlab.emulate(k, 1, 32, x, y, np.zeros(32, np.float64))
    req = coalescing.requests(run.memory)
    by_array = {int(a): int(s) for a, s in zip(req.array, req.sectors)}
    assert by_array[run.array("x").id] == 8          # 256 bytes
    assert by_array[run.array("y").id] == 9          # shifted by 8 bytes: one more sector


def test_global_metrics_average_over_requests():
    x = np.zeros(64 * 2, np.float32)
    run = simtlab.emulate(strided_read, 2, 32, x, np.zeros(64, np.float32), 2)
    m = run.metrics
    assert m["global_requests"] == 4                  # 2 warps x (1 read + 1 write)
    assert m["global_sectors_per_request"] == (8 + 4) / 2


TILE = 32


@cuda.jit
def column_read(out, pad):
    tile = cuda.shared.array((32, 33), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    tile[ty, tx] = tx
    cuda.syncthreads()
    if pad:
        out[ty, tx] = tile[tx, ty]             # row stride 33 words: column spreads over banks
    else:
        out[ty, tx] = tile[tx % 32, ty] if False else tile[tx, ty]


@cuda.jit
def column_read_unpadded(out):
    tile = cuda.shared.array((32, 32), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    tile[ty, tx] = tx
    cuda.syncthreads()
    out[ty, tx] = tile[tx, ty]                 # a warp reads one column: all in one bank


def test_bank_conflicts_column_read_32_vs_padded_1():
    out = np.zeros((32, 32), np.float32)
    run = simtlab.emulate(column_read_unpadded, 1, (32, 32), out)
    req = bank_conflicts.requests(run.memory)
    reads = req[req.kind == 0]
    writes = req[req.kind == 1]
    assert (reads.wavefronts == 32).all() and len(reads) == 32
    assert (writes.wavefronts == 1).all()
    assert run.metrics["shared_bank_conflicts"] == 32 * 31

    run = simtlab.emulate(column_read, 1, (32, 32), out, True)
    req = bank_conflicts.requests(run.memory)
    assert (req.wavefronts == 1).all()
    assert run.metrics["shared_wavefronts_per_request"] == 1.0
    assert run.metrics["shared_bank_conflicts"] == 0


def test_broadcast_is_one_wavefront_and_two_words_per_bank_is_two():
    @cuda.jit
    def k(out, stride):
        s = cuda.shared.array(128, float32)
        t = cuda.threadIdx.x
        for j in range(4):
            s[t * 4 + j] = j
        cuda.syncthreads()
        out[t] = s[0] + s[(t * stride) % 128]

    run = simtlab.emulate(k, 1, 32, np.zeros(32, np.float32), 2)
    req = bank_conflicts.requests(run.memory)
    reads = req[req.kind == 0]
    assert sorted(reads.wavefronts) == [1, 2]         # s[0]: broadcast; stride 2: 2-way


def test_divergence_if_else_and_loops():
    from simtlab.kernels import divergence as dv
    x = np.arange(64, dtype=np.float32)
    run = simtlab.emulate(dv.branch_by_parity, 1, 64, x, np.zeros_like(x))
    ins = divergence.instructions(run.lines)
    assert set(ins.lanes[ins.line == ins.line.max()]) == {16}     # else-branch: odd lanes
    eff = run.metrics["simt_efficiency"]
    # per warp: 3 lines run by all 32 lanes (i =, if i < n, if i % 2) and one line in each
    # branch run by 16 lanes: (3 * 32 + 2 * 16) lane slots used out of 5 * 32
    assert eff == pytest.approx((3 * 32 + 2 * 16) / (5 * 32))
    run = simtlab.emulate(dv.branch_by_warp, 1, 64, x, np.zeros_like(x))
    assert run.metrics["simt_efficiency"] == 1.0

    n_terms = np.full(32, 3, np.int32)
    n_terms[0] = 10
    run = simtlab.emulate(dv.triangle_sum, 1, 32, n_terms, np.zeros(32, np.int32))
    masks, lines = divergence.lane_masks(run.lines, 0)
    assert masks.shape[1] == 32
    assert masks.sum(axis=1).min() == 1                          # lane 0 loops alone at the end
    assert run.metrics["simt_efficiency"] < 0.6


def test_partial_warp_counts_idle_lanes():
    @cuda.jit
    def k(x):
        x[cuda.threadIdx.x] = 1

    run = simtlab.emulate(k, 1, 48, np.zeros(48, np.int64))
    assert run.metrics["warps"] == 2
    assert run.metrics["simt_efficiency"] == pytest.approx(48 / 64)


def test_race_found_when_a_reduction_barrier_is_missing():
    @cuda.jit
    def racy_sum(x, out):
        s = cuda.shared.array(64, float32)
        t = cuda.threadIdx.x
        s[t] = x[t]
        cuda.syncthreads()
        step = 32
        while step > 0:
            if t < step:
                s[t] += s[t + step]
            step //= 2                    # no syncthreads() here: levels overlap
        if t == 0:
            out[0] = s[0]

    run = simtlab.emulate(racy_sum, 1, 64, np.ones(64, np.float32), np.zeros(1, np.float32))
    assert run.metrics["races"] > 0
    race = run.races[0]
    assert race.array == "s" and race.space == "shared"
    assert {"read", "write"} == set(race.kinds)
    assert "no barrier" in str(race)

    from simtlab.kernels import reduction
    ok = simtlab.emulate(reduction.block_sum_tree, 2, 256, np.ones(512, np.float32),
                         np.zeros(2, np.float32))
    assert ok.metrics["races"] == 0 and ok.races == []


def test_global_race_between_blocks_and_none_with_atomics():
    @cuda.jit
    def plain_count(out):
        out[0] = out[0] + 1

    @cuda.jit
    def atomic_count(out):
        cuda.atomic.add(out, 0, 1)

    out = np.zeros(1, np.int64)
    run = simtlab.emulate(plain_count, 2, 1, out)
    assert run.metrics["races"] == 1
    (b1, _), (b2, _) = run.races[0].threads
    assert b1 != b2
    out[:] = 0
    run = simtlab.emulate(atomic_count, 4, 32, out)
    assert out[0] == 128 and run.metrics["races"] == 0


@cuda.jit
def cas_loop_max_on_a_row(x, acc):
    """The same loop through compare_and_swap on a row view (a 1-D array, element 0)."""
    i = cuda.grid(1)
    if i < x.size:
        row = acc[i % acc.shape[0]]
        old = row[0]
        while old < x[i]:
            seen = cuda.atomic.compare_and_swap(row, old, x[i])
            if seen == old:
                break
            old = seen


@cuda.jit
def peek_at_a_cas_target(x, acc, out):
    """Even threads CAS into acc[0]; odd threads read it and keep what they saw."""
    i = cuda.grid(1)
    if i < x.size:
        if i % 2 == 0:
            old = acc[0]
            while True:
                assumed = old
                old = cuda.atomic.cas(acc, 0, assumed, assumed + x[i])
                if old == assumed:
                    break
        else:
            out[i] = acc[0]


@cuda.jit
def read_a_counter(counter, out):
    """Reads a counter that other threads atomically add to, and uses what it read."""
    i = cuda.grid(1)
    cuda.atomic.add(counter, 0, 1)
    out[i] = counter[0]


@cuda.jit
def write_beside_atomics(counter):
    i = cuda.grid(1)
    if i == 5:
        counter[0] = 0
    else:
        cuda.atomic.add(counter, 0, 1)


@pytest.mark.parametrize("engine", ["greenlet", "auto"])
def test_a_compare_and_swap_loop_is_not_a_race(engine):
    x = np.arange(1, 101, dtype=np.int32)
    acc = np.zeros(4, np.int32)
    run = simtlab.emulate(cas_loop_add, 2, 64, x, acc, engine=engine)
    np.testing.assert_array_equal(acc, [x[s::4].sum() for s in range(4)])
    assert run.metrics["races"] == 0, run.races[:1]
    acc = np.zeros((3, 1), np.int32)
    run = simtlab.emulate(cas_loop_max_on_a_row, 2, 64, x, acc, engine=engine)
    np.testing.assert_array_equal(acc[:, 0], [x[s::3].max() for s in range(3)])
    assert run.metrics["races"] == 0, run.races[:1]


@pytest.mark.parametrize("engine", ["greenlet", "auto"])
def test_reads_that_do_not_feed_a_cas_still_race_with_atomics(engine):
    x = np.ones(64, np.int32)
    run = simtlab.emulate(peek_at_a_cas_target, 1, 64, x, np.zeros(1, np.int32),
                          np.zeros(64, np.int32), engine=engine)
    assert run.metrics["races"] == 1
    assert sorted(run.races[0].kinds) == ["atomic", "read"]
    lines = {run.source(line).strip() for line in run.races[0].lines}
    assert "out[i] = acc[0]" in lines        # the peek, not the CAS loop's own guess

    run = simtlab.emulate(read_a_counter, 2, 32, np.zeros(1, np.int32), np.zeros(64, np.int32),
                          engine=engine)
    assert run.metrics["races"] == 1 and sorted(run.races[0].kinds) == ["atomic", "read"]

    run = simtlab.emulate(write_beside_atomics, 1, 32, np.zeros(1, np.int32), engine=engine)
    assert run.metrics["races"] == 1 and sorted(run.races[0].kinds) == ["atomic", "write"]


def test_syncwarp_orders_accesses_inside_a_warp():
    @cuda.jit
    def k(out, use_syncwarp):
        s = cuda.shared.array(32, float32)
        lane = cuda.threadIdx.x
        s[lane] = lane
        if use_syncwarp:
            cuda.syncwarp()
        out[lane] = s[31 - lane] if lane >= 16 else 0.0

    out = np.zeros(32, np.float32)
    assert simtlab.emulate(k, 1, 32, out, 1).metrics["races"] == 0
    assert simtlab.emulate(k, 1, 32, out, 0).metrics["races"] == 16
