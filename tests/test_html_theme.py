"""The course's HTML follows JupyterLab's theme: every colour it writes in a style attribute is
one of JupyterLab's theme variables (simtlab/html_theme.py), so that a dark theme gets light text
on dark surfaces instead of a light card under the theme's light text. Whether the colours read
well (WCAG contrast on both themes) and wide content wraps is measured in Chromium:
tests/test_browser.py::test_races_tab_wraps_and_reads_in_both_themes."""

from __future__ import annotations

import re

import numpy as np
import pytest
from numba import cuda

import simtlab
from simtlab import cuda_c_kernels as CC
from simtlab.exercises import ch01
from simtlab.exercises.card import FAILED, NOT_WRITTEN, PASSED, failure_card
from simtlab.exercises.progress import ExerciseStatus, _Progress
from simtlab.exercises.hints import hint
from simtlab.exercises.report import CheckFailed
from simtlab.playground.cuda_c import gpu_agreement_html
from simtlab.plots.memory_requests import request_table_html
from simtlab.plots.ptx_source import ptx_source_html
from simtlab.plots.run_report import compare_html, error_card_html, gpu_report_html, races_html
from simtlab.plots.source_profile import source_view_html


@cuda.jit
def racy_then_out_of_bounds(x, total, out):
    i = cuda.grid(1)
    total[0] = total[0] + x[i]
    out[i + 1] = 2 * x[i]


@cuda.jit
def strided_copy(x, out):
    i = cuda.grid(1)
    out[i] = x[(i * 2) % x.size]


#: a colour property's value in an inline style
_COLOUR_DECLARATION = re.compile(r"(?<![\w-])(color|background(?:-color)?|border(?:-\w+)?)\s*:\s*([^;'\"]+)")
#: a theme variable with its fallback, e.g. var(--jp-ui-font-color1,rgba(0,0,0,.87))
_THEME_VAR = re.compile(r"var\(--jp-[\w-]+(?:,[^()]*(?:\([^()]*\))?[^()]*)?\)")
#: a colour written out: hex, a colour function, or a named colour
_LITERAL_COLOUR = re.compile(r"#[0-9a-fA-F]{3,8}\b|\b(?:rgba?|hsla?)\(|\b(?:white|black|red|green|orange|grey|gray)\b")


def literal_colours(html: str) -> list[str]:
    """Colour declarations of ``html``'s style attributes that name a colour outside a theme variable."""
    found = []
    for prop, value in _COLOUR_DECLARATION.findall(html):
        if _LITERAL_COLOUR.search(_THEME_VAR.sub("", value)):
            found.append(f"{prop}:{value}")
    return found


def test_literal_colours_finds_what_a_dark_theme_would_not_change():
    """The checker itself: the old error card's colours are found, theme variables pass."""
    old = "<div style='border-left:6px solid #D55E00;background:#fff3ee'><b style='color:white'>x</b></div>"
    assert literal_colours(old) == ["border-left:6px solid #D55E00", "background:#fff3ee", "color:white"]
    themed = ("<div style='color:var(--jp-ui-font-color1,rgba(0,0,0,.87));"
              "background:color-mix(in srgb,var(--jp-error-color1,#d32f2f) 10%,var(--jp-layout-color1,#fff))'>")
    assert literal_colours(themed) == []


@pytest.fixture(scope="module")
def faulty_run():
    x = np.ones(256, np.float32)
    with pytest.raises(simtlab.EmulationError) as fault:
        simtlab.emulate(racy_then_out_of_bounds, 2, 128, x, np.zeros(1, np.float32), np.zeros(256, np.float32))
    pg = simtlab.playground(racy_then_out_of_bounds, 2, 128, x, np.zeros(1, np.float32),
                            np.zeros(256, np.float32))
    return pg, fault.value


def _wrong_check_card():
    def linear_thread_id(tx, ty, tz, bdx, bdy):
        return tx

    def global_thread_id(thread_idx, block_idx, block_dim, grid_dim):
        return thread_idx
    with pytest.raises(CheckFailed) as failed:
        ch01.check_linear_id(linear_thread_id, global_thread_id)
    return failure_card("ch01.linear_id", failed.value).html


def test_every_colour_the_course_writes_is_a_theme_variable(faulty_run):
    pg, fault = faulty_run
    clean = simtlab.emulate(strided_copy, 2, 64, np.arange(128, dtype=np.float32), np.zeros(128, np.float32))
    gpu = {"all_match": False, "repeat": 5, "median_ms": 0.01, "outputs": {
        "out": {"match": True, "max_abs_diff": 0.0}, "total": {"match": False, "max_abs_diff": 3.0}}}
    pages = {
        "error card": error_card_html(fault),
        "races": races_html(pg.run),
        "no race": races_html(clean),
        "source view": source_view_html(pg.run, error=pg.error),
        "compare": compare_html(clean, pg.run),
        "GPU report": gpu_report_html(gpu),
        "memory table": request_table_html(clean),
        "check card": _wrong_check_card(),
        "hint": hint("ch01.linear_id", 1)._repr_html_(),
    }
    assert "race" in pages["races"] and "out-of-bounds" in pages["error card"]
    found = {name: literal_colours(page) for name, page in pages.items()}
    assert {name: f for name, f in found.items() if f} == {}


def test_the_playground_banner_progress_and_gpu_line_use_theme_colours(faulty_run):
    """The lines around the tabs: the playground's summary (races, efficiency, the error), a
    sampled launch's note, a chapter's progress table, the CUDA C cell's GPU agreement line."""
    pg, _ = faulty_run
    clean = simtlab.playground(strided_copy, 2, 64, np.arange(128, dtype=np.float32), np.zeros(128, np.float32))
    sampled = simtlab.playground(strided_copy, 64, 64, np.arange(4096, dtype=np.float32),
                                 np.zeros(4096, np.float32), max_traced_threads=64)
    statuses = [ExerciseStatus(f"ch01.{name}", status) for name, status in
                (("linear_id", PASSED), ("first_kernel", FAILED), ("grid_stride", NOT_WRITTEN))]
    match = {"all_match": True, "repeat": 5, "median_ms": 0.01, "outputs": {"out": {"match": True}}}
    differ = {"all_match": False, "repeat": 5, "median_ms": 0.01, "outputs": {"out": {"match": False}}}
    pages = {
        "error banner": pg._banner_html(),
        "clean banner": clean._banner_html(),
        "sampled banner": sampled._banner_html(),
        "progress": _Progress("ch01", statuses, "this kernel")._repr_html_(),
        "GPU agrees": gpu_agreement_html(match),
        "GPU differs": gpu_agreement_html(differ),
    }
    assert "race" in pages["error banner"] and "sampled" in pages["sampled banner"]
    assert "failed" in pages["progress"] and "differ" in pages["GPU differs"]
    found = {name: literal_colours(page) for name, page in pages.items()}
    assert {name: f for name, f in found.items() if f} == {}


def test_the_ptx_source_view_uses_theme_colours():
    try:
        CC.nvrtc_version()
    except CC.CompilerMissing as why:
        pytest.skip(f"NVRTC is not installed ({why})")
    kernel = simtlab.cuda_c('''extern "C" __global__ void half_idle(const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && (i & 1)) out[i] = 2.0f * x[i];
}''', "half_idle")
    run = simtlab.emulate(kernel, 2, 64, np.ones(100, np.float32), np.zeros(100, np.float32), np.int32(100))
    page = ptx_source_html(run)
    assert "half_idle" in page or "out[i]" in page
    assert literal_colours(page) == []
