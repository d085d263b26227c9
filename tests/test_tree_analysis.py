"""Work, steps and the per-epoch picture of tree algorithms, counted from the emulator's trace."""

from __future__ import annotations

import math

import numpy as np
import pytest
from matplotlib.figure import Figure
from numba import cuda, float32

import simtlab
from simtlab.analysis.complexity import dataflow, work_and_steps
from simtlab.kernels import reduction
from simtlab.plots.complexity import plot_work_steps
from simtlab.plots.epochs import epoch_rows, plot_epochs

N_HS = 32


@cuda.jit
def hillis_steele_32(x, out):
    temp = cuda.shared.array(N_HS, float32)
    t = cuda.threadIdx.x
    temp[t] = x[t]
    cuda.syncthreads()
    d = 1
    while d < N_HS:
        v = temp[t]
        if t >= d:
            v += temp[t - d]
        cuda.syncthreads()               # everyone has read before anyone overwrites
        temp[t] = v
        cuda.syncthreads()
        d *= 2
    out[t] = temp[t]


def _tree_run(blocks=2):
    x = np.random.default_rng(1).random(reduction.BLOCK * blocks).astype(np.float32)
    partial = np.zeros(blocks, np.float32)
    return simtlab.emulate(reduction.block_sum_tree, blocks, reduction.BLOCK, x, partial)


def test_tree_reduction_work_is_n_minus_1_in_log_n_steps():
    run = _tree_run()
    n = reduction.BLOCK
    for block in (0, 1):
        ws = work_and_steps(run, "s", block=block)
        assert ws.work == n - 1                       # a binary tree over n leaves has n - 1 sums
        assert ws.steps == int(math.log2(n))
        assert list(ws.epochs) == sorted(ws.epochs) and len(set(ws.epochs)) == ws.steps


def test_hillis_steele_work_is_n_log_n_in_log_n_steps_across_its_double_barrier():
    x = np.random.default_rng(2).random(N_HS).astype(np.float32)
    out = np.zeros(N_HS, np.float32)
    run = simtlab.emulate(hillis_steele_32, 1, N_HS, x, out)
    np.testing.assert_allclose(out, np.cumsum(x), rtol=1e-5)
    work, steps = work_and_steps(run, "temp")
    assert (work, steps) == (N_HS * int(math.log2(N_HS)), int(math.log2(N_HS)))


def test_dataflow_links_reads_before_a_barrier_to_the_write_after_it():
    x = np.ones(N_HS, np.float32)
    run = simtlab.emulate(hillis_steele_32, 1, N_HS, x, np.zeros(N_HS, np.float32))
    writes = dataflow(run, "temp")
    load = [w for w in writes if not w.sources]
    assert len(load) == N_HS                          # temp[t] = x[t]: no element of temp read
    first_step = [w for w in writes if w.sources and w.epoch == min(v.epoch for v in writes if v.sources)]
    by_thread = {w.thread: w.sources for w in first_step}
    assert by_thread[0] == (0,) and by_thread[5] == (4, 5)     # d = 1: t reads t - 1 and t


def test_epoch_rows_draw_the_tree():
    run = _tree_run(blocks=1)
    rows = epoch_rows(run, "s")
    assert len(rows) == 1 + int(math.log2(reduction.BLOCK))   # the load, then one row per level
    epoch, writer, edges = rows[1]
    assert len(writer) == reduction.BLOCK // 2
    assert (reduction.BLOCK // 2, 0) in edges and (0, 0) in edges   # s[0] += s[128]


def test_plot_epochs_returns_a_labelled_figure():
    fig = plot_epochs(_tree_run(blocks=1), "s")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert ax.get_xlabel() and ax.get_ylabel() and fig._suptitle.get_text()
    assert len(ax.get_yticklabels()) == 1 + int(math.log2(reduction.BLOCK))


def test_work_and_steps_errors_name_the_problem():
    run = _tree_run(blocks=1)
    with pytest.raises(KeyError, match="no array named"):
        work_and_steps(run, "nope")
    with pytest.raises(ValueError, match="never touched"):
        work_and_steps(run, "s", block=3)
    x = np.ones(256, np.float32)
    untraced = simtlab.emulate(reduction.block_sum_tree, 1, 256, x, np.zeros(1, np.float32), trace=False)
    with pytest.raises(ValueError, match="trace=True"):
        work_and_steps(untraced, "s")


def test_plot_work_steps_draws_one_line_per_version():
    rows = [{"version": v, "n": n, "work": w(n), "steps": s(n)}
            for v, w, s in [("Hillis-Steele", lambda n: n * int(math.log2(n)), lambda n: int(math.log2(n))),
                            ("Blelloch", lambda n: 2 * n, lambda n: 2 * int(math.log2(n)))]
            for n in (16, 32, 64)]
    fig = plot_work_steps(rows)
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert [len(ax.get_lines()) for ax in fig.axes] == [2, 2]
    assert all(ax.get_xlabel() and ax.get_ylabel() for ax in fig.axes)
    with pytest.raises(ValueError, match="lacks"):
        plot_work_steps([{"version": "x", "n": 4}])


def test_pattern_work_is_linear_in_n_and_steps_constant():
    from simtlab.plots.patterns import pattern_work_rows, plot_pattern_work_steps

    rows = {(r["version"], r["n"]): r for r in pattern_work_rows(sides=(16, 32))}
    for n in (256, 1024):
        # map: read x[i], write out[i]; no barrier
        assert (rows[("map", n)]["work"], rows[("map", n)]["steps"]) == (2 * n, 1)
        # padded transpose: global read, shared write | barrier | shared read, global write
        t = rows[("transpose, padded tile", n)]
        assert (t["work"], t["steps"]) == (4 * n, 2)
        assert rows[("stencil 1-D, shared halo", n)]["steps"] == 2
    assert isinstance(plot_pattern_work_steps(sides=(16,)), Figure)


def test_each_executed_line_carries_its_barrier_epoch():
    run = _tree_run(blocks=2)
    lines, mem = run.lines, run.memory
    levels = int(math.log2(reduction.BLOCK))
    # every thread passes the load barrier and one barrier per level
    per_thread = {}
    for b, t, e in zip(lines.block, lines.thread, lines.epoch):
        per_thread[(b, t)] = max(per_thread.get((b, t), 0), e)
    assert set(per_thread.values()) == {1 + levels}
    # each thread's epochs never decrease along its own lines
    for b in (0, 1):
        for t in (0, 5, 255):
            mine = lines[(lines.block == b) & (lines.thread == t)]
            assert (np.diff(mine.epoch[np.argsort(mine.step)]) >= 0).all()
    # an access happens in an epoch in which its thread executed lines
    assert {(int(b), int(t), int(e)) for b, t, e in zip(mem.block, mem.thread, mem.epoch)} <= \
        {(int(b), int(t), int(e)) for b, t, e in zip(lines.block, lines.thread, lines.epoch)}

    @cuda.jit
    def double(x):
        i = cuda.grid(1)
        x[i] *= 2

    assert set(simtlab.emulate(double, 2, 32, np.ones(64, np.float32)).lines.epoch) == {0}


def test_scan_work_and_steps_follow_the_formulas():
    from simtlab.plots.scan import plot_scan_work_steps, scan_complexity_rows

    rows = {(r["version"], r["n"]): r for r in scan_complexity_rows(sizes=(16, 64, 128))}
    for n in (16, 64, 128):
        log = int(math.log2(n))
        hs, bl = rows[("Hillis-Steele", n)], rows[("Blelloch", n)]
        # Hillis-Steele: at distance d, the n - d threads t >= d write; log2 n steps
        assert (hs["work"], hs["steps"]) == (sum(n - 2**k for k in range(log)), log)
        assert bl["steps"] == 2 * log and bl["work"] < 3 * n      # up-sweep + down-sweep: O(n)
    assert isinstance(plot_scan_work_steps(sizes=(16,)), Figure)


def test_run_accesses_selects_one_array_by_kind_and_block():
    run = _tree_run(blocks=2)
    reads = run.accesses("x", "read")
    assert len(reads) == 2 * reduction.BLOCK and set(reads.kind) == {0}
    assert len(run.accesses("x", "read", block=1)) == reduction.BLOCK
    assert len(run.accesses("partial", "write")) == 2 and len(run.accesses("x", "write")) == 0
    with pytest.raises(ValueError, match="kind must be one of"):
        run.accesses("x", "load")
