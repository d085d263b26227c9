"""Thread/block mapping widget: pick a block shape and a colouring, see who computes what."""

from __future__ import annotations

import ipywidgets as widgets

from ..plots.mapping import COLOR_BY, plot_thread_mapping, thread_mapping
from .figure_image import FigureImage, figure_to_png, panel
from ..simt import WARP_SIZE

# Sizes that do not divide the default 8 x 12 array are included on purpose: they show
# idle threads in the last block.
BLOCK_X = [1, 2, 3, 4, 5, 6, 8, 12, 16, 32]
BLOCK_Y = [1, 2, 3, 4, 5, 6, 8, 16]


def _summary_html(m: dict, n_elements: int) -> str:
    threads_per_block = m["blockdim"][0] * m["blockdim"][1]
    warps = -(-threads_per_block // WARP_SIZE)
    used = threads_per_block / (WARP_SIZE * warps)
    return (f"grid {tuple(m['griddim'])} x block {tuple(m['blockdim'])}: "
            f"<b>{m['threads']}</b> threads launched for {n_elements} elements, "
            f"<b>{m['idle']}</b> idle; {warps} warp{'s' * (warps != 1)} per block "
            f"({used:.0%} of their lanes hold a thread)")


def mapping_widget(shape=(8, 12)):
    """Block size, 1-D/2-D indexing and colouring of an array of ``shape`` (rows, columns).

    In 1-D the array is indexed by its row-major flat index ``i`` with ``blockDim.x``
    threads per block, which shows how a 1-D launch walks a 2-D array row by row.
    Controls: ``layout``, ``block_x``, ``block_y``, ``color_by``.
    """
    shape = tuple(shape)
    # narrow controls, so that all four fit on one row of a notebook page (about 850 pixels)
    # (ToggleButtons puts its own description above the buttons: a Label beside them instead)
    layout_label = widgets.Label("indexing", layout=widgets.Layout(width="60px"))
    layout = widgets.ToggleButtons(options=[("2-D", "2d"), ("1-D", "1d")], value="2d",
                                   style={"button_width": "48px"})

    def narrow():
        return dict(layout=widgets.Layout(width="185px"), style={"description_width": "80px"})

    block_x = widgets.Dropdown(options=BLOCK_X, value=4, description="blockDim.x", **narrow())
    block_y = widgets.Dropdown(options=BLOCK_Y, value=4, description="blockDim.y", **narrow())
    color_by = widgets.Dropdown(options=list(COLOR_BY), value="block", description="colour by", **narrow())
    summary = widgets.HTML()
    view = FigureImage()
    n_elements = shape[0] * (shape[1] if len(shape) > 1 else 1)
    # Drawing the figure takes 150-250 ms on a laptop CPU; a setting seen before is instant.
    drawn: dict = {}

    def redraw(*_):
        one_d = layout.value == "1d" or len(shape) == 1
        block_y.disabled = one_d  # a 1-D launch has no y dimension
        blockdim = block_x.value if one_d else (block_x.value, block_y.value)
        key = (layout.value, blockdim, color_by.value)
        if key not in drawn:
            m = thread_mapping(shape, blockdim, layout=layout.value)
            drawn[key] = (_summary_html(m, n_elements),
                          figure_to_png(plot_thread_mapping(color_by=color_by.value, mapping=m),
                                        layout_key="mapping_widget"))
        summary.value, view.value = drawn[key]

    for control in (layout, block_x, block_y, color_by):
        control.observe(redraw, names="value")
    redraw()
    return panel([layout_label, layout, block_x, block_y, color_by], view, summary, layout=layout,
                 block_x=block_x, block_y=block_y, color_by=color_by)


__all__ = ["mapping_widget"]
