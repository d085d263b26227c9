"""Hidden checks: each of chapters 1-5 has one in its master (graded by `simtlab grade`, dropped from
the student notebook); it passes on a right answer and fails on the stub and on a broken answer,
including answers the visible check lets through.

That they pass on the masters' own answers is tested by nbval, which runs every cell of
solutions/ (hidden checks included) top to bottom.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from numba import cuda

from simtlab.exercises import ch01, ch02, ch03, ch04, ch05, ch06
from simtlab.exercises.report import CheckFailed, ExerciseNotWritten, NotWrittenYet
from simtlab.kernels import reduction as R

from test_exercises_ch01 import scale_add, scale_add_no_guard, scale_add_stub
from test_exercises_ch02 import warps_per_sm
from test_exercises_ch03 import scale_rows, scale_rows_stub, scale_rows_swapped
from test_exercises_ch04 import add_good, add_wrong_block
from test_exercises_ch05 import tree_guard_skips_slot, tree_stub
from test_exercises_ch06 import tiled_no_zero_fill, tiled_stub

REPO = Path(__file__).resolve().parent.parent
HIDDEN = {
    "01_gpu_architecture": ("ch01.first_kernel", "ch01.hidden_check_first_kernel(scale_add)"),
    "02_warps_and_divergence": ("ch02.occupancy", "ch02.hidden_check_occupancy(warps_per_sm)"),
    "03_communication_patterns": ("ch03.scale_rows", "ch03.hidden_check_scale_rows(scale_rows)"),
    "04_scan": ("ch04.add_back", "ch04.hidden_check_add_block_prefix(add_block_prefix)"),
    "05_reduction": ("ch05.sequential", "ch05.hidden_check_sequential_tree(reduce_sequential)"),
    "06_gemm": ("ch06.tiled", "ch06.hidden_check_tiled_gemm(gemm_tiled)"),
}


def cells(path: Path):
    return json.loads(path.read_text())["cells"]


@pytest.mark.parametrize("chapter", sorted(HIDDEN))
def test_each_master_has_a_hidden_check_the_student_notebook_lacks(chapter):
    exercise, call = HIDDEN[chapter]
    hidden = [c for c in cells(REPO / "solutions" / f"{chapter}.ipynb")
              if (c["metadata"].get("simtlab") or {}).get("role") == "hidden-check"]
    assert hidden, f"{chapter}: no hidden-check cell"
    meta = hidden[0]["metadata"]["simtlab"]
    assert meta["id"].startswith(exercise + ".") and meta["points"] >= 1     # counts towards the exercise
    assert call in "".join(hidden[0]["source"])
    student = "".join("".join(c["source"]) for c in cells(REPO / "chapters" / f"{chapter}.ipynb"))
    assert "hidden_check" not in student


# ---------------------------------------------------------------- ch01: odd sizes and block sizes
def test_ch01_hidden(capsys):
    ch01.hidden_check_first_kernel(scale_add)
    assert "scale_add computes" in capsys.readouterr().out
    with pytest.raises(ExerciseNotWritten):
        ch01.hidden_check_first_kernel(scale_add_stub)
    with pytest.raises(CheckFailed, match="out-of-bounds"):
        ch01.hidden_check_first_kernel(scale_add_no_guard)


# ---------------------------------------------------------------- ch02: block sizes no multiple of 32
def _floor(block_size, registers_per_thread):
    warps_per_block = max(block_size // 32, 1)
    by_threads = 2048 // block_size
    by_warps = 64 // warps_per_block
    regs_per_warp = (registers_per_thread * 32 + 255) // 256 * 256
    if regs_per_warp * warps_per_block > 65536:
        return 0
    warps_by_regs = 65536 // regs_per_warp
    warps_by_regs -= warps_by_regs % 4
    return min(by_threads, by_warps, 32, warps_by_regs // warps_per_block) * warps_per_block


def test_ch02_hidden_catches_what_the_visible_check_lets_through(capsys):
    ch02.hidden_check_occupancy(warps_per_sm)
    ch02.check_occupancy(_floor)                     # the visible check passes the floor division...
    with pytest.raises(CheckFailed, match=r"warps_per_sm\(\d+, \d+\) returned \d+, expected \d+"):
        ch02.hidden_check_occupancy(_floor)          # ...the hidden one does not

    def stub(block_size, registers_per_thread):
        raise NotWrittenYet("ch02.occupancy")

    with pytest.raises(ExerciseNotWritten):
        ch02.hidden_check_occupancy(stub)


# ---------------------------------------------------------------- ch03: other odd shapes
def test_ch03_hidden(capsys):
    ch03.hidden_check_scale_rows(scale_rows)
    with pytest.raises(ExerciseNotWritten):
        ch03.hidden_check_scale_rows(scale_rows_stub)
    with pytest.raises(CheckFailed):
        ch03.hidden_check_scale_rows(scale_rows_swapped)


# ---------------------------------------------------------------- ch04: blocks of 96, 256 and 33 threads
@cuda.jit
def add_back_stub(out, scanned_sums):
    raise NotWrittenYet("ch04.add_back")


def test_ch04_hidden(capsys):
    ch04.hidden_check_add_block_prefix(add_good)
    with pytest.raises(ExerciseNotWritten):
        ch04.hidden_check_add_block_prefix(add_back_stub)
    with pytest.raises(CheckFailed, match="needs"):
        ch04.hidden_check_add_block_prefix(add_wrong_block)


# ---------------------------------------------------------------- ch05: 1, 255, 257 and 7 * 256 + 3 elements
def test_ch05_hidden(capsys):
    ch05.hidden_check_sequential_tree(R.reduce_v3_sequential)
    with pytest.raises(ExerciseNotWritten):
        ch05.hidden_check_sequential_tree(tree_stub)
    with pytest.raises(CheckFailed, match="A bounds-check bug"):
        ch05.hidden_check_sequential_tree(tree_guard_skips_slot)


# ---------------------------------------------------------------- ch06: edge shapes of the tiled GEMM
def test_ch06_hidden_runs_the_edge_shapes(capsys):
    from simtlab.kernels import gemm as G

    # one element, one exact tile, K a multiple of 16 and matrices thinner than a tile: shapes the
    # visible check (odd sizes from 17 up) never draws
    assert (1, 1, 1) in ch06.HIDDEN_TILED_SHAPES and any(k % 16 == 0 for _, _, k in ch06.HIDDEN_TILED_SHAPES)
    ch06.hidden_check_tiled_gemm(G.gemm_v3_tiled)
    assert capsys.readouterr().out.count("Tiled GEMM right") == len(ch06.HIDDEN_TILED_SHAPES)
    with pytest.raises(ExerciseNotWritten):
        ch06.hidden_check_tiled_gemm(tiled_stub)
    with pytest.raises(CheckFailed):
        ch06.hidden_check_tiled_gemm(tiled_no_zero_fill)
