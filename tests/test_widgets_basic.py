"""Amdahl, occupancy and device-panel widgets, driven headless through their controls."""

import ipywidgets as widgets
import pytest
from matplotlib.figure import Figure

from simtlab import backend
from simtlab.hardware import H100_SXM
from simtlab.plots.amdahl import plot_amdahl
from simtlab.plots.device_panel import device_panel_html, device_table
from simtlab.widgets.amdahl import amdahl_widget
from simtlab.widgets.device_panel import device_panel
from simtlab.widgets.figure_image import FigureImage, figure_to_png, panel
from simtlab.widgets.occupancy import occupancy_widget

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch):
    monkeypatch.setenv(backend.ENV_VAR, "emulator")


def test_figure_to_png_and_figure_image():
    fig = plot_amdahl()
    png = figure_to_png(fig)
    assert png.startswith(PNG_MAGIC)
    view = FigureImage()
    assert isinstance(view, widgets.Image) and view.format == "png"
    view.show(fig)
    assert view.value == png
    assert FigureImage(fig).value == png


def test_panel_exposes_controls_figure_and_summary():
    slider = widgets.IntSlider()
    view = FigureImage(Figure())
    summary = widgets.HTML("hi")
    box = panel([slider], view, summary, n=slider)
    assert isinstance(box, widgets.VBox)
    assert box.controls == {"n": slider} and box.figure is view and box.summary is summary


def test_amdahl_widget_shows_the_overall_speedup():
    w = amdahl_widget()
    p, s = w.controls["parallel_fraction"], w.controls["parallel_speedup"]
    assert (p.value, s.value) == (0.3, pytest.approx(100))
    assert not p.continuous_update and not s.continuous_update
    assert "1.42x" in w.summary.value and "1.43x" in w.summary.value  # result, then the ceiling
    first = w.figure.value
    assert bytes(first).startswith(PNG_MAGIC)  # Image.value comes back as a memoryview

    p.value = 0.99
    assert "50.25x" in w.summary.value and "100.00x" in w.summary.value
    assert w.figure.value != first

    p.value = 1.0
    s.value = 1000
    assert "1000.00x" in w.summary.value and "no limit" in w.summary.value


def test_occupancy_widget_follows_its_sliders():
    w = occupancy_widget()
    block, regs, smem = (w.controls[k] for k in ("block_size", "registers_per_thread", "shared_per_block"))
    assert (block.value, regs.value, smem.value) == (256, 32, 0)
    assert "100%" in w.summary.value
    first = w.figure.value

    regs.value = 64
    assert "4 blocks/SM" in w.summary.value and "50%" in w.summary.value and "registers" in w.summary.value
    assert w.figure.value != first

    regs.value = 32
    block.value = 32
    assert "32 blocks/SM" in w.summary.value and "blocks" in w.summary.value

    block.value = 256
    smem.value = 48 * 1024
    assert "4 blocks/SM" in w.summary.value and "shared memory" in w.summary.value
    assert smem.max == H100_SXM.shared_memory_per_block_optin


def test_device_table_rows():
    rows = dict(device_table(H100_SXM))
    assert rows["streaming multiprocessors (SMs)"] == "132"
    assert rows["warp size"] == "32 threads"
    assert rows["shared memory per block"] == "48 KiB (227 KiB opt-in)"
    assert rows["device memory"] == "79.2 GiB = 85.0 GB usable"   # not "80 GiB"
    assert rows["L2 cache"] == "50 MiB"
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in device_table(H100_SXM))


def test_device_panel_without_gpu_shows_labelled_reference():
    html = device_panel_html(None)
    assert "Reference figures (no GPU here): NVIDIA H100 SXM" in html
    assert "emulator" in html and "32 lanes" in html
    w = device_panel()
    assert isinstance(w, widgets.HTML)
    assert w.value == html


def test_device_panel_headings_follow_the_source():
    import dataclasses

    assert "Reference figures: NVIDIA H100" in device_panel_html(H100_SXM)
    mine = dataclasses.replace(H100_SXM, name="NVIDIA H100 80GB HBM3", source="measured: this GPU")
    html = device_panel_html(mine)
    assert "This machine's GPU: NVIDIA H100 80GB HBM3" in html and "no GPU here" not in html
