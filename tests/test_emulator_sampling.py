"""The emulator options the playground needs: a sampled trace (``trace_blocks``), a progress
callback, and the partial run an ``EmulationError`` carries; and chapter 0 reaches students."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

import simtlab
from simtlab.cli import sync_work_folder


@cuda.jit
def add_one(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += 1


@cuda.jit
def oob_in_block_2(a):
    i = cuda.grid(1)
    if cuda.blockIdx.x == 2 and cuda.threadIdx.x == 5:
        a[a.size + i] = 0
    a[i] = 1


def test_trace_blocks_traces_the_first_blocks_and_runs_all():
    a = np.zeros(8 * 64, np.float32)
    run = simtlab.emulate(add_one, 8, 64, a, trace_blocks=3)
    assert (a == 1).all()
    assert run.traced_blocks == 3
    assert sorted(set(run.memory.block.tolist())) == [0, 1, 2]
    assert sorted(set(run.lines.block.tolist())) == [0, 1, 2]
    assert run.metrics["global_requests"] == 3 * 2 * 2       # 3 blocks x 2 warps x (read, write)
    assert simtlab.emulate(add_one, 8, 64, a).traced_blocks == 8


def test_progress_is_called_after_each_block():
    calls = []
    simtlab.emulate(add_one, 5, 32, np.zeros(160), trace=False, progress=lambda d, t: calls.append((d, t)))
    assert calls == [(1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]


def test_an_error_carries_the_trace_up_to_the_fault():
    a = np.zeros(4 * 32, np.float32)
    with pytest.raises(simtlab.OutOfBoundsError) as err:
        simtlab.emulate(oob_in_block_2, 4, 32, a)
    partial = err.value.run
    assert isinstance(partial, simtlab.Run)
    assert set(partial.memory.block.tolist()) == {0, 1, 2}, "blocks 0 and 1 ran, block 2 failed, block 3 never ran"
    assert (partial.accesses("a", "write", block=1).index >= 32).all()


def test_simtlab_open_copies_chapter_0(tmp_path):
    from pathlib import Path
    chapters = Path(__file__).resolve().parent.parent / "chapters"
    actions = dict((p.name, a) for a, p in sync_work_folder(chapters, tmp_path))
    assert actions.get("00_playground.ipynb") == "copied"
