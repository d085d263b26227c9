"""Reduction trees level by level: divergence, issue slots and bank conflicts per barrier epoch.

A tree reduction runs one level per barrier epoch (the stretch of code between two
``syncthreads``). ``levels(run)`` measures each epoch of one block from the emulator's trace;
``plot_levels`` compares versions level by level.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import MaxNLocator

from ..analysis.bank_conflicts import requests as shared_requests
from ..analysis.divergence import instructions
from .style import PALETTE, label, new_figure

WARP_SIZE = 32


def barrier_sites(run) -> set:
    """Trace sites (function, line) whose source calls a block barrier (``syncthreads*``)."""
    sites = np.unique(run.lines.site)
    return {int(s) for s in sites if "syncthreads" in run.source(0, site=int(s))}


def line_epochs(run) -> np.ndarray:
    """The barrier epoch of every row of ``run.lines``: barriers its thread passed before it.

    A barrier's own line belongs to the epoch it ends. ``run.lines`` lists each thread's rows
    together, in execution order, so a running count per thread is the epoch.
    """
    lines = run.lines
    if len(lines) == 0:
        return np.zeros(0, np.int64)
    sync = np.isin(lines.site, np.fromiter(barrier_sites(run), np.int64))
    key = lines.block.astype(np.int64) * run.threads_per_block + lines.thread
    order = np.lexsort((lines.step, key))
    k, s = key[order], sync[order].astype(np.int64)
    count = np.cumsum(s)
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    before = np.repeat(count[starts] - s[starts], np.diff(np.r_[starts, len(k)]))
    epochs = np.empty(len(lines), np.int64)
    epochs[order] = count - s - before
    return epochs


def levels(run, array: str = "s", block: int = 0) -> list[dict]:
    """One dict per barrier epoch of ``block``: how the warps spent that epoch.

    Keys: ``epoch``; ``instructions`` (warp instructions issued) and ``simt_efficiency`` (lane
    slots used over all of them); ``writes`` (elements of ``array`` written), ``write_instructions``
    (warp instructions that wrote ``array``: the issue slots of the tree's add) and
    ``add_efficiency`` (lanes per such instruction / 32); ``shared_requests``, ``wavefronts``
    and ``bank_conflicts`` (wavefronts beyond the conflict-free number) of shared memory.
    """
    lines = run.lines
    ep = line_epochs(run)
    mine = lines.block == block
    lines, ep = lines[mine], ep[mine]
    mem = run.memory
    mem = mem[mem.block == block]
    aid = run.array(array).id
    out = []
    for e in range(int(ep.max()) + 1 if len(ep) else 0):
        ins = instructions(lines[ep == e])
        m = mem[mem.epoch == e]
        writes = m[(m.array == aid) & (m.kind != 0)]
        wins = {(int(g), int(s), int(q)) for g, s, q in zip(writes.gwarp, writes.site, writes.seq)}
        req = shared_requests(m)
        n_ins = len(ins)
        out.append({
            "epoch": e,
            "instructions": n_ins,
            "simt_efficiency": float(ins.lanes.sum() / (WARP_SIZE * n_ins)) if n_ins else None,
            "writes": int(len(writes)),
            "write_instructions": len(wins),
            "add_efficiency": float(len(writes) / (WARP_SIZE * len(wins))) if wins else None,
            "shared_requests": int(len(req)),
            "wavefronts": int(req.wavefronts.sum()) if len(req) else 0,
            "bank_conflicts": int((req.wavefronts - req.ideal).sum()) if len(req) else 0,
        })
    return out


def tree_levels(run, array: str = "s", block: int = 0) -> list[dict]:
    """``levels`` without the epochs that write nothing to ``array`` and without the first one
    that does (the load): the levels of the tree itself."""
    rows = [r for r in levels(run, array, block) if r["writes"]]
    return rows[1:]


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


__all__ = ["barrier_sites", "line_epochs", "levels", "tree_levels", "plot_levels", "complexity_rows"]


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
