"""Chapter 7's pictures: the unrolled matrix and its copies (from the emulator's trace), the
memory a layer needs with and without unrolling, per-layer FLOPs, and the GPU timings against
cuDNN (measured or recorded)."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap

from .style import PALETTE, label, new_figure

__all__ = ["plot_unrolled_matrix", "plot_copies", "plot_unroll", "plot_traffic", "plot_layer_memory",
           "plot_layer_flops", "plot_conv_timings", "seed_layers", "cudnn_layouts_table", "plot_gather_coalescing",
           "plot_winograd", "plot_conv_algorithms_c1", "plot_storage_floors"]


def seed_layers():
    """The layers of chapter 7's sources by name: ECE408's LeNet-5 C1 and C3, the electrode CNN's first two."""
    from ..kernels import conv as K

    return {"LeNet C1": K.LENET_C1, "LeNet C3": K.LENET_C3,
            "electrode conv1": K.ELECTRODE_CONV1, "electrode conv2": K.ELECTRODE_CONV2}


def _source_image(ax, trace):
    b, c, h, w = trace.x_shape
    src = trace.source.astype(float)
    shown = np.where(src < 0, np.nan, src % (h * w) if c == 1 and b == 1 else src)
    cmap = ListedColormap(["#f7f7f7"])
    ax.imshow(np.zeros_like(src), cmap=cmap, aspect="auto", interpolation="nearest")
    im = ax.imshow(shown, cmap="viridis", aspect="auto", interpolation="nearest")
    if src.size <= 40 * 40:         # numbers inside their cells: left out of the layout (hundreds of texts)
        for (r, col), v in np.ndenumerate(trace.source):
            ax.text(col, r, "0" if v < 0 else str(v), ha="center", va="center", fontsize=6,
                    color="black" if v < 0 else "white", in_layout=False)
    return im


def plot_unrolled_matrix(trace, *, title: str | None = None):
    """The input (each element numbered) beside the unrolled matrix, each entry showing the input
    element it copies (0 where the window hangs over the padding)."""
    b, c, h, w = trace.x_shape
    k = trace.k
    fig, (ax_in, ax_m) = new_figure(
        title or f"im2col of a {h}x{w} input, {k}x{k} filter, stride {trace.stride}, pad {trace.pad}: "
                 f"{trace.source.shape[0]} x {trace.source.shape[1]} matrix",
        ncols=2, figsize=(11, 4.5), gridspec_kw={"width_ratios": [1, 2.4]})
    idx = np.arange(b * c * h * w).reshape(trace.x_shape)[0, 0]
    ax_in.imshow(idx, cmap="viridis", interpolation="nearest")
    for (r, col), v in np.ndenumerate(idx):
        ax_in.text(col, r, str(v), ha="center", va="center", fontsize=7, color="white", in_layout=False)
    label(ax_in, "input column ix", "input row iy", "x[0, 0]: element numbers")
    _source_image(ax_m, trace)
    label(ax_m, "output column n = (b, oy, ox)", "unrolled row (c, p, q)",
          f"unrolled matrix: input element each entry copies ({trace.duplication:.1f} entries per input element)")
    return fig


def plot_copies(trace, *, title: str | None = None):
    """How many times the unroll kernel read each input element (image 0, channel 0), from the trace."""
    copies = trace.copies[0, 0]
    fig, ax = new_figure(title or f"Copies of each input element: up to K x K = {trace.k * trace.k}",
                         figsize=(5.5, 4.5))
    im = ax.imshow(copies, cmap="magma", interpolation="nearest", vmin=0)
    for (r, col), v in np.ndenumerate(copies):
        ax.text(col, r, str(v), ha="center", va="center", fontsize=8,
                color="white" if v < copies.max() * 0.6 else "black", in_layout=False)
    fig.colorbar(im, ax=ax, label="copies in the unrolled matrix (reads of x in the trace)")
    label(ax, "input column ix", "input row iy")
    return fig


def plot_unroll(trace):
    """One figure: the unrolled matrix and the copies per input element (for the widget)."""
    b, c, h, w = trace.x_shape
    fig, (ax_m, ax_c) = new_figure(
        f"im2col: {h}x{w} input, {trace.k}x{trace.k} filter, stride {trace.stride}, pad {trace.pad} -> "
        f"{trace.source.shape[0]} x {trace.source.shape[1]} unrolled matrix",
        ncols=2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [2.4, 1]})
    _source_image(ax_m, trace)
    label(ax_m, "output column n = (b, oy, ox)", "unrolled row (c, p, q)",
          "entry = number of the input element it copies (0: padding)")
    copies = trace.copies[0, 0]
    im = ax_c.imshow(copies, cmap="magma", interpolation="nearest", vmin=0)
    fig.colorbar(im, ax=ax_c, label="copies")
    # two lines: on one, the title ran under the colorbar beside this narrow axes
    label(ax_c, "input column ix", "input row iy", "copies of each input element\n(counted in the trace)")
    return fig


def plot_traffic(traffic: list[dict], *, title: str | None = None):
    """Bytes each version allocates, reads and writes in global memory (from emulator runs of
    :func:`simtlab.analysis.unroll.global_traffic`)."""
    fig, ax = new_figure(title or "Global memory per version, one small layer on the emulator")
    kinds = ("allocated", "read", "written")
    width = 0.8 / len(kinds)
    xs = np.arange(len(traffic))
    for i, kind in enumerate(kinds):
        vals = [t[kind] / 1024 for t in traffic]
        bars = ax.bar(xs + (i - 1) * width, vals, width, label=f"bytes {kind}", color=PALETTE[i])
        ax.bar_label(bars, fmt="%.1f", fontsize=7)
    ax.set_xticks(xs, [t["version"] for t in traffic])
    ax.legend()
    label(ax, "version", "global memory [KiB]")
    return fig


def plot_layer_memory(batch: int = 10_000, layers: dict | None = None, *, title: str | None = None):
    """Per layer: the input, the unrolled matrix v2 writes and reads, and the output, in MB (log scale)."""
    from ..kernels.conv import layer_numbers

    layers = layers or seed_layers()
    rows = {name: layer_numbers(batch, s["C"], s["H"], s["W"], s["M"], s["K"], padding=s.get("padding", "valid"))
            for name, s in layers.items()}
    fig, ax = new_figure(title or f"Memory of each layer at a batch of {batch:,}: the unrolled matrix vs the data")
    xs = np.arange(len(rows))
    series = [("input", "input_bytes", PALETTE[0]), ("unrolled matrix (v2 only)", "unrolled_bytes", PALETTE[5]),
              ("output", None, PALETTE[2])]
    width = 0.26
    for i, (name, key, colour) in enumerate(series):
        if key is None:
            vals = [(r["bytes"] - r["input_bytes"]) / 1e6 for r in rows.values()]
        else:
            vals = [r[key] / 1e6 for r in rows.values()]
        bars = ax.bar(xs + (i - 1) * width, vals, width, label=name, color=colour)
        ax.bar_label(bars, fmt="%.0f", fontsize=7)
    for x, r in zip(xs, rows.values()):
        ax.text(x, r["unrolled_bytes"] / 1e6 * 1.8, f"x{r['duplication']:.0f}", ha="center", fontsize=8)
    ax.set_yscale("log")
    ax.set_xticks(xs, list(rows))
    ax.legend(loc="upper left")
    label(ax, "layer", "memory [MB] (log scale)")
    return fig


def plot_layer_flops(batch: int = 10_000, layers: dict | None = None, *, title: str | None = None):
    """Per layer: GFLOPs (bars) and arithmetic intensity in FLOPs per byte of the fewest bytes (dots)."""
    from ..kernels.conv import layer_numbers

    layers = layers or seed_layers()
    rows = {name: layer_numbers(batch, s["C"], s["H"], s["W"], s["M"], s["K"], padding=s.get("padding", "valid"))
            for name, s in layers.items()}
    fig, ax = new_figure(title or f"Work of each layer at a batch of {batch:,}")
    xs = np.arange(len(rows))
    bars = ax.bar(xs, [r["flops"] / 1e9 for r in rows.values()], color=PALETTE[0], label="GFLOP")
    ax.bar_label(bars, fmt="%.1f", fontsize=8)
    ax.set_xticks(xs, list(rows))
    label(ax, "layer", "work [GFLOP]")
    ax2 = ax.twinx()
    ax2.plot(xs, [r["intensity"] for r in rows.values()], "o", color=PALETTE[5], label="FLOPs per byte")
    ax2.set_ylabel("arithmetic intensity [FLOP/byte]")
    ax2.set_ylim(bottom=0)
    lines = [bars, ax2.lines[0]]
    ax.legend(lines, ["GFLOP", "FLOPs per byte (input + weights + output once)"], loc="upper left")
    return fig


def plot_conv_timings(res: dict, layer: str = "C1", batch: int = 10_000, *, title: str | None = None):
    """Horizontal bars: ms of each version for one layer and batch, labelled with the ratio to
    cuDNN (above 1: faster), the roofline time as a line."""
    if res.get("source") == "none":
        fig, ax = new_figure(title or "no GPU timings yet")
        ax.text(0.5, 0.5, res.get("message", "no timings"), ha="center", va="center", wrap=True)
        ax.set_axis_off()
        return fig
    entry = res["layers"][layer][str(batch)]
    rows = sorted(entry["rows"], key=lambda r: r["median_ms"], reverse=True)
    where = f"{res.get('device') or 'GPU'}, {'measured here' if res.get('source') == 'measured' else 'recorded'} " \
            f"{res.get('date') or ''}".strip()
    fig, ax = new_figure(title or f"LeNet {layer}, batch {batch:,}: time per layer ({where})",
                         figsize=(9, 1.2 + 0.36 * len(rows)))
    colours = {"library": PALETTE[7], "cuda-c": PALETTE[0], "numba": PALETTE[1]}
    ys = np.arange(len(rows))
    ax.barh(ys, [r["median_ms"] for r in rows], color=[colours.get(r["impl"], PALETTE[3]) for r in rows])
    for y, r in zip(ys, rows):
        ax.text(r["median_ms"], y, f" {r['median_ms']:.2f} ms, {r['ratio']:.2f}x cuDNN", va="center", fontsize=8)
    ax.axvline(entry["roofline_ms"], color=PALETTE[5], ls="--", label=f"roofline {entry['roofline_ms']:.2f} ms")
    ax.set_yticks(ys, [r["name"] for r in rows])
    ax.set_xscale("log")
    ax.legend(loc="upper right")
    label(ax, "time per layer [ms] (log scale)", "version")
    return fig


def _speedup_text(ratio: float | None) -> str:
    if ratio is None:
        return "not measured"
    return f"v6 {ratio:.2f}x faster" if ratio >= 1 else f"cuDNN {1 / ratio:.2f}x faster"


def cudnn_layouts_table(layer: str, data: dict | None = None):
    """cuDNN on ECE408's ``layer`` in NCHW and NHWC, FP32 / TF32 / FP16 / BF16, the algorithm it
    chose, against the course's v6 (FP32-exact) in the same run: a table Jupyter shows as HTML."""
    from ..gpubench.conv import PRECISIONS, cudnn_table
    from .tables import RecordedTable

    t = cudnn_table(layer, data)
    rows = [(f"cuDNN {r['layout']}", PRECISIONS[r["precision"]], f"{r['ms']:.3f}", r["algorithm"],
             _speedup_text(r["v6_speedup"])) for r in t["rows"]]
    rows += [(f"course {name}", "FP32-exact", f"{ms:.3f}", "direct, CUDA C, one layer shape", "")
             for name, ms in t["course"].items()]
    title = (f"{layer} at batch {t['batch']:,}: cuDNN {t['cudnn_version']} (torch {t['torch']}) against the "
             f"course, {t['device']}, {t['date']}")
    note = ("GPU time between CUDA events; the algorithm is read from the names of the kernels cuDNN ran "
            "(torch.profiler). FP32-exact: every product and sum in float32; TF32 rounds the inputs to 10 "
            "mantissa bits, FP16/BF16 store them in 16 bits. benchmarks/results/probe_ch6_8_h100.json")
    return RecordedTable(title, ("implementation", "precision", "time (ms)", "algorithm", "v6 vs this"),
                         rows, note, bold=range(len(t["rows"]), len(rows)))


def plot_gather_coalescing(rows: list[dict], *, title: str | None = None):
    """Sectors per warp request of the implicit GEMM's gather from x, NCHW (v3) against NHWC, per
    channel count C, one panel per filter size K (rows of :func:`simtlab.analysis.unroll.gather_coalescing`).
    The dots mark the floor: the sectors the request's distinct bytes would fill if contiguous."""
    ks = sorted({r["K"] for r in rows})
    fig, axes = new_figure(title or "The implicit GEMM's gather from x: 32-byte sectors per warp request (emulator trace)",
                           ncols=len(ks), figsize=(5.2 * len(ks), 4), sharey=True, squeeze=False)
    for ax, k in zip(axes[0], ks):
        cs = sorted({r["C"] for r in rows if r["K"] == k})
        xs = np.arange(len(cs))
        for i, (layout, colour) in enumerate((("nchw", PALETTE[0]), ("nhwc", PALETTE[2]))):
            mine = {r["C"]: r for r in rows if r["K"] == k and r["layout"] == layout}
            vals = [mine[c]["sectors"] for c in cs]
            used = ", ".join(f"{mine[c]['used']:.0%}" for c in cs)
            bars = ax.bar(xs + (i - 0.5) * 0.38, vals, 0.38, color=colour,
                          label=f"{layout.upper()} ({used} of the fetched bytes used)")
            ax.bar_label(bars, fmt="%.2f", fontsize=7)
            ax.plot(xs + (i - 0.5) * 0.38, [mine[c]["needed"] for c in cs], "k_", markersize=14,
                    label="floor: distinct bytes / 32" if i == 0 else None)
        ax.set_xticks(xs, [str(c) for c in cs])
        ax.set_ylim(0, max(r["sectors"] for r in rows) * 1.45)        # room for the legend above the bars
        ax.legend(fontsize=7, loc="upper left")
        label(ax, "input channels C", "sectors per request" if k == ks[0] else "", f"{k}x{k} filters")
    return fig


def plot_winograd(pairs=((2, 3), (4, 3), (6, 3), (2, 5), (2, 7), (4, 7)), *, title: str | None = None):
    """Winograd F(m x m, r x r): multiplies saved per output against the direct r^2 (bars), and the
    largest float32 error over random tiles, relative to the largest output (dots, log scale)."""
    from ..analysis.conv_algorithms import winograd_error, winograd_multiplies

    fig, ax = new_figure(title or "Winograd F(m x m, r x r): fewer multiplies, larger rounding error as the tile grows",
                         figsize=(9, 4))
    xs = np.arange(len(pairs))
    savings = [winograd_multiplies(m, r)["saving"] for m, r in pairs]
    bars = ax.bar(xs, savings, color=PALETTE[0], label="multiplies saved (direct r² / Winograd's per output)")
    ax.bar_label(bars, fmt="%.2fx", fontsize=8)
    ax.set_xticks(xs, [f"F({m}x{m}, {r}x{r})\ntile {m + r - 1}x{m + r - 1}" for m, r in pairs])
    label(ax, "algorithm (outputs per tile, filter)", "multiplies saved [x]")
    ax2 = ax.twinx()
    ax2.semilogy(xs, [winograd_error(m, r, trials=60) for m, r in pairs], "o", color=PALETTE[5],
                 label="float32 error / largest output")
    ax2.set_ylabel("relative float32 error (log scale)")
    ax.legend([bars, ax2.lines[0]], [bars.get_label(), ax2.lines[0].get_label()], loc="upper left", fontsize=8)
    return fig


def plot_conv_algorithms_c1(batch: int = 1000, *, title: str | None = None):
    """ECE408's C1 at ``batch``: GFLOPs of the direct convolution against Winograd F(2x2, 7x7) and
    an FFT on a 128 x 128 grid, each split into its parts (napkin math, not measured)."""
    from ..analysis.conv_algorithms import fft_layer_flops, winograd_layer_flops

    s = seed_layers()["LeNet C1"]
    ho, wo = s["H"] - s["K"] + 1, s["W"] - s["K"] + 1
    wino = winograd_layer_flops(batch, s["C"], s["M"], ho, wo, s["K"], 2)
    fft = fft_layer_flops(batch, s["C"], s["M"], s["H"], s["W"], s["K"])
    algorithms = {"direct / GEMM": {"multiply-adds": wino["direct"]},
                  f"Winograd F(2x2, {s['K']}x{s['K']})": wino["parts"],
                  f"FFT, {fft['n']}x{fft['n']} grid": fft["parts"]}
    fig, ax = new_figure(title or f"LeNet C1 at batch {batch:,}: the work of each algorithm (napkin math)", figsize=(9, 4))
    parts = list(dict.fromkeys(p for a in algorithms.values() for p in a))
    left = np.zeros(len(algorithms))
    for i, part in enumerate(parts):
        vals = np.array([a.get(part, 0) / 1e9 for a in algorithms.values()])
        ax.barh(np.arange(len(algorithms)), vals, left=left, color=PALETTE[i % len(PALETTE)], label=part)
        left += vals
    for y, total in enumerate(left):
        ax.text(total, y, f" {total:.2f} GFLOP", va="center", fontsize=8)
    ax.set_yticks(np.arange(len(algorithms)), list(algorithms))
    ax.set_xlim(0, left.max() * 1.25)
    ax.legend(fontsize=7, loc="lower right")
    label(ax, "work [GFLOP]", "algorithm")
    return fig


def plot_storage_floors(batch: int = 1000, measured_ms: dict | None = None, *, title: str | None = None):
    """ECE408's C1 at ``batch``: the memory floor (3.35 TB/s) and the FP32 compute floor (66.9 TFLOP/s)
    with FP32 and with FP16/BF16 storage (FP32 arithmetic), below recorded times (``measured_ms``:
    name -> ms, e.g. v6 from the chapter 6-8 probe, v6 and v6h from ``conv_gpu.py --storage``), one
    bar each (bars, not lines: several times within a few µs stay readable)."""
    from ..analysis.conv_algorithms import storage_floors

    s = seed_layers()["LeNet C1"]
    floors = {f"{name} storage": storage_floors(batch, s["C"], s["H"], s["W"], s["M"], s["K"], itemsize=size)
              for name, size in (("FP32", 4), ("FP16/BF16", 2))}
    measured = measured_ms or {}
    fig, ax = new_figure(title or f"LeNet C1 at batch {batch:,}: memory and compute floors on the H100",
                         figsize=(9, 3.0 + 0.35 * len(measured)))
    ys = np.arange(len(floors))
    for i, (kind, colour) in enumerate((("memory_s", PALETTE[0]), ("compute_s", PALETTE[5]))):
        vals = [f[kind] * 1e6 for f in floors.values()]
        bars = ax.barh(ys + (i - 0.5) * 0.38, vals, 0.38, color=colour,
                       label="memory floor (bytes / 3.35 TB/s)" if i == 0 else "FP32 compute floor (FLOPs / 66.9 TFLOP/s)")
        ax.bar_label(bars, fmt="%.1f µs", fontsize=8)
    # the recorded times above the floors, so that the legend (lower right) covers none of them
    times_y = len(floors) + np.arange(len(measured)) * 0.5
    if measured:
        bars = ax.barh(times_y, [ms * 1e3 for ms in measured.values()], 0.38, color=PALETTE[7],
                       label="recorded time")
        ax.bar_label(bars, fmt="%.0f µs", fontsize=8)
    ax.set_yticks(np.concatenate([ys, times_y]), list(floors) + list(measured))
    longest_floor = max(f[k] * 1e6 for f in floors.values() for k in ("memory_s", "compute_s"))
    # room right of the floors for the legend: the recorded times' bars, or an empty margin
    ax.set_xlim(0, max([longest_floor * 1.7] + [ms * 1e3 * 1.12 for ms in measured.values()]))
    ax.legend(fontsize=7, loc="lower right")
    label(ax, "time [µs]", "storage / version")
    return fig
