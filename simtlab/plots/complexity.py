"""Work and steps of tree algorithms against n (counted by the emulator), log-log."""

from __future__ import annotations

from .style import PALETTE, label, new_figure

__all__ = ["plot_work_steps"]


def plot_work_steps(rows: list[dict], *, title: str = "Work and steps against n (counted by the emulator)",
                    work_label: str = "work [combining writes]"):
    """``rows``: dicts with ``version``, ``n``, ``work``, ``steps``; two panels, one line per version."""
    if not rows:
        raise ValueError("plot_work_steps needs at least one row {version, n, work, steps}")
    for r in rows:
        missing = {"version", "n", "work", "steps"} - set(r)
        if missing:
            raise ValueError(f"row {r} lacks {sorted(missing)}")
    fig, (ax_work, ax_steps) = new_figure(title, ncols=2, figsize=(9.0, 3.8))
    versions = list(dict.fromkeys(r["version"] for r in rows))
    for k, v in enumerate(versions):
        pts = sorted((r["n"], r["work"], r["steps"]) for r in rows if r["version"] == v)
        ns = [p[0] for p in pts]
        ax_work.plot(ns, [p[1] for p in pts], marker="o", color=PALETTE[k % 8], label=v)
        ax_steps.plot(ns, [p[2] for p in pts], marker="o", color=PALETTE[k % 8], label=v)
    for ax in (ax_work, ax_steps):
        ax.set_xscale("log", base=2)
    ax_work.set_yscale("log", base=2)
    label(ax_work, "n [elements]", work_label, "work")
    label(ax_steps, "n [elements]", "steps [barrier epochs with work]", "steps")
    ax_work.legend(fontsize=8)
    return fig
