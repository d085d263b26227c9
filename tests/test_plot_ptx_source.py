"""The PTX source view (CUDA C beside NVRTC's PTX, per-instruction executions and active
lanes): counts against what the launch implies, computed here by hand. Skipped without NVRTC."""

from __future__ import annotations

import numpy as np
import pytest

import simtlab
from simtlab.html_theme import WARN
from simtlab import cuda_c_kernels as CC

try:
    CC.nvrtc_version()
except CC.CompilerMissing as why:
    pytest.skip(f"NVRTC is not installed ({why})", allow_module_level=True)

from simtlab.plots.ptx_source import (instruction_totals, ptx_instruction_rows, ptx_line_rows,  # noqa: E402
                                      ptx_source_html)
from cuda_c_cases import BLOCK_SUM  # noqa: E402

ADD_LINE = 9          # `if (t < stride) s[t] += s[t + stride];`
STORE_LINE = 12       # `if (t == 0) partial[blockIdx.x] = s[0];`


def _run(blocks=8, tpb=128, n=1000):
    k = simtlab.cuda_c(BLOCK_SUM, "block_sum")
    return simtlab.emulate(k, blocks, tpb, np.arange(n, dtype=np.int32), np.zeros(blocks, np.int32), n)


def test_each_instruction_counts_the_warps_and_lanes_that_ran_it():
    blocks, tpb = 8, 128
    run = _run(blocks, tpb)
    rows = ptx_instruction_rows(run)
    assert len(rows) == len(simtlab.cuda_c(BLOCK_SUM, "block_sum").entry.instructions)
    # the first instruction: every warp of every block, all lanes
    assert rows[0]["warps"] == blocks * tpb // 32 and rows[0]["lanes"] == blocks * tpb
    # the shared store of the reduction step: strides 64, 32, ..., 1; lanes t < stride, in
    # ceil(stride / 32) warps
    strides = [tpb >> k for k in range(1, 8)]
    adds = [r for r in rows if r["line"] == ADD_LINE and r["ptx"].startswith("st.shared")]
    assert len(adds) == 1
    assert adds[0]["lanes"] == blocks * sum(strides)
    assert adds[0]["warps"] == blocks * sum(-(-s // 32) for s in strides)
    # the last store: one lane of one warp per block
    store = [r for r in rows if r["line"] == STORE_LINE and r["ptx"].startswith("st.global")]
    assert store[0]["warps"] == blocks and store[0]["lanes"] == blocks
    assert store[0]["lanes_per_warp"] == 1.0


def test_partial_last_warp_shows_fewer_lanes_and_lines_sum_their_instructions():
    run = _run(blocks=1, tpb=48, n=48)       # one full warp and one of 16 lanes
    lines = {r["line"]: r for r in ptx_line_rows(run)}
    rows = ptx_instruction_rows(run)
    assert rows[0]["warps"] == 2 and rows[0]["lanes"] == 48 and rows[0]["lanes_per_warp"] == 24
    mine = [r for r in rows if r["line"] == ADD_LINE]
    assert lines[ADD_LINE]["warps"] == sum(r["warps"] for r in mine) > 0
    assert lines[ADD_LINE]["instructions"] == len(mine)
    assert "__shared__ int s[128];" in lines[3]["source"] and lines[3]["warps"] == 0
    assert instruction_totals(run) == (sum(r["warps"] for r in rows), sum(r["lanes"] for r in rows))


def test_html_shows_source_beside_ptx_with_labels_and_colours():
    run = _run()
    page = ptx_source_html(run)
    assert "s[t] += s[t + stride];" in page and "st.shared.u32" in page
    assert "$L__BB0_" in page, "branch targets are shown as labels"
    assert f"color:{WARN}" in page, "a divergent instruction is coloured"
    assert page.index("CUDA C") < page.index("PTX</th>")


def test_python_and_untraced_runs_have_no_ptx_view():
    run = simtlab.emulate(simtlab.cuda_c(BLOCK_SUM, "block_sum"), 1, 32, np.zeros(32, np.int32),
                          np.zeros(1, np.int32), 32, trace=False)
    with pytest.raises(ValueError, match="traced run of a CUDA C kernel"):
        ptx_source_html(run)


def test_playground_has_a_ptx_tab_for_cuda_c_only():
    k = simtlab.cuda_c(BLOCK_SUM, "block_sum")
    pg = simtlab.playground(k, 2, 128, np.arange(256, dtype=np.int32), np.zeros(2, np.int32), 256, gpu=False)
    titles = list(pg.tabs.titles)
    assert titles[-1] == "PTX" and titles[3] == "races & errors"
    pg.draw_all()
    assert "st.global" in pg.tabs.children[-1].children[0].value
    from numba import cuda

    @cuda.jit
    def copy(a, out):
        i = cuda.grid(1)
        if i < a.size:
            out[i] = a[i]
    python = simtlab.playground(copy, 1, 32, np.ones(32, np.float32), np.zeros(32, np.float32), gpu=False)
    assert "PTX" not in list(python.tabs.titles)
