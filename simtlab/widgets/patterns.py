"""Chapter 3's main widget: pick a copy or transpose version, see what one warp's requests touch."""

from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np

from ..plots.patterns import plot_warp_footprint, request_stats
from .figure_image import FigureImage, figure_to_png, panel

__all__ = ["patterns_widget", "VERSIONS"]

SHAPE = (64, 64)        # the transposed matrix: whole 32 x 32 tiles, so every request is a full warp
N_COPY = 1024           # the copied vector: 32 rows of 32 floats

#: version name -> (kernel attribute in simtlab.kernels.patterns, panels to draw)
VERSIONS = {
    "copy v1 strided": ("copy_v1_strided", [("x", "read"), ("out", "write")]),
    "copy v2 coalesced": ("copy_v2_coalesced", [("x", "read"), ("out", "write")]),
    "transpose v1 naive": ("transpose_v1_naive", [("a", "read"), ("out", "write")]),
    "transpose v2 shared tile": ("transpose_v2_tile", [("a", "read"), ("tile", "write"), ("tile", "read"),
                                                       ("out", "write")]),
    "transpose v3 padded tile": ("transpose_v3_padded", [("a", "read"), ("tile", "write"), ("tile", "read"),
                                                         ("out", "write")]),
}


def _emulate(name: str):
    from .. import emulate
    from ..kernels import patterns as P

    rng = np.random.default_rng(3)
    kernel = getattr(P, VERSIONS[name][0])
    if name.startswith("copy"):
        x = rng.random(N_COPY, dtype=np.float32)
        return emulate(kernel, P.cdiv(N_COPY, P.BLOCK), P.BLOCK, x, np.zeros_like(x))
    a = rng.random(SHAPE, dtype=np.float32)
    grid, block = P.transpose_launch(SHAPE, 3)
    return emulate(kernel, grid, block, a, np.zeros(SHAPE[::-1], np.float32))


def _fmt(v) -> str:
    return "–" if v is None else f"{v:.3g}"


def patterns_widget(version: str = "transpose v1 naive"):
    """Dropdown ``version`` (copies and transposes) and slider ``warp`` (a warp of block 0).

    The figure shows which elements the warp's requests touch (lanes by colour in global
    arrays, banks by colour in shared ones); the summary gives the run's sectors per read and
    write request and wavefronts per shared request. Every version is emulated and drawn for
    warp 0 when the widget is built, so the dropdown answers at once; other warps are drawn
    when first asked for (the slider updates on release), then cached.
    """
    if version not in VERSIONS:
        raise ValueError(f"unknown version {version!r}: pick one of {', '.join(VERSIONS)}")
    runs: dict = {}
    images: dict = {}
    choose = widgets.Dropdown(options=list(VERSIONS), value=version, description="version",
                              layout=widgets.Layout(width="340px"))
    warp = widgets.IntSlider(value=0, min=0, max=7, description="warp", continuous_update=False)
    summary = widgets.HTML()
    view = FigureImage()

    def get_run(name):
        if name not in runs:
            runs[name] = _emulate(name)
        return runs[name]

    def redraw(*_):
        name, w = choose.value, warp.value
        run = get_run(name)
        warp.max = run.warps_per_block - 1
        w = min(w, warp.max)
        s = request_stats(run)
        summary.value = (
            f"<b>{html.escape(name)}</b> ({run.kernel_name}): global reads "
            f"<b>{_fmt(s['read_sectors'])}</b> sectors per request, writes <b>{_fmt(s['write_sectors'])}</b> "
            f"(4 = coalesced, 32 = one sector per lane); shared memory "
            f"<b>{_fmt(s['shared_wavefronts'])}</b> wavefronts per request"
            + (" (1 = no bank conflicts)" if s["shared_wavefronts"] is not None else " (not used)"))
        view.value = image(name, w)

    def image(name, w):
        key = (name, w)
        if key not in images:
            fig = plot_warp_footprint(get_run(name), VERSIONS[name][1], gwarp=w, max_rows=32, max_cols=32,
                                      title=f"{name}: what warp {w} of block 0 touches")
            images[key] = figure_to_png(fig, dpi=100, layout_key="patterns_widget")
        return images[key]

    for name in VERSIONS:
        image(name, 0)
    choose.observe(redraw, names="value")
    warp.observe(redraw, names="value")
    redraw()
    return panel([choose, warp], view, summary, version=choose, warp=warp)
