"""Divergence widget: pick a course kernel and a warp, see which lanes ran each line."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from ..plots.divergence import plot_lane_activity
from .figure_image import FigureImage, panel


def _demo_runs():
    """The chapter 2 kernels on small inputs, each run once in the emulator."""
    from .. import emulate
    from ..kernels import divergence as dv
    rng = np.random.default_rng(0)
    x = rng.random(128, dtype=np.float32)
    n_terms = rng.integers(0, 16, 128).astype(np.int32)
    return {
        "branch_by_parity": lambda: emulate(dv.branch_by_parity, 1, 128, x, np.zeros_like(x)),
        "branch_by_warp": lambda: emulate(dv.branch_by_warp, 1, 128, x, np.zeros_like(x)),
        "triangle_sum": lambda: emulate(dv.triangle_sum, 1, 128, n_terms,
                                        np.zeros(128, np.int32)),
    }


def divergence_widget(runs: dict | None = None):
    """``runs``: name -> Run (or a function returning one); default: chapter 2's kernels."""
    runs = dict(runs or _demo_runs())
    cache: dict = {}

    def get(name):
        if name not in cache:
            r = runs[name]
            cache[name] = r() if callable(r) else r
        return cache[name]

    kernel = widgets.Dropdown(options=list(runs), description="kernel")
    warp = widgets.Dropdown(description="warp")
    summary = widgets.HTML()
    view = FigureImage()

    def redraw(*_):
        run = get(kernel.value)
        if warp.value is None:
            return
        summary.value = (f"{run.kernel_name}: SIMT efficiency over all warps "
                         f"<b>{run.metrics['simt_efficiency']:.0%}</b>")
        view.show(plot_lane_activity(run, warp.value))

    def new_kernel(*_):
        run = get(kernel.value)
        warps = sorted(set(int(w) for w in run.lines.gwarp))
        warp.unobserve(redraw, names="value")
        warp.options = warps
        warp.value = warps[0]
        warp.observe(redraw, names="value")
        redraw()

    kernel.observe(new_kernel, names="value")
    warp.observe(redraw, names="value")
    new_kernel()
    return panel([kernel, warp], view, summary, kernel=kernel, warp=warp)
