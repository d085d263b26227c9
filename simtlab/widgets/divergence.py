"""Divergence widget: pick a run and a warp, see which lanes ran each warp instruction."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from ..plots.divergence import divergence_from_run, plot_lane_activity, simt_efficiency
from ..simt import percent
from .figure_image import FigureImage, figure_to_png, panel


def _demo_runs() -> dict:
    """Chapter 2's kernels on 128 elements; each is emulated the first time it is picked."""
    from .. import emulate
    from ..kernels import divergence as dv

    rng = np.random.default_rng(0)
    x = rng.random(128, dtype=np.float32)
    n_terms = rng.integers(0, 16, 128).astype(np.int32)
    return {
        "branch_by_parity": lambda: emulate(dv.branch_by_parity, 1, 128, x, np.zeros_like(x)),
        "branch_by_warp": lambda: emulate(dv.branch_by_warp, 1, 128, x, np.zeros_like(x)),
        "triangle_sum": lambda: emulate(dv.triangle_sum, 1, 128, n_terms, np.zeros(128, np.int32)),
    }


def _as_runs(runs) -> dict:
    if runs is None:
        return _demo_runs()
    if isinstance(runs, dict):
        return dict(runs)
    return {getattr(runs, "kernel_name", "run"): runs}  # one Run


def divergence_widget(runs=None):
    """Divergence plot of one warp, picked from a dropdown of the warps present in the run.

    ``runs``: a ``Run``, a dict name -> Run (or a function returning one, run lazily), or
    None for chapter 2's kernels. Controls: ``kernel``, ``warp`` (value: global warp id).
    """
    runs = _as_runs(runs)
    cache: dict = {}

    def get(name):
        if name not in cache:
            r = runs[name]
            cache[name] = r() if callable(r) else r
        return cache[name]

    kernel = widgets.Dropdown(options=list(runs), description="kernel", disabled=len(runs) == 1)
    warp = widgets.Dropdown(description="warp")
    summary = widgets.HTML()
    view = FigureImage()

    drawn: dict = {}  # (kernel, warp) -> (summary, PNG): drawing takes 100-200 ms, a revisit none

    def redraw(*_):
        run = get(kernel.value)
        if warp.value is None:
            return
        key = (kernel.value, warp.value)
        if key not in drawn:
            masks, _ = divergence_from_run(run, warp.value)
            drawn[key] = (f"{run.kernel_name}, global warp {warp.value}: {len(masks)} warp "
                          f"instructions, SIMT efficiency <b>{percent(simt_efficiency(masks), 1)}</b> "
                          f"(all warps of the run: {percent(run.metrics['simt_efficiency'], 1)})",
                          figure_to_png(plot_lane_activity(run, warp.value), layout_key="divergence_widget"))
        summary.value, view.value = drawn[key]

    def new_kernel(*_):
        run = get(kernel.value)
        gwarps = sorted(set(run.lines["gwarp"].tolist()))
        wpb = run.warps_per_block
        # Setting options fires a value change: redraw once, after the new value is set.
        warp.unobserve(redraw, names="value")
        warp.options = [(f"block {g // wpb}, warp {g % wpb} (global {g})", g) for g in gwarps]
        warp.value = gwarps[0]
        warp.observe(redraw, names="value")
        redraw()

    kernel.observe(new_kernel, names="value")
    warp.observe(redraw, names="value")
    new_kernel()
    return panel([kernel, warp], view, summary, kernel=kernel, warp=warp)


__all__ = ["divergence_widget"]
