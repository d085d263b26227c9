"""Divergence: lane masks per warp instruction, from synthetic masks and from a trace."""

import numpy as np
import pytest
from numba import cuda

import simtlab
from simtlab.plots.divergence import (divergence_from_run, plot_divergence, plot_lane_activity,
                                      simt_efficiency)


def test_half_the_lanes_is_half_efficient():
    masks = np.zeros((4, 32), bool)
    masks[:, ::2] = True
    assert simt_efficiency(masks) == 0.5
    assert simt_efficiency(np.ones((3, 32), bool)) == 1.0
    fig = plot_divergence(masks, [f"L{i}: x = {i}" for i in range(4)])
    assert "SIMT efficiency 50%" in fig._suptitle.get_text()
    grid, bars = fig.axes
    assert grid.get_xlabel() == "lane" and grid.get_ylabel() and bars.get_xlabel()
    assert grid.get_legend() is not None
    (collection,) = bars.collections                      # the bars, one polygon per instruction
    widths = [np.ptp(path.vertices[:, 0]) for path in collection.get_paths()]
    assert widths == [16] * 4
    assert [t.get_text() for t in grid.get_yticklabels()] == [f"L{i}: x = {i}" for i in range(4)]


def test_labels_must_match_instructions():
    with pytest.raises(ValueError):
        plot_divergence(np.ones((2, 32), bool), ["L1: a"])


def test_many_instructions_still_draw():
    masks = np.random.default_rng(0).random((300, 32)) < 0.7
    fig = plot_divergence(masks, [f"L{i}" for i in range(300)])
    assert len(fig.axes[0].get_yticklabels()) <= 60
    fewer = plot_divergence(masks, [f"L{i}" for i in range(300)], max_labels=24)
    labels = [t.get_text() for t in fewer.axes[0].get_yticklabels()]
    assert 12 <= len(labels) <= 24 and labels[0] == "L0"


@cuda.jit
def _lane_parity(out):
    i = cuda.grid(1)
    if i % 2 == 0:
        out[i] = 1
    else:
        out[i] = 2
    out[i] += 10


@cuda.jit
def _loop_by_lane(out):
    i = cuda.grid(1)
    acc = 0
    for k in range(i % 4):
        acc += k
    out[i] = acc


def test_if_else_on_lane_parity_from_a_run():
    out = np.zeros(64, np.int32)
    run = simtlab.emulate(_lane_parity, 1, 64, out)
    masks, labels = divergence_from_run(run, gwarp=1)
    assert masks.sum(axis=1).tolist() == [32, 32, 16, 16, 32]
    assert masks[2].tolist() == [lane % 2 == 0 for lane in range(32)]
    assert masks[3].tolist() == [lane % 2 == 1 for lane in range(32)]
    assert "out[i] = 1" in labels[2] and "out[i] = 2" in labels[3]   # then before else
    assert "out[i] += 10" in labels[4] and labels[0].startswith("L")
    line = int(labels[0][1:labels[0].index(":")])
    assert "cuda.grid(1)" in run.source(line)
    assert simt_efficiency(masks) == pytest.approx(128 / 160)
    assert simt_efficiency(masks) == pytest.approx(run.metrics["simt_efficiency"])
    fig = plot_lane_activity(run, 1)
    assert "80%" in fig._suptitle.get_text() and "warp 1" in fig._suptitle.get_text()


def test_unequal_loops_reconverge_after_the_longest_lane():
    out = np.zeros(32, np.int32)
    run = simtlab.emulate(_loop_by_lane, 1, 32, out)
    masks, labels = divergence_from_run(run)
    assert "out[i] = acc" in labels[-1] and masks[-1].all()
    body = [m.sum() for m, text in zip(masks, labels) if "acc += k" in text]
    assert body == [24, 16, 8]                       # lanes with i % 4 > 0, > 1, > 2
    with pytest.raises(ValueError):
        divergence_from_run(run, gwarp=5)


def test_cell_separators_are_one_collection_not_minor_ticks():
    # minor-tick gridlines made a tick artist per lane and per instruction, most of the
    # drawing time; the white separators are one LineCollection between cells
    from matplotlib.collections import LineCollection
    masks = np.ones((5, 32), bool)
    grid = plot_divergence(masks, [f"L{i}" for i in range(5)]).axes[0]
    assert grid.xaxis.get_minorticklocs().size == 0 and grid.yaxis.get_minorticklocs().size == 0
    (separators,) = [c for c in grid.collections if isinstance(c, LineCollection)]
    segments = separators.get_segments()
    assert len(segments) == 31 + 4                    # between 32 lanes, between 5 instructions
    assert {tuple(s[0]) for s in segments} >= {(0.5, -0.5), (30.5, -0.5), (-0.5, 0.5), (-0.5, 3.5)}


def test_a_divergence_figure_drawn_again_looks_like_a_fresh_one():
    """The playground keeps one DivergenceFigure and shows each warp in it: after showing a
    long listing, a short one must look exactly as a figure made for it alone."""
    import io

    from PIL import Image

    from simtlab.plots.divergence import DivergenceFigure

    def pixels(fig):
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=60)
        return np.asarray(Image.open(buf))

    rng = np.random.default_rng(1)
    long_masks = rng.random((40, 32)) < 0.6
    short = np.zeros((3, 32), bool)
    short[0], short[1, :5], short[2, ::3] = True, True, True
    view = DivergenceFigure(max_labels=24)
    view.show(long_masks, [f"L{i}: long line {i}" for i in range(40)], title="first")
    again = pixels(view.show(short, ["L1: a", "L2: b", "L3: c"], title="second"))
    fresh = pixels(plot_divergence(short, ["L1: a", "L2: b", "L3: c"], title="second", max_labels=24))
    assert again.shape == fresh.shape and (again == fresh).all()
    assert [t.get_text() for t in view.bar_ax.texts] == ["32", "5", "11"]
