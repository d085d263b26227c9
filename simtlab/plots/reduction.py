"""Reduction trees compared level by level (``plot_levels``; the measures are in
``simtlab.analysis.levels``), and the work/steps rows of the block kernels."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import MaxNLocator

from ..analysis.levels import levels, tree_levels  # noqa: F401  (plot_levels draws them)
from .style import PALETTE, label, new_figure


def plot_levels(runs: dict, array: str = "s", block: int = 0, title: str | None = None):
    """Per tree level (barrier epoch), for each version: SIMT efficiency of the add, warp
    instructions issued for it, and shared-memory bank conflicts. ``runs``: name -> Run."""
    fig, axes = new_figure(title or "Tree levels, one block: who works, and at what cost", ncols=3,
                           figsize=(9.0, 3.8))
    width = 0.8 / max(1, len(runs))
    for j, (name, run) in enumerate(runs.items()):
        rows = tree_levels(run, array, block)
        x = np.arange(1, len(rows) + 1) + (j - (len(runs) - 1) / 2) * width
        eff = [100 * (r["add_efficiency"] or 0) for r in rows]
        axes[0].bar(x, eff, width, color=PALETTE[j % len(PALETTE)], label=name)
        axes[1].bar(x, [r["write_instructions"] for r in rows], width, color=PALETTE[j % len(PALETTE)])
        axes[2].bar(x, [r["bank_conflicts"] for r in rows], width, color=PALETTE[j % len(PALETTE)])
    # about 9 inches wide, so that the notebook shows it near its own size: short labels, one per axis
    level = "tree level (epoch after load)"
    label(axes[0], level, "lanes doing the add [% of 32]")
    label(axes[1], level, "warp instructions [count]")
    label(axes[2], level, "extra wavefronts [count]")
    for ax, text in zip(axes, ("SIMT efficiency of the add", "issue slots for the add",
                                  "shared-memory bank conflicts")):
        ax.set_title(text, fontsize=10.5)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].set_ylim(0, 105)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=len(runs), fontsize=9.5)
    return fig


__all__ = ["plot_levels", "complexity_rows"]


def complexity_rows(kernels: dict, sizes=(16, 32, 64, 128, 256), array: str = "s") -> list[dict]:
    """Work and steps of block kernels on one block of n threads and n elements, for each n.

    ``kernels``: name -> a block kernel ``(x, partial)`` whose tree follows ``blockDim.x``.
    Rows for ``simtlab.plots.complexity.plot_work_steps``.
    """
    from .. import emulate
    from ..analysis.complexity import work_and_steps

    rows = []
    for name, kernel in kernels.items():
        for n in sizes:
            x = np.random.default_rng(n).random(n, dtype=np.float32)
            run = emulate(kernel, 1, n, x, np.zeros(1, np.float32))
            work, steps = work_and_steps(run, array)
            rows.append({"version": name, "n": n, "work": work, "steps": steps})
    return rows
