"""Occupancy widget: block size, registers per thread, shared memory per block."""

from __future__ import annotations

import ipywidgets as widgets

from ..hardware import H100_SXM, occupancy
from ..plots.occupancy import plot_occupancy
from .figure_image import FigureImage, panel


def occupancy_widget(props=H100_SXM):
    block = widgets.IntSlider(value=256, min=32, max=1024, step=32, description="threads/blk",
                              continuous_update=False)
    regs = widgets.IntSlider(value=32, min=16, max=255, step=8, description="regs/thread",
                             continuous_update=False)
    smem = widgets.IntSlider(value=0, min=0, max=96 * 1024, step=1024,
                             description="shared B/blk", continuous_update=False)
    summary = widgets.HTML()
    view = FigureImage()

    def redraw(*_):
        o = occupancy(block.value, regs.value, smem.value, props)
        summary.value = o.describe()
        view.show(plot_occupancy(regs.value, smem.value, props, highlight_block_size=block.value))

    for c in (block, regs, smem):
        c.observe(redraw, names="value")
    redraw()
    return panel([block, regs, smem], view, summary, block_size=block,
                 registers_per_thread=regs, shared_per_block=smem)
