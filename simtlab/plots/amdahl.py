"""Amdahl's law: how much a program speeds up when only part of it runs in parallel."""

from __future__ import annotations

import numpy as np

from simtlab.plots.style import PALETTE, clear_content, label, new_figure

SPEEDUPS_SHOWN = (2, 10, 100, 1000)


def amdahl_speedup(parallel_fraction, parallel_speedup):
    """Overall speed-up ``1 / ((1 - p) + p / s)``; works on scalars and NumPy arrays.

    ``parallel_fraction`` (p) is the share of the original run time that can be sped up,
    ``parallel_speedup`` (s) how many times faster that share runs. The serial share
    ``1 - p`` is untouched, so the overall speed-up can never exceed ``1 / (1 - p)``.
    """
    p = np.asarray(parallel_fraction, dtype=float)
    s = np.asarray(parallel_speedup, dtype=float)
    if np.any(np.isnan(p)) or np.any((p < 0) | (p > 1)):
        raise ValueError(f"parallel_fraction must lie between 0 and 1 (a share of the run time), got {parallel_fraction!r}")
    if np.any(np.isnan(s)) or np.any(s <= 0):
        raise ValueError(f"parallel_speedup must be greater than 0 (times faster), got {parallel_speedup!r}")
    result = 1.0 / ((1.0 - p) + p / s)
    return float(result) if result.ndim == 0 else result


def amdahl_limit(parallel_fraction) -> float:
    """The speed-up with an infinitely fast parallel part: ``1 / (1 - p)`` (inf for p = 1)."""
    p = float(parallel_fraction)
    if not 0 <= p <= 1:
        raise ValueError(f"parallel_fraction must lie between 0 and 1, got {parallel_fraction!r}")
    return np.inf if p == 1 else 1.0 / (1.0 - p)


def plot_amdahl(parallel_fraction: float = 0.3, parallel_speedup: float = 100, *, figure=None):
    """Overall speed-up against the parallel fraction (left) and against the parallel part's speed-up (right).

    The chosen ``(parallel_fraction, parallel_speedup)`` is marked on both panels, with
    the ceiling ``1 / (1 - p)`` that no amount of parallel hardware can pass. ``figure``: a
    figure this function drew before, drawn again with the new values (the widget keeps one:
    its two log-scale axes, their ticks and grids took most of a redraw to make).
    """
    p, s = float(parallel_fraction), float(parallel_speedup)
    overall = amdahl_speedup(p, s)
    limit = amdahl_limit(p)

    title = f"Amdahl's law: {p:.0%} parallel, sped up {s:g}x, gives {overall:.3g}x overall"
    if figure is None:
        fig, (ax_p, ax_s) = new_figure(title, ncols=2, figsize=(11.0, 4.5))
    else:
        fig, (ax_p, ax_s) = figure, figure.axes
        fig.suptitle(title)
        for ax in (ax_p, ax_s):
            clear_content(ax)

    # Left: one curve per parallel speed-up; the serial part keeps every curve low until
    # p gets close to 1.
    fractions = np.linspace(0.0, 1.0, 401)
    speedups = sorted(set(SPEEDUPS_SHOWN) | {s})
    for i, sp in enumerate(speedups):
        chosen = sp == s
        ax_p.plot(
            fractions * 100,
            amdahl_speedup(fractions, sp),
            color=PALETTE[i % (len(PALETTE) - 1)],
            lw=2.5 if chosen else 1.3,
            label=f"parallel part {sp:g}x faster" + (" (chosen)" if chosen else ""),
        )
    ceiling = 1.0 / (1.0 - fractions[:-1])
    ax_p.plot(fractions[:-1] * 100, ceiling, "k--", lw=1, label="limit 1/(1-p): parallel part takes no time")
    ax_p.set_yscale("log")
    ax_p.set_ylim(min(0.9, overall * 0.8), max(speedups) * 1.5)
    ax_p.set_xlim(0, 100)
    ax_p.plot([p * 100], [overall], "o", color="black", ms=8, zorder=5)
    ax_p.annotate(
        f"{p:.0%} parallel, {s:g}x\n-> {overall:.3g}x overall",
        (p * 100, overall),
        # Keep the note inside the axes: to the left of points near p = 100 %.
        xytext=(-20, 30) if p > 0.6 else (12, 24),
        ha="right" if p > 0.6 else "left",
        textcoords="offset points",
        arrowprops={"arrowstyle": "->"},
    )
    ax_p.legend(fontsize="small", loc="upper left")
    label(ax_p, "parallel fraction p (% of the original run time)", "overall speed-up (x, log scale)",
          "Speed-up against the parallel fraction")
    ax_p.grid(True, which="both", alpha=0.3)

    # Right: for the chosen p, faster and faster parallel hardware; the curve flattens
    # onto the ceiling. A linear y axis shows how little is gained past the knee.
    parallel = np.logspace(np.log10(min(1.0, s / 2)), np.log10(max(1e4, s * 10)), 300)
    curve = amdahl_speedup(p, parallel)
    ax_s.plot(parallel, curve, color=PALETTE[0], lw=2, label=f"p = {p:.0%}")
    if np.isfinite(limit):
        ax_s.axhline(limit, color="black", ls="--", lw=1, label=f"limit 1/(1-p) = {limit:.3g}x")
    ax_s.plot([s], [overall], "o", color="black", ms=8, zorder=5)
    ax_s.annotate(f"{overall:.3g}x", (s, overall), xytext=(-10, -16), textcoords="offset points", ha="right")
    ax_s.set_xscale("log")
    ax_s.set_ylim(0, max(curve.max(), limit if np.isfinite(limit) else 0) * 1.15)
    ax_s.legend(fontsize="small", loc="upper left")
    label(ax_s, "speed-up of the parallel part (x, log scale)", "overall speed-up (x)",
          f"Speed-up against parallel hardware, p = {p:.0%}")
    ax_s.grid(True, which="both", alpha=0.3)
    return fig


__all__ = ["amdahl_speedup", "amdahl_limit", "plot_amdahl", "SPEEDUPS_SHOWN"]
