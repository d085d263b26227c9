"""Show a matplotlib Figure inside a widget as a PNG image.

A PNG in an ``ipywidgets.Image`` renders in every front end (JupyterLab, VS Code, nbviewer
snapshots) and can be checked in a headless test by reading its bytes, unlike an ``Output``
widget that depends on the inline backend.
"""

from __future__ import annotations

import ipywidgets as widgets
from matplotlib.figure import Figure

from .png import figure_png


def figure_to_png(fig: Figure, dpi: int = 100, layout_key=None) -> bytes:
    """The Figure rendered as PNG bytes (works headless: no pyplot, no display).

    Drawn by ``png.figure_png``, as the playground draws: each string rendered once per
    session and pasted after, a quick PNG encoder, and with a ``layout_key`` (the widget's
    name) the layout of the last figure of that kind, when the new one fits it. A control
    change redraws a figure whose text is nearly all the same as before."""
    before = fig.dpi
    try:
        return figure_png(fig, dpi, layout_key=layout_key)
    finally:
        fig.set_dpi(before)           # as savefig leaves it: the caller may show the figure again


class FigureImage(widgets.Image):
    """An Image widget that displays Figures: ``view.show(fig)``."""

    def __init__(self, fig: Figure | None = None, **kwargs):
        kwargs.setdefault("format", "png")
        kwargs.setdefault("layout", widgets.Layout(max_width="100%", height="auto"))
        super().__init__(**kwargs)
        if fig is not None:
            self.show(fig)

    def show(self, fig: Figure, layout_key=None) -> None:
        self.value = figure_to_png(fig, layout_key=layout_key)


def panel(controls, figure: FigureImage, summary=None, **named_controls):
    """Controls above the figure (and an optional summary line), as one container.

    The returned VBox has ``.controls`` (dict of the controls by name), ``.figure`` and
    ``.summary`` so that tests and students' code can drive it.
    """
    children = [widgets.HBox(list(controls), layout=widgets.Layout(flex_flow="row wrap"))]
    if summary is not None:
        children.append(summary)
    children.append(figure)
    box = widgets.VBox(children)
    box.controls = named_controls
    box.figure = figure
    box.summary = summary
    return box
