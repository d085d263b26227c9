"""Divergence: which lanes of a warp executed each of its instructions."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap

from ..analysis.divergence import lane_masks
from .style import PALETTE, label, new_figure

WARP = 32


def divergence_from_run(run, warp: int = 0):
    """(instructions x 32 lanes) bool matrix of one warp and a label per instruction."""
    masks, lines = lane_masks(run.lines, warp)
    labels = [f"L{int(line)}: {run.source(int(line)).strip()[:48]}" for line in lines]
    return masks, labels


def plot_divergence(masks, labels, title: str = "Active lanes per warp instruction"):
    masks = np.asarray(masks, bool)
    n = len(masks)
    eff = masks.sum() / (WARP * n) if n else 1.0
    fig, (ax, bar) = new_figure(f"{title}: SIMT efficiency {eff:.0%}", ncols=2,
                                figsize=(10, min(9, 1.6 + 0.28 * max(n, 1))),
                                gridspec_kw={"width_ratios": [5, 1]}, sharey=True)
    ax.imshow(masks, aspect="auto", cmap=ListedColormap(["#eeeeee", PALETTE[0]]),
              vmin=0, vmax=1, interpolation="nearest")
    ax.set_yticks(range(n))
    ax.set_yticklabels(labels, fontsize=8, family="monospace")
    ax.set_xticks(range(0, WARP, 4))
    label(ax, "lane", "warp instruction")
    active = masks.sum(axis=1)
    bar.barh(range(n), active, color=PALETTE[0])
    bar.set_xlim(0, WARP)
    bar.axvline(WARP, color="gray", lw=1, ls="--")
    label(bar, "active lanes", "")
    return fig


def plot_lane_activity(run, warp: int = 0):
    """The divergence plot of one warp of an emulator run."""
    masks, labels = divergence_from_run(run, warp)
    return plot_divergence(masks, labels, title=f"{run.kernel_name}, warp {warp}")
