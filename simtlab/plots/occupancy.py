"""Occupancy against block size: which resource stops an SM from holding more warps."""

from __future__ import annotations

import numpy as np

from simtlab.hardware import H100_SXM, KIB, LIMITS, DeviceProperties, occupancy
from simtlab.plots.style import PALETTE, label, new_figure

LIMIT_COLOURS = dict(zip(LIMITS, PALETTE))


def occupancy_curve(registers_per_thread=32, shared_per_block=0, props: DeviceProperties = H100_SXM):
    """``Occupancy`` results for block sizes 32, 64, ..., the device's maximum."""
    sizes = range(props.warp_size, props.max_threads_per_block + 1, props.warp_size)
    return [occupancy(b, registers_per_thread, shared_per_block, props) for b in sizes]


def plot_occupancy(
    registers_per_thread: int = 32,
    shared_per_block: int = 0,
    props: DeviceProperties = H100_SXM,
    highlight_block_size: int | None = None,
):
    """Achieved occupancy for every block size from 32 to 1024, coloured by the binding limit.

    Thin lines show what each resource alone would allow, so one can see which limit
    would bind next if the binding one were relaxed. ``shared_per_block`` is in bytes.
    """
    results = occupancy_curve(registers_per_thread, shared_per_block, props)
    sizes = np.array([r.block_size for r in results])
    achieved = np.array([r.occupancy for r in results]) * 100

    shared = f"{shared_per_block / KIB:g} KiB" if shared_per_block else "no"
    fig, ax = new_figure(
        f"Occupancy on {props.name}: {registers_per_thread} registers/thread, {shared} shared memory/block"
    )

    # What each resource alone allows, as a percentage of the SM's warps.
    for name in LIMITS:
        alone = [
            min(r.limits[name] * r.warps_per_block, props.max_warps_per_sm) / props.max_warps_per_sm * 100
            for r in results
        ]
        ax.plot(sizes, alone, color=LIMIT_COLOURS[name], lw=1, alpha=0.45, ls=":")

    ax.plot(sizes, achieved, color="0.3", lw=1.5, zorder=2)
    for name in LIMITS:
        mask = np.array([r.limiting == name for r in results])
        if mask.any():
            ax.scatter(sizes[mask], achieved[mask], color=LIMIT_COLOURS[name], s=28, zorder=3,
                       label=f"limited by {name}")

    if highlight_block_size is not None:
        chosen = occupancy(highlight_block_size, registers_per_thread, shared_per_block, props)
        ax.axvline(chosen.block_size, color="black", lw=1, ls="--")
        ax.plot([chosen.block_size], [chosen.occupancy * 100], "o", ms=11, mfc="none", mec="black", mew=2, zorder=4)
        ax.annotate(
            f"{chosen.block_size} threads: {chosen.blocks_per_sm} blocks/SM,\n"
            f"{chosen.warps_per_sm} of {props.max_warps_per_sm} warps = {chosen.occupancy:.0%} "
            f"({chosen.limiting})",
            (chosen.block_size, chosen.occupancy * 100),
            xytext=(-10 if chosen.block_size > 600 else 10, -40),
            ha="right" if chosen.block_size > 600 else "left",
            textcoords="offset points",
            fontsize="small",
            bbox={"boxstyle": "round", "fc": "white", "alpha": 0.85},
        )

    ax.set_xlim(0, props.max_threads_per_block + props.warp_size)
    ax.set_ylim(0, 105)
    ax.set_xticks(range(0, props.max_threads_per_block + 1, 128))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="lower right", title="dots: what binds; dotted: each limit alone",
              title_fontsize="small")
    label(ax, "threads per block", f"occupancy (% of {props.max_warps_per_sm} warps per SM)")
    return fig


__all__ = ["plot_occupancy", "occupancy_curve", "LIMIT_COLOURS"]
