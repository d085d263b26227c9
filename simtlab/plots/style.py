"""Shared look of every course figure: one place sets sizes, fonts and colours."""

from __future__ import annotations

import matplotlib

# A figure function must work headless (tests, CI) and inline (notebooks); never pick a
# backend here: the notebook kernel's inline backend or the test's Agg default applies.
from matplotlib.figure import Figure

# Colour-blind-safe qualitative palette (Okabe & Ito), used for blocks, warps and lanes.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]

FIGSIZE = (8.0, 4.5)


def new_figure(title: str, *, nrows: int = 1, ncols: int = 1, figsize=None, **subplot_kw):
    """Return ``(fig, axes)`` sized for a notebook page, with the figure's title set.

    Uses ``matplotlib.figure.Figure`` directly (not ``pyplot``) so that figures made in a
    loop or a widget callback are never kept alive by pyplot's global state.
    """
    fig = Figure(figsize=figsize or FIGSIZE, layout="constrained")
    axes = fig.subplots(nrows, ncols, **subplot_kw)
    fig.suptitle(title)
    return fig, axes


def label(ax, xlabel: str, ylabel: str, title: str | None = None):
    """Axis labels (with units in brackets where there are units) and an optional title."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    return ax


def clear_content(ax) -> None:
    """Take what was plotted off ``ax`` (lines, patches, collections, images, texts, its legend)
    and forget its data limits, keeping the axes itself: its scales, ticks and grid. A figure
    drawn again this way skips making its axes and ticks, most of a redraw of a log-scale
    plot. The caller sets every limit and label it sets on a new figure."""
    for artist in (*ax.lines, *ax.patches, *ax.collections, *ax.images, *ax.texts):
        artist.remove()
    if ax.legend_ is not None:
        ax.legend_.remove()
    ax.relim()                      # no artists left: the data limits start empty again
    ax.set_autoscale_on(True)


__all__ = ["PALETTE", "FIGSIZE", "new_figure", "label", "clear_content", "matplotlib"]
