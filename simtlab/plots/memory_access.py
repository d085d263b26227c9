"""A warp's memory request: the addresses of its 32 lanes, and the 32-byte sectors they touch."""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Rectangle

from ..analysis.coalescing import LINE_BYTES, SECTOR_BYTES
from .style import PALETTE, label, new_figure

WARP = 32


def strided_addresses(stride: int = 1, itemsize: int = 4, offset: int = 0) -> np.ndarray:
    """Byte addresses of ``x[offset + lane * stride]`` for the 32 lanes of a warp."""
    if stride < 0 or itemsize < 1 or offset < 0:
        raise ValueError("stride and offset must be >= 0 and itemsize >= 1")
    return (offset + np.arange(WARP) * stride) * itemsize


def warp_request_summary(addresses, size: int = 4) -> dict:
    """Sectors, 128-byte lines, bytes used and bytes moved for one warp request."""
    addresses = np.asarray(addresses, np.int64)
    addresses = addresses[addresses >= 0]          # -1 marks a lane that made no access
    if len(addresses) == 0:
        return {"lanes": 0, "sectors": 0, "lines": 0, "bytes_used": 0, "bytes_moved": 0,
                "efficiency": 1.0, "sector_ids": np.zeros(0, np.int64)}
    ends = addresses + size - 1
    sector_ids = np.unique(np.concatenate([np.arange(a // SECTOR_BYTES, e // SECTOR_BYTES + 1)
                                           for a, e in zip(addresses, ends)]))
    line_ids = np.unique(np.concatenate([np.arange(a // LINE_BYTES, e // LINE_BYTES + 1)
                                         for a, e in zip(addresses, ends)]))
    used = len(np.unique(addresses)) * size
    moved = len(sector_ids) * SECTOR_BYTES
    return {"lanes": int(len(addresses)), "sectors": int(len(sector_ids)),
            "lines": int(len(line_ids)), "bytes_used": int(used), "bytes_moved": int(moved),
            "efficiency": used / moved, "sector_ids": sector_ids}


def describe(summary: dict) -> str:
    return (f"{summary['sectors']} sectors of 32 B in {summary['lines']} lines of 128 B: "
            f"{summary['bytes_moved']} B moved for {summary['bytes_used']} B used "
            f"({summary['efficiency']:.0%} efficiency)")


def plot_warp_access(stride: int = 1, itemsize: int = 4, offset: int = 0, addresses=None,
                     title: str | None = None):
    """Each lane's access drawn at its byte address over the sectors and lines it touches."""
    if addresses is None:
        addresses = strided_addresses(stride, itemsize, offset)
        what = f"x[{offset} + lane*{stride}], {itemsize}-byte elements"
    else:
        what = "recorded request"
    addresses = np.asarray(addresses, np.int64)
    s = warp_request_summary(addresses, itemsize)
    fig, ax = new_figure(title or f"One warp reads {what}", figsize=(9, 4.2))
    active = addresses >= 0
    lo = int(addresses[active].min()) // LINE_BYTES * LINE_BYTES if active.any() else 0
    hi = (int(addresses[active].max()) + itemsize + LINE_BYTES - 1) // LINE_BYTES * LINE_BYTES \
        if active.any() else LINE_BYTES
    for sec in range(lo // SECTOR_BYTES, hi // SECTOR_BYTES):
        touched = sec in set(s["sector_ids"].tolist())
        ax.add_patch(Rectangle((sec * SECTOR_BYTES, -1.5), SECTOR_BYTES, WARP + 1,
                               facecolor=PALETTE[1] if touched else "#f2f2f2",
                               alpha=0.35 if touched else 1.0, edgecolor="none"))
    for sec in range(lo, hi + 1, SECTOR_BYTES):
        ax.axvline(sec, color="gray", lw=0.6, ls=":")
    for line in range(lo, hi + 1, LINE_BYTES):
        ax.axvline(line, color="black", lw=1.2)
    for lane, a in enumerate(addresses):
        if a >= 0:
            ax.add_patch(Rectangle((a, lane - 0.4), itemsize, 0.8, facecolor=PALETTE[0]))
    ax.set_xlim(lo, hi)
    ax.set_ylim(WARP - 0.5, -1.5)
    label(ax, "byte address (shaded: 32-byte sectors moved; black lines: 128-byte lines)",
          "lane", describe(s))
    return fig


def plot_stride_sweep(strides=range(1, 33), itemsize: int = 4):
    """Sectors per warp request against the stride between lanes."""
    strides = list(strides)
    sectors = [warp_request_summary(strided_addresses(st, itemsize), itemsize)["sectors"]
               for st in strides]
    fig, ax = new_figure(f"Sectors per warp request vs stride ({itemsize}-byte elements)")
    ax.plot(strides, sectors, "o-", color=PALETTE[0])
    ax.axhline(WARP, color="gray", ls="--", lw=1)
    ax.text(strides[-1], WARP, " one sector per lane", va="bottom", ha="right")
    label(ax, "stride between consecutive lanes [elements]", "32-byte sectors per request")
    return fig


def request_addresses_from_run(run, array_name: str, gwarp: int = 0, line: int | None = None,
                               seq: int = 0) -> np.ndarray:
    """Lane -> byte address of one recorded warp request (-1 for lanes with no access)."""
    mem = run.memory
    info = run.array(array_name)
    rows = mem[(mem.array == info.id) & (mem.gwarp == gwarp) & (mem.seq == seq)]
    if line is not None:
        rows = rows[rows.line == line]
    elif len(rows):
        rows = rows[rows.line == rows.line[0]]
    out = np.full(WARP, -1, np.int64)
    out[rows.lane] = rows.address - info.base
    return out
