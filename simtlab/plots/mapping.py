"""Which block, warp, thread and lane computes each element of an array.

``thread_mapping`` is the grid arithmetic of the standard index formulas;
``mapping_from_run`` reads the same answer off an emulator trace (who really wrote each
element); ``plot_thread_mapping`` draws either one as a grid of coloured cells.
"""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.collections import LineCollection
from matplotlib.colors import BoundaryNorm, ListedColormap, to_rgb
from matplotlib.patches import Patch

from .style import PALETTE, label, new_figure
from ..keys import element_rows
from ..simt import WARP_SIZE, cdiv

ID_KEYS = ("block", "block_x", "block_y", "thread", "thread_x", "thread_y", "warp", "gwarp", "lane")
COLOR_BY = ("block", "warp", "thread", "lane")
# Cells with no thread (outside the grid, or never written in a trace).
NO_THREAD_COLOR = "#DDDDDD"
# Block borders are black, so black cells would hide them.
CELL_PALETTE = [c for c in PALETTE if c != "#000000"]


def _dims(value, name: str, max_len: int = 3) -> tuple[int, ...]:
    """An int or a tuple of ints as a tuple; the CUDA z dimension must be 1 here."""
    dims = (int(value),) if np.isscalar(value) else tuple(int(v) for v in value)
    if not 1 <= len(dims) <= max_len or any(d < 1 for d in dims):
        raise ValueError(f"{name} must be 1 to {max_len} positive ints, got {value!r}")
    if len(dims) == 3:
        if dims[2] != 1:
            raise ValueError(f"{name}: the standard x/y mapping uses no z dimension, got {value!r}")
        dims = dims[:2]
    return dims


def _shape(shape) -> tuple[int, ...]:
    shape = (int(shape),) if np.isscalar(shape) else tuple(int(s) for s in shape)
    if len(shape) not in (1, 2) or any(s < 1 for s in shape):
        raise ValueError(f"shape must be 1-D or 2-D with positive sizes, got {shape!r}")
    return shape


def thread_mapping(shape, blockdim, griddim=None, layout: str = "2d") -> dict:
    """Per element of an array of ``shape``, the ids of the thread that computes it.

    Assumes the standard index formulas: 1-D ``i = blockIdx.x*blockDim.x + threadIdx.x``;
    2-D ``x = blockIdx.x*blockDim.x + threadIdx.x`` along columns and ``y`` likewise along
    rows. ``layout="1d"`` maps a 2-D array with the 1-D formula over its row-major flat index
    (only ``blockdim[0]``/``griddim[0]`` are used). ``griddim`` defaults to the smallest grid
    that covers the array.

    Returns a dict of integer arrays of ``shape`` -- ``block`` (linear id), ``block_x``,
    ``block_y``, ``thread`` (linear id in the block), ``thread_x``, ``thread_y``, ``warp``
    (in the block), ``gwarp`` (global warp), ``lane`` -- with -1 where no thread of the grid
    reaches the element, plus the launch: ``griddim``, ``blockdim`` (2-tuples), ``threads``
    (launched), ``idle`` (launched threads whose index falls outside the array),
    ``uncovered`` (elements no thread reaches).
    """
    shape = _shape(shape)
    if layout not in ("1d", "2d"):
        raise ValueError(f"layout must be '1d' or '2d', got {layout!r}")
    one_d = len(shape) == 1 or layout == "1d"
    bdim = _dims(blockdim, "blockdim")
    if one_d:
        bdim = (bdim[0], 1)
    else:
        bdim = bdim + (1,) * (2 - len(bdim))
    n = int(np.prod(shape))
    if griddim is None:
        gdim = (cdiv(n, bdim[0]), 1) if one_d else (cdiv(shape[1], bdim[0]), cdiv(shape[0], bdim[1]))
    else:
        gdim = _dims(griddim, "griddim")
        gdim = (gdim[0], 1) if one_d else gdim + (1,) * (2 - len(gdim))

    if one_d:
        gx = np.arange(n).reshape(shape)  # global x index of each element
        gy = np.zeros(shape, dtype=np.int64)
        covered = min(gdim[0] * bdim[0], n)
    else:
        gy, gx = np.indices(shape)
        covered = min(gdim[0] * bdim[0], shape[1]) * min(gdim[1] * bdim[1], shape[0])
    inside = (gx < gdim[0] * bdim[0]) & (gy < gdim[1] * bdim[1])

    block_x, thread_x = np.divmod(gx, bdim[0])
    block_y, thread_y = np.divmod(gy, bdim[1])
    block = block_x + block_y * gdim[0]
    thread = thread_x + thread_y * bdim[0]  # CUDA linearises x fastest
    warps_per_block = cdiv(bdim[0] * bdim[1], WARP_SIZE)
    ids = {
        "block": block, "block_x": block_x, "block_y": block_y,
        "thread": thread, "thread_x": thread_x, "thread_y": thread_y,
        "warp": thread // WARP_SIZE, "gwarp": block * warps_per_block + thread // WARP_SIZE,
        "lane": thread % WARP_SIZE,
    }
    out = {k: np.where(inside, v, -1).astype(np.int64) for k, v in ids.items()}
    threads = gdim[0] * gdim[1] * bdim[0] * bdim[1]
    out.update(griddim=gdim, blockdim=bdim, threads=threads, idle=threads - covered,
               uncovered=n - covered)
    return out


#: the trace's access kinds a mapping can be read from (kind codes of ``run.memory``)
ACCESS_KINDS = {"write": (1,), "read": (0,), "atomic": (2,), "any": (0, 1, 2)}


def mapping_from_run(run, array_name: str, kind: str = "write", shape=None) -> dict:
    """``thread_mapping``'s dict read off a trace: the thread that wrote each element.

    Uses the rows of ``run.memory`` that write (kind 1) ``array_name``; when an element is
    written more than once, the last writer (the one whose value stays) is kept. Elements
    nobody wrote are -1; ``idle`` counts launched threads that wrote no element.
    ``kind``: "write" (default), "read", "atomic" or "any" access instead, the last one kept.
    ``shape``: view the array with another shape of the same size (a 3-D array as 2-D).
    """
    if kind not in ACCESS_KINDS:
        raise ValueError(f"kind must be one of {sorted(ACCESS_KINDS)}, got {kind!r}")
    info = run.array(array_name)
    shape = _shape(info.shape if shape is None else shape)
    if int(np.prod(shape)) != int(np.prod(info.shape)):
        raise ValueError(f"shape {shape} does not hold the {int(np.prod(info.shape))} elements of {array_name}")
    mem = run.memory_columns
    rows = mem[(mem["array"] == info.id) & np.isin(mem["kind"], ACCESS_KINDS[kind])]
    n = int(np.prod(shape))
    bdim = tuple(int(d) for d in run.blockdim)
    gdim = tuple(int(d) for d in run.griddim)

    block = np.full(n, -1, dtype=np.int64)
    thread = np.full(n, -1, dtype=np.int64)
    # Fancy assignment keeps the last of repeated indices, i.e. the last write in trace order;
    # a vector access (CUDA C float4) covers its elements from its index on
    which, index = element_rows(rows["index"], rows["width"], info.itemsize)
    block[index] = rows["block"][which]
    thread[index] = rows["thread"][which]
    hit = block >= 0

    def per_element(values):
        return np.where(hit, values, -1).astype(np.int64).reshape(shape)

    out = {
        "block": per_element(block),
        "block_x": per_element(block % gdim[0]),
        "block_y": per_element((block // gdim[0]) % gdim[1]),
        "thread": per_element(thread),
        "thread_x": per_element(thread % bdim[0]),
        "thread_y": per_element((thread // bdim[0]) % bdim[1]),
        "warp": per_element(thread // WARP_SIZE),
        "gwarp": per_element(block * run.warps_per_block + thread // WARP_SIZE),
        "lane": per_element(thread % WARP_SIZE),
    }
    writers = len(np.unique(rows["block"].astype(np.int64) * run.threads_per_block + rows["thread"]))
    threads = int(run.num_blocks * run.threads_per_block)
    out.update(griddim=gdim[:2] if gdim[2:] in ((), (1,)) else gdim,
               blockdim=bdim[:2] if bdim[2:] in ((), (1,)) else bdim,
               threads=threads, idle=threads - writers, uncovered=int((~hit).sum()))
    return out


def _cell_text(mapping: dict, color_by: str, r: int, c: int, two_d_ids: bool) -> str:
    """A cell's label: the colouring id, as (x,y) for blocks/threads of a 2-D launch."""
    if mapping[color_by][r, c] < 0:
        return ""
    if two_d_ids and color_by in ("block", "thread"):
        return f"{mapping[color_by + '_x'][r, c]},{mapping[color_by + '_y'][r, c]}"
    return str(mapping[color_by][r, c])


def _block_edges(block: np.ndarray) -> list:
    """Segments between neighbouring cells of different blocks, plus the outer border."""
    rows, cols = block.shape
    segs = [[(0, 0), (cols, 0)], [(cols, 0), (cols, rows)], [(cols, rows), (0, rows)], [(0, rows), (0, 0)]]
    for r, c in zip(*np.nonzero(block[:, 1:] != block[:, :-1])):
        segs.append([(c + 1, r), (c + 1, r + 1)])
    for r, c in zip(*np.nonzero(block[1:, :] != block[:-1, :])):
        segs.append([(c, r + 1), (c + 1, r + 1)])
    return segs


def _text_color(rgb) -> str:
    lum = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2]
    return "black" if lum > 0.5 else "white"


def plot_thread_mapping(shape=None, blockdim=None, griddim=None, color_by: str = "block",
                        annotate="auto", mapping: dict | None = None, layout: str = "2d"):
    """Draw an array as cells coloured by the block/warp/thread/lane that computes them.

    Either give ``shape`` and ``blockdim`` (and optionally ``griddim``/``layout``) for the
    standard mapping, or a ``mapping`` dict from ``thread_mapping``/``mapping_from_run``.
    Block borders are thick; cells carry their id as text when ``annotate`` is True, or
    "auto" and the array has at most 256 cells. Returns a matplotlib Figure.
    """
    if color_by not in COLOR_BY:
        raise ValueError(f"color_by must be one of {COLOR_BY}, got {color_by!r}")
    if mapping is None:
        if shape is None or blockdim is None:
            raise ValueError("give shape and blockdim, or a mapping")
        mapping = thread_mapping(shape, blockdim, griddim, layout=layout)
    one_d_array = mapping["block"].ndim == 1
    grid = {k: np.atleast_2d(mapping[k]) for k in ID_KEYS}
    values = grid[color_by]
    rows, cols = values.shape
    gdim, bdim = mapping["griddim"], mapping["blockdim"]
    two_d_ids = len(gdim) > 1 and (gdim[1] > 1 or bdim[1] > 1)

    title = (f"grid {_fmt_dims(gdim)} x block {_fmt_dims(bdim)}: {mapping['threads']} threads launched, "
             f"{mapping['idle']} idle")
    height = min(9.0, max(2.6, 1.7 + 0.4 * rows)) if rows > 1 else 2.4
    # One row is drawn no wider than a notebook page (about 10 in at 100 dpi): a wider figure
    # is shrunk to fit and its labels become too small to read.
    width = min(13.0 if rows > 1 else 10.0, max(6.0, 1.5 + 0.45 * cols))
    fig, ax = new_figure(title, figsize=(width, height))

    present = np.unique(values[values >= 0])
    masked = np.ma.masked_less(values, 0)
    names = {"block": "block", "warp": "warp in block", "thread": "thread in block", "lane": "lane"}
    handles = []
    if len(present) <= len(CELL_PALETTE):
        # Few ids: one palette colour each, named in a legend.
        lookup = np.full(int(present.max(initial=0)) + 1, 0)
        lookup[present] = np.arange(len(present))
        colors = CELL_PALETTE[:max(len(present), 1)]
        cmap = ListedColormap(colors).with_extremes(bad=NO_THREAD_COLOR)
        data = np.ma.array(np.where(values >= 0, lookup[np.maximum(values, 0)], 0), mask=masked.mask)
        norm = BoundaryNorm(np.arange(len(colors) + 1) - 0.5, len(colors))
        ax.imshow(data, cmap=cmap, norm=norm, extent=(0, cols, rows, 0), interpolation="nearest")
        for i, v in enumerate(present):
            if color_by in ("block", "thread") and two_d_ids:
                where = np.argwhere(values == v)[0]
                name = f"{names[color_by]} ({grid[color_by + '_x'][tuple(where)]},{grid[color_by + '_y'][tuple(where)]})"
            else:
                name = f"{names[color_by]} {v}"
            handles.append(Patch(facecolor=colors[i], edgecolor="black", label=name))
        color_of = lambda v: to_rgb(colors[lookup[v]]) if v >= 0 else to_rgb(NO_THREAD_COLOR)  # noqa: E731
    else:
        # Many ids: a sequential colour-blind-safe map with a colour bar.
        cmap = colormaps["viridis"].with_extremes(bad=NO_THREAD_COLOR)
        img = ax.imshow(masked, cmap=cmap, vmin=present.min(), vmax=present.max(),
                        extent=(0, cols, rows, 0), interpolation="nearest")
        fig.colorbar(img, ax=ax, label=f"{names[color_by]} id (linear)")
        span = max(int(present.max() - present.min()), 1)
        color_of = lambda v: (cmap((v - present.min()) / span)[:3] if v >= 0  # noqa: E731
                              else to_rgb(NO_THREAD_COLOR))
    if (values < 0).any():
        handles.append(Patch(facecolor=NO_THREAD_COLOR, edgecolor="black", label="no thread"))

    # Thin cell borders where cells are big enough to see, thick borders between blocks.
    if rows * cols <= 4096:
        # one LineCollection, not minor-tick gridlines: a tick is an artist of its own, and a
        # 128 x 32 array would take half a second to render its 160 of them
        cell_lines = ([[(c, 0), (c, rows)] for c in range(1, cols)]
                      + [[(0, r), (cols, r)] for r in range(1, rows)])
        ax.add_collection(LineCollection(cell_lines, colors="white", linewidths=0.5))
    ax.add_collection(LineCollection(_block_edges(grid["block"]), colors="black", linewidths=2.5))

    if annotate == "auto":
        annotate = rows * cols <= 256
    if annotate:
        fontsize = 8 if cols <= 16 else 6
        for r in range(rows):
            for c in range(cols):
                text = _cell_text(grid, color_by, r, c, two_d_ids)
                if text:
                    ax.text(c + 0.5, r + 0.5, text, ha="center", va="center", fontsize=fontsize,
                            color=_text_color(color_of(values[r, c])), in_layout=False)

    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)  # row 0 on top, as the array prints
    _ticks(ax.xaxis, cols)
    if one_d_array:
        ax.set_yticks([])
        label(ax, "element index i", "1-D array")
    else:
        _ticks(ax.yaxis, rows)
        label(ax, "column x (element)", "row y (element)")
    ax.set_title(f"coloured by {names[color_by]}; thick lines are block borders", fontsize=9)
    if handles:
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
                  frameon=False)
    return fig


def _fmt_dims(dims) -> str:
    """``(3, 1)`` prints as ``3``: a 1-D launch reads as the kernel's launch line."""
    dims = tuple(int(d) for d in dims)
    return str(dims[0]) if all(d == 1 for d in dims[1:]) else str(dims)


#: at most this many labelled ticks per axis: each tick is an artist with a label to lay out and
#: render, the largest part of drawing a mapping (24 per axis took twice as long)
MAX_TICKS = 12


def _ticks(axis, n: int):
    """Element-centred integer ticks every power of two (a warp's 32 lanes split evenly), thinned
    to ``MAX_TICKS`` so labels never overlap."""
    step = 1
    while n > step * MAX_TICKS:
        step *= 2
    pos = np.arange(0, n, step)
    axis.set_ticks(pos + 0.5)
    axis.set_ticklabels([str(p) for p in pos])


#: a 1-D array longer than this is drawn in rows of ``WRAP`` elements (one warp's worth each)
WRAP_ABOVE = 64
WRAP = 32


def plot_run_mapping(run, array_name: str, kind: str = "write", color_by: str = "block"):
    """Who touched each element of ``array_name`` in a run, as ``plot_thread_mapping`` draws it.

    ``kind``: "write", "read", "atomic" or "any" (the last thread to do so is shown). A 1-D
    array of more than 64 elements is wrapped in rows of 32 (element ``i`` at row ``i // 32``,
    column ``i % 32``); a 3-D array is drawn as 2-D (its first two axes merged).
    """
    info = run.array(array_name)
    shape = tuple(int(s) for s in info.shape) or (1,)
    n = int(np.prod(shape))
    wrapped = len(shape) == 1 and n > WRAP_ABOVE
    view = (int(np.prod(shape[:-1])), shape[-1]) if len(shape) > 2 else shape
    m = mapping_from_run(run, array_name, kind=kind, shape=view)
    if wrapped:
        rows = -(-n // WRAP)
        for key in ID_KEYS:
            m[key] = np.concatenate([m[key], np.full(rows * WRAP - n, -1, np.int64)]).reshape(rows, WRAP)
    fig = plot_thread_mapping(color_by=color_by, mapping=m)
    ax = fig.axes[0]
    verb = {"write": "wrote", "read": "read", "atomic": "updated atomically", "any": "touched"}[kind]
    fig.suptitle(f"{run.kernel_name}: which {color_by} last {verb} each element of {array_name} "
                 f"{'x'.join(str(s) for s in shape)}\n{fig.get_suptitle()}", fontsize=10)
    if wrapped:
        label(ax, f"i mod {WRAP} (element)", f"i // {WRAP} (row of {WRAP} elements)")
    elif len(shape) > 2:
        label(ax, f"axis 2 (element)", "axes 0 and 1, merged (element)")
    return fig


__all__ = ["thread_mapping", "mapping_from_run", "plot_thread_mapping", "plot_run_mapping", "COLOR_BY",
           "ACCESS_KINDS"]
