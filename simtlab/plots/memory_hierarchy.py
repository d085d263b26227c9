"""The memory hierarchy of an H100: where data can live, how much fits, how long a load takes.

Sizes are the chip's (simtlab.hardware.H100_SXM, NVIDIA's H100 datasheet). Latencies were
measured on an H100 by ``benchmarks/probe_latency_streams_h100.py``: one thread follows a
chain of dependent loads, so each load waits for the one before; the working set picks the
level (results in ``benchmarks/results/latency_h100.txt``).
"""

from __future__ import annotations

from dataclasses import dataclass

from simtlab.hardware import H100_SXM, KIB, MIB
from simtlab.plots.style import PALETTE, label, new_figure


@dataclass(frozen=True)
class MemoryLevel:
    name: str
    scope: str            # who sees it
    capacity_bytes: int   # on the whole GPU
    capacity_text: str
    latency_ns: float | None   # one dependent load, measured; None where not measured
    latency_how: str


H100 = H100_SXM
SM = H100.multiprocessors

#: measured on the H100 (benchmarks/results/latency_h100.txt), ns per dependent access
#: (each includes one loop iteration's own instructions: the register row is that overhead at most)
H100_LATENCY_NS = {
    "register": 10.79,
    "shared": 21.26,
    "L1": 30.13,
    "constant": 41.55,
    "L2": 150.74,
    "HBM": 358.47,
}


def h100_levels(latency_ns: dict | None = None) -> list[MemoryLevel]:
    """The H100's levels, fastest first."""
    lat = {**H100_LATENCY_NS, **(latency_ns or {})}
    return [
        MemoryLevel("registers", "one thread", H100.registers_per_sm * 4 * SM,
                    f"{H100.registers_per_sm * 4 // KIB} KiB per SM (255 per thread at most)",
                    lat["register"], "a chain of dependent FMAs, loop included"),
        MemoryLevel("shared memory", "one block", H100.shared_memory_per_sm * SM,
                    f"up to {H100.shared_memory_per_sm // KIB} KiB per SM, carved from L1",
                    lat["shared"], "a chain of dependent loads in 16 KiB of shared memory"),
        MemoryLevel("L1 cache", "one SM", 256 * KIB * SM, "256 KiB per SM, shared with shared memory",
                    lat["L1"], "a chain through 16 KiB of global memory"),
        MemoryLevel("constant cache", "all threads, read-only", 64 * KIB,
                    "64 KiB of constants per kernel, cached in each SM",
                    lat["constant"], "a chain through a 4 KiB constant array"),
        MemoryLevel("L2 cache", "whole GPU", H100.l2_cache_bytes, f"{H100.l2_cache_bytes // MIB} MiB",
                    lat["L2"], "a chain through 8 MiB of global memory"),
        MemoryLevel("HBM (global, local)", "whole GPU; local memory: one thread", H100.memory_bytes,
                    f"{H100.memory_bytes / 2**30:.1f} GiB, {H100.memory_bandwidth_gbs / 1000:.2f} TB/s",
                    lat["HBM"], "a chain through 1 GiB of global memory (TLB misses included)"),
    ]


def plot_memory_hierarchy(levels: list[MemoryLevel] | None = None):
    """Capacity (left) and measured latency of one dependent load (right), one bar per level."""
    levels = levels or h100_levels()
    fig, (ax_c, ax_l) = new_figure("H100 memory hierarchy: capacity and latency of one load",
                                   ncols=2, figsize=(11.0, 4.2), sharey=True)
    names = [lv.name for lv in levels]
    ys = list(range(len(levels)))[::-1]
    colors = [PALETTE[i % len(PALETTE)] for i in range(len(levels))]
    ax_c.barh(ys, [lv.capacity_bytes / MIB for lv in levels], color=colors)
    ax_c.set_xscale("log")
    ax_c.set_yticks(ys, names)
    for y, lv in zip(ys, levels):
        ax_c.text(lv.capacity_bytes / MIB * 1.15, y, lv.capacity_text, va="center", fontsize=8)
    ax_c.set_xlim(0.01, 1e7)
    label(ax_c, "capacity on the whole GPU [MiB, log scale]", "", "how much fits")
    lat = [lv.latency_ns if lv.latency_ns is not None else 0.0 for lv in levels]
    ax_l.barh(ys, lat, color=colors)
    ax_l.set_xscale("log")
    for y, lv in zip(ys, levels):
        text = f"{lv.latency_ns:.0f} ns" if lv.latency_ns is not None else "not measured"
        ax_l.text((lv.latency_ns or 1.0) * 1.1, y, text, va="center", fontsize=8)
    ax_l.set_xlim(1, 3000)
    # "measured on an H100" in the title: in the axis label it ran past the figure's right edge
    label(ax_l, "latency of one dependent load [ns, log scale]", "", "how long a load waits (measured on an H100)")
    return fig
