"""Occupancy widget: block size, registers per thread, shared memory per block."""

from __future__ import annotations

import ipywidgets as widgets

from ..hardware import H100_SXM, occupancy
from ..plots.occupancy import plot_occupancy
from .figure_image import FigureImage, panel


def occupancy_widget(props=H100_SXM):
    wide = {"description_width": "initial"}  # keep the descriptions from being cut short
    block = widgets.IntSlider(value=256, min=props.warp_size, max=props.max_threads_per_block,
                              step=props.warp_size, description="threads/block",
                              continuous_update=False, style=wide)
    regs = widgets.IntSlider(value=32, min=16, max=props.max_registers_per_thread, step=8,
                             description="registers/thread", continuous_update=False, style=wide)
    # Bytes, as occupancy() takes them; up to what a block may have after opting in.
    smem = widgets.IntSlider(value=0, min=0, max=props.shared_memory_per_block_optin, step=1024,
                             description="shared bytes/block", continuous_update=False, style=wide)
    summary = widgets.HTML()
    view = FigureImage()

    def redraw(*_):
        o = occupancy(block.value, regs.value, smem.value, props)
        summary.value = o.describe()
        view.show(plot_occupancy(regs.value, smem.value, props, highlight_block_size=block.value),
                  layout_key="occupancy_widget")

    for c in (block, regs, smem):
        c.observe(redraw, names="value")
    redraw()
    return panel([block, regs, smem], view, summary, block_size=block,
                 registers_per_thread=regs, shared_per_block=smem)
