"""Barrier epochs of one block: which threads were between which barriers, and for how long.

Each thread's executed lines (``run.lines``) are split by the block barriers it passed
(``epoch``). A row per thread (or per warp, for large blocks: its busiest lane) shows its
lines in epoch 0, then epoch 1, ... as consecutive coloured bars: a long bar is a thread that
works while the others wait at the next barrier; a row that stops early is a thread that
returned before the last barrier.
"""

from __future__ import annotations

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.patches import Patch

from .style import PALETTE, label, new_figure

#: above this many threads per block, rows are warps
MAX_THREAD_ROWS = 64


def epoch_lengths(run, block: int = 0) -> tuple[np.ndarray, str]:
    """``(lengths, unit)``: lines each thread (``unit`` "thread") or each warp (its busiest
    lane; ``unit`` "warp") ran in each barrier epoch of ``block``, shape (rows, epochs)."""
    lines = run.line_columns
    rows = lines[lines.block == block]
    if len(rows) == 0:
        raise ValueError(f"block {block} has no traced lines; traced blocks: 0-{run.traced_blocks - 1}")
    epochs = int(rows.epoch.max()) + 1
    per_thread = np.zeros((run.threads_per_block, epochs), np.int64)
    np.add.at(per_thread, (rows.thread, rows.epoch), 1)
    if run.threads_per_block <= MAX_THREAD_ROWS:
        return per_thread, "thread"
    per_warp = np.zeros((run.warps_per_block, epochs), np.int64)
    np.maximum.at(per_warp, np.arange(run.threads_per_block) // 32, per_thread)
    return per_warp, "warp"


def plot_barrier_timeline(run, block: int = 0):
    """One bar per thread (or warp) of ``block``, its lines coloured by barrier epoch."""
    lengths, unit = epoch_lengths(run, block)
    n, epochs = lengths.shape
    fig, ax = new_figure(f"{run.kernel_name}, block {block}: {epochs - 1} barrier"
                         f"{'s' * (epochs != 2)}, {epochs} epoch{'s' * (epochs != 1)}",
                         figsize=(8.0, min(8.0, max(2.8, 1.4 + 0.12 * n))))
    # every bar in one collection, not a Rectangle per row and epoch: a 512-thread block's 16
    # warps x 11 epochs made 176 artists, each drawn alone
    starts = np.hstack([np.zeros((n, 1), np.int64), lengths.cumsum(axis=1)[:, :-1]])
    rows, cols = np.nonzero(lengths)
    x0, x1 = starts[rows, cols], starts[rows, cols] + lengths[rows, cols]
    y0, y1 = rows - 0.425, rows + 0.425
    ax.add_collection(PolyCollection(np.stack([np.stack([x0, y0], 1), np.stack([x1, y0], 1),
                                               np.stack([x1, y1], 1), np.stack([x0, y1], 1)], axis=1),
                                     facecolors=[PALETTE[e % len(PALETTE)] for e in cols],
                                     edgecolors="white", linewidths=0.3), autolim=False)
    left = lengths.sum(axis=1)
    ax.set_xlim(0, max(1, int(left.max())) * 1.05)
    ended = (lengths > 0).cumsum(axis=1).argmax(axis=1)
    early = np.nonzero(ended < epochs - 1)[0]
    for row in early:
        ax.text(left[row], row, " returned", va="center", fontsize=7, color="0.3")
    ax.set_ylim(n - 0.5, -0.5)
    label(ax, "source lines executed (count)", f"{unit} in the block")
    busy = lengths.max(axis=0)
    ax.set_title(f"each colour: the lines a {unit} ran between two barriers; longest per epoch: "
                 f"{', '.join(str(int(b)) for b in busy[:8])}{' ...' if epochs > 8 else ''}", fontsize=9)
    handles = [Patch(color=PALETTE[e % len(PALETTE)], label=f"epoch {e}") for e in range(min(epochs, 8))]
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


__all__ = ["epoch_lengths", "plot_barrier_timeline"]
