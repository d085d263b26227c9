"""Warp access widget: stride, element size and misalignment against sectors moved."""

from __future__ import annotations

import ipywidgets as widgets

from ..plots.memory_access import (describe, plot_warp_access, strided_addresses,
                                   warp_request_summary)
from .figure_image import FigureImage, panel


def warp_access_widget():
    stride = widgets.IntSlider(value=1, min=0, max=33, description="stride",
                               continuous_update=False)
    size = widgets.Dropdown(options=[1, 2, 4, 8, 16], value=4, description="bytes/elem")
    offset = widgets.IntSlider(value=0, min=0, max=32, description="offset",
                               continuous_update=False)
    summary = widgets.HTML()
    view = FigureImage()

    def redraw(*_):
        addrs = strided_addresses(stride.value, size.value, offset.value)
        summary.value = describe(warp_request_summary(addrs, size.value))
        view.show(plot_warp_access(stride.value, size.value, offset.value))

    for c in (stride, size, offset):
        c.observe(redraw, names="value")
    redraw()
    return panel([stride, size, offset], view, summary, stride=stride, itemsize=size,
                 offset=offset)
