"""Every chapter's main widget reacts to its main control, headless; sliders do not recompute
while dragged. The timings themselves are measured by benchmarks/widget_latency.py."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import ipywidgets as widgets
import pytest

import simtlab.widgets as sw

REPO = Path(__file__).resolve().parent.parent
MASTERS = sorted((REPO / "solutions").glob("*.ipynb"))
SLIDERS = (widgets.IntSlider, widgets.FloatSlider, widgets.FloatLogSlider, widgets.IntRangeSlider,
           widgets.FloatRangeSlider)

_spec = importlib.util.spec_from_file_location("widget_latency", REPO / "benchmarks" / "widget_latency.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


def _main_cell_source(master: Path) -> str:
    nb = json.loads(master.read_text(encoding="utf-8"))
    tagged = ["".join(c["source"]) for c in nb["cells"] if "main-widget" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, f"{master.name}: {len(tagged)} cells tagged main-widget, expected one"
    return tagged[0]


def _build_from_cell(source: str):
    """Run the main-widget cell's code as the notebook does; the last line is the widget."""
    *body, last = [line for line in source.strip().splitlines() if line.strip()]
    namespace: dict = {}
    exec("\n".join(body), namespace)
    return eval(last, namespace)


@pytest.mark.parametrize("master", MASTERS, ids=[m.stem for m in MASTERS])
def test_main_widget_changes_figure_and_numbers(master):
    w = _build_from_cell(_main_cell_source(master))
    name = bench.main_control(w)
    control = w.controls[name]
    assert isinstance(control, widgets.Dropdown), f"{master.stem}: main control {name!r} is not a dropdown"
    before = (w.figure.value, w.summary.value)
    assert before[0][:8] == b"\x89PNG\r\n\x1a\n", "the main widget shows no PNG figure"
    values = bench.values_of(control)
    control.value = next(v for v in values if v != control.value)
    assert w.figure.value != before[0], f"{master.stem}: changing {name!r} left the figure as it was"
    assert w.summary.value != before[1], f"{master.stem}: changing {name!r} left the numbers as they were"


def test_main_widgets_are_found_for_every_chapter():
    found = bench.main_widgets()
    assert sorted(found.values()) == [m.stem for m in MASTERS]
    assert found.get("playground") == "00_playground", "chapter 0's main widget is the playground"
    widgets_ = [f for f in found if f != "playground"]
    assert all(hasattr(sw, f) for f in widgets_), f"not exported from simtlab.widgets: {found}"


def test_sliders_do_not_recompute_while_dragged():
    """Every slider of every widget waits for the mouse to let go (continuous_update=False)."""
    checked = 0
    for fname in sw.__all__:
        w = getattr(sw, fname)()
        for name, control in (getattr(w, "controls", None) or {}).items():
            if isinstance(control, SLIDERS):
                checked += 1
                assert control.continuous_update is False, f"{fname}: slider {name!r} recomputes while dragged"
    assert checked > 0


def test_cached_redraw_is_instant_and_the_same():
    """A setting seen before is shown from the widget's cache: same PNG, no new drawing."""
    w = sw.mapping_widget()
    bx = w.controls["block_x"]
    first = w.figure.value
    bx.value = 8
    changed = w.figure.value
    assert changed != first
    bx.value = 4
    assert w.figure.value == first
    row = bench.time_changes(w, "block_x", repeat=1)
    assert row["warm_ms"]["n"] == row["values"] and row["warm_ms"]["median"] < row["cold_ms"]["median"]
