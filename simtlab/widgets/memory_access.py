"""Warp access widget: stride, element size and misalignment against the sectors moved."""

from __future__ import annotations

import ipywidgets as widgets

from ..plots.memory_access import describe, plot_warp_access, strided_addresses, warp_request_summary
from .figure_image import FigureImage, panel


def warp_access_widget():
    """One warp reading ``a[offset + lane*stride]``: the plot and its sector count.

    Controls: ``stride`` (elements; 0 = every lane reads the same element), ``size``
    (bytes per element), ``offset`` (misalignment, in elements).
    """
    stride = widgets.IntSlider(value=1, min=0, max=33, description="stride", continuous_update=False)
    size = widgets.Dropdown(options=[1, 2, 4, 8, 16], value=4, description="bytes/elem")
    offset = widgets.IntSlider(value=0, min=0, max=32, description="offset", continuous_update=False)
    summary = widgets.HTML()
    view = FigureImage()

    def redraw(*_):
        addresses = strided_addresses(stride.value, size.value, offset.value)
        summary.value = describe(warp_request_summary(addresses, size.value))
        view.show(plot_warp_access(stride=stride.value, size=size.value, offset=offset.value),
                  layout_key="warp_access_widget")

    for control in (stride, size, offset):
        control.observe(redraw, names="value")
    redraw()
    return panel([stride, size, offset], view, summary, stride=stride, size=size, offset=offset)


__all__ = ["warp_access_widget"]
