"""Chapter 9's widget: which lane of the warp holds which element of an mma.sync's A, B and C."""

from __future__ import annotations

import ipywidgets as widgets

from .. import tensorcores as TC
from ..plots.tensor_cores import plot_fragment_layouts
from .figure_image import FigureImage, panel

#: dropdown label -> (mma shape, precision)
SHAPES = {"m16n8k16, FP16 or BF16": ("m16n8k16", "fp16"), "m16n8k8, TF32": ("m16n8k8", "tf32")}


def _held(layout: TC.FragmentLayout, lane: int) -> str:
    name = layout.operand.upper()
    return ", ".join(f"{layout.operand}{e} = {name}[{r}, {c}]" for e, r, c in layout.elements_of(lane))


def fragment_widget(shape: str = "m16n8k16, FP16 or BF16", lane: int = 0):
    """The fragment layouts of one mma shape (PTX ISA formulas, ``tensorcores.fragment_layout``)
    with one lane's elements outlined; the summary lists them."""
    if shape not in SHAPES:
        raise ValueError(f"shape must be one of {', '.join(SHAPES)}, not {shape!r}")
    which = widgets.Dropdown(options=list(SHAPES), value=shape, description="mma shape",
                             style={"description_width": "initial"})
    pick = widgets.IntSlider(value=lane, min=0, max=31, description="lane", continuous_update=False)
    summary = widgets.HTML()
    view = FigureImage()

    def redraw(*_):
        mma, precision = SHAPES[which.value]
        layouts = [TC.fragment_layout(mma, precision, operand) for operand in "abc"]
        summary.value = (f"lane <b>{pick.value}</b> (group {pick.value >> 2}, thread {pick.value % 4} "
                         "in its group) holds " + "; ".join(_held(lay, pick.value) for lay in layouts))
        fig = plot_fragment_layouts(layouts, lane=pick.value)
        view.show(fig, layout_key="fragment_widget")

    which.observe(redraw, names="value")
    pick.observe(redraw, names="value")
    redraw()
    return panel([which, pick], view, summary, shape=which, lane=pick)
