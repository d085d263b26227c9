"""Every figure a chapter widget draws, at every value of every control, has its text on the
canvas and clear of the other axes (checked on what was drawn, with the same rule the kept
layouts use: simtlab/widgets/png.py ``drawn_misfits``). Constrained layout does not promise it:
the im2col widget's right-hand title ran under its colorbar."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from matplotlib.figure import Figure

import simtlab.widgets as sw
import simtlab.widgets.figure_image as figure_image
from simtlab.widgets import png

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("widget_latency", REPO / "benchmarks" / "widget_latency.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

WIDGETS = [name for name in sw.__all__ if name != "device_panel"]      # the device panel draws no figure


def _misfits(fig) -> list[str]:
    return png.drawn_misfits(fig, fig.canvas.get_renderer())


@pytest.mark.parametrize("name", WIDGETS)
def test_every_figure_of_the_widget_fits(name, monkeypatch):
    checked = []

    def fresh_layout_then_check(fig: Figure, dpi, layout_key=None):
        out = png.figure_png(fig, dpi)             # no layout_key: a fresh constrained layout
        misfits = _misfits(fig)
        assert not misfits, f"{name}, figure {fig._suptitle.get_text() if fig._suptitle else ''!r}: {misfits}"
        checked.append(fig)
        return out

    monkeypatch.setattr(figure_image, "figure_png", fresh_layout_then_check)
    widget = getattr(sw, name)()
    for control in widget.controls.values():
        for value in bench.values_of(control):
            control.value = value
    assert checked, f"{name} drew no figure"


def test_the_check_finds_a_title_under_a_colorbar():
    # what the im2col widget did before its title was split: the check must see it
    fig = Figure(figsize=(5, 3), layout="constrained")
    ax = fig.subplots()
    fig.colorbar(ax.imshow([[0, 1], [2, 3]]), ax=ax)
    ax.set_title("a title far wider than this narrow axes and its colorbar together")
    png.figure_png(fig, 80)
    assert _misfits(fig) and not png._drawn_fits(fig, fig.canvas.get_renderer())
