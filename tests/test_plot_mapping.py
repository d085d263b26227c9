"""Thread/block mapping: grid arithmetic, the same read off a trace, and the figure."""

import numpy as np
import pytest
from numba import cuda

import simtlab
from simtlab.plots.mapping import ID_KEYS, mapping_from_run, plot_thread_mapping, thread_mapping


def test_1d_ten_elements_blocks_of_four():
    m = thread_mapping(10, 4)
    assert m["griddim"] == (3, 1) and m["threads"] == 12 and m["idle"] == 2
    assert m["block"].tolist() == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    assert (m["block"][9], m["thread"][9]) == (2, 1)
    assert m["gwarp"].tolist() == m["block"].tolist()  # 4-thread blocks: one warp each


def test_2d_element_block_and_thread():
    m = thread_mapping((8, 12), (4, 4))
    assert m["griddim"] == (3, 2) and m["idle"] == 0
    r, c = 5, 6                                   # row y = 5, column x = 6
    assert (m["block_x"][r, c], m["block_y"][r, c]) == (1, 1)
    assert (m["thread_x"][r, c], m["thread_y"][r, c]) == (2, 1)
    assert m["block"][r, c] == 1 + 1 * 3          # x + y * gridDim.x
    assert m["thread"][r, c] == 2 + 1 * 4          # x + y * blockDim.x


def test_warp_and_lane_of_a_16x16_block():
    m = thread_mapping((16, 16), (16, 16))
    assert m["thread"][2, 3] == 35
    assert (m["warp"][2, 3], m["lane"][2, 3]) == (1, 3)
    assert np.bincount(m["warp"].ravel()).tolist() == [32] * 8


def test_idle_threads_and_uncovered_elements():
    m = thread_mapping((5, 7), (4, 4))            # grid 2 x 2 of 16 = 64 threads for 35
    assert m["griddim"] == (2, 2) and m["threads"] == 64 and m["idle"] == 29
    small = thread_mapping((5, 7), (4, 4), griddim=(1, 1))
    assert small["uncovered"] == 35 - 16 and small["idle"] == 0
    assert (small["block"] == -1).sum() == 19 and small["block"][:4, :4].max() == 0
    assert small["lane"][4, 0] == -1


def test_1d_layout_on_a_2d_array_is_row_major():
    m = thread_mapping((5, 7), 8, layout="1d")
    flat = np.arange(35)
    assert (m["block"].ravel() == flat // 8).all() and (m["thread"].ravel() == flat % 8).all()
    assert m["idle"] == 40 - 35


def test_bad_arguments():
    with pytest.raises(ValueError):
        thread_mapping((2, 3, 4), 4)
    with pytest.raises(ValueError):
        thread_mapping(10, (4, 1, 2))
    with pytest.raises(ValueError):
        plot_thread_mapping((8, 8), 4, color_by="colour")


@pytest.mark.parametrize("color_by", ["block", "warp", "thread", "lane"])
def test_figure_has_title_labels_and_key(color_by):
    fig = plot_thread_mapping((8, 12), (4, 4), color_by=color_by)
    title = fig._suptitle.get_text()
    assert "96 threads launched" in title and "0 idle" in title and "(3, 2)" in title
    ax = fig.axes[0]
    assert ax.get_xlabel() and ax.get_ylabel()
    # few ids: a legend; many (16 threads in a block): a colour bar
    assert ax.get_legend() is not None or len(fig.axes) == 2
    assert len(ax.texts) == 96                     # auto: <= 256 cells are labelled


def test_annotation_switch_and_large_arrays():
    assert len(plot_thread_mapping(40, 16, annotate=False).axes[0].texts) == 0
    big = plot_thread_mapping((20, 20), (8, 8), annotate="auto")
    assert len(big.axes[0].texts) == 0 and "idle" in big._suptitle.get_text()
    one_d = plot_thread_mapping(10, 4)
    assert "grid 3 x block 4" in one_d._suptitle.get_text() and "2 idle" in one_d._suptitle.get_text()


@cuda.jit
def _write_2d(out):
    x, y = cuda.grid(2)
    if y < out.shape[0] and x < out.shape[1]:
        out[y, x] = x + 100 * y


@cuda.jit
def _write_1d(out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = i


def test_mapping_from_run_matches_the_grid_arithmetic():
    out = np.zeros((6, 10), np.int32)
    run = simtlab.emulate(_write_2d, (3, 2), (4, 4), out)
    got, want = mapping_from_run(run, "out"), thread_mapping((6, 10), (4, 4))
    for key in ID_KEYS:
        assert (got[key] == want[key]).all(), key
    assert (got["threads"], got["idle"], got["uncovered"]) == (96, 36, 0)
    fig = plot_thread_mapping(mapping=got, color_by="warp")
    assert "36 idle" in fig._suptitle.get_text()


def test_mapping_from_run_marks_unwritten_elements():
    out = np.zeros(40, np.int32)
    run = simtlab.emulate(_write_1d, 1, 32, out)   # too few threads: 8 elements unwritten
    m = mapping_from_run(run, "out")
    assert m["uncovered"] == 8 and m["idle"] == 0
    assert (m["thread"][:32] == np.arange(32)).all() and (m["thread"][32:] == -1).all()
    assert (m["lane"][32:] == -1).all()


def test_ticks_every_power_of_two_at_most_twelve_per_axis():
    from simtlab.plots.mapping import MAX_TICKS
    ax = plot_thread_mapping((128, 32), (32, 4)).axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(i) for i in range(0, 32, 4)]
    assert [t.get_text() for t in ax.get_yticklabels()] == [str(i) for i in range(0, 128, 16)]
    small = plot_thread_mapping((8, 12), (4, 4)).axes[0]
    assert [t.get_text() for t in small.get_xticklabels()] == [str(i) for i in range(12)]
    assert all(len(a.get_xticks()) <= MAX_TICKS and len(a.get_yticks()) <= MAX_TICKS for a in (ax, small))
