"""Chapter 3 plots and the main widget: the numbers come from the trace, the widget reacts fast."""

import numpy as np
import pytest

import simtlab
from simtlab.kernels import patterns as P
from simtlab.plots import patterns as pp
from simtlab.widgets import patterns_widget


def _labelled(fig):
    assert fig._suptitle is not None and fig._suptitle.get_text()
    for ax in fig.axes:
        if ax.get_label() != "<colorbar>":
            assert ax.get_xlabel()


def transpose_run(version, shape=(64, 64)):
    a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    grid, block = P.transpose_launch(shape, version)
    return simtlab.emulate(P.TRANSPOSES[version], grid, block, a, np.zeros(shape[::-1], np.float32))


def test_warp_request_picks_the_lanes_of_one_request():
    run = transpose_run(1)
    rows = pp.warp_request(run, "out", "write", gwarp=0, nth=0)
    assert len(rows) == 32 and sorted(rows.lane) == list(range(32))
    # naive transpose: lane l of warp 0 writes out[l, 0]
    assert list(rows.index[np.argsort(rows.lane)]) == [l * 64 for l in range(32)]
    second = pp.warp_request(run, "out", "write", gwarp=0, nth=1)
    assert list(second.index[np.argsort(second.lane)]) == [l * 64 + 8 for l in range(32)]
    with pytest.raises(ValueError, match="made 4 write request"):
        pp.warp_request(run, "out", "write", gwarp=0, nth=4)
    with pytest.raises(ValueError, match="kind must be"):
        pp.warp_request(run, "out", "store")


def test_request_stats_tell_the_versions_apart():
    naive, tile, padded = (pp.request_stats(transpose_run(v)) for v in (1, 2, 3))
    assert (naive["read_sectors"], naive["write_sectors"], naive["shared_wavefronts"]) == (4, 32, None)
    assert (tile["read_sectors"], tile["write_sectors"]) == (4, 4)
    assert tile["shared_read_wavefronts"] == 32 and tile["max_wavefronts"] == 32
    assert padded["shared_wavefronts"] == 1 and padded["max_wavefronts"] == 1


def test_footprint_titles_carry_the_costs():
    fig = pp.plot_warp_footprint(transpose_run(2), [("a", "read"), ("tile", "read"), ("out", "write")])
    _labelled(fig)
    titles = [ax.get_title() for ax in fig.axes if ax.get_label() != "<colorbar>"]
    assert "4 sectors" in titles[0] and "32 wavefronts" in titles[1] and "4 sectors" in titles[2]
    fig = pp.plot_warp_footprint(transpose_run(3), [("tile", "read")])
    assert "1 wavefront" in fig.axes[0].get_title()


def test_footprint_of_a_1d_copy():
    x = np.arange(2048, dtype=np.float32)
    run = simtlab.emulate(P.copy_v1_strided, 8, 256, x, np.zeros_like(x))
    fig = pp.plot_warp_footprint(run, [("x", "read"), ("out", "write")])
    assert "32 sectors" in fig.axes[0].get_title()
    _labelled(fig)


@pytest.mark.parametrize("block", [0, 1, 2])
def test_halo_plot(block):
    n = 300
    x = np.ones(n, np.float32)
    run = simtlab.emulate(P.stencil1d_v2_shared, P.cdiv(n, P.STENCIL_BLOCK), P.STENCIL_BLOCK, x,
                          np.ones(7, np.float32), np.zeros(n, np.float32))
    fig = pp.plot_halo(run, block)
    _labelled(fig)
    texts = [t.get_text() for t in fig.axes[0].texts]
    start = block * P.STENCIL_BLOCK - P.RADIUS
    if block == 0:
        assert texts.count("0") >= P.RADIUS            # zero padding before x[0]
    else:
        assert str(start) in texts                     # the left halo's first element
    # the right halo is loaded by threads 0..5 in the loader's second round
    assert "t0" in texts and f"t{P.STENCIL_SHARED - P.STENCIL_BLOCK - 1}" in texts


def test_request_stats_plot():
    rows = [dict(version=f"v{v}", **pp.request_stats(transpose_run(v))) for v in (1, 2, 3)]
    fig = pp.plot_request_stats(rows)
    _labelled(fig)
    texts = [t.get_text() for t in fig.axes[1].texts]
    assert " no shared memory" in texts and " 32" in texts and " 1" in texts and " 16.5" not in texts


def test_patterns_widget_reacts_and_is_fast():
    w = patterns_widget()
    assert w.controls["version"].options[0] == "copy v1 strided"
    first_png, first_summary = w.figure.value, w.summary.value
    assert "<b>32</b> (4 = coalesced" in first_summary          # naive transpose writes
    seen = {first_png}
    for version in ("transpose v2 shared tile", "transpose v3 padded tile", "copy v1 strided"):
        w.controls["version"].value = version
        assert w.figure.value not in seen and w.summary.value != first_summary
        seen.add(w.figure.value)
    assert "<b>1</b> wavefronts" not in w.summary.value
    w.controls["version"].value = "transpose v3 padded tile"
    assert "<b>1</b> wavefronts per request" in w.summary.value
    w.controls["warp"].value = 3
    assert w.figure.value not in seen
    w.controls["warp"].value = 0


def test_patterns_widget_dropdown_only_swaps_what_was_drawn_in_advance(monkeypatch):
    """Every version is emulated and drawn when the widget is built: picking one runs nothing
    again (how fast that is, is measured by benchmarks/widget_latency.py, not here)."""
    import simtlab.widgets.patterns as module
    w = patterns_widget("copy v2 coalesced")

    def again(*args, **kwargs):
        raise AssertionError("the dropdown emulated or drew a version again")
    for name in ("_emulate", "plot_warp_footprint", "figure_to_png"):
        monkeypatch.setattr(module, name, again)
    for version in w.controls["version"].options:
        w.controls["version"].value = version
        assert version in w.summary.value
    with pytest.raises(ValueError, match="unknown version"):
        patterns_widget("transpose v9")
