"""One warp's global-memory request: which 32-byte sectors its 32 lanes touch.

The memory system moves whole 32-byte sectors (grouped in 128-byte cache lines), so a
request costs ``sectors * 32`` bytes whatever the lanes actually use. These functions
count that for a list of lane addresses and draw it.
"""

from __future__ import annotations

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from .style import PALETTE, label, new_figure

WARP_SIZE = 32
SECTOR = 32
LINE = 128


def strided_addresses(stride: int, size: int = 4, offset: int = 0, base: int = 0) -> np.ndarray:
    """Byte addresses of ``a[offset + lane*stride]`` for lanes 0..31 (``a`` at ``base``)."""
    return base + (offset + np.arange(WARP_SIZE, dtype=np.int64) * stride) * size


def _lane_addresses(addresses) -> np.ma.MaskedArray:
    """Lane addresses as a 32-long masked int array; masked (or None) lanes did not access."""
    if isinstance(addresses, np.ma.MaskedArray):
        data = np.ma.getdata(addresses)
        mask = np.ma.getmaskarray(addresses)
    else:
        items = list(addresses)
        mask = np.array([a is None for a in items], dtype=bool)
        data = np.array([0 if a is None else a for a in items])
    if len(data) > WARP_SIZE:
        raise ValueError(f"a warp has {WARP_SIZE} lanes, got {len(data)} addresses")
    pad = WARP_SIZE - len(data)
    data = np.concatenate([np.asarray(data, dtype=np.int64), np.zeros(pad, dtype=np.int64)])
    mask = np.concatenate([mask, np.ones(pad, dtype=bool)])
    return np.ma.array(data, mask=mask)


def warp_request_summary(addresses, size: int = 4) -> dict:
    """Sectors, lines and bytes of one warp request.

    ``addresses``: up to 32 byte addresses, lane 0 first; a masked entry (or ``None``) is a
    lane that made no access. ``size``: bytes each lane reads or writes.

    Returns ``addresses`` (masked, 32 lanes), ``active`` (bool per lane), ``lane_sector`` and
    ``lane_line`` (first sector / line of each lane's access, -1 when inactive),
    ``sectors``/``lines`` (sorted ids touched), ``n_sectors``, ``n_lines``, ``n_active``,
    ``bytes_requested`` (active lanes x size), ``bytes_used`` (distinct bytes: lanes reading
    the same word share it), ``bytes_moved`` (sectors x 32), ``efficiency`` (used / moved).
    """
    size = int(size)
    if size < 1:
        raise ValueError(f"size must be a positive number of bytes, got {size}")
    addr = _lane_addresses(addresses)
    active = ~np.ma.getmaskarray(addr)
    a = np.ma.getdata(addr)[active]
    # An access may straddle a sector when misaligned: count every sector it covers.
    first, last = a // SECTOR, (a + size - 1) // SECTOR
    sectors = np.unique(np.concatenate([np.arange(f, l + 1) for f, l in zip(first, last)])
                        if len(a) else np.zeros(0, dtype=np.int64))
    lines = np.unique(sectors * SECTOR // LINE)
    used = len(np.unique((a[:, None] + np.arange(size)).ravel())) if len(a) else 0
    moved = len(sectors) * SECTOR
    lane_sector = np.full(WARP_SIZE, -1, dtype=np.int64)
    lane_sector[active] = first
    lane_line = np.full(WARP_SIZE, -1, dtype=np.int64)
    lane_line[active] = a // LINE
    return {
        "addresses": addr, "active": active, "size": size,
        "lane_sector": lane_sector, "lane_line": lane_line,
        "sectors": sectors.astype(np.int64), "lines": lines.astype(np.int64),
        "n_sectors": int(len(sectors)), "n_lines": int(len(lines)), "n_active": int(active.sum()),
        "bytes_requested": int(active.sum()) * size, "bytes_used": int(used),
        "bytes_moved": int(moved), "efficiency": used / moved if moved else 0.0,
        # A perfectly packed request: the bound to compare n_sectors with (1 for a broadcast).
        "min_sectors": -(-int(used) // SECTOR),
    }


def summary_text(summary: dict) -> str:
    """The one-line verdict printed on the plot and in widgets."""
    n = summary["n_sectors"]
    return (f"{n} sector{'s' * (n != 1)}, {summary['bytes_moved']} bytes moved for "
            f"{summary['bytes_used']} bytes used ({100 * summary['efficiency']:.3g} % efficiency)")


# Wider views shade only touched sectors and draw only touched lines' edges, to stay legible.
MAX_SHADED_SECTORS = 128
MAX_DRAWN_LINES = 32


def plot_warp_access(addresses, size: int = 4, title: str | None = None):
    """Lanes 0..31 against byte address: each lane's access as a box over the sectors.

    The background alternates shading per 32-byte sector; touched sectors are highlighted
    and 128-byte line boundaries drawn as dashed lines. Returns a matplotlib Figure.
    """
    s = warp_request_summary(addresses, size)
    fig, ax = new_figure(title or "One warp request: lanes and the 32-byte sectors they touch")
    ax.set_title(f"{summary_text(s)}\n{s['n_active']} lanes asked for {s['bytes_requested']} bytes; "
                 f"fewest sectors that hold the bytes used: {s['min_sectors']}", fontsize=9)
    a = np.ma.getdata(s["addresses"])
    active = s["active"]
    if not active.any():
        ax.text(0.5, 0.5, "no lane accessed memory", ha="center", va="center", transform=ax.transAxes)
        label(ax, "byte address (bytes)", "lane")
        return fig

    # Addresses are drawn relative to the first touched line, whose absolute address is in
    # the axis label: real traces have large 512-aligned bases.
    origin = int(s["lines"][0]) * LINE
    lo = origin
    hi = (int(s["sectors"][-1]) + 1) * SECTOR
    hi = -(-hi // LINE) * LINE
    view_sectors = range(lo // SECTOR, hi // SECTOR)
    touched = set(s["sectors"].tolist())
    shade_all = len(view_sectors) <= MAX_SHADED_SECTORS
    for k in view_sectors:
        x0 = k * SECTOR - origin
        # Alternate shades, so neighbouring sectors can be told apart and counted.
        if k in touched:
            ax.axvspan(x0, x0 + SECTOR, color=PALETTE[1], alpha=0.55 if k % 2 else 0.3,
                       linewidth=0, zorder=0)
        elif shade_all and k % 2:
            ax.axvspan(x0, x0 + SECTOR, color="#BBBBBB", alpha=0.25, linewidth=0, zorder=0)
    touched_lines = set(s["lines"].tolist())
    for x in range(0, hi - lo + 1, LINE):
        # In a wide view, only the edges of touched lines: every edge would be a solid mesh.
        k = (x + origin) // LINE
        if (hi - lo) // LINE <= MAX_DRAWN_LINES or k in touched_lines or k - 1 in touched_lines:
            ax.axvline(x, color="black", linestyle="--", linewidth=0.8, zorder=1)

    lanes = np.nonzero(active)[0]
    # Each access at least 1 % of the view wide, so single bytes stay visible.
    width = max(size, (hi - lo) / 100)
    for lane in lanes:
        ax.add_patch(Rectangle((a[lane] - origin, lane - 0.4), width, 0.8, facecolor=PALETTE[0],
                               edgecolor="black", linewidth=0.4, zorder=2))
    ax.set_xlim(0, hi - lo)
    tick = next(t for t in (SECTOR, LINE, 4 * LINE, 16 * LINE, 64 * LINE, 256 * LINE)
                if (hi - lo) / t <= 16)
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
    sectors = np.array([s["n_sectors"] for s in summaries])
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
    eff_ax.set_ylabel("efficiency (%)")
    eff_ax.set_ylim(0, 105)
    handles = ax.get_legend_handles_labels()[0] + eff_ax.get_legend_handles_labels()[0]
    ax.legend(handles=handles, loc="center right", fontsize=8)
    ax.set_title("bytes moved = sectors x 32", fontsize=9)
    return fig


def request_addresses_from_run(run, array_name: str, line: int | None = None, gwarp: int = 0,
                               seq: int = 0) -> np.ma.MaskedArray:
    """One warp request's lane addresses from ``run.memory`` (masked where a lane made none).

    A request is the rows of ``array_name`` with the same ``(gwarp, line, seq)``; with
    ``line=None`` the first line (in execution order) on which that warp touched the array.
    """
    info = run.array(array_name)
    mem = run.memory
    rows = mem[(mem["array"] == info.id) & (mem["gwarp"] == gwarp)]
    if line is None:
        if len(rows) == 0:
            raise ValueError(f"warp {gwarp} never accessed {array_name!r}")
        line = int(rows["line"][0])
    rows = rows[(rows["line"] == line) & (rows["seq"] == seq)]
    if len(rows) == 0:
        raise ValueError(f"warp {gwarp} made no access to {array_name!r} on line {line} (seq {seq})")
    out = np.ma.masked_all(WARP_SIZE, dtype=np.int64)
    out[rows["lane"]] = rows["address"]
    return out


__all__ = ["warp_request_summary", "summary_text", "strided_addresses", "plot_warp_access",
           "plot_stride_sweep", "request_addresses_from_run"]
