"""One warp's global-memory request drawn: which 32-byte sectors its 32 lanes touch.

The memory system moves whole 32-byte sectors (grouped in 128-byte cache lines), so a
request costs ``sectors * 32`` bytes whatever the lanes actually use. The count is
``simtlab.analysis.coalescing.warp_request_summary``; these functions draw it.
"""

from __future__ import annotations

import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from .style import PALETTE, label, new_figure
from ..simt import WARP_SIZE

# The counting lives in analysis/coalescing.py, beside the trace-wide count: one rule for both.
from ..analysis.coalescing import LINE_BYTES as LINE  # noqa: E402
from ..analysis.coalescing import SECTOR_BYTES as SECTOR  # noqa: E402
from ..analysis.coalescing import strided_addresses, warp_request_summary  # noqa: E402,F401


def describe(summary: dict) -> str:
    """The one-line verdict printed on the plot and in widgets."""
    n = summary["sectors"]
    return (f"{n} sector{'s' * (n != 1)}, {summary['bytes_moved']} bytes moved for "
            f"{summary['bytes_used']} bytes used ({100 * summary['efficiency']:.3g} % efficiency)")


# Wider views shade only touched sectors and draw only touched lines' edges, to stay legible.
MAX_SHADED_SECTORS = 128
MAX_DRAWN_LINES = 32


def plot_warp_access(addresses=None, size: int = 4, title: str | None = None, *,
                     stride: int | None = None, offset: int = 0, itemsize: int | None = None):
    """Lanes 0..31 against byte address: each lane's access as a box over the sectors.

    Give the lanes' ``addresses`` (e.g. from ``request_addresses_from_run``), or a
    ``stride`` (and ``offset``, both in elements) for ``a[offset + lane*stride]``;
    ``itemsize`` is accepted as another name for ``size``. The background alternates
    shading per 32-byte sector; touched sectors are highlighted and 128-byte line
    boundaries drawn dashed. Returns a matplotlib Figure.
    """
    size = int(itemsize or size)
    if addresses is None:
        stride = 1 if stride is None else stride
        addresses = strided_addresses(stride, size, offset)
        what = f"One warp accesses a[{offset} + lane*{stride}], {size}-byte elements"
    else:
        what = "One warp request: lanes and the 32-byte sectors they touch"
    s = warp_request_summary(addresses, size)
    fig, ax = new_figure(title or what)
    ax.set_title(f"{describe(s)}\n{s['lanes']} lanes asked for {s['bytes_requested']} bytes; "
                 f"fewest sectors that hold the bytes used: {s['min_sectors']}", fontsize=9)
    a = np.ma.getdata(s["addresses"])
    active = s["active"]
    if not active.any():
        ax.text(0.5, 0.5, "no lane accessed memory", ha="center", va="center", transform=ax.transAxes)
        label(ax, "byte address (bytes)", "lane")
        return fig

    # Addresses are drawn relative to the first touched line, whose absolute address is in
    # the axis label: real traces have large 512-aligned bases.
    origin = int(s["line_ids"][0]) * LINE
    lo = origin
    hi = (int(s["sector_ids"][-1]) + 1) * SECTOR
    hi = -(-hi // LINE) * LINE
    view_sectors = range(lo // SECTOR, hi // SECTOR)
    touched = set(s["sector_ids"].tolist())
    shade_all = len(view_sectors) <= MAX_SHADED_SECTORS
    # Each shade kind is one collection (broken_barh) over the lanes' height, not one axvspan
    # per sector: up to 128 artists, each drawn alone, were most of the figure's drawing time.
    spans = {"touched odd": [], "touched even": [], "untouched": []}
    for k in view_sectors:
        x0 = k * SECTOR - origin
        # Alternate shades, so neighbouring sectors can be told apart and counted.
        if k in touched:
            spans["touched odd" if k % 2 else "touched even"].append((x0, SECTOR))
        elif shade_all and k % 2:
            spans["untouched"].append((x0, SECTOR))
    full_height = (-0.5, WARP_SIZE)            # the y limits below: the whole column of lanes
    for kind, color, alpha in (("touched odd", PALETTE[1], 0.55), ("touched even", PALETTE[1], 0.3),
                               ("untouched", "#BBBBBB", 0.25)):
        if spans[kind]:
            ax.broken_barh(spans[kind], full_height, color=color, alpha=alpha, linewidth=0, zorder=0)
    touched_lines = set(s["line_ids"].tolist())
    for x in range(0, hi - lo + 1, LINE):
        # In a wide view, only the edges of touched lines: every edge would be a solid mesh.
        k = (x + origin) // LINE
        if (hi - lo) // LINE <= MAX_DRAWN_LINES or k in touched_lines or k - 1 in touched_lines:
            ax.axvline(x, color="black", linestyle="--", linewidth=0.8, zorder=1)

    lanes = np.nonzero(active)[0]
    # Each access at least 1 % of the view wide, so single bytes stay visible.
    width = max(size, (hi - lo) / 100)
    # one collection for the warp's lanes, not a patch per lane
    ax.add_collection(PatchCollection([Rectangle((a[lane] - origin, lane - 0.4), width, 0.8) for lane in lanes],
                                      facecolor=PALETTE[0], edgecolor="black", linewidth=0.4, zorder=2),
                      autolim=False)
    ax.set_xlim(0, hi - lo)
    tick = SECTOR
    while (hi - lo) / tick > 16:  # at most 16 ticks, at sector or line multiples
        tick *= 4
    ax.set_xticks(range(0, hi - lo + 1, tick))
    ax.set_ylim(WARP_SIZE - 0.5, -0.5)  # lane 0 on top
    ax.set_yticks(range(0, WARP_SIZE, 4))
    label(ax, f"byte address (bytes from 0x{origin:x})", "lane")
    ax.legend(handles=[
        Patch(facecolor=PALETTE[0], edgecolor="black", label=f"lane access ({size} B)"),
        Patch(facecolor=PALETTE[1], alpha=0.45, label="touched 32-byte sector"),
        Patch(facecolor="#BBBBBB", alpha=0.25, label="untouched sector"),
        Line2D([], [], color="black", linestyle="--", linewidth=0.8, label="128-byte line boundary"),
    ], loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return fig


def plot_stride_sweep(strides=range(1, 33), size: int = 4, offset: int = 0):
    """Sectors per warp request (and efficiency) against the stride between lanes.

    For 4-byte elements: stride 1 -> 4 sectors, 2 -> 8, 8 or more -> 32 (one per lane).
    """
    strides = np.asarray(list(strides), dtype=np.int64)
    summaries = [warp_request_summary(strided_addresses(k, size, offset), size) for k in strides]
    sectors = np.array([s["sectors"] for s in summaries])
    efficiency = np.array([100 * s["efficiency"] for s in summaries])
    fig, ax = new_figure(f"Sectors per warp request vs stride ({size}-byte elements)")
    ax.plot(strides, sectors, marker="o", color=PALETTE[0], label="sectors per request")
    best = -(-WARP_SIZE * size // SECTOR)
    ax.axhline(best, color=PALETTE[2], linestyle="--", label=f"ideal: {best} (32 lanes x {size} B / 32 B)")
    ax.axhline(WARP_SIZE, color=PALETTE[5], linestyle=":", label="worst: one sector per lane (32)")
    label(ax, "stride between lanes (elements)", "32-byte sectors per request")
    ax.set_ylim(0, max(WARP_SIZE, sectors.max()) * 1.1)
    eff_ax = ax.twinx()
    eff_ax.plot(strides, efficiency, marker=".", color=PALETTE[1], linestyle="-", alpha=0.8,
                label="efficiency (bytes used / moved)")
    label(eff_ax, ax.get_xlabel(), "efficiency (%)")  # the twin's x axis is hidden
    eff_ax.set_ylim(0, 105)
    handles = ax.get_legend_handles_labels()[0] + eff_ax.get_legend_handles_labels()[0]
    ax.legend(handles=handles, loc="center right", fontsize=8)
    ax.set_title("bytes moved = sectors x 32", fontsize=9)
    return fig


def request_addresses_from_run(run, array_name: str, line: int | None = None, gwarp: int = 0,
                               seq: int = 0) -> np.ma.MaskedArray:
    """One warp request's lane addresses from ``run.memory``, masked where a lane made none.

    Addresses are byte offsets from the start of the array (arrays are 512-byte aligned, so
    sectors and lines fall where they do in the trace's absolute addresses). ``line``: the
    source line (default: the first line on which warp ``gwarp`` touched the array);
    ``seq``: which of that warp's requests to the array on that line (0 = the first; a
    line in a loop makes one per iteration). Size of each access: ``run.array(name).itemsize``.
    """
    info = run.array(array_name)
    mem = run.memory_columns
    rows = mem[(mem["array"] == info.id) & (mem["gwarp"] == gwarp)]
    if len(rows) == 0:
        raise ValueError(f"warp {gwarp} never accessed {array_name!r}")
    if line is None:
        line = int(rows["line"][0])
    rows = rows[rows["line"] == line]
    if len(rows) == 0:
        raise ValueError(f"warp {gwarp} made no access to {array_name!r} on line {line}")
    # One request is one (site, seq) of the trace; its seq also counts the thread's accesses
    # to other arrays on the line, so requests to this array are numbered here instead.
    rows = rows[rows["site"] == rows["site"][0]]
    raw_seqs = np.unique(rows["seq"])
    if not 0 <= seq < len(raw_seqs):
        raise ValueError(f"warp {gwarp} made {len(raw_seqs)} request(s) to {array_name!r} on "
                         f"line {line}; seq {seq} is out of range")
    rows = rows[rows["seq"] == raw_seqs[seq]]
    out = np.ma.masked_all(WARP_SIZE, dtype=np.int64)
    out[rows["lane"]] = rows["address"] - info.base
    return out


__all__ = ["warp_request_summary", "describe", "strided_addresses", "plot_warp_access",
           "plot_stride_sweep", "request_addresses_from_run"]
