"""Thread/block mapping widget: pick block shape and colouring, see who computes what."""

from __future__ import annotations

import ipywidgets as widgets

from ..plots.mapping import plot_thread_mapping, thread_mapping
from .figure_image import FigureImage, panel


def mapping_widget(shape=(8, 12)):
    layout = widgets.ToggleButtons(options=["2-D", "1-D"], value="2-D", description="array")
    bx = widgets.Dropdown(options=[1, 2, 4, 8, 16, 32], value=4, description="blockDim.x")
    by = widgets.Dropdown(options=[1, 2, 4, 8, 16], value=4, description="blockDim.y")
    color = widgets.Dropdown(options=["block", "warp", "thread", "lane"], value="block",
                             description="colour by")
    summary = widgets.HTML()
    view = FigureImage()

    def redraw(*_):
        if layout.value == "1-D":
            n = shape[0] * shape[1]
            dims = dict(shape=n, blockdim=bx.value * by.value)
        else:
            dims = dict(shape=shape, blockdim=(bx.value, by.value))
        m = thread_mapping(**dims)
        summary.value = (f"grid {tuple(m['griddim'])}, block {tuple(m['blockdim'])}: "
                         f"<b>{m['threads']}</b> threads launched, <b>{m['idle']}</b> idle")
        view.show(plot_thread_mapping(color_by=color.value, mapping=m))

    for c in (layout, bx, by, color):
        c.observe(redraw, names="value")
    redraw()
    return panel([layout, bx, by, color], view, summary, layout=layout, block_x=bx, block_y=by,
                 color_by=color)
