"""Chapter 6's widget: pick a GEMM version, a block and a thread, see which elements of A and B
that block loads in each phase and which of them the thread loads itself (from the emulator's
trace), with the version's memory figures.

Each version is emulated once, on small matrices, when first chosen; its pictures are cached
per block, so moving between versions and blocks afterwards only swaps a PNG.
"""

from __future__ import annotations

import ipywidgets as widgets

from .figure_image import FigureImage, figure_to_png, panel

#: the matrices the widget multiplies: M x K times K x N, odd so the last tiles are ragged
SHAPE = (40, 36, 24)          # M, N, K


def gemm_widget(shape=SHAPE, versions=None):
    """Dropdowns ``version`` and ``block`` and a ``thread`` box (black dots: what that thread of
    the block loads itself); the summary gives loads, reuse per loaded element, sectors per
    request and bank conflicts of the whole launch."""
    from ..analysis.gemm import profile, trace_version
    from ..kernels import gemm as G
    from ..plots.gemm import plot_tile_phases

    names = list(versions or G.NUMBA_VERSIONS)
    m, n, k = shape
    runs: dict = {}
    pngs: dict = {}

    def run_of(name):
        if name not in runs:
            run = trace_version(name, m, n, k)
            runs[name] = (run, profile(run))
        return runs[name]

    version = widgets.Dropdown(options=names, value=names[0], description="version")
    block = widgets.Dropdown(description="block")
    thread = widgets.BoundedIntText(value=0, min=0, max=1023, description="thread", layout=widgets.Layout(width="160px"))
    summary = widgets.HTML()
    figure = FigureImage()

    def blocks_of(name):
        run, _ = run_of(name)
        return [(f"{b} (blockIdx {run.block_index(b)[:2]})", b) for b in range(run.num_blocks)]

    def redraw(*_):
        run, p = run_of(version.value)
        thread.max = run.threads_per_block - 1
        key = (version.value, block.value, thread.value)
        if key not in pngs:
            pngs[key] = figure_to_png(plot_tile_phases(run, block.value or 0, thread.value), dpi=80,
                                       layout_key="gemm_widget")
        figure.value = pngs[key]
        summary.value = (f"<b>{version.value}</b> on {m}x{k} times {k}x{n}: <b>{p['loads']:,}</b> global loads "
                         f"for {p['flops']:,} FLOPs, reuse <b>{p['reuse']:.1f}</b> FMA operands per loaded element; "
                         f"sectors per request A {p['sectors_a']:.1f}, B {p['sectors_b']:.1f}, "
                         f"C {p['sectors_c']:.1f}; <b>{p['bank_conflicts']}</b> bank conflicts")

    def new_version(*_):
        options = blocks_of(version.value)
        block.unobserve(redraw, "value")
        block.options = options
        block.value = options[0][1]
        block.observe(redraw, "value")
        redraw()

    version.observe(new_version, "value")
    block.observe(redraw, "value")
    thread.observe(redraw, "value")
    new_version()
    return panel([version, block, thread], figure, summary, version=version, block=block, thread=thread)
