"""Chapter 7's trace analysis, plots and widget, headless: the unrolled matrix and the copies
come from the emulator's trace and agree with the definition; every figure has a title and
labelled axes; the widget's controls redraw it."""

from __future__ import annotations

import numpy as np
import pytest

from simtlab.analysis.unroll import global_traffic, trace_unroll
from simtlab.kernels import conv as K
from simtlab.plots import conv as P


def _labelled(fig):
    assert fig._suptitle is not None and fig._suptitle.get_text()
    for ax in fig.axes:
        if ax.get_label() == "<colorbar>":
            continue
        assert ax.get_xlabel() or ax.get_ylabel(), f"unlabelled axes in {fig._suptitle.get_text()!r}"


def test_trace_unroll_numbers_each_entry_by_its_input_element():
    t = trace_unroll((1, 2, 6, 7), 3, 1, "valid")
    x = np.arange(2 * 6 * 7, dtype=np.float32).reshape(1, 2, 6, 7)
    expected = K.im2col_cpu(x, 3).astype(np.int64)
    np.testing.assert_array_equal(t.source, expected)
    assert (t.ho, t.wo) == (4, 5)


def test_copies_are_k_squared_inside_and_fewer_at_the_border():
    t = trace_unroll((1, 1, 7, 7), 3)
    copies = t.copies[0, 0]
    assert (copies[2:-2, 2:-2] == 9).all()            # every window covers the middle
    assert copies[0, 0] == 1 and copies[0, 3] == 3
    assert copies.sum() == t.source.size              # no padding: every entry is one read
    assert t.duplication == pytest.approx(9 * 25 / 49)


def test_same_padding_entries_are_marked_and_not_read():
    t = trace_unroll((1, 1, 5, 5), 3, 1, "same")
    pads = int((t.source < 0).sum())
    inside = 4 * 4 + 12 * 6 + 9 * 9                   # corner, edge and middle elements: their copies
    assert pads == 9 * 25 - inside                    # 25 windows of 9 entries
    assert t.copies.sum() == t.source.size - pads
    assert (t.copies[0, 0] == np.array([[4, 6, 6, 6, 4]] + [[6, 9, 9, 9, 6]] * 3 + [[4, 6, 6, 6, 4]])).all()


def test_stride_two_copies_each_element_fewer_times():
    t = trace_unroll((1, 1, 9, 9), 3, 2)
    assert t.copies.max() == 4                        # windows 2 apart overlap in one row/column


def test_fused_kernel_allocates_and_writes_no_unrolled_matrix():
    v2 = global_traffic("v2 im2col + GEMM")
    v3 = global_traffic("v3 implicit GEMM")
    cols = v2["arrays"]["cols"]
    assert cols["allocated"] == 2 * 9 * 2 * 6 * 6 * 4          # C*K*K x B*Ho*Wo floats
    assert cols["written"] == cols["allocated"]
    assert "cols" not in v3["arrays"]
    assert v2["allocated"] - v3["allocated"] == cols["allocated"]
    assert v3["written"] == v3["arrays"]["y"]["written"] == 2 * 4 * 6 * 6 * 4


def test_figures_have_titles_and_labels():
    from simtlab.gpubench.conv import recorded

    t = trace_unroll((1, 1, 6, 6), 3)
    res = recorded()
    figs = [P.plot_unrolled_matrix(t), P.plot_copies(t), P.plot_unroll(t),
            P.plot_traffic([global_traffic(v) for v in ("v1 direct", "v3 implicit GEMM")]),
            P.plot_layer_memory(), P.plot_layer_flops(), P.plot_conv_timings(res, "C1", 10_000)]
    for fig in figs:
        _labelled(fig)
    assert "unrolled matrix" in P.plot_layer_memory().axes[0].get_legend_handles_labels()[1][1]


def test_timings_plot_says_when_nothing_is_recorded():
    fig = P.plot_conv_timings({"source": "none", "message": "No convolution timings recorded yet"})
    assert "no GPU timings" in fig._suptitle.get_text()


def test_recorded_results_hold_both_layers_and_batches():
    from simtlab.gpubench.conv import recorded, summary_table

    res = recorded()
    assert res["source"] == "recorded" and "H100" in res["device"]
    for layer in ("C1", "C3"):
        for batch in ("1000", "10000"):
            entry = res["layers"][layer][batch]
            assert any(r["reference"] for r in entry["rows"])
            assert entry["roofline_ms"] > 0
    assert "cuDNN" in summary_table(res, "C1", 10_000)


def test_unroll_widget_redraws_on_every_control():
    from simtlab.widgets import unroll_widget

    w = unroll_widget()
    first = w.figure.value
    assert "9 x 16" in w.summary.value
    w.controls["k"].value = 2
    assert w.figure.value != first and "4 x 25" in w.summary.value
    w.controls["padding"].value = "same"
    assert "padding zeros" in w.summary.value
    w.controls["stride"].value = 2
    w.controls["size"].value = 7
    assert "7x7 input" in w.summary.value
    assert "at most <b>1</b> time " in w.summary.value          # K = stride = 2: windows do not overlap


def test_cell_numbers_stay_out_of_the_layout():
    """The unrolled matrix numbers each of its (up to 1600) cells: constrained layout would
    measure every number, though a number inside its cell never needs room around the axes."""
    from simtlab.analysis.unroll import trace_unroll
    from simtlab.plots.conv import plot_unroll

    fig = plot_unroll(trace_unroll((1, 1, 6, 6), k=3))
    numbers = fig.axes[0].texts
    assert len(numbers) > 50 and not any(t.get_in_layout() for t in numbers)
