"""Chapter 7's widget: pick a filter size, stride, padding and input size; see the unrolled
matrix the course's im2col kernel writes and how many copies of each input element it holds.

Each setting is emulated once (a single small image) and its picture cached.
"""

from __future__ import annotations

import ipywidgets as widgets

from .figure_image import FigureImage, figure_to_png, panel

__all__ = ["unroll_widget"]


def unroll_widget(size: int = 6, k: int = 3):
    """Controls ``k`` (filter size), ``stride``, ``padding`` and ``size`` (the input is size x size)."""
    from ..analysis.unroll import trace_unroll
    from ..plots.conv import plot_unroll

    traces: dict = {}
    pngs: dict = {}

    def trace_of(key):
        if key not in traces:
            kk, stride, padding, n = key
            traces[key] = trace_unroll((1, 1, n, n), kk, stride, padding)
            pngs[key] = figure_to_png(plot_unroll(traces[key]), dpi=80, layout_key="unroll_widget")
        return traces[key]

    k_box = widgets.Dropdown(options=[2, 3, 4, 5], value=k, description="K")
    stride = widgets.Dropdown(options=[1, 2], value=1, description="stride")
    padding = widgets.Dropdown(options=["valid", "same"], value="valid", description="padding")
    n_box = widgets.IntSlider(value=size, min=5, max=9, description="input size", continuous_update=False)
    summary = widgets.HTML()
    image = FigureImage()

    def redraw(*_):
        key = (k_box.value, stride.value, padding.value, n_box.value)
        try:
            t = trace_of(key)
        except ValueError as e:                       # the filter does not fit: say so, keep the last picture
            summary.value = f"<b>{e}</b>"
            return
        rows, cols = t.source.shape
        inner = int(t.copies.max())
        summary.value = (
            f"{n_box.value}x{n_box.value} input ({n_box.value ** 2} elements) -> unrolled matrix "
            f"<b>{rows} x {cols}</b> = {rows * cols} entries, <b>{t.duplication:.2f}</b> per input element; "
            f"an element is copied at most <b>{inner}</b> {'time' if inner == 1 else 'times'} (K x K = {t.k * t.k}"
            f"{', fewer with stride ' + str(t.stride) if t.stride > 1 else ''}); "
            f"{int((t.source < 0).sum())} entries are padding zeros")
        image.value = pngs[key]

    for control in (k_box, stride, padding, n_box):
        control.observe(redraw, names="value")
    redraw()
    return panel([k_box, stride, padding, n_box], image, summary, k=k_box, stride=stride, padding=padding,
                 size=n_box)
