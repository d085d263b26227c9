"""Mapping, warp-access and divergence widgets, driven headless through their controls."""

import numpy as np
from numba import cuda

import simtlab
from simtlab.widgets.divergence import divergence_widget
from simtlab.widgets.mapping import mapping_widget
from simtlab.widgets.memory_access import warp_access_widget


def _png(w):
    assert w.figure.value[:8] == b"\x89PNG\r\n\x1a\n"
    return w.figure.value


def test_mapping_widget_redraws_on_every_control():
    w = mapping_widget(shape=(8, 12))
    assert "96</b> threads launched" in w.summary.value and "<b>0</b> idle" in w.summary.value
    for name, value, text in [("block_x", 8, "<b>32</b> idle"), ("block_y", 3, "grid (2, 3)"),
                              ("color_by", "lane", None), ("layout", "1d", "grid (12, 1)")]:
        before_png, before_text = _png(w), w.summary.value
        w.controls[name].value = value
        assert _png(w) != before_png, name
        if text:
            assert text in w.summary.value and w.summary.value != before_text, name
    assert w.controls["block_y"].disabled         # 1-D indexing has no blockDim.y
    assert all(not getattr(c, "continuous_update", False) for c in w.controls.values())


def test_warp_access_widget_numbers():
    w = warp_access_widget()
    assert w.summary.value.startswith("4 sectors, 128 bytes moved")
    for name, value, text in [("stride", 2, "8 sectors"), ("stride", 8, "32 sectors"),
                              ("stride", 1, "4 sectors"), ("offset", 1, "5 sectors"),
                              ("size", 8, "9 sectors"), ("offset", 0, "8 sectors"),
                              ("stride", 0, "1 sector,")]:
        before = _png(w)
        w.controls[name].value = value
        assert w.summary.value.startswith(text), (name, value, w.summary.value)
        assert _png(w) != before
    assert w.controls["stride"].continuous_update is False


@cuda.jit
def _half_warps_branch(out):
    i = cuda.grid(1)
    if i < 48:
        out[i] = 1
    else:
        out[i] = 2


def test_divergence_widget_picks_warps_of_a_run():
    run = simtlab.emulate(_half_warps_branch, 2, 64, np.zeros(128, np.int32))
    w = divergence_widget(run)
    warp = w.controls["warp"]
    assert [v for _, v in warp.options] == [0, 1, 2, 3] and warp.value == 0
    assert "SIMT efficiency <b>100.0%</b>" in w.summary.value
    before = _png(w)
    warp.value = 1          # lanes 16..31 take the else: (32 + 32 + 16 + 16) / (4 x 32)
    assert _png(w) != before and "<b>75.0%</b>" in w.summary.value and "global warp 1" in w.summary.value
    assert "block 1, warp 0" in [label for label, _ in warp.options][2]


def test_divergence_widget_switches_kernels():
    runs = {"a": simtlab.emulate(_half_warps_branch, 1, 64, np.zeros(64, np.int32)),
            "b": lambda: simtlab.emulate(_half_warps_branch, 1, 32, np.zeros(32, np.int32))}
    w = divergence_widget(runs)
    assert len(w.controls["warp"].options) == 2
    w.controls["kernel"].value = "b"
    assert len(w.controls["warp"].options) == 1 and w.controls["warp"].value == 0
