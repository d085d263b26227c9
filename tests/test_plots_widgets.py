"""Figures have titles and labels and show the right numbers; widgets react to their controls."""

import numpy as np
import pytest

import simtlab
from simtlab.plots import device_panel, divergence, memory_access, occupancy
from simtlab.widgets import (amdahl_widget, device_panel as device_panel_widget,
                             divergence_widget, mapping_widget, occupancy_widget,
                             warp_access_widget)


def _labelled(fig):
    assert fig._suptitle is not None and fig._suptitle.get_text()
    for ax in fig.axes:
        assert ax.get_xlabel()


@pytest.mark.parametrize("stride, size, offset, sectors", [
    (1, 4, 0, 4), (2, 4, 0, 8), (8, 4, 0, 32), (1, 4, 1, 5), (1, 8, 0, 8), (0, 4, 0, 1),
    (1, 16, 0, 16),
])
def test_warp_request_summary(stride, size, offset, sectors):
    s = memory_access.warp_request_summary(memory_access.strided_addresses(stride, size, offset),
                                           size)
    assert s["sectors"] == sectors
    assert s["bytes_moved"] == 32 * sectors


def test_stride_one_is_fully_efficient_and_plots_say_so():
    s = memory_access.warp_request_summary(memory_access.strided_addresses(1), 4)
    assert s["lines"] == 1 and s["efficiency"] == 1.0
    fig = memory_access.plot_warp_access(stride=2)
    _labelled(fig)
    assert "8 sectors" in fig.axes[0].get_title()
    _labelled(memory_access.plot_stride_sweep())


def test_request_addresses_from_a_real_run():
    from numba import cuda

    @cuda.jit
    def strided(x, out):
        i = cuda.grid(1)
        out[i] = x[3 * i]

    run = simtlab.emulate(strided, 1, 32, np.zeros(96, np.float32), np.zeros(32, np.float32))
    addrs = memory_access.request_addresses_from_run(run, "x")
    assert list(addrs) == [12 * lane for lane in range(32)]
    assert memory_access.warp_request_summary(addrs)["sectors"] == 12


def test_divergence_plot_from_run():
    from simtlab.kernels import divergence as dv
    x = np.arange(64, dtype=np.float32)
    run = simtlab.emulate(dv.branch_by_parity, 1, 64, x, np.zeros_like(x))
    masks, labels = divergence.divergence_from_run(run, 1)
    assert masks.shape == (5, 32)
    assert masks.sum(axis=1).tolist() == [32, 32, 32, 16, 16]
    assert "out[i] = -x[i]" in labels[-1]
    fig = divergence.plot_lane_activity(run, 1)
    _labelled(fig)
    assert "80%" in fig._suptitle.get_text()


def test_occupancy_plot_and_device_panel():
    _labelled(occupancy.plot_occupancy(64, highlight_block_size=256))
    html = device_panel.device_panel_html(None)
    assert "Reference figures (no GPU here): NVIDIA H100 SXM" in html and "132" in html
    assert "emulator" in html


def test_widgets_redraw_when_a_control_changes():
    for build, name, value in [(mapping_widget, "block_x", 8), (warp_access_widget, "stride", 8),
                               (amdahl_widget, "parallel_fraction", 0.99),
                               (occupancy_widget, "registers_per_thread", 128),
                               (divergence_widget, "kernel", "triangle_sum")]:
        w = build()
        before_img, before_text = w.figure.value, w.summary.value
        w.controls[name].value = value
        assert w.figure.value != before_img, build.__name__
        assert w.summary.value != before_text, build.__name__


def test_widget_numbers():
    w = warp_access_widget()
    w.controls["stride"].value = 8
    assert w.summary.value.startswith("32 sectors")
    w = amdahl_widget()
    assert "1.42x" in w.summary.value                 # 30 % parallel at 100x
    w.controls["parallel_fraction"].value = 0.99
    assert "50.25x" in w.summary.value
    w = occupancy_widget()
    w.controls["registers_per_thread"].value = 64
    assert "50%" in w.summary.value and "registers" in w.summary.value
    assert "H100" in device_panel_widget().value
