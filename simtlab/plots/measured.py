"""Figures and tables of the GPU probes recorded on an H100 (``tools/device_hardware_probes.sh``).

Each takes what ``backend.recorded(key)`` returns for its key in ``simtlab/data/h100_timings.json``
(``l2_warm_cold``, ``vecmat_grid``, ``ncu_profile``) and returns a Figure or a text table, so the
chapters show the measurements behind their explanations with one call:

    from simtlab.plots.measured import plot_l2_warm_cold, recorded_probe
    plot_l2_warm_cold(recorded_probe("l2_warm_cold"))
"""

from __future__ import annotations

import numpy as np

from .style import PALETTE, label, new_figure

__all__ = ["recorded_probe", "plot_l2_warm_cold", "plot_vecmat_grid", "profile_table", "L2_BYTES"]

#: the H100 SXM's L2 cache
L2_BYTES = 50 * 10**6


def recorded_probe(key: str) -> dict:
    """The probe recorded on the H100 under ``key`` (KeyError naming the known keys)."""
    from .. import backend

    return backend.recorded(key)


def _stamp(rec: dict) -> str:
    return f"recorded on {rec.get('device', 'an H100')}, {rec.get('date', '')}".rstrip(", ")


def plot_l2_warm_cold(rec: dict):
    """GB/s of a copy against n, timed L2-warm (batches: each run finds what the last one left
    in L2) and L2-cold (4x the L2 of junk written first); the dotted line is where input +
    output fill the 50 MB L2."""
    fig, ax = new_figure(f"Copy bandwidth, L2-warm vs L2-cold ({_stamp(rec)})", figsize=(8.5, 4.6))
    per = rec.get("bytes_per_element", 8)
    for i, (name, s) in enumerate(sorted(rec["series"].items())):
        order = np.argsort(s["sizes"])
        n = np.asarray(s["sizes"])[order]
        for style, key in (("o-", "warm_gbps"), ("s--", "cold_gbps")):
            ax.plot(n, np.asarray(s[key])[order], style, color=PALETTE[i], lw=1.6, ms=4,
                    label=f"{name}, L2-{key.split('_')[0]}")
    ax.axvline(L2_BYTES / per, color="0.4", ls=":", lw=1.2)
    ax.text(L2_BYTES / per * 1.1, ax.get_ylim()[1] * 0.05, "input + output = 50 MB (L2)", fontsize="small",
            color="0.3")
    ax.set_xscale("log", base=2)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="upper left")
    label(ax, "n (float32 elements copied, log scale)", "bandwidth (GB/s, read + write)")
    return fig


def plot_vecmat_grid(rec: dict):
    """Time of the grid-stride vector-matrix product relative to cuBLAS gemv against the number
    of blocks; dotted lines mark whole waves (resident blocks per SM x SMs)."""
    # the stamp on a line of its own: on one line the title was wider than the figure
    fig, ax = new_figure(f"vecmat v2 against cuBLAS gemv, by blocks in the grid\n({_stamp(rec)})",
                         figsize=(8.5, 4.6))
    blocks = np.asarray(rec["blocks_per_row"]) * rec["rows"]
    for i, (key, name) in enumerate((("cuda_c_ms", "CUDA C"), ("numba_ms", "numba"))):
        ax.plot(blocks, 100 * rec["gemv_ms"] / np.asarray(rec[key]), "o-", color=PALETTE[i], label=name)
    per_sm = rec.get("cuda_c_blocks_per_sm")
    if isinstance(per_sm, int):
        wave = per_sm * rec["sms"]
        for k in range(1, int(blocks.max() // wave) + 1):
            ax.axvline(k * wave, color="0.4", ls=":", lw=1.2)
        ax.text(wave * 1.01, 5, f"one wave = {per_sm} x {rec['sms']} = {wave} blocks", fontsize="small", color="0.3")
    ax.set_ylim(0, 105)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    label(ax, "blocks in the grid (blocks per row x rows)", "speed relative to cuBLAS gemv (%)")
    return fig


def profile_table(rec: dict, kernels=None) -> str:
    """Nsight Compute's counters for some kernels, as text: sectors per request, DRAM bytes,
    hit rates, bank conflicts. ``kernels``: substrings of the rows' names (None: every row)."""
    rows = [r for r in rec["rows"] if kernels is None or any(k in r["kernel"] for k in kernels)]
    if not rows:
        raise ValueError(f"no profiled kernel matches {kernels}; the rows are: "
                         + ", ".join(r["kernel"] for r in rec["rows"]))
    head = (f"{'kernel':<42} {'ms':>6} {'DRAM rd':>8} {'DRAM wr':>8} {'sect/ld':>7} {'sect/st':>7} "
            f"{'L1 hit':>6} {'bank confl.':>11} {'DRAM %':>6}")
    lines = [f"Nsight Compute, n = 2^{int(rec['n']).bit_length() - 1} floats ({_stamp(rec)}); DRAM in GB", head]
    for r in rows:
        ld = r["load_sectors"] / r["load_requests"] if r["load_requests"] else 0.0
        st = r["store_sectors"] / r["store_requests"] if r["store_requests"] else 0.0
        conflicts = r["shared_load_bank_conflicts"] + r["shared_store_bank_conflicts"]
        lines.append(f"{r['kernel'][:42]:<42} {r['time_ms']:6.3f} {r['dram_read_gb']:8.3f} {r['dram_write_gb']:8.3f} "
                     f"{ld:7.1f} {st:7.1f} {r['l1_hit_pct']:5.0f}% {conflicts:11,.0f} {r['dram_pct_of_peak']:5.0f}%")
    return "\n".join(lines)
