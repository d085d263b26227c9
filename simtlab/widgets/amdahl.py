"""Amdahl's law widget: parallel fraction and speed-up of the parallel part."""

from __future__ import annotations

import ipywidgets as widgets

from ..plots.amdahl import amdahl_limit, amdahl_speedup, plot_amdahl
from .figure_image import FigureImage, panel


def amdahl_widget(parallel_fraction: float = 0.3, parallel_speedup: float = 100):
    p = widgets.FloatSlider(value=parallel_fraction, min=0.0, max=1.0, step=0.01,
                            description="parallel share", readout_format=".0%",
                            style={"description_width": "initial"},
                            continuous_update=False)
    s = widgets.FloatLogSlider(value=parallel_speedup, base=10, min=0, max=4, step=0.05,
                               description="parallel part's speed-up", continuous_update=False,
                               style={"description_width": "initial"})
    summary = widgets.HTML()
    view = FigureImage()
    kept = {}                       # the figure, drawn again for each change

    def redraw(*_):
        total = amdahl_speedup(p.value, s.value)
        limit = amdahl_limit(p.value)
        summary.value = (f"whole program: <b>{total:.2f}x</b> faster "
                         f"(at most {limit:.2f}x however fast the parallel part runs)"
                         if limit != float("inf") else
                         f"whole program: <b>{total:.2f}x</b> faster (no limit: all parallel)")
        kept["fig"] = plot_amdahl(p.value, s.value, figure=kept.get("fig"))
        view.show(kept["fig"], layout_key="amdahl_widget")

    p.observe(redraw, names="value")
    s.observe(redraw, names="value")
    redraw()
    return panel([p, s], view, summary, parallel_fraction=p, parallel_speedup=s)
