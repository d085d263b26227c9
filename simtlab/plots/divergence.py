"""Which lanes of one warp execute each instruction: branch divergence made visible.

A warp issues an instruction once for all its lanes; lanes on the other side of a branch
sit idle. ``divergence_from_run`` rebuilds the warp's instruction stream from a trace,
``plot_divergence`` draws it as a lane x instruction grid.
"""

from __future__ import annotations

import numpy as np
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch
from matplotlib.ticker import NullLocator

from ..analysis.divergence import instructions
from .style import PALETTE, label, new_figure
from ..simt import WARP_SIZE, percent

# Above this many instructions the per-row labels would overlap; ticks are thinned.
MAX_LABELLED_ROWS = 60


def simt_efficiency(lane_masks) -> float:
    """Active lane-executions / (32 x instructions): 1.0 when no lane ever idles."""
    masks = np.asarray(lane_masks, dtype=bool)
    if masks.size == 0:
        return 0.0
    return float(masks.sum()) / (WARP_SIZE * masks.shape[0])


def _height(n: int) -> float:
    return min(10.0, max(3.4, 1.8 + 0.28 * n))


class DivergenceFigure:
    """The divergence plot as a figure drawn again for other instructions by ``show``: its
    axes, ticks, legends and collections are made once (on a slow CPU, making a figure's
    axes and ticks took as long as drawing it). ``plot_divergence`` is one ``show``; the
    playground keeps one and shows each warp in it."""

    def __init__(self, max_labels: int = MAX_LABELLED_ROWS):
        self.max_labels = max_labels
        # not sharey: a shared axis makes a tick (an artist with its own label) per labelled row
        # on both axes; the bar chart's rows need no labels, its y limits follow the grid's
        self.fig, (ax, bar_ax) = new_figure("", ncols=2, figsize=(9.5, _height(1)),
                                            gridspec_kw={"width_ratios": [4, 1]})
        self.ax, self.bar_ax = ax, bar_ax
        self.grid = ax.imshow(np.zeros((1, WARP_SIZE)), cmap=ListedColormap(["white", PALETTE[0]]), vmin=0, vmax=1,
                              aspect="auto", interpolation="nearest")
        # White separators keep single lanes and instructions distinguishable: one
        # LineCollection, not minor-tick gridlines (a tick is an artist of its own, with a label
        # to lay out: the 32 + n of them took most of the drawing time)
        self.separators = ax.add_collection(LineCollection([], colors="white", linewidths=0.6), autolim=False)
        ax.set_xticks(range(0, WARP_SIZE, 4))
        label(ax, "lane", "warp instruction, in issue order")
        ax.legend(handles=[Patch(facecolor=PALETTE[0], label="lane active"),
                           Patch(facecolor="white", edgecolor="#888888", label="lane idle (masked off)")],
                  loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=2, fontsize=8, frameon=False)
        # every bar in one collection, not a Rectangle per instruction (each is an artist)
        self.bars = bar_ax.add_collection(PolyCollection([], linewidths=0), autolim=False)
        bar_ax.axvline(WARP_SIZE, color="black", linewidth=0.8, linestyle="--")
        bar_ax.set_xlim(0, WARP_SIZE + 1)
        bar_ax.set_xticks([0, 8, 16, 24, 32])
        bar_ax.yaxis.set_major_locator(NullLocator())
        label(bar_ax, "active lanes", "")
        bar_ax.legend(handles=[Patch(facecolor=PALETTE[2], label="all 32"),
                               Patch(facecolor=PALETTE[1], label="fewer")],
                      loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=2, fontsize=8, frameon=False)
        self.counts: list = []

    def show(self, lane_masks, line_labels, title: str | None = None):
        """Draw ``lane_masks`` ((n_instructions, 32) bool, in issue order) with one label per
        instruction; returns the Figure."""
        masks = np.asarray(lane_masks, dtype=bool).reshape(-1, WARP_SIZE)
        labels = list(line_labels)
        if len(labels) != masks.shape[0]:
            raise ValueError(f"{masks.shape[0]} instructions but {len(labels)} labels")
        n = masks.shape[0]
        eff = simt_efficiency(masks)
        title = title or "Warp divergence: lanes active per warp instruction"
        self.fig.set_size_inches(9.5, _height(n))
        self.fig.suptitle(f"{title}: SIMT efficiency {percent(eff)}")
        ax, bar_ax = self.ax, self.bar_ax
        self.grid.set_data(masks.astype(np.uint8))
        self.grid.set_extent((-0.5, WARP_SIZE - 0.5, n - 0.5, -0.5))
        separators = [[(x, -0.5), (x, n - 0.5)] for x in np.arange(0.5, WARP_SIZE - 1)]
        if n <= 4 * self.max_labels:
            separators += [[(-0.5, y), (WARP_SIZE - 0.5, y)] for y in np.arange(0.5, n - 1)]
        self.separators.set_segments(separators)
        step = max(1, int(np.ceil(n / self.max_labels)))
        rows = list(range(0, n, step))
        # The figure is shrunk to the page's width (about 80 %): short listings get larger text.
        ax.set_yticks(rows, [_short(labels[i]) for i in rows], fontsize=10 if n <= 12 else 9 if n <= 30 else 8,
                      family="monospace")
        active = masks.sum(axis=1)
        full = active == WARP_SIZE
        y = np.arange(n)
        self.bars.set_verts(np.stack([np.stack([np.zeros(n), y - 0.4], 1), np.stack([active, y - 0.4], 1),
                                      np.stack([active, y + 0.4], 1), np.stack([np.zeros(n), y + 0.4], 1)], axis=1))
        self.bars.set_facecolor([PALETTE[2] if f else PALETTE[1] for f in full])
        for text in self.counts:
            text.remove()
        self.counts = [bar_ax.text(min(a, WARP_SIZE) + 0.5 if a < 24 else a - 0.5, i, str(a), va="center",
                                   ha="left" if a < 24 else "right", fontsize=7)
                       for i, a in enumerate(active)] if n <= 30 else []
        ax.set_ylim(n - 0.5, -0.5)  # first instruction on top
        bar_ax.set_ylim(n - 0.5, -0.5)
        return self.fig


def plot_divergence(lane_masks, line_labels, title: str | None = None, max_labels: int = MAX_LABELLED_ROWS):
    """Lane x warp-instruction grid (filled: lane active) with active lanes per instruction.

    ``lane_masks``: (n_instructions, 32) bool, in execution order; ``line_labels``: one
    label per instruction (e.g. ``"L7: out[i] = 1"``); at most ``max_labels`` rows are
    labelled (every k-th: each label is text to lay out and draw, the figure's main cost).
    Returns a matplotlib Figure.
    """
    return DivergenceFigure(max_labels).show(lane_masks, line_labels, title)


def _short(text: str, width: int = 48) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def divergence_from_run(run, gwarp: int = 0):
    """``(lane_masks, line_labels)`` of warp ``gwarp``, rebuilt from ``run.lines``.

    A warp instruction is one source line (trace ``site``) executed for the n-th time
    (``seq``). They come in the order ``simtlab.analysis.divergence`` issues them: the
    emulator may run a warp's lanes one after another, so trace order is not issue order
    (an else-branch taken only by odd lanes would otherwise come after everything lane 0
    ran). Using the analysis keeps this plot's efficiency equal to ``run.metrics``'.
    Labels read ``"L<line>: <source text>"``.
    """
    lines = run.line_columns
    ins = instructions(lines[lines["gwarp"] == gwarp])
    if len(ins) == 0:
        raise ValueError(f"warp {gwarp} executed no lines; warps in this run: "
                         f"{sorted(set(lines['gwarp'].tolist()))[:8]}...")
    masks = ((ins["mask"][:, None] >> np.arange(WARP_SIZE)) & 1).astype(bool)
    labels = [f"L{int(line)}: {run.source(int(line), site=int(site)).strip()}"
              for line, site in zip(ins["line"], ins["site"])]
    return masks, labels


def plot_lane_activity(run, warp: int = 0, max_labels: int = MAX_LABELLED_ROWS, figure: DivergenceFigure | None = None):
    """The divergence plot of global warp ``warp`` of an emulator run (drawn in ``figure``
    when given: the playground keeps one)."""
    masks, labels = divergence_from_run(run, warp)
    block, w = divmod(int(warp), run.warps_per_block)
    figure = figure or DivergenceFigure(max_labels)
    return figure.show(masks, labels, title=f"{run.kernel_name}: block {block}, warp {w} (global warp {warp})")


__all__ = ["DivergenceFigure", "plot_divergence", "divergence_from_run", "plot_lane_activity", "simt_efficiency"]
