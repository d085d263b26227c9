"""Chapter 6's figures: what each GEMM version loads (from the emulator's trace), where it sits
on the H100's roofline, how fast it runs against cuBLAS, and what its registers cost in
occupancy. Every function returns a matplotlib Figure."""

from __future__ import annotations

import re

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from ..hardware import H100_SXM, DeviceProperties, occupancy
from .style import PALETTE, label, new_figure

#: FP32 lanes per SM on Hopper (4 partitions x 32): one FMA (2 FLOPs) each per clock
FP32_LANES_PER_SM = 128

__all__ = ["fp32_peak_tflops", "plot_tile_phases", "plot_profiles", "plot_roofline", "plot_versions",
           "plot_sweep", "plot_registers_occupancy", "roofline_points", "occupancy_points", "FP32_LANES_PER_SM",
           "register_cap_table", "plot_wave_efficiency", "plot_first_wave", "tuning_table", "v9_sweep_table", "plot_split_k",
           "WAVE_CONFIGS", "swizzle_table", "split_k_summary", "split_k_measured", "PendingMeasurement"]


def _label_of(row_name: str) -> str:
    return row_name.rsplit(" (", 1)[0]


def roofline_points(res: dict) -> dict:
    """From benchmark results: each version's fastest implementation, placed at the FLOPs per
    byte it loads from global memory (``kernels/gemm.py: loads_per_flop``, 4 bytes a load)."""
    from ..kernels import gemm as G

    n = res["n"]
    known = {v.label for v in G.VERSIONS}
    best: dict = {}
    for r in res["rows"]:
        label = _label_of(r["name"])
        if label in known and (label not in best or r["tflops"] > best[label]["tflops"]):
            best[label] = r
    source = "measured" if res.get("source") == "measured" else "recorded"
    return {f"{label} ({_impl_name(r['impl'])})": (1 / (4 * G.loads_per_flop(label, n, n, n)), r["tflops"], source)
            for label, r in best.items()}


def _impl_name(impl: str) -> str:
    return {"cuda-c": "CUDA C", "numba": "numba"}.get(impl, impl)


def occupancy_points(res: dict) -> dict:
    """From recorded results: label -> (registers, threads, shared bytes) of each kernel the
    compilers reported on (``resources``), scalar twins left out."""
    out = {}
    for name, r in (res.get("resources") or {}).items():
        if "scalar" in name or "1 block/SM" in name:
            continue
        impl = "numba" if name.endswith("(numba)") else "CUDA C"
        out[f"{r['version'].split()[0]} {impl}"] = (r["registers"], r["threads"], r["shared_bytes"])
    return out


def fp32_peak_tflops(props: DeviceProperties = H100_SXM) -> float:
    """SMs x FP32 lanes x 2 FLOPs x clock: 66.9 TFLOP/s for the H100 SXM at 1980 MHz."""
    return props.multiprocessors * FP32_LANES_PER_SM * 2 * props.clock_mhz * 1e6 / 1e12


#: tile maps up to this many elements a side number each element loaded more than once
MAX_NUMBERED_SIDE = 16


def plot_tile_phases(run, block: int = 0, thread: int | None = None):
    """A and B side by side for one block: each element coloured by the phase (step along K) in
    which the block loaded it, grey where it never did; a number where it was loaded more
    than once (when the map is small enough to read one per cell; the title always gives the
    loads per element); black dots on the elements ``thread`` (its index in the block) loaded itself.
    ``run`` comes from ``simtlab.analysis.gemm.trace_version``."""
    from ..analysis.gemm import loads_per_element, tile_map

    who = f"block {block}" + (f" (dots: thread {thread})" if thread is not None else "")
    fig, axes = new_figure(f"{run.kernel_name}: what {who} loads, phase by phase", ncols=2, figsize=(9.0, 4.5))
    phases_seen = 0
    images = {}
    for name in ("a", "b"):
        images[name] = tile_map(run, name, block)
        phases_seen = max(phases_seen, int(images[name].max()) + 1)
    colours = ListedColormap(["#DDDDDD"] + [PALETTE[i % len(PALETTE)] for i in range(max(phases_seen, 1))])
    for ax, name, title in zip(axes, ("a", "b"), ("A (M x K)", "B (K x N)")):
        img = images[name]
        ax.imshow(img + 1, cmap=colours, vmin=0, vmax=max(phases_seen, 1), interpolation="nearest")
        counts = loads_per_element(run, name, block)
        # a number in a cell only where the cells are wide enough to hold one: a 24 x 36 B of
        # naive GEMM drew "16" in 384 cells over each other; the title gives loads per element
        if max(img.shape) <= MAX_NUMBERED_SIDE:
            for r, c in zip(*np.nonzero(counts > 1)):
                ax.text(c, r, str(counts[r, c]), ha="center", va="center", fontsize=7, in_layout=False)
        if thread is not None:
            rr, cc = np.nonzero(loads_per_element(run, name, block, thread))
            ax.scatter(cc, rr, s=14, color="black", zorder=3, label=f"loaded by thread {thread}")
        loaded = int((counts > 0).sum())
        label(ax, "column (element)", "row (element)", f"{title}: {loaded} elements, {int(counts.sum())} loads"
              + (f"\n{counts.sum() / loaded:.3g} loads per element" if loaded and counts.max() > 1 else ""))
    handles = [Patch(color=colours(i + 1), label=f"phase {i}") for i in range(phases_seen)]
    if thread is not None:
        handles.append(axes[0].collections[-1])
    fig.legend(handles=handles, loc="outside lower center", ncols=min(phases_seen, 8), fontsize="small")
    return fig


def plot_profiles(profiles: dict):
    """Bars per version: reuse per loaded element, sectors per global request (A, B, C) and
    shared wavefronts per request, from ``simtlab.analysis.gemm.profile``."""
    names = list(profiles)
    fig, axes = new_figure("What each version asks of memory (emulator trace)", ncols=3, figsize=(11.0, 4.0))
    x = np.arange(len(names))
    reuse = [profiles[n]["reuse"] for n in names]
    axes[0].bar(x, reuse, color=PALETTE[0])
    axes[0].set_yscale("log", base=2)
    label(axes[0], "", "FMA operands per global load", "reuse per loaded element")
    for i, key in enumerate(("sectors_a", "sectors_b", "sectors_c")):
        axes[1].bar(x + (i - 1) * 0.27, [profiles[n][key] or 0 for n in names], 0.27, color=PALETTE[i + 1],
                    label=key[-1].upper())
    axes[1].legend(fontsize="small", title="matrix")
    label(axes[1], "", "32-byte sectors per warp request", "global coalescing (4 = ideal for 32 floats)")
    axes[2].bar(x, [profiles[n]["wavefronts_per_request"] or 0 for n in names], color=PALETTE[5])
    label(axes[2], "", "wavefronts per shared request", "bank conflicts (1 = none)")
    for ax in axes:
        ax.set_xticks(x, [n.split()[0] for n in names])
        ax.grid(True, axis="y", alpha=0.3)
    return fig


def plot_roofline(points: dict, props: DeviceProperties = H100_SXM, peak_tflops: float | None = None,
                  tensor_roofs: dict | None = None):
    """The roofline of ``props`` (FP32 peak and HBM bandwidth) with each version placed at its
    arithmetic intensity (FLOPs per byte it loads from global memory) and its TFLOP/s.

    ``points``: label -> (flops_per_byte, tflops, source) where source says 'measured' or
    'recorded on <device>'. ``tensor_roofs``: name -> TFLOP/s of more roofs under the same
    bandwidth (chapter 9's tensor cores: ``simtlab.tensorcores.PEAK_TFLOPS``), drawn dashed.
    """
    peak = peak_tflops or fp32_peak_tflops(props)
    bw = props.memory_bandwidth_gbs / 1e3                    # TB/s
    ridge = peak / bw
    fig, ax = new_figure(f"Roofline of the {props.name}: FP32 {peak:.0f} TFLOP/s, HBM {bw:.2f} TB/s")
    xs = np.logspace(-2, 4, 200)
    ax.plot(xs, np.minimum(peak, bw * xs), color="black", lw=2, label="roof: min(peak, bandwidth x intensity)")
    ax.axvline(ridge, color="0.5", ls=":", lw=1)
    ax.annotate(f"ridge point {ridge:.0f} FLOP/byte", (ridge, peak * 0.02), rotation=90, fontsize="small",
                ha="right", va="bottom")
    top = peak
    for j, (name, roof) in enumerate((tensor_roofs or {}).items()):
        ax.plot(xs, np.minimum(roof, bw * xs), color=PALETTE[(j + 5) % len(PALETTE)], lw=1.5, ls="--",
                label=f"{name} roof {roof:.0f} TFLOP/s (tensor cores)")
        top = max(top, roof)
    for i, (name, (ai, tflops, source)) in enumerate(points.items()):
        ax.scatter([ai], [tflops], s=50, color=PALETTE[i % len(PALETTE)], zorder=3, label=f"{name} ({source})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(xs[0], xs[-1])
    ax.set_ylim(0.05, top * 2)
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize="x-small", loc="lower right")
    label(ax, "arithmetic intensity (FLOPs per byte loaded from global memory)", "performance (TFLOP/s)")
    return fig


def _title_source(res: dict) -> str:
    if res.get("source") == "recorded":
        return f"recorded on {res.get('device')}, {res.get('date')}"
    return f"measured on {res.get('device')}"


def plot_versions(res: dict):
    """TFLOP/s of every version at n^3 next to cuBLAS, with the ratio on each bar."""
    rows = res["rows"]
    ref = next(r for r in rows if r["reference"])
    fig, ax = new_figure(f"SGEMM {res['n']}^3 FP32 against cuBLAS ({_title_source(res)})", figsize=(9.0, 5.0))
    names = [r["name"] for r in rows]
    colours = [PALETTE[0] if r["impl"] == "numba" else PALETTE[1] if r["impl"] == "cuda-c" else "0.3" for r in rows]
    y = np.arange(len(rows))[::-1]
    ax.barh(y, [r["tflops"] for r in rows], color=colours)
    for yi, r in zip(y, rows):
        ax.text(r["tflops"], yi, f" {r['tflops']:.1f} ({r['ratio']:.0%})", va="center", fontsize="small")
    ax.axvline(ref["tflops"], color="0.3", ls="--", lw=1)
    ax.set_yticks(y, names, fontsize="small")
    ax.set_xlim(0, max(r["tflops"] for r in rows) * 1.25)
    label(ax, "TFLOP/s (2 n^3 FLOPs / median time)", "")
    ax.legend(handles=[Patch(color=PALETTE[0], label="numba-cuda"), Patch(color=PALETTE[1], label="CUDA C"),
                       Patch(color="0.3", label="cuBLAS")], fontsize="small", loc="lower right")
    return fig


def plot_sweep(res: dict):
    """TFLOP/s against matrix size (odd sizes included) for the series the benchmark swept."""
    sweep = res.get("sweep")
    if not sweep:
        raise ValueError("these results have no size sweep: run benchmarks/gpu_gemm.py without --no-sweep")
    series = sweep.get("tflops")
    if series is None:          # benchmarks/gpu_bandwidth.py records GB/s of 12 n^2 bytes: 2 n^3 FLOPs in the same time
        series = {name: [g * 1e9 * (2 * s**3) / (12 * s**2) / 1e12 for g, s in zip(values, sweep["sizes"])]
                  for name, values in sweep["gbps"].items()}
    fig, ax = new_figure(f"SGEMM n x n x n: TFLOP/s against size ({_title_source(res)})")
    for i, (name, values) in enumerate(series.items()):
        ax.plot(sweep["sizes"], values, "o-", color=PALETTE[i % len(PALETTE)], label=name)
    ax.set_xticks(sweep["sizes"], [str(s) for s in sweep["sizes"]])
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    label(ax, "n (matrix side, elements)", "TFLOP/s")
    return fig


def plot_registers_occupancy(kernels: dict, props: DeviceProperties = H100_SXM):
    """Occupancy against registers per thread, one curve per block size the kernels use (with
    the most shared memory any of them asks), each kernel placed at its own registers and shared
    memory. ``kernels``: label -> (registers, threads per block, shared bytes per block)."""
    fig, ax = new_figure(f"Registers per thread against occupancy on the {props.name}")
    regs = np.arange(16, props.max_registers_per_thread + 1)
    colours = {}
    for i, threads in enumerate(sorted({t for _, t, _ in kernels.values()})):
        shared = max(s for _, t, s in kernels.values() if t == threads)
        occ = [occupancy(threads, int(r), shared, props).occupancy * 100 for r in regs]
        colours[threads] = PALETTE[i % len(PALETTE)]
        ax.plot(regs, occ, lw=1.5, color=colours[threads],
                label=f"blocks of {threads} threads ({shared / 1024:.1f} KiB shared)")
    crowded = []                 # kernels with few registers sit on one spot: one label for them
    for k, (name, (r, t, s)) in enumerate(sorted(kernels.items(), key=lambda kv: kv[1][0])):
        o = occupancy(t, int(r), s, props)
        ax.scatter([r], [o.occupancy * 100], color=colours[t], s=45, zorder=3, edgecolor="black")
        if r < 40:
            crowded.append((name, r, o.occupancy * 100))
            continue
        ax.annotate(f"{name} ({r})", (r, o.occupancy * 100), xytext=(6, 6 + 11 * (k % 3)), textcoords="offset points",
                    fontsize="x-small", arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "0.5"})
    if crowded:
        regs_seen = [r for _, r, _ in crowded]
        ax.annotate(f"{', '.join(sorted({n.split()[0] for n, _, _ in crowded}))}: {min(regs_seen)}-{max(regs_seen)} registers",
                    (crowded[0][1], crowded[0][2]), xytext=(10, -22), textcoords="offset points", fontsize="x-small")
    ax.set_ylim(0, 115)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="x-small", loc="upper right")
    label(ax, "registers per thread", f"occupancy (% of {props.max_warps_per_sm} warps per SM)")
    return fig




def register_cap_table(data: dict | None = None):
    """The register-cap ablation (v6 and v7 CUDA C at one and two blocks per SM) beside cuBLAS,
    recorded on an H100: a table Jupyter shows as HTML."""
    from ..gpubench.gemm import register_cap_ablation
    from .tables import RecordedTable

    t = register_cap_ablation(data)
    rows = [(r["kernel"], f"__launch_bounds__(256, {r['min_blocks']})",
             f"{r['regs']}" + (f" + {r['local_bytes']} B local" if r["local_bytes"] else ""),
             str(r["blocks_per_sm"]), f"{r['tflops']:.1f}", f"{100 * r['of_cublas']:.1f} %")
            for r in t["rows"]]
    c = t["cublas"]
    tile = re.search(r"tilesize(\w+?)_stage(\d+)", c["kernel"])
    name = f"cuBLAS SGEMM, {tile.group(1)} tiles, {tile.group(2)} stages" if tile else "cuBLAS SGEMM"
    rows.append((name, f"grid {c['grid']:.0f} blocks = {c['waves']:.2f} waves",
                 f"{c['registers']:.0f}", f"1 (occupancy {c['achieved_occupancy_pct']:.1f} %)",
                 f"{c['tflops']:.1f}", "100 %"))
    n = t["n"]
    title = f"{n}x{n}x{n} FP32 GEMM, {t['device']}, {t['date']}: one run"
    note = (f"registers per thread from the compiler (RawKernel.num_regs); blocks per SM from the occupancy "
            f"rules (registers and shared memory); cuBLAS per Nsight Compute: SM throughput {c['sm_pct']:.1f} %, "
            f"{c['issued_per_scheduler']:.2f} warp-instructions issued per scheduler per cycle. "
            "benchmarks/results/probe_ch6_8_h100.json, ncu_ch6_8_h100.txt")
    return RecordedTable(title, ("kernel", "build", "registers / thread", "blocks / SM", "TFLOP/s", "of cuBLAS"),
                         rows, note)


# ------------------------------------------------------------------------------------------
# Beyond one block: waves, block order, split-K, autotuning
# ------------------------------------------------------------------------------------------
#: the two grids the wave figure compares: the course's v7 tile and cuBLAS's 4096^3 kernel
WAVE_CONFIGS = {"v7: 128 x 128 tiles, 2 blocks/SM": ((128, 128), 2),
                "cuBLAS at 4096^3: 256 x 128 tiles, 1 block/SM": ((256, 128), 1)}


def plot_wave_efficiency(sizes=None, configs=None, sms: int | None = None, mark=(4096,)):
    """The wave model (``simtlab.analysis.waves``): the share of the block slots paid for that hold
    a block, for n x n GEMMs, one curve per (tile, blocks per SM) of ``configs``. A model: equal
    blocks, one wave after another; cuBLAS picks other tiles at other sizes."""
    from ..analysis.waves import H100_SMS, gemm_waves

    sms = sms or H100_SMS
    sizes = list(sizes if sizes is not None else range(128, 8192 + 1, 64))
    configs = configs or WAVE_CONFIGS
    fig, ax = new_figure(f"Wave quantisation on {sms} SMs (model: equal blocks, whole waves)")
    for i, (name, (tile, per_sm)) in enumerate(configs.items()):
        eff = [100 * gemm_waves(n, n, tile, per_sm, sms=sms).efficiency for n in sizes]
        ax.plot(sizes, eff, lw=1.5, color=PALETTE[i % len(PALETTE)], label=name)
        for n in mark:
            w = gemm_waves(n, n, tile, per_sm, sms=sms)
            ax.scatter([n], [100 * w.efficiency], color=PALETTE[i % len(PALETTE)], zorder=3, edgecolor="black")
            ax.annotate(f"{w.blocks} blocks = {w.waves:.2f} waves", (n, 100 * w.efficiency),
                        xytext=(8, -14 - 12 * i), textcoords="offset points", fontsize="x-small")
    ax.set_ylim(0, 105)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    label(ax, "n (M = N = K, elements)", "block slots used (% of the waves' slots)")
    return fig


def plot_first_wave(m: int, n: int, k: int, tile: tuple, resident: int, groups=(0, 8)):
    """The C grid of tiles, one panel per block order (``group`` 0: row-major, else gemm.cu's
    GROUP swizzle): the first ``resident`` blocks coloured by launch order, the strips of A and
    B they read marked on the edges, and in each title the distinct bytes of those strips
    (``simtlab.analysis.block_order.first_wave_footprint``)."""
    from ..analysis.block_order import first_wave_footprint

    bm, bn = tile
    gx, gy = -(-n // bn), -(-m // bm)
    fig, axes = new_figure(f"First wave of {resident} blocks on the {gy} x {gx} tiles of C ({m}x{n}x{k}, "
                           f"{bm} x {bn} tiles)", ncols=len(groups), figsize=(5.0 * len(groups), 4.6))
    for ax, g in zip(np.atleast_1d(axes), groups):
        f = first_wave_footprint(m, n, k, tile, resident, g)
        order = np.full((gy, gx), np.nan)
        order[f.tiles[:, 0], f.tiles[:, 1]] = np.arange(f.blocks)
        ax.imshow(np.ma.masked_invalid(order), cmap="viridis", interpolation="nearest", aspect="auto")
        ax.set_facecolor("#EEEEEE")
        ax.scatter(np.full(len(f.a_strips), -0.9), f.a_strips, marker=">", s=14, color="black", clip_on=False)
        ax.scatter(f.b_strips, np.full(len(f.b_strips), -0.9), marker="v", s=14, color="black", clip_on=False)
        ax.set_xlim(-1.2, gx - 0.5)
        ax.set_ylim(gy - 0.5, -1.2)
        name = "row-major" if g <= 0 else f"GROUP {g}"
        label(ax, "tile column (its B strip; tiles)", "tile row (its A strip; tiles)",
              f"{name}: {len(f.a_strips)} A + {len(f.b_strips)} B strips,\n"
              f"{f.distinct_bytes / 1e6:.0f} MB distinct of {f.requested_bytes / 1e6:.0f} MB read")
    return fig


def _tuning_rows(rows, cublas, kind):
    out = []
    for r in rows:
        if "tflops" not in r:
            out.append((kind, r["config"], "failed", "", "", r.get("error", "")[:60]))
            continue
        regs = f"{r['registers']}" + (f" + {r['local_bytes']} B local" if r.get("local_bytes") else "")
        out.append((kind, r["config"], regs, f"{r['tflops']:.1f}", f"{100 * r['tflops'] / cublas:.1f} %", ""))
    return out


def tuning_table(gemm_results: dict | None = None, v8_sweep: dict | None = None):
    """The recorded autotuning runs as one table: v7 (CUDA C) and numba's v5/v7 with other tile
    constants (``benchmarks/gpu_gemm.py --tune``, ``tuning_v7`` / ``tuning_numba``) and every v8
    configuration (``benchmarks/gemm_v8_sweep.py``); each row's share of cuBLAS is against the
    cuBLAS of its own run."""
    from .. import backend, gpubench
    from .tables import RecordedTable

    res = gemm_results or gpubench.recorded("gemm")
    sweep = v8_sweep or backend.recorded("gemm_v8_sweep")
    cublas = next(r for r in res["rows"] if r["reference"])["tflops"]
    rows = _tuning_rows(res.get("tuning_v7") or [], cublas, "v7 CUDA C")
    rows += _tuning_rows(res.get("tuning_numba") or [], cublas, "numba")
    for r in sweep["rows"]:
        if r["name"].startswith("gemm_v8_"):
            regs = f"{r['registers']}" + (f" + {r['local_bytes']} B local" if r.get("local_bytes") else "")
            rows.append(("v8 CUDA C", r["config"], regs, f"{r['tflops']:.1f}",
                         f"{100 * r['of_cublas']:.1f} %", r.get("reason", "")))
    title = (f"Autotuning at {res['n']}^3 FP32, {res['device']}: --tune run {res['date']} (cuBLAS {cublas:.1f} "
             f"TFLOP/s), v8 sweep {sweep['date']} (cuBLAS {sweep['cublas_tflops']:.1f})")
    note = ("registers per thread from the compiler; v7 configurations: BM,BN,BK,WM,WN,WNITER,TM,TN,GROUP /threads "
            "minBlocks; each share of cuBLAS against the cuBLAS of the same run. benchmarks/results/gpu_gemm_h100.json, "
            "gemm_v8_sweep_h100.json")
    best = {i for i, r in enumerate(rows) if r[3] and float(r[3]) == max(float(x[3]) for x in rows if x[0] == r[0] and x[3])}
    return RecordedTable(title, ("kernel", "configuration", "registers / thread", "TFLOP/s", "of cuBLAS",
                                 "why it was tried"), rows, note, bold=best)


def v9_sweep_table(final: dict | None = None, before: dict | None = None):
    """Every v9 configuration of the recorded sweep (``benchmarks/gemm_v8_sweep.py``, store entry
    ``gemm_v9_sweep``) beside the same configuration in the run before the next tile's fetch was
    made unconditional (``gemm_v9_sweep_conditional_fetch``), v7, v8's champion and cuBLAS of the
    same runs; each share of cuBLAS against the cuBLAS of its own run."""
    from .. import backend
    from .tables import RecordedTable

    final = final or backend.recorded("gemm_v9_sweep")
    before = before or backend.recorded("gemm_v9_sweep_conditional_fetch")
    earlier = {r["name"]: r for r in before["rows"] if "tflops" in r}

    def cell(r):
        return f"{r['tflops']:.1f} ({100 * r['of_cublas']:.1f} %)" if r and "tflops" in r else "not in that run"

    rows = []
    for r in final["rows"]:
        if "tflops" not in r or not (r["name"].startswith(("gemm_v9_", "gemm_v8_", "v7 warp tiling (CUDA C)"))):
            continue
        regs = f"{r['registers']}" + (f" + {r['local_bytes']} B local" if r.get("local_bytes") else "") if "registers" in r else ""
        rows.append((r["name"], r.get("config", ""), regs, cell(earlier.get(r["name"])), cell(r), r.get("reason", "")))
    best = {i for i, row in enumerate(rows) if row[0] == final["best"]["kernel"]}
    title = (f"v9 at {final['n']}^3 FP32, {final['device']}: the fetch under if (run {before['date']}, cuBLAS "
             f"{before['cublas_tflops']:.1f} TFLOP/s) and unconditional (cuBLAS {final['cublas_tflops']:.1f})")
    note = ("TFLOP/s (share of the cuBLAS of the same run); registers per thread from the driver, local = spilled bytes; "
            f"{final['file']}, {before['file']}")
    return RecordedTable(title, ("kernel", "configuration", "registers / thread", "fetch under if", "fetch unconditional",
                                 "why it was tried"), rows, note, bold=best)


def plot_split_k(result: dict):
    """Split-K measured (``benchmarks/gpu_gemm.py --split-k``): TFLOP/s against the number of
    slices of K, one panel per shape, with v7 (no split) and cuBLAS of the same run as lines and
    each point's blocks and waves (``simtlab.analysis.waves``)."""
    shapes = [tuple(s) for s in result["shapes"]]
    fig, axes = new_figure(f"Split-K against v7 and cuBLAS ({result['device']}, {result['date']})",
                           ncols=len(shapes), figsize=(5.2 * len(shapes), 4.4))
    for ax, (m, n, k) in zip(np.atleast_1d(axes), shapes):
        rows = [r for r in result["rows"] if (r["m"], r["n"], r["k"]) == (m, n, k)]
        split = sorted((r for r in rows if r["splits"]), key=lambda r: r["splits"])
        xs = [r["splits"] for r in split]
        ax.plot(xs, [r["tflops"] for r in split], "o-", color=PALETTE[1], label="split-K (v7 tile, atomicAdd)")
        for r in split:
            ax.annotate(f"{r['blocks']} blocks\n{r['waves']:.2f} waves", (r["splits"], r["tflops"]),
                        xytext=(4, 4), textcoords="offset points", fontsize="x-small")
        for r, colour, style in ((next(r for r in rows if r["impl"] == "library"), "0.3", "--"),
                                 (next(r for r in rows if r["impl"] == "cuda-c" and not r["splits"]), PALETTE[0], ":")):
            ax.axhline(r["tflops"], color=colour, ls=style, lw=1.2, label=f"{r['name']}: {r['tflops']:.1f}")
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.set_ylim(0, max(r["tflops"] for r in rows) * 1.25)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="x-small", loc="lower right")
        label(ax, "slices of K (gridDim.z)", "TFLOP/s (2 M N K / median time)", f"M = {m}, N = {n}, K = {k}")
    return fig


#: the two swizzle ablations recorded: v7 at one block per SM (``--tune``) and v8 256 x 128 (the v8 sweep)
V7_GROUP_CONFIG = "v7 128,128,16,64,32,2,8,4,{group} /256 min1"
V8_GROUP_KERNEL = "gemm_v8_256x128x8_w64x64_t16x8_s3_g{group}_b1"


def swizzle_table(gemm_results: dict | None = None, v8_sweep: dict | None = None, groups=(0, 8, 16)):
    """GROUP's ablation as recorded, beside the model: for v7 (128 x 128 tiles, one block per SM)
    and v8 (256 x 128), each block order's first wave (132 blocks) at 4096^3, the strips of A and
    B it reads and their distinct bytes (``first_wave_footprint``), and the TFLOP/s measured."""
    from .. import backend, gpubench
    from ..analysis.block_order import first_wave_footprint
    from ..analysis.waves import H100_SMS
    from .tables import RecordedTable

    res = gemm_results or gpubench.recorded("gemm")
    sweep = v8_sweep or backend.recorded("gemm_v8_sweep")
    cublas_tune = next(r for r in res["rows"] if r["reference"])["tflops"]
    tune = {r["config"]: r for r in res.get("tuning_v7") or [] if "tflops" in r}
    v8 = {r["name"]: r for r in sweep["rows"]}
    rows = []
    for name, tile, lookup, source in (
            ("v7 (1 block/SM)", (128, 128), lambda g: tune.get(V7_GROUP_CONFIG.format(group=g)), f"--tune {res['date']}"),
            ("v8 256x128x8, 3 stages", (256, 128), lambda g: v8.get(V8_GROUP_KERNEL.format(group=g)), f"v8 sweep {sweep['date']}")):
        for g in groups:
            r = lookup(g)
            if r is None:
                continue
            f = first_wave_footprint(res["n"], res["n"], res["n"], tile, H100_SMS, g)
            of = r["tflops"] / cublas_tune if "of_cublas" not in r else r["of_cublas"]
            rows.append((name, "row-major" if g == 0 else str(g), f"{len(f.a_strips)} + {len(f.b_strips)}",
                         f"{f.distinct_bytes / 1e6:.0f}", f"{r['tflops']:.1f}", f"{100 * of:.1f} %", source))
    n = res["n"]
    return RecordedTable(
        f"Block order at {n}^3 FP32: the first wave's footprint (model) and the speed ({res['device']}, one run each)",
        ("kernel", "GROUP", "A + B strips (first 132 blocks)", "distinct A + B (MB, model)", "TFLOP/s",
         "of cuBLAS", "run"), rows,
        "model: simtlab.analysis.block_order.first_wave_footprint (blocks start in linear id order, 132 at a time); "
        "measured: benchmarks/results/gpu_gemm_h100.json tuning_v7, gemm_v8_sweep_h100.json")


class PendingMeasurement:
    """What a chapter cell shows in place of a figure whose GPU run has not been recorded yet:
    the command that records it. tests/test_recorded_gemm_optim.py fails while it is pending."""

    def __init__(self, what: str, command: str):
        self.what, self.command = what, command

    def __str__(self) -> str:
        return f"{self.what}: not measured yet (pending: {self.command} on an H100, then python tools/store_gemm_optim.py)"

    __repr__ = __str__


def split_k_summary(result: dict) -> str:
    """What the split-K run measured, per shape, in sentences built from the result alone."""
    lines = [f"Measured on {result['device']}, {result['date']} (one run; split-K {result['registers']} registers "
             f"per thread, {result['local_bytes']} B local):"]
    for m, n, k in (tuple(s) for s in result["shapes"]):
        rows = [r for r in result["rows"] if (r["m"], r["n"], r["k"]) == (m, n, k)]
        cublas = next(r for r in rows if r["impl"] == "library")
        plain = next(r for r in rows if r["impl"] == "cuda-c" and not r["splits"])
        best = max((r for r in rows if r["splits"]), key=lambda r: r["tflops"])
        lines.append(f"- {m}x{n}x{k}: v7 without a split {plain['tflops']:.1f} TFLOP/s ({100 * plain['of_cublas']:.0f} % "
                     f"of cuBLAS's {cublas['tflops']:.1f}); the best split, x{best['splits']} ({best['blocks']} blocks, "
                     f"{best['waves']:.2f} waves), {best['tflops']:.1f} TFLOP/s, {best['tflops'] / plain['tflops']:.2f}x v7 "
                     f"and {100 * best['of_cublas']:.0f} % of cuBLAS.")
    return "\n".join(lines)


def split_k_measured():
    """The recorded split-K figure and its summary, or a :class:`PendingMeasurement` while
    ``results.gemm_splitk`` is missing from the store."""
    from .. import backend

    try:
        result = backend.recorded("gemm_splitk")
    except KeyError:
        return PendingMeasurement("Split-K on the H100", "bash tools/device_gemm_splitk.sh")
    print(split_k_summary(result))
    return plot_split_k(result)
