"""Chapter 3 pictures, drawn from the emulator's trace of the course kernels.

- ``warp_request(run, array, kind, gwarp, nth)``: the trace rows of one warp request.
- ``request_stats(run)``: sectors per global read / write request and wavefronts per shared
  request, the numbers the chapter compares across versions.
- ``plot_warp_footprint(run, panels, gwarp=0)``: for one warp, which elements each of its
  requests touched: one panel per array (global arrays: cells coloured by lane, sector
  boundaries drawn; shared arrays: cells coloured by memory bank). A 1-D array is drawn as
  rows of 32 elements (128 bytes, 4 sectors).
- ``plot_halo(run, block)``: the 1-D stencil's shared tile: which elements of x one block
  loaded, where they landed in shared memory, and the zero padding at the array's ends.
- ``plot_request_stats(rows)``: bars of sectors per request and wavefronts per request.
"""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle

from ..analysis import bank_conflicts, coalescing
from .style import PALETTE, label, new_figure
from ..simt import WARP_SIZE

__all__ = ["warp_request", "request_stats", "plot_warp_footprint", "plot_halo", "plot_request_stats"]

SECTOR_FLOATS = 8             # a 32-byte sector holds 8 float32
KIND = {"read": 0, "write": 1}


def warp_request(run, array: str, kind: str = "read", gwarp: int = 0, nth: int = 0) -> np.recarray:
    """The trace rows of the ``nth`` request (0 = first) that warp ``gwarp`` made to ``array``.

    ``kind``: 'read' or 'write'. A request is one (line, seq) of the warp: the lanes that
    executed that access together.
    """
    if kind not in KIND:
        raise ValueError(f"kind must be 'read' or 'write', got {kind!r}")
    info = run.array(array)
    mem = run.memory
    rows = mem[(mem.array == info.id) & (mem.gwarp == gwarp) & (mem.kind == KIND[kind])]
    if len(rows) == 0:
        raise ValueError(f"warp {gwarp} made no {kind} of {array!r} in this run")
    keys = rows.site.astype(np.int64) * (1 << 32) + rows.seq
    _, first = np.unique(keys, return_index=True)
    order = keys[np.sort(first)]                        # requests in the order they happened
    if not 0 <= nth < len(order):
        raise ValueError(f"warp {gwarp} made {len(order)} {kind} request(s) to {array!r}; nth={nth} is out of range")
    return rows[keys == order[nth]]


def _cost(rows, space: int) -> int:
    if space == 1:
        r = bank_conflicts.requests(rows)
        return int(r.wavefronts.max()) if len(r) else 0
    r = coalescing.requests(rows, space)
    return int(r.sectors.max()) if len(r) else 0


def request_stats(run) -> dict:
    """Mean sectors per global read and write request, mean and max wavefronts per shared request."""
    g = coalescing.requests(run.memory)
    s = bank_conflicts.requests(run.memory)

    def mean(values):
        return float(values.mean()) if len(values) else None

    return {
        "read_sectors": mean(g.sectors[g.kind == 0]),
        "write_sectors": mean(g.sectors[g.kind == 1]),
        "sectors": mean(g.sectors),
        "shared_wavefronts": mean(s.wavefronts),
        "shared_read_wavefronts": mean(s.wavefronts[s.kind == 0]),
        "shared_write_wavefronts": mean(s.wavefronts[s.kind == 1]),
        "max_wavefronts": int(s.wavefronts.max()) if len(s) else None,
        "global_requests": int(len(g)),
        "shared_requests": int(len(s)),
    }


def _as_grid(info, max_rows: int, max_cols: int):
    """(rows, cols) used to draw an array: 2-D as is, 1-D as rows of 32 elements, clipped."""
    if len(info.shape) == 2:
        rows, cols = info.shape
    else:
        n = int(np.prod(info.shape))
        cols = min(WARP_SIZE, n)
        rows = -(-n // cols)
    return rows, cols, min(rows, max_rows), min(cols, max_cols)


def _draw_request(ax, run, rows, info, space: int, max_rows: int, max_cols: int):
    full_rows, cols, nrows, ncols = _as_grid(info, max_rows, max_cols)
    r, c = np.divmod(rows.index.astype(np.int64), cols)
    inside = (r < nrows) & (c < ncols)
    values = np.full((nrows, ncols), np.nan)
    if space == 1:
        values[r[inside], c[inside]] = (rows.address[inside] // 4) % 32          # bank
        cmap = ListedColormap(colormaps["hsv"](np.linspace(0, 1, 32, endpoint=False)))
    else:
        values[r[inside], c[inside]] = rows.lane[inside]
        cmap = colormaps["viridis"]
    ax.set_facecolor("#EEEEEE")
    image = ax.imshow(values, cmap=cmap, vmin=-0.5, vmax=31.5, interpolation="nearest", aspect="equal")
    if space == 0 and (ncols <= 64):
        for x in range(0, ncols + 1, SECTOR_FLOATS):          # sector boundaries within a row
            ax.axvline(x - 0.5, color="white", linewidth=0.6)
    if space == 1 and len(info.shape) == 2 and info.shape[1] > WARP_SIZE:
        pad = info.shape[1] - WARP_SIZE
        ax.add_patch(Rectangle((WARP_SIZE - 0.5, -0.5), pad, nrows, facecolor="none", hatch="///",
                               edgecolor="#888888", linewidth=0))
    ax.set_xlim(-0.5, ncols - 0.5)
    ax.set_ylim(nrows - 0.5, -0.5)
    ax.set_xticks(np.arange(0, ncols, 8 if ncols <= 64 else 32))
    ax.set_yticks(np.arange(0, nrows, 8 if nrows <= 64 else 32))
    clipped = " (clipped)" if (nrows, ncols) != (full_rows, cols) else ""
    if len(info.shape) == 2:
        label(ax, f"column of {info.name}{clipped}", f"row of {info.name}")
    else:
        label(ax, f"element % 32{clipped}", "element // 32")
    return image


def plot_warp_footprint(run, panels, gwarp: int = 0, *, title: str | None = None, max_rows: int = 64,
                        max_cols: int = 64):
    """One warp's requests, one panel each: which elements its 32 lanes touched.

    ``panels``: list of ``(array, kind)`` or ``(array, kind, nth)``, e.g.
    ``[("a", "read"), ("tile", "read"), ("out", "write")]``. Global arrays: touched cells
    coloured by lane, white lines at 32-byte sector boundaries (every 8 floats of a row), the
    panel title gives the request's sectors. Shared arrays: touched cells coloured by bank
    (word % 32; one colour = one bank), padding columns hatched, the title gives wavefronts.
    """
    panels = [tuple(p) + (0,) * (3 - len(p)) for p in panels]
    fig, axes, grid = _footprint_grid(len(panels))
    fig.suptitle(title or f"{run.kernel_name}: what warp {gwarp}'s requests touch", fontsize=12)
    lane_image = bank_image = None
    for ax, (array, kind, nth) in zip(axes, panels):
        info = run.array(array)
        space = 1 if info.space == "shared" or info.space == 1 else 0
        rows = warp_request(run, array, kind, gwarp, nth)
        cost = _cost(rows, space)
        image = _draw_request(ax, run, rows, info, space, max_rows, max_cols)
        line = int(rows.line[0])
        what = "wavefront" if space == 1 else "sector"
        ax.set_title(f"{kind} {array} ({'shared' if space else 'global'}), line {line}:\n"
                     f"{len(rows)} lanes, {cost} {what}{'s' * (cost != 1)}", fontsize=10)
        if space:
            bank_image = image
        else:
            lane_image = image
    bars = [(im, text) for im, text in ((bank_image, "bank (shared arrays)"), (lane_image, "lane (global arrays)"))
            if im is not None]
    for k, (im, text) in enumerate(bars):
        # colour bars side by side in the right margin, centred on the panels
        cax = fig.add_axes(_bar_box(fig, grid, k), label="<colorbar>")
        bar = fig.colorbar(im, cax=cax, ticks=[0, 8, 16, 24, 31])
        bar.set_label(text, fontsize=10)
        cax.tick_params(labelsize=9)
    return fig


# Footprint layout, in inches: panels of a fixed size, at most two per row when there are four
# (a read and the write it feeds side by side), so the figure stays about 9 inches wide and its
# text readable at notebook width. A fixed layout: the constrained one of new_figure costs most
# of the drawing time, and the chapter's widget redraws this figure.
_PANEL = {1: 3.6, 2: 3.3, 3: 2.6, 4: 2.8}
_LEFT, _RIGHT, _BOTTOM, _TOP = 0.7, 1.6, 0.55, 0.95      # margins; the right one holds the colour bars
_WGAP, _HGAP = 0.75, 1.05                                  # between panels: y labels; x labels + titles


def _footprint_grid(n: int):
    ncols = 2 if n == 4 else max(1, min(n, 3))
    nrows = -(-n // ncols)
    size = _PANEL.get(n, 2.6)
    width = _LEFT + ncols * size + (ncols - 1) * _WGAP + _RIGHT
    height = _BOTTOM + nrows * size + (nrows - 1) * _HGAP + _TOP
    fig = Figure(figsize=(width, height))
    axes = []
    for k in range(n):
        r, c = divmod(k, ncols)
        left = _LEFT + c * (size + _WGAP)
        bottom = height - _TOP - (r + 1) * size - r * _HGAP
        axes.append(fig.add_axes((left / width, bottom / height, size / width, size / height)))
    return fig, axes, (size, nrows)


def _bar_box(fig, grid, k: int):
    width, height = fig.get_size_inches()
    size, nrows = grid
    bar_h = min(size, 3.2) * 0.85
    bottom = (height - _TOP - nrows * size - (nrows - 1) * _HGAP) + (nrows * size + (nrows - 1) * _HGAP - bar_h) / 2
    left = width - _RIGHT + 0.25 + k * 0.75
    return (left / width, bottom / height, 0.15 / width, bar_h / height)


def plot_halo(run, block: int = 1, *, x: str = "x", shared: str = "s", margin: int = 6):
    """The 1-D stencil's halo: what block ``block`` read of ``x`` and where it put it in ``s``.

    Top row: elements of x (global index on the horizontal axis), coloured where this block
    read them: its own elements, or halo elements that belong to a neighbouring block.
    Bottom row: the block's shared array, slot j drawn under the global element it holds;
    slots beyond either end of x hold the zero padding. Only the two ends of the tile are
    drawn when it is wide (``margin`` slots inside each end).
    """
    xi, si = run.array(x), run.array(shared)
    n = int(np.prod(xi.shape))
    width = int(np.prod(si.shape))
    bs = run.threads_per_block
    radius = (width - bs) // 2
    start = block * bs - radius                            # global index of s[0]
    reads = run.accesses(x, "read", block=block)
    writes = run.accesses(shared, "write", block=block)
    read_count = np.bincount(reads.index.astype(np.int64), minlength=n)
    writer = np.full(width, -1)
    writer[writes.index] = writes.thread

    # Draw slots j = 0..width-1 at x = start + j; show the ends only when the tile is wide.
    show = np.arange(width)
    if width > 4 * margin + 2 * radius:
        keep = (show < radius + margin) | (show >= width - radius - margin)
        show = show[keep]
    fig, ax = new_figure(f"{run.kernel_name}, block {block}: the tile and its halo in shared memory "
                         f"(radius {radius})", figsize=(11.0, 3.6))
    pos = {}
    gap = 0
    for k, j in enumerate(show):
        if k and j != show[k - 1] + 1:
            gap += 2                                      # leave a break where the middle is cut
            ax.text(k + gap - 1.5, 0.5, "...", ha="center", va="center", fontsize=12)
        pos[j] = k + gap
    colours = {"own": PALETTE[0], "halo": PALETTE[1], "zero": "#BBBBBB"}
    for j, p in pos.items():
        g = start + j
        halo = j < radius or j >= width - radius
        if 0 <= g < n:
            kind = "halo" if halo else "own"
            hit = read_count[g] > 0
            ax.add_patch(Rectangle((p, 1.2), 0.95, 0.8, facecolor=colours[kind] if hit else "white",
                                   edgecolor="black", linewidth=0.5))
            ax.text(p + 0.47, 2.15, str(g), ha="center", va="bottom", fontsize=6, rotation=90)
        else:
            kind = "zero"
        ax.add_patch(Rectangle((p, -0.2), 0.95, 0.8, facecolor=colours[kind], edgecolor="black", linewidth=0.5))
        ax.text(p + 0.47, 0.2, "0" if kind == "zero" else f"t{writer[j]}", ha="center", va="center",
                fontsize=5, rotation=90)
        if kind != "zero":
            ax.plot([p + 0.47, p + 0.47], [0.6, 1.2], color="#666666", linewidth=0.5)
    right = max(pos.values()) + 1
    ax.text(-0.5, 1.6, "x (global)", ha="right", va="center", fontsize=9)
    ax.text(-0.5, 0.2, f"{shared} (shared)", ha="right", va="center", fontsize=9)
    ax.set_xlim(-6, right + 0.5)
    ax.set_ylim(-0.6, 3.4)
    ax.set_yticks([])
    ticks = [pos[j] + 0.47 for j in (show[0], show[-1])]
    ax.set_xticks(ticks, [f"s[{show[0]}]", f"s[{show[-1]}]"])
    label(ax, "shared slot j, drawn under the element of x it holds (x index written above; "
              "t = thread that loaded it)", "")
    ax.legend(handles=[Patch(facecolor=colours["own"], label="the block's own elements"),
                       Patch(facecolor=colours["halo"], label="halo: a neighbour's elements, read again"),
                       Patch(facecolor=colours["zero"], label="outside x: zero padding")],
              loc="upper center", bbox_to_anchor=(0.5, -0.28), ncols=3, fontsize=8, frameon=False)
    return fig


def plot_request_stats(rows, *, title: str = "Cost of each request, from the emulator's trace"):
    """Bars per version: sectors per global read and write request, wavefronts per shared request.

    ``rows``: dicts with ``version`` and the keys of :func:`request_stats` (None = no request).
    """
    fig, (ax1, ax2) = new_figure(title, ncols=2, figsize=(11.0, 0.6 + 0.45 * max(4, len(rows))))
    names = [r["version"] for r in rows][::-1]
    y = np.arange(len(rows))
    h = 0.38
    reads = [r["read_sectors"] or 0 for r in rows][::-1]
    writes = [r["write_sectors"] or 0 for r in rows][::-1]
    ax1.barh(y + h / 2, reads, h, color=PALETTE[0], label="read")
    ax1.barh(y - h / 2, writes, h, color=PALETTE[1], label="write")
    for yy, v in zip(y, reads):
        ax1.text(v, yy + h / 2, f" {v:.3g}", va="center", fontsize=8)
    for yy, v in zip(y, writes):
        ax1.text(v, yy - h / 2, f" {v:.3g}", va="center", fontsize=8)
    ax1.axvline(4, color="black", linestyle="--", linewidth=0.8)
    ax1.set_yticks(y, names)
    ax1.set_xlim(0, 38)
    ax1.legend(fontsize=8, loc="lower right")
    label(ax1, "32-byte sectors per warp request (4 = coalesced, 32 = one per lane)", "", "global memory")
    for sign, key, colour, name in ((1, "shared_read_wavefronts", PALETTE[0], "read"),
                                    (-1, "shared_write_wavefronts", PALETTE[1], "write")):
        waves = [r.get(key) for r in rows][::-1]
        ax2.barh(y + sign * h / 2, [w or 0 for w in waves], h, color=colour, label=name)
        for yy, w in zip(y, waves):
            if w is not None:
                ax2.text(w, yy + sign * h / 2, f" {w:.3g}", va="center", fontsize=8)
    for yy, r in zip(y, rows[::-1]):
        if r["shared_requests"] == 0:
            ax2.text(0, yy, " no shared memory", va="center", fontsize=8)
    ax2.legend(fontsize=8, loc="lower right")
    ax2.axvline(1, color="black", linestyle="--", linewidth=0.8)
    ax2.set_yticks(y, [""] * len(y))
    ax2.set_xlim(0, 38)
    label(ax2, "wavefronts per shared request (1 = no bank conflict)", "", "shared memory")
    return fig


def pattern_work_rows(sides=(16, 32, 64)) -> list[dict]:
    """Work (memory accesses) and steps (barrier epochs) of map, the shared-memory stencil and the
    padded transpose, emulated at n = side * side elements: rows for ``plot_work_steps``."""
    from .. import emulate
    from ..analysis.complexity import memory_work
    from ..kernels import patterns as P

    rng = np.random.default_rng(0)
    rows = []
    for side in sides:
        n = side * side
        x = rng.random(n).astype(np.float32)
        runs = {
            "map": emulate(P.map_v1, P.cdiv(n, 128), 128, x, np.empty_like(x)),
            "stencil 1-D, shared halo": emulate(P.stencil1d_v2_shared, P.cdiv(n, P.STENCIL_BLOCK), P.STENCIL_BLOCK,
                                                x, rng.random(2 * P.RADIUS + 1).astype(np.float32),
                                                np.empty_like(x)),
            "transpose, padded tile": emulate(P.transpose_v3_padded, *P.transpose_launch((side, side), 3),
                                              x.reshape(side, side), np.empty((side, side), np.float32)),
        }
        for version, run in runs.items():
            ws = memory_work(run)
            rows.append({"version": version, "n": n, "work": ws.work, "steps": ws.steps})
    return rows


def plot_pattern_work_steps(sides=(16, 32, 64)) -> Figure:
    """Work grows like n, steps stay constant: every element is independent (or one barrier away)."""
    from .complexity import plot_work_steps

    return plot_work_steps(pattern_work_rows(sides), work_label="work [memory accesses]",
                           title="Patterns: work and steps against n (counted by the emulator)")
