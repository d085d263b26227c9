"""The functions in simtlab/plots/ behind the playground's tabs, headless: each takes a Run and
returns a Figure (title, axis labels) or HTML whose numbers come from the trace."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure
from numba import cuda

import simtlab
from simtlab.html_theme import ERROR_MARK, WARN
from simtlab.plots.barrier_timeline import epoch_lengths, plot_barrier_timeline
from simtlab.plots.mapping import mapping_from_run, plot_run_mapping
from simtlab.plots.memory_requests import (plot_bank_access, plot_request_costs, request_table,
                                           request_table_html, worst_request)
from simtlab.plots.run_report import compare_html, compare_metrics, error_card_html, gpu_report_html, races_html
from simtlab.plots.source_profile import line_profile, source_view_html


@cuda.jit
def staged(x, out):
    s = cuda.shared.array(64, np.float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    if t < 32:
        s[t] = s[t] + s[t + 32]
    cuda.syncthreads()
    out[t] = s[t % 32]


@cuda.jit
def transpose_naive(a, out):
    c, r = cuda.grid(2)          # x runs along a row (across the lanes), y down the rows
    if r < a.shape[0] and c < a.shape[1]:
        out[c, r] = a[r, c]


def _labelled(fig):
    assert isinstance(fig, Figure)
    assert fig.get_suptitle()
    ax = fig.axes[0]
    assert ax.get_xlabel() and ax.get_ylabel()


@pytest.fixture(scope="module")
def staged_run():
    x = np.arange(64, dtype=np.float32)
    return simtlab.emulate(staged, 1, 64, x, np.zeros_like(x))


@pytest.fixture(scope="module")
def transpose_run():
    a = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    return simtlab.emulate(transpose_naive, (2, 2), (16, 16), a, np.zeros_like(a))


def test_line_profile_counts_each_line(staged_run):
    profile = line_profile(staged_run)
    by_line = {r["line"]: r for r in profile.values()}
    first = staged.py_func.__code__.co_firstlineno
    add = by_line[first + 7]                     # s[t] = s[t] + s[t + 32]: warp 0 only
    assert add["lane_executions"] == 32 and add["warp_instructions"] == 1
    branch = by_line[first + 6]                  # if t < 32: both warps
    assert branch["lane_executions"] == 64 and branch["warp_instructions"] == 2
    load = by_line[first + 4]                    # s[t] = x[t]: 2 global requests of 4 sectors
    assert load["global_requests"] == 2 and load["sectors_per_request"] == 4.0 and load["shared_requests"] == 2


def test_source_view_marks_lines_and_shows_the_untraced_ones(staged_run):
    first = staged.py_func.__code__.co_firstlineno
    html = source_view_html(staged_run, marks={first + 7: "look here"})
    assert "look here" in html and f"background:{ERROR_MARK}" in html
    assert "cuda.syncthreads()" in html and "<i>staged()</i>" in html


def test_request_table_transpose_writes_are_uncoalesced(transpose_run):
    rows = request_table(transpose_run)
    read = next(r for r in rows if r["array"] == "a")
    write = next(r for r in rows if r["array"] == "out")
    # a warp of a 16x16 block is two half-rows: 2 x 64 bytes = 4 sectors, its ideal; the write
    # goes down columns: lanes (c, r) and (c, r+1) share a sector, 16 sectors for 128 bytes
    assert read["coalesced"] and read["sectors"] == 4.0
    assert not write["coalesced"] and write["sectors"] == 16.0
    assert "uncoalesced" in request_table_html(transpose_run)
    name, line, gwarp, seq = worst_request(transpose_run)
    assert name == "out"
    _labelled(plot_request_costs(transpose_run))


@cuda.jit
def broadcast_and_pairs(x, out):
    i = cuda.grid(1)
    first = x[0]                    # every lane the same word
    out[i] = first + x[i // 2]      # lanes in pairs


def test_a_broadcast_is_at_its_ideal_never_below_it():
    """A broadcast touches one sector and needs one: its ideal is not the 4 sectors 32 distinct
    words would need (the table showed 'sectors 1.0, ideal 4.0')."""
    from simtlab.analysis.coalescing import warp_request_summary

    x = np.arange(64, dtype=np.float32)
    run = simtlab.emulate(broadcast_and_pairs, 1, 32, x, np.zeros(32, np.float32))
    rows = [r for r in request_table(run) if r["array"] == "x"]
    # one float32 word: 1 sector; x[0..15]: 64 bytes, 2 sectors (addresses from the kernel's indices)
    want = {warp_request_summary([x.itemsize * 0] * 32)["min_sectors"],
            warp_request_summary([x.itemsize * (lane // 2) for lane in range(32)])["min_sectors"]}
    assert want == {1, 2}
    assert sorted(r["ideal_sectors"] for r in rows) == [1.0, 2.0]
    for r in rows:
        assert r["ideal_sectors"] <= r["sectors"] and r["coalesced"], r
    assert "uncoalesced" not in request_table_html(run, rows)


@cuda.jit
def nearly_converged(out):
    i = cuda.threadIdx.x
    for k in range(100):
        if k < 99 or i > 0:
            out[i] += 1                # 99 times with 32 lanes, once with 31


def test_an_efficiency_just_below_one_never_prints_as_100_percent():
    """(99 x 32 + 31) / (100 x 32) = 99.97 %: shown as such, in the colour of an inefficient
    line, where "{:.0%}" printed an orange "100%"."""
    from simtlab.simt import percent

    assert percent(0.997) == "99.7%" and percent(1.0) == "100%" and percent(0.5) == "50%"
    assert percent(0.00001) == "0.001%" and percent(1 - 1e-9) == ">99.999%"
    run = simtlab.emulate(nearly_converged, 1, 32, np.zeros(32, np.float32))
    first = nearly_converged.py_func.__code__.co_firstlineno
    row = next(r for r in line_profile(run).values() if r["line"] == first + 5)
    assert row["simt_efficiency"] == (99 * 32 + 31) / (100 * 32)
    html = source_view_html(run)
    line = next(chunk for chunk in html.split("<tr") if "out[i] += 1" in chunk)
    assert f"color:{WARN}'>99.97%</td>" in line, line
    assert ">100%<" not in line


def test_request_costs_legend_and_labels_fit_in_the_figure(transpose_run):
    # the legend anchored outside the axes and the long y label used to be cut off at the edges
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    fig = plot_request_costs(transpose_run)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer, box = canvas.get_renderer(), fig.bbox
    (legend,) = fig.legends
    for artist in (legend, fig.axes[0].yaxis.label, fig.axes[0].xaxis.label):
        extent = artist.get_window_extent(renderer)
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1 and box.y0 <= extent.y0 and extent.y1 <= box.y1


def test_bank_access_plot(staged_run):
    assert worst_request(staged_run, "shared") is not None
    _labelled(plot_bank_access(staged_run, "s", line=staged.py_func.__code__.co_firstlineno + 4))


def test_barrier_timeline(staged_run):
    lengths, unit = epoch_lengths(staged_run)
    assert unit == "thread" and lengths.shape == (64, 3)
    assert lengths[0, 1] > lengths[40, 1], "threads below 32 add in epoch 1; the others only test t < 32"
    fig = plot_barrier_timeline(staged_run)
    _labelled(fig)
    # the bars, one collection (an artist per bar was most of the drawing time): each row's bars
    # end to end, as long as that thread's lines in each epoch
    (bars,) = fig.axes[0].collections
    boxes = np.array([p.vertices[:4] for p in bars.get_paths()])
    widths = boxes[:, 1, 0] - boxes[:, 0, 0]
    rows = np.rint(boxes[:, :, 1].mean(axis=1)).astype(int)
    assert sorted(widths.tolist()) == sorted(lengths[lengths > 0].tolist())
    assert np.array_equal(np.bincount(rows, weights=widths, minlength=64), lengths.sum(axis=1))
    with pytest.raises(ValueError, match="no traced lines"):
        epoch_lengths(staged_run, block=3)


def test_run_mapping_reads_writes_and_wrapping(transpose_run):
    m = mapping_from_run(transpose_run, "a", kind="read")
    assert m["block"][0, 0] == 0 and m["block"][0, 16] == 1 and m["block"][16, 0] == 2
    with pytest.raises(ValueError, match="kind must be one of"):
        mapping_from_run(transpose_run, "a", kind="touch")
    _labelled(plot_run_mapping(transpose_run, "out"))
    x = np.arange(200, dtype=np.float32)
    run = simtlab.emulate(staged.py_func.__globals__["staged"], 1, 64, x[:64].copy(), np.zeros(64, np.float32))
    _labelled(plot_run_mapping(run, "x", kind="read"))


def test_long_1d_arrays_are_wrapped_in_rows_of_32():
    @cuda.jit
    def copy(a, b):
        i = cuda.grid(1)
        if i < a.size:
            b[i] = a[i]

    a = np.ones(200, np.float32)
    run = simtlab.emulate(copy, 2, 128, a, np.zeros_like(a))
    fig = plot_run_mapping(run, "b")
    assert fig.axes[0].get_xlabel().startswith("i mod 32")


def test_error_card_has_place_and_fix_and_no_traceback():
    @cuda.jit
    def oob(a):
        a[cuda.grid(1) + 1] = 1

    with pytest.raises(simtlab.OutOfBoundsError) as err:
        simtlab.emulate(oob, 1, 32, np.zeros(32))
    html = error_card_html(err.value)
    assert "out-of-bounds access" in html and "(31, 0, 0)" in html and "fix:" in html
    assert "Traceback" not in html


def test_races_html_and_compare(staged_run, transpose_run):
    assert "no race" in races_html(staged_run)
    rows = {r["key"]: r for r in compare_metrics(staged_run, transpose_run)}
    assert rows["threads"]["before"] == 64 and rows["threads"]["after"] == 1024
    assert rows["global_sectors_per_request"]["better"] is False
    assert "grid (2, 2, 1)" in compare_html(staged_run, transpose_run)


def test_gpu_report():
    result = {"outputs": {"out": {"match": False, "max_abs_diff": 2.0}}, "all_match": False,
              "median_ms": 0.25, "min_ms": 0.2, "repeat": 20, "gbps": 100.0, "gflops": None}
    html = gpu_report_html(result)
    assert "differs" in html and "DIFFERS" in html and "100.0 GB/s" in html and "0.2500 ms" in html
    assert "no GPU run" in gpu_report_html(None, "no driver")
