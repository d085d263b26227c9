"""Every warp request of a run, per source line: global sectors and lines, shared wavefronts.

``request_table(run)`` groups the warp requests (``simtlab.analysis.coalescing`` and
``bank_conflicts``) by source line, array and access kind; ``request_table_html`` shows it;
``plot_request_costs`` draws sectors per request against the ideal for each line, so the
uncoalesced line stands out; ``worst_request`` finds the most expensive request of a run,
which ``plot_warp_access`` and ``plot_bank_access`` draw lane by lane.
"""

from __future__ import annotations

import html

import numpy as np
from matplotlib.patches import Patch

from ..analysis import bank_conflicts, coalescing
from ..html_theme import WARN, coloured
from ..simt import KINDS, site_line
from .style import PALETTE, label, new_figure

SECTOR = 32
LINE = 128
BANKS = 32


def _ideal_sectors(req):
    """The fewest sectors that hold the distinct bytes each request uses (>= 1): lanes that
    read the same word share it, so a broadcast's ideal is one sector, never above what it
    touches."""
    return np.maximum(1, -(-req.used // SECTOR))


def request_table(run) -> list[dict]:
    """One dict per (space, source site, array, kind): how its warp requests behaved.

    Global keys: ``requests``, ``lanes`` (mean active lanes), ``sectors`` / ``lines`` (mean
    32-byte sectors and 128-byte lines per request), ``ideal_sectors`` (mean fewest sectors
    that hold the distinct bytes used: 1 for a broadcast), ``coalesced`` (every request at its ideal). Shared keys:
    ``wavefronts`` and ``ideal_wavefronts`` per request, ``bank_conflicts`` (extra wavefronts
    in all), ``coalesced`` (no conflict). Sorted by source line.
    """
    out = []
    mem = run.memory_columns
    names = [a.name for a in run.arrays]
    glob = coalescing.requests(mem, 0)
    if len(glob):
        ideal = _ideal_sectors(glob)
        keys = np.unique(np.stack([glob.site, glob.array, glob.kind]), axis=1).T
        for site, array, kind in keys:
            pick = (glob.site == site) & (glob.array == array) & (glob.kind == kind)
            out.append({"space": "global", "line": int(site_line(site)), "site": int(site),
                        "array": names[int(array)], "kind": KINDS[int(kind)],
                        "requests": int(pick.sum()), "lanes": float(glob.lanes[pick].mean()),
                        "sectors": float(glob.sectors[pick].mean()),
                        "lines": float(glob.lines[pick].mean()),
                        "ideal_sectors": float(ideal[pick].mean()),
                        "coalesced": bool((glob.sectors[pick] <= ideal[pick]).all())})
    shared = bank_conflicts.requests(mem)
    if len(shared):
        keys = np.unique(np.stack([shared.site, shared.array, shared.kind]), axis=1).T
        for site, array, kind in keys:
            pick = (shared.site == site) & (shared.array == array) & (shared.kind == kind)
            extra = shared.wavefronts[pick] - shared.ideal[pick]
            out.append({"space": "shared", "line": int(site_line(site)), "site": int(site),
                        "array": names[int(array)], "kind": KINDS[int(kind)],
                        "requests": int(pick.sum()), "lanes": float(shared.lanes[pick].mean()),
                        "wavefronts": float(shared.wavefronts[pick].mean()),
                        "ideal_wavefronts": float(shared.ideal[pick].mean()),
                        "bank_conflicts": int(extra.sum()), "coalesced": bool((extra == 0).all())})
    return sorted(out, key=lambda r: (r["line"], r["space"], r["array"]))


def request_table_html(run, rows: list[dict] | None = None) -> str:
    """``request_table`` as two HTML tables (global, shared), one row per line and array
    (``rows``: that table when the caller has it already)."""
    rows = request_table(run) if rows is None else rows
    parts = []
    glob = [r for r in rows if r["space"] == "global"]
    shared = [r for r in rows if r["space"] == "shared"]
    style = "style='font-size:12px;border-collapse:collapse'"
    td = "<td style='padding:0 8px;text-align:right'>"
    if glob:
        parts.append(f"<b>global memory</b>: per warp request (32 lanes), the 32-byte sectors and "
                     f"128-byte lines it touches<table {style}><tr><th>line</th><th>array</th>"
                     "<th>kind</th><th>requests</th><th>lanes</th><th>sectors</th><th>ideal</th>"
                     "<th>128-B lines</th><th>verdict</th></tr>")
        for r in glob:
            verdict = ("coalesced" if r["coalesced"] else
                       coloured(f"uncoalesced: {r['sectors'] / r['ideal_sectors']:.1f}x the sectors needed", WARN))
            parts.append(f"<tr>{td}{r['line']}</td>{td}{html.escape(r['array'])}</td>{td}{r['kind']}</td>"
                         f"{td}{r['requests']}</td>{td}{r['lanes']:.1f}</td>{td}{r['sectors']:.1f}</td>"
                         f"{td}{r['ideal_sectors']:.1f}</td>{td}{r['lines']:.1f}</td>{td}{verdict}</td></tr>")
        parts.append("</table>")
    if shared:
        parts.append(f"<b>shared memory</b>: 32 banks of 4 bytes; one wavefront serves one word per bank"
                     f"<table {style}><tr><th>line</th><th>array</th><th>kind</th><th>requests</th>"
                     "<th>lanes</th><th>wavefronts</th><th>ideal</th><th>bank conflicts</th></tr>")
        for r in shared:
            conflicts = (coloured(str(r['bank_conflicts']), WARN) if r["bank_conflicts"]
                         else "0")
            parts.append(f"<tr>{td}{r['line']}</td>{td}{html.escape(r['array'])}</td>{td}{r['kind']}</td>"
                         f"{td}{r['requests']}</td>{td}{r['lanes']:.1f}</td>{td}{r['wavefronts']:.1f}</td>"
                         f"{td}{r['ideal_wavefronts']:.1f}</td>{td}{conflicts}</td></tr>")
        parts.append("</table>")
    if not parts:
        parts.append("<p>this run made no global or shared memory access</p>")
    return "".join(parts)


def plot_request_costs(run, rows: list[dict] | None = None):
    """Per source line and array: sectors (global) or wavefronts (shared) per warp request,
    next to the ideal. A bar far above its ideal is the line to fix (``rows``: the
    ``request_table`` when the caller has it already)."""
    rows = request_table(run) if rows is None else rows
    fig, ax = new_figure(f"{run.kernel_name}: cost of each line's warp requests", figsize=(8.0, 3.6))
    if not rows:
        ax.text(0.5, 0.5, "no memory access traced", ha="center", va="center", transform=ax.transAxes)
        label(ax, "source line", "sectors or wavefronts per request")
        return fig
    x = np.arange(len(rows))
    cost = [r["sectors"] if r["space"] == "global" else r["wavefronts"] for r in rows]
    ideal = [r["ideal_sectors"] if r["space"] == "global" else r["ideal_wavefronts"] for r in rows]
    colours = [PALETTE[2] if r["coalesced"] else PALETTE[5] for r in rows]
    ax.bar(x, cost, width=0.6, color=colours, zorder=2)
    ax.scatter(x, ideal, marker="_", s=900, color="black", zorder=3)
    for i, c in enumerate(cost):
        ax.text(i, c, f"{c:.1f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, [f"L{r['line']} {r['array']}\n{r['space']} {r['kind']}" for r in rows], fontsize=8)
    ax.set_ylim(0, max(max(cost), max(ideal)) * 1.2)
    # short enough to fit beside a 3.6-inch-high plot (the longer "sectors (global) or wavefronts
    # (shared) per request" was cut off); each bar's tick says global or shared
    label(ax, "source line, array, space and kind", "sectors or wavefronts per request")
    # a figure legend "outside": constrained layout makes room for it (a legend anchored outside
    # the axes is not in the layout and was cut off at the figure's edge)
    fig.legend(handles=[Patch(color=PALETTE[2], label="at the ideal"), Patch(color=PALETTE[5], label="above it"),
                        Patch(color="black", label="ideal (black tick)")], fontsize=8, loc="outside right upper",
               frameon=False)
    return fig


def worst_request(run, space: str = "global"):
    """``(array name, line, gwarp, seq)`` of the request with the most sectors (global) or
    wavefronts (shared), for ``request_addresses_from_run``; None when there is none."""
    mem = run.memory_columns
    if space == "global":
        req = coalescing.requests(mem, 0)
        cost = req.sectors - _ideal_sectors(req)
    else:
        req = bank_conflicts.requests(mem)
        cost = req.wavefronts - req.ideal
    if len(req) == 0:
        return None
    i = int(np.argmax(cost))
    name = run.arrays[int(req.array[i])].name
    # the n-th request of this warp to this array on this line (numbered as the plots number it)
    same = mem[(mem.gwarp == req.gwarp[i]) & (mem.site == req.site[i]) & (mem.array == req.array[i])]
    seq = int(np.searchsorted(np.unique(same.seq), req.seq[i]))
    return name, int(req.line[i]), int(req.gwarp[i]), seq


def plot_bank_access(run, array: str, line: int | None = None, gwarp: int = 0, seq: int = 0):
    """One shared-memory warp request, lane by lane: the bank (x) each lane's word falls in.

    Lanes reading one word share it; distinct words in one bank are served one wavefront
    after another, so the tallest column of distinct words is the wavefront count.
    """
    from .memory_access import request_addresses_from_run

    info = run.array(array)
    addr = request_addresses_from_run(run, array, line=line, gwarp=gwarp, seq=seq)
    active = ~np.ma.getmaskarray(addr)
    words = np.ma.getdata(addr) // 4
    banks = words % BANKS
    fig, ax = new_figure(f"{array} (shared), warp {gwarp}, line {line}: which bank each lane uses",
                         figsize=(8.0, 4.0))
    wave = {}
    lanes = np.nonzero(active)[0]
    colours = []
    for lane in lanes:
        bank, word = int(banks[lane]), int(words[lane])
        column = wave.setdefault(bank, [])
        if word not in column:
            column.append(word)
        colours.append(PALETTE[column.index(word) % len(PALETTE)])
    # one scatter for the whole warp: one artist, not 32 (each would be laid out and drawn alone)
    if len(lanes):
        ax.scatter(banks[lanes], lanes, color=colours, s=30, zorder=2)
    wavefronts = max((len(c) for c in wave.values()), default=0)
    ax.set_xlim(-0.5, BANKS - 0.5)
    ax.set_ylim(31.5, -0.5)
    ax.set_xticks(range(0, BANKS, 4))
    ax.set_yticks(range(0, 32, 4))
    ax.grid(alpha=0.3)
    for bank, column in wave.items():
        if len(column) > 1:                   # distinct words asked of one bank: its wavefronts
            ax.text(bank, -0.9, f"{len(column)}", ha="center", va="bottom", fontsize=8, color=PALETTE[5])
    ax.set_title(f"{wavefronts} wavefront{'s' * (wavefronts != 1)}: a bank serves one word per wavefront "
                 "(number above a bank: its distinct words)", fontsize=9)
    label(ax, f"shared-memory bank (4-byte words; {info.itemsize}-byte elements)", "lane")
    return fig


__all__ = ["request_table", "request_table_html", "plot_request_costs", "worst_request",
           "plot_bank_access"]
