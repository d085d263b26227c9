"""Chapter 5's main widget: pick a reduction version, see its tree, its levels or its lanes.

Each version is emulated once (one block of 256 threads) and each picture drawn once: the
tree pictures of all versions when the widget is built, the other views on first use. After
that a change of the dropdowns only swaps a cached PNG.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from ..simt import percent
from .figure_image import FigureImage, figure_to_png, panel

VIEWS = ("tree: the array per barrier epoch", "levels: lanes, issue slots, bank conflicts",
         "lanes of warp 0, instruction by instruction")


def _versions() -> dict:
    from ..kernels import reduction as R

    return {name: (kernel, per_block) for name, (kernel, per_block) in R.BLOCK_KERNELS.items()}


def version_stats(run) -> dict:
    """The summary numbers of one block-kernel run (block 0)."""
    from ..analysis.levels import tree_levels

    m = run.metrics
    tree = tree_levels(run)
    ep = run.lines.epoch
    g = run.memory[(run.memory.space == 0) & (run.memory.kind == 0) & (run.memory.block == 0)]
    return {
        "simt_efficiency": m["simt_efficiency"],
        "bank_conflicts": int(sum(r["bank_conflicts"] for r in tree)),
        "barriers": int(ep[run.lines.block == 0].max()),
        "shared_levels": len(tree),
        "add_slots": int(sum(r["write_instructions"] for r in tree)),
        "reads_per_thread": float(len(g) / run.threads_per_block),
    }


def reduction_widget(seed: int = 0):
    """Dropdowns ``version`` (v1 interleaved ... v5 warp shuffle) and ``view`` (tree, levels,
    lanes); the summary gives SIMT efficiency, bank conflicts, barriers and global reads."""
    from .. import emulate
    from ..plots.divergence import plot_lane_activity
    from ..plots.epochs import plot_epochs
    from ..plots.reduction import plot_levels

    versions = _versions()
    runs: dict = {}
    pngs: dict = {}
    stats: dict = {}

    def run_of(name):
        if name not in runs:
            kernel, per_block = versions[name]
            x = np.random.default_rng(seed).random(per_block, dtype=np.float32)
            runs[name] = emulate(kernel, 1, 256, x, np.zeros(1, np.float32))
            stats[name] = version_stats(runs[name])
        return runs[name]

    def picture(name, view):
        key = (name, view)
        if key not in pngs:
            run = run_of(name)
            if view == VIEWS[0]:
                fig = plot_epochs(run, "s", title=f"{name}: the shared array s after each barrier epoch")
            elif view == VIEWS[1]:
                fig = plot_levels({name: run}, title=f"{name}: each tree level of one block")
            else:
                fig = plot_lane_activity(run, warp=0)
            pngs[key] = figure_to_png(fig, dpi=80, layout_key="reduction_widget")
        return pngs[key]

    version = widgets.Dropdown(options=list(versions), value=list(versions)[0], description="version")
    view = widgets.Dropdown(options=list(VIEWS), value=VIEWS[0], description="view",
                            layout=widgets.Layout(width="420px"))
    summary = widgets.HTML()
    image = FigureImage()

    def redraw(*_):
        name = version.value
        run_of(name)
        s = stats[name]
        summary.value = (
            f"<b>{name}</b>, one block of 256 threads: SIMT efficiency <b>{percent(s['simt_efficiency'], 1)}</b>; "
            f"{s['add_slots']} warp instructions for the adds of the shared-memory levels "
            f"({s['shared_levels']} levels); <b>{s['bank_conflicts']}</b> bank conflicts (extra wavefronts); "
            f"<b>{s['barriers']}</b> barriers; {s['reads_per_thread']:g} global reads per thread")
        image.value = picture(name, view.value)

    # every version's run and default picture up front (about 2 s): switching versions is then a
    # cached swap; the other views are drawn on first use and cached
    for name in versions:
        picture(name, VIEWS[0])
    version.observe(redraw, names="value")
    view.observe(redraw, names="value")
    redraw()
    return panel([version, view], image, summary, version=version, view=view)


__all__ = ["reduction_widget", "version_stats", "VIEWS"]
