"""Functions that return matplotlib Figures (never pyplot state), one module per picture; the
playground's text tabs (source view, request tables, error card, races, comparisons) are HTML
strings built here too, from a ``Run`` like the figures.

Inside IPython, a Figure returned by the last line of a cell is shown as a PNG even when the
inline backend is not active: the formatter is registered here, once, on import.
"""


def _register_png_formatter():
    try:
        from IPython import get_ipython
    except ImportError:
        return
    ip = get_ipython()
    if ip is None:
        return
    from matplotlib.figure import Figure

    from ..widgets.figure_image import figure_to_png
    png = ip.display_formatter.formatters["image/png"]
    if Figure in png.type_printers:
        return                                    # the inline backend already shows Figures
    png.for_type(Figure, figure_to_png)


_register_png_formatter()
