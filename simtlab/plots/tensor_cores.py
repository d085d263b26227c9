"""Chapter 9's figures: the roofline with the tensor-core roofs, the versions against cuBLAS,
fragment layouts lane by lane, the cp.async ring from the trace, the stage count measured, and
the numerics of TF32 / FP16 / BF16, and TF32's case study at the board's power limit (joules per GEMM, rounds
against cuBLAS). Every function returns a matplotlib Figure; the data comes
from :mod:`simtlab.tensorcores`."""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch, Rectangle

from .. import tensorcores as TC
from ..kernels import tensor_cores as T
from .style import PALETTE, label, new_figure

__all__ = ["plot_roofline", "plot_versions", "plot_fragment_layouts", "plot_pipeline", "plot_stages",
           "plot_numerics", "plot_tf32_joules", "plot_tf32_rounds", "TF32_JOULES_BARS", "TF32_ROUNDS_SERIES",
           "LANE_COLOURS"]

PRECISION_COLOURS = {"fp32": "0.3", "tf32": PALETTE[0], "fp16": PALETTE[1], "bf16": PALETTE[2]}
#: 32 distinct colours, one per lane (lanes of one group of 4 in neighbouring shades)
LANE_COLOURS = ListedColormap(np.vstack([colormaps["tab20b"](np.linspace(0, 1, 20)),
                                         colormaps["tab20c"](np.linspace(0, 1, 20))[:12]]))


def _source(res: dict) -> str:
    return f"{res['source']} on {res['device']}, {res['date']}"


def plot_roofline(res: dict):
    """The H100's roofs (FP32 on the SIMT lanes, TF32 and FP16/BF16 on the tensor cores, HBM)
    with cuBLAS and the course's best kernel per precision at 4096^3, placed at the FLOPs per
    byte of the least DRAM traffic a product needs (each matrix once)."""
    m, n, k = res["shape"]
    fig, ax = new_figure(f"Roofline of the H100 SXM with its tensor-core roofs\n({_source(res)})", figsize=(9.0, 5.0))
    xs = np.logspace(0, 4, 200)
    for p, name in (("fp32", "FP32 SIMT"), ("tf32", "TF32 tensor"), ("fp16", "FP16/BF16 tensor")):
        peak = TC.PEAK_TFLOPS[p]
        ax.plot(xs, np.minimum(peak, TC.HBM_TBS * xs), color=PRECISION_COLOURS[p], lw=2,
                label=f"{name} roof {peak:.0f} TFLOP/s")
    cublas = TC.cublas_tflops(res)
    best = {p: res["best"][p]["tflops"] for p in T.PRECISIONS}
    for p in ("fp16", "bf16"):
        v7 = next((r for r in res["rows"] if r["name"] == f"v7 wgmma {p.upper()}"), None)
        if v7:
            best[p] = max(best[p], v7["tflops"])
    for p, tflops in cublas.items():
        nbytes = T.gemm_bytes(m, n, k, p) if p != "fp32" else 4 * (m * k + k * n + m * n)
        ai = T.gemm_flops(m, n, k) / nbytes
        ax.scatter([ai], [tflops], marker="s", s=60, color=PRECISION_COLOURS[p], edgecolor="black", zorder=3,
                   label=f"cuBLAS {p.upper()} {tflops:.0f}")
        if p in best:
            ax.scatter([ai], [best[p]], marker="o", s=60, color=PRECISION_COLOURS[p], zorder=3,
                       label=f"course's best {p.upper()} {best[p]:.0f}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(xs[0], xs[-1])
    ax.set_ylim(2, 2000)
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize="x-small", loc="lower right", ncol=2)
    label(ax, "arithmetic intensity (FLOPs per byte of DRAM traffic, each matrix once)", "performance (TFLOP/s)")
    return fig


def plot_versions(res: dict):
    """TFLOP/s of every version per precision, with its fraction of cuBLAS of the same precision
    (dashed lines: cuBLAS)."""
    rows = TC.version_table(res)
    cublas = TC.cublas_tflops(res)
    m, n, k = res["shape"]
    fig, ax = new_figure(f"Tensor-core GEMM {m}x{n}x{k} against cuBLAS\n({_source(res)})", figsize=(9.0, 6.0))
    height = 0.27
    y0 = np.arange(len(rows))[::-1]
    for j, p in enumerate(T.PRECISIONS):
        for y, row in zip(y0, rows):
            if row[p] is None:
                continue
            tflops, frac = row[p]
            yy = y + (1 - j) * height
            ax.barh(yy, tflops, height=height, color=PRECISION_COLOURS[p])
            ax.text(tflops, yy, f" {tflops:.0f} ({frac:.0%})", va="center", fontsize="x-small")
        ax.axvline(cublas[p], color=PRECISION_COLOURS[p], ls="--", lw=1)
    ax.set_yticks(y0, [r["version"] for r in rows], fontsize="small")
    ax.set_xlim(0, max(cublas.values()) * 1.12)
    ax.legend(handles=[Patch(color=PRECISION_COLOURS[p], label=f"{p.upper()} (cuBLAS {cublas[p]:.0f}, dashed)")
                       for p in T.PRECISIONS], fontsize="small", loc="upper right")
    label(ax, "TFLOP/s (2 M N K FLOPs / median time); in brackets: fraction of cuBLAS, same precision", "version")
    return fig


def _draw_layout(ax, layout: TC.FragmentLayout, lane: int | None = None):
    rows, cols = layout.rows, layout.cols
    ax.imshow(layout.lane, cmap=LANE_COLOURS, vmin=-0.5, vmax=31.5, aspect="equal")
    if lane is not None:                        # one lane's elements outlined
        for _, r, c in layout.elements_of(lane):
            ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.2))
    small = rows * cols > 128
    for r in range(rows):
        for c in range(cols):
            ax.text(c, r, f"{layout.lane[r, c]}\n{layout.operand}{layout.element[r, c]}", ha="center",
                    va="center", fontsize=5 if small else 6, color="white")
    ax.set_xticks(range(cols))
    ax.set_yticks(range(rows))
    ax.tick_params(labelsize=6)
    name = {"a": "A", "b": "B", "c": "C (= D)"}[layout.operand]
    label(ax, "column", "row", f"{name}: {rows} x {cols}")


def plot_fragment_layouts(layouts, lane: int | None = None):
    """Each element of the given operands (one :class:`~simtlab.tensorcores.FragmentLayout` or a
    list): the lane that holds it (colour, top number) and which of its fragment elements it is
    (a0, b1, c3...); ``lane``: that lane's elements outlined. The table can come from the PTX
    ISA's formulas or from a traced run."""
    layouts = [layouts] if isinstance(layouts, TC.FragmentLayout) else list(layouts)
    first = layouts[0]
    widths = [lay.cols for lay in layouts]
    title = f"mma.sync.{first.shape} {first.precision.upper()}: which lane holds which element"
    if lane is not None:
        title += f" (lane {lane} outlined)"
    fig, axes = new_figure(title, ncols=len(layouts), figsize=(3.2 + 0.45 * sum(widths), 5.2),
                           gridspec_kw={"width_ratios": widths})
    for ax, lay in zip(np.atleast_1d(axes), layouts):
        _draw_layout(ax, lay, lane)
    return fig


def plot_pipeline(events: list, stages: int, title: str = ""):
    """The ring slot by slot, event by event: a tile's copy in flight (light, from its issue to
    its landing), the tile resident (dark, until it is computed), the compute (black mark). The
    x axis is the order of one thread's events, not time."""
    fig, ax = new_figure(title or f"cp.async ring of {stages} stages: each slot, event by event", figsize=(9.0, 3.2))
    issued, landed = {}, {}
    tiles = sorted({tile for _, tile, _ in events})
    for x, (what, tile, slot) in enumerate(events):
        colour = PALETTE[tile % len(PALETTE)]
        if what == "issue":
            issued[tile] = x
        elif what == "land":
            landed[tile] = x
            ax.add_patch(Rectangle((issued[tile], slot - 0.35), x - issued[tile], 0.7, color=colour, alpha=0.3))
        else:
            ax.add_patch(Rectangle((landed[tile], slot - 0.35), x - landed[tile], 0.7, color=colour, alpha=0.8))
            ax.plot([x], [slot], marker="D", color="black", ms=6)
            ax.text(x, slot + 0.42, f"compute t{tile}", ha="center", va="bottom", fontsize="x-small")
        if what != "compute":
            ax.text(x, slot, f"t{tile}", ha="center", va="center", fontsize="x-small")
    ax.set_xlim(-0.5, len(events) + 0.5)
    ax.set_ylim(stages - 0.3, -0.7)
    ax.set_yticks(range(stages), [f"slot {s}" for s in range(stages)])
    ax.set_xticks(range(len(events)), [w[0].upper() for w, _, _ in events], fontsize="x-small")
    ax.legend(handles=[Patch(color="0.5", alpha=0.3, label="copy in flight (issued, not landed)"),
                       Patch(color="0.5", alpha=0.8, label="landed, waiting to be computed")],
              fontsize="x-small", loc="lower right")
    label(ax, f"event order of one thread (I issue, L land, C compute), {len(tiles)} tiles", "ring slot")
    return fig


def plot_stages(res: dict):
    """v6 FP16 (128x256x32 tile) with 2, 3 and 4 stages, against cuBLAS FP16."""
    figs = TC.stage_figures(res)
    cublas = TC.cublas_tflops(res)["fp16"]
    fig, ax = new_figure(f"v6 FP16 128x256x32: stages of the cp.async ring\n({_source(res)})", figsize=(7.0, 3.8))
    xs = list(figs)
    ax.bar([str(s) for s in xs], [figs[s] for s in xs], color=PRECISION_COLOURS["fp16"])
    for i, s in enumerate(xs):
        ax.text(i, figs[s], f"{figs[s]:.0f} ({figs[s] / cublas:.0%})", ha="center", va="bottom", fontsize="small")
    ax.axhline(cublas, color="0.3", ls="--", lw=1, label=f"cuBLAS FP16 {cublas:.0f}")
    ax.set_ylim(0, cublas * 1.15)
    ax.legend(fontsize="small", loc="lower right")
    label(ax, "stages (tiles in the shared ring)", "TFLOP/s")
    return fig


def plot_numerics(data: dict):
    """Median and largest error of C = A @ B against float64, relative to sum |a||b|, for the
    same float32 inputs rounded to each precision and multiplied with FP32 accumulation."""
    ks = data["k"]
    fig, ax = new_figure("The same product with inputs in FP32, TF32, FP16, BF16 (FP32 accumulate) against FP64",
                         figsize=(8.0, 4.5))
    for p, errs in data["errors"].items():
        med, worst = zip(*errs)
        colour = PRECISION_COLOURS[p]
        ax.plot(ks, med, "o-", color=colour, label=f"{p.upper()} median")
        ax.plot(ks, worst, "^:", color=colour, label=f"{p.upper()} largest")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize="x-small", ncol=4, loc="upper center")
    ax.set_ylim(1e-10, 1e-1)
    label(ax, "K (length of each dot product)", "|C - C_fp64| / (|A| |B|)  (relative error)")
    return fig


#: plot_tf32_joules' bars, top to bottom: (label, where in tensorcores.tf32_power_parts, row)
TF32_JOULES_BARS = (("cuBLAS TF32 on B\u1d40 (wgmma)", "rows", "cuBLAS TF32 on B^T"),
                    ("warps of nothing but mma.sync", "mma", "MMAs alone, random mantissas"),
                    ("the kernel's MMAs (no tiles, no ldmatrix)", "rows", "no tiles, no ldmatrix (MMAs)"),
                    ("+ ldmatrix (no tiles)", "rows", "no tiles (ldmatrix, MMAs)"),
                    ("+ the tiles from L2: the kernel", "rows", "the kernel"))


def plot_tf32_joules(parts: dict, goal: float = 0.70):
    """The board's energy for one 4096^3 TF32 GEMM at the 700 W limit (tensorcores.tf32_power_parts): cuBLAS, warps
    of nothing but MMAs, and the best kernel built up from its MMAs (TF32_JOULES_BARS); each bar the mean of its runs,
    the whisker their range. The dashed line is what ``goal`` of cuBLAS's rate allows at the same power: cuBLAS's
    joules over ``goal``."""
    fig, ax = new_figure(f"Where the joules go: TF32 GEMMs at the board's power limit\n({parts['device']}, "
                         f"{parts['date']}, {parts['command']})", figsize=(9.0, 4.2))
    ys = np.arange(len(TF32_JOULES_BARS))[::-1]
    for y, (name, group, row) in zip(ys, TF32_JOULES_BARS):
        r = parts[group][row]
        mj, rate = np.array(r["mj"]), 100 * np.array(r["vs_cublas"])
        colour = "0.55" if row.startswith("cuBLAS") else PALETTE[0]
        ax.barh(y, mj.mean(), height=0.6, color=colour)
        ax.errorbar(mj.mean(), y, xerr=[[mj.mean() - mj.min()], [mj.max() - mj.mean()]], color="black", capsize=3, lw=1)
        ax.text(mj.max() + 4, y, f"{' / '.join(f'{v:.0f}' for v in mj)} mJ ({' / '.join(f'{v:.1f}' for v in rate)} % of cuBLAS)",
                va="center", fontsize="x-small")
    budget = np.mean(parts["rows"]["cuBLAS TF32 on B^T"]["mj"]) / goal
    ax.axvline(budget, color=PALETTE[5], ls="--", lw=1.5,
               label=f"{goal:.0%} of cuBLAS's rate at the same power: {budget:.0f} mJ")
    ax.set_yticks(ys, [name for name, _, _ in TF32_JOULES_BARS], fontsize="small")
    ax.set_xlim(0, budget * 1.65)
    ax.legend(fontsize="small", loc="upper right")
    label(ax, "energy per 4096\u00b3 GEMM (mJ: the board's W x s; whisker: the runs' range)", "what runs")
    return fig


#: plot_tf32_tma_rounding's bars, top to bottom: (label on the plot, label in tensorcores.TMA_ROUNDING)
TF32_TMA_BARS = (("cuBLAS TF32 on B\u1d40 (rounds its inputs)", "cuBLAS TF32 on B^T"),
                 ("mma.sync, FP32 tensor maps (MMAs truncate)", "clusters of 2, FP32 maps"),
                 ("mma.sync, TF32 tensor maps (the TMA rounds)", "clusters of 2, TF32 maps"),
                 ("mma.sync, FP32 maps, inputs rounded in memory", "clusters of 2, FP32 maps, inputs rounded in memory"),
                 ("cuBLAS, inputs rounded in memory", "cuBLAS, inputs rounded in memory"))


def plot_tf32_tma_rounding(w: dict, goal: float = 0.70):
    """The board's energy for one 4096^3 TF32 GEMM at the 700 W limit (tensorcores.tf32_tma_rounding): the best
    mma.sync kernel (clusters of 2) with FP32 and with TF32 tensor maps, and on inputs rounded in memory, beside cuBLAS
    (TF32_TMA_BARS); each bar the median of the rounds, the whisker their range, the text each bar's median rate over
    cuBLAS's. The dashed line is what ``goal`` of cuBLAS's rate allows at the same power."""
    run = w["run"]
    fig, ax = new_figure(f"Same instructions, same bytes, fewer bits: TF32 tensor maps at the power limit\n"
                         f"({run['device']}, {run['date']}, {run['rounds']} rounds, {w['command']})", figsize=(9.0, 4.2))
    ys = np.arange(len(TF32_TMA_BARS))[::-1]
    budget = run["rows"]["cuBLAS TF32 on B^T"]["mj_median"] / goal
    text_x = max([budget] + [max(run["rows"][row]["mj"]) for _, row in TF32_TMA_BARS]) + 10   # one column, clear of all
    for y, (name, row) in zip(ys, TF32_TMA_BARS):
        r = run["rows"][row]
        mj = np.array(r["mj"])
        colour = "0.55" if row.startswith("cuBLAS") else PALETTE[0] if "FP32 maps" in row else PALETTE[2]
        ax.barh(y, r["mj_median"], height=0.6, color=colour)
        ax.errorbar(r["mj_median"], y, xerr=[[r["mj_median"] - mj.min()], [mj.max() - r["mj_median"]]], color="black",
                    capsize=3, lw=1)
        ax.text(text_x, y, f"{r['mj_median']:.0f} mJ: {100 * r['median']:.1f} % of cuBLAS's rate", va="center",
                fontsize="x-small")
    ax.axvline(budget, color=PALETTE[5], ls="--", lw=1.5,
               label=f"{goal:.0%} of cuBLAS's rate at the same power: {budget:.0f} mJ")
    ax.set_yticks(ys, [name for name, _ in TF32_TMA_BARS], fontsize="small")
    ax.set_xlim(0, budget * 1.75)
    ax.legend(fontsize="small", loc="upper right")
    label(ax, "energy per 4096\u00b3 GEMM (mJ; bar: median of the rounds, whisker: their range)", "what runs")
    return fig


#: plot_tf32_rounds' series: (label in tensorcores.POWER_ROUNDS, marker, filled)
TF32_ROUNDS_SERIES = (("clusters of 2, early release", "o", True), ("the same, snake", "o", False),
                      ("alone", "s", True), ("alone, snake", "s", False))


def plot_tf32_rounds(rounds: dict, goal: float = 0.70):
    """Each round of tensorcores.tf32_power_rounds: every kernel's rate over cuBLAS's of the same round, in percent,
    the rounds of each board side by side (a gap between boards), with the goal as a dashed line."""
    runs = rounds["runs"]
    fig, ax = new_figure(f"The best TF32 mma.sync kernels at 700 W, round by round against cuBLAS\n"
                         f"({runs[0]['device']}, {len(runs)} boards, {rounds['command']})", figsize=(9.0, 4.2))
    ticks, names, labelled = [], [], set()
    for b, run in enumerate(runs):
        xs = b * (run["rounds"] + 2) + np.arange(run["rounds"])
        ticks.append(xs.mean())
        names.append(f"board {b + 1} ({run['date']})\nrounds 1-{run['rounds']}")
        for name, marker, filled in TF32_ROUNDS_SERIES:
            if name not in run["rows"]:
                continue
            colour = PALETTE[0] if marker == "o" else PALETTE[1]
            ax.plot(xs, 100 * np.array(run["rows"][name]["vs_cublas"]), marker=marker, ls="-" if filled else ":",
                    color=colour, markerfacecolor=colour if filled else "white", lw=1,
                    label=None if name in labelled else name)
            labelled.add(name)
    ax.axhline(100 * goal, color=PALETTE[5], ls="--", lw=1.5, label=f"the goal, {goal:.0%} of cuBLAS")
    values = [100 * v for run in runs for name, _, _ in TF32_ROUNDS_SERIES if name in run["rows"]
              for v in run["rows"][name]["vs_cublas"]]
    ax.set_ylim(min(values) - 1.3, max(max(values), 100 * goal) + 0.3)     # room for the legend below the points
    ax.set_xticks(ticks, names, fontsize="small")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="x-small", ncol=3, loc="lower center")
    label(ax, "rounds on each board (3 s of each kernel back to back, every other round reversed)",
          "rate / cuBLAS's of the round (%)")
    return fig
