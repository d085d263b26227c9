"""A tree algorithm drawn from its trace: the array once per barrier epoch.

Each row is the array after one barrier epoch of one block. A cell written in that epoch is
coloured by the thread that wrote it (and labelled with its id when there is room); cells
left unchanged are grey. A line joins each element a thread read (since its previous write)
to each element it then wrote, so a reduction shows as a tree and a scan as its up- and down-sweep.
Everything comes from ``run.memory``: it is what the kernel really did, barrier by barrier.
"""

from __future__ import annotations

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.collections import PatchCollection
from matplotlib.patches import Rectangle

from ..analysis.complexity import dataflow
from .style import PALETTE, label, new_figure

__all__ = ["epoch_rows", "plot_epochs"]

MAX_LABELLED_CELLS = 64
MAX_WIDTH = 9.0                 # inches


def epoch_rows(run, array, *, block: int = 0):
    """Per epoch that writes ``array`` in ``block``: (epoch, {index: writer}, [(read, written)])."""
    writes = dataflow(run, array, block=block)
    out = []
    for epoch in sorted({w.epoch for w in writes}):
        ws = [w for w in writes if w.epoch == epoch]
        writer = {w.index: w.thread for w in ws}
        edges = sorted({(r, w.index) for w in ws for r in w.sources})
        out.append((epoch, writer, edges))
    return out


def plot_epochs(run, array: str, *, block: int = 0, title: str | None = None, max_rows: int | None = None):
    """The array once per barrier epoch: who wrote each element, and from which elements.

    Cells are coloured by the writer's warp and labelled with its thread id (up to 64 cells).
    """
    info = run.array(array)
    size = int(np.prod(info.shape))
    rows = epoch_rows(run, array, block=block)
    if max_rows is not None:
        rows = rows[:max_rows]
    nrows = len(rows)
    # at most 9 inches wide: a notebook shows the figure at about its own size, so its text stays
    # readable (wider figures are shrunk to the page, and their text with them)
    width = min(MAX_WIDTH, max(6.5, 0.24 * size + 2.0))
    fig, ax = new_figure(title or f"{array!r} in block {block}: the array after each barrier epoch",
                         figsize=(width, 1.4 + 0.5 * nrows))
    half = 0.28                                         # half the height of a row of cells
    rects, colours = [], []
    warps = set()
    for k, (_, writer, _) in enumerate(rows):
        for index in range(size):
            thread = writer.get(index)
            rects.append(Rectangle((index - 0.45, k - half), 0.9, 2 * half))
            if thread is None:
                colours.append("#e6e6e6")
            else:
                colours.append(PALETTE[(thread // 32) % len(PALETTE)])
                warps.add(thread // 32)
    ax.add_collection(PatchCollection(rects, facecolors=colours, edgecolors="none"))
    segments = [[(r, k - 1 + half), (w, k - half)] for k, (_, _, edges) in enumerate(rows) if k > 0
                for r, w in edges]
    first_edges = [[(r, -0.5 - half), (w, -half)] for r, w in (rows[0][2] if rows else [])]
    if segments or first_edges:
        ax.add_collection(LineCollection(segments + first_edges, colors="0.2",
                                         linewidths=0.8 if size <= 64 else 0.3, alpha=0.8))
    if size <= MAX_LABELLED_CELLS:
        # thread ids as large as a cell allows: across the cell when it is wide enough, else along it
        cell = (width - 1.7) * 72 / size                           # points per cell, about
        digits = len(str(max((t for _, writer, _ in rows for t in writer.values()), default=0)))
        across = min(10.0, 0.85 * cell / (0.62 * digits))
        fontsize, rotation = (across, 0) if across >= 8 else (min(8.5, 0.95 * cell), 90)
        for k, (_, writer, _) in enumerate(rows):
            for index, thread in writer.items():
                ax.text(index, k, str(thread), ha="center", va="center", fontsize=fontsize, rotation=rotation,
                        color="white" if (thread // 32) % len(PALETTE) not in (1, 4, 6) else "black",
                        in_layout=False)
    ax.set_xlim(-0.6, size - 0.4)
    ax.set_ylim(nrows - 0.5, -0.5 - (half + 0.2 if first_edges else 0))
    ax.set_yticks(range(nrows), [f"epoch {e}" for e, _, _ in rows])
    ax.set_xticks(range(0, size, max(1, size // 16)))
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    label(ax, f"element of {array} (index)", "barrier epoch (first at the top)")
    who = "label: writer thread; " if size <= MAX_LABELLED_CELLS else ""
    colour = f"colour: writer warp ({len(warps)} warps); " if len(warps) > 1 else ""
    ax.set_title(f"{who}{colour}grey: unchanged; line: element read -> element written", fontsize=9.5,
                 color="0.3")
    return fig
