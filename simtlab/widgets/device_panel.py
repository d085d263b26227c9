"""The device panel as a widget: the real GPU if one is usable, else the H100 reference."""

from __future__ import annotations

import ipywidgets as widgets

from ..plots.device_panel import device_panel_html


def device_panel():
    from ..hardware import query_device
    return widgets.HTML(device_panel_html(query_device()))
