"""GPU bandwidth of each kernel version, against the library reference measured in the same run.

Both functions take what ``simtlab.gpubench.results(topic)`` returns: measured, recorded, or
nothing recorded yet (then the figure says so instead of failing).
"""

from __future__ import annotations

from .style import PALETTE, label, new_figure

__all__ = ["plot_bandwidth", "plot_sweep"]

IMPL_COLOURS = {"library": PALETTE[7], "cuda-c": PALETTE[0], "numba": PALETTE[1]}
MAX_SWEEP_LINES = 10
IMPL_LABELS = {"library": "library reference", "cuda-c": "CUDA C (CuPy RawModule)", "numba": "numba-cuda"}


def _where(res: dict) -> str:
    src = "measured here" if res.get("source") == "measured" else "recorded"
    return f"{res.get('device') or 'GPU'}, {src} {res.get('date') or ''}".strip()


def _nothing(res: dict, title: str):
    fig, ax = new_figure(title)
    ax.text(0.5, 0.5, res.get("message", "no timings"), ha="center", va="center", wrap=True)
    ax.set_axis_off()
    return fig


def _size(n: int) -> str:
    return f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else f"{n:,}"


def plot_bandwidth(res: dict, *, title: str | None = None):
    """Horizontal bars: GB/s of each version at the benchmark size, labelled with % of reference."""
    topic = res.get("topic", "kernel")
    if res.get("source") == "none":
        return _nothing(res, title or f"{topic}: no GPU timings yet")
    rows = res["rows"]
    height = 1.2 + 0.38 * len(rows)
    fig, ax = new_figure(title or f"{topic}: bandwidth at n = {_size(res['n'])} float32 ({_where(res)})",
                         figsize=(9.0, height))
    names = [r["name"] for r in rows][::-1]
    gbps = [r["gbps"] for r in rows][::-1]
    colours = [IMPL_COLOURS.get(r["impl"], PALETTE[2]) for r in rows][::-1]
    bars = ax.barh(names, gbps, color=colours)
    for bar, r in zip(bars, rows[::-1]):
        text = "reference" if r["reference"] else f"{r['ratio']:.0%}"
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {r['gbps']:.0f} GB/s ({text})",
                va="center", fontsize=9)
    ax.set_xlim(0, max(gbps) * 1.35)
    label(ax, "effective bandwidth [GB/s] (napkin-math bytes / median time)", "")
    handles = [ax.bar(0, 0, color=c, label=IMPL_LABELS[k]) for k, c in IMPL_COLOURS.items()
               if any(r["impl"] == k for r in rows)]
    # below the axes: over the bars it would hide the longest bar's label
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.45 / height * 4), ncols=3,
              fontsize=8, frameon=False)
    return fig


def plot_sweep(res: dict, *, title: str | None = None, names: list[str] | None = None):
    """GB/s against n for every version (log x): where each one reaches the memory's speed."""
    topic = res.get("topic", "kernel")
    if res.get("source") == "none" or "sweep" not in res:
        msg = res.get("message") or "This result has no size sweep (live runs skip it; the recorded file has it)."
        return _nothing({"message": msg}, title or f"{topic}: bandwidth against size")
    sweep = res["sweep"]
    impl = {r["name"]: r["impl"] for r in res["rows"]}
    ref = {r["name"] for r in res["rows"] if r["reference"]}
    note = ""
    if names is None and len(sweep["gbps"]) > MAX_SWEEP_LINES:
        # too many lines to read: the libraries and the CUDA C versions (numba's follow the same shape)
        names = [n for n in sweep["gbps"] if impl.get(n) in ("library", "cuda-c")]
        note = " (CUDA C versions)"
    fig, ax = new_figure(title or f"{topic}: bandwidth against size{note} ({_where(res)})", figsize=(10.0, 4.5))
    for k, (name, values) in enumerate(sweep["gbps"].items()):
        if names and name not in names and name not in ref:
            continue
        style = dict(color=PALETTE[7], lw=2.5) if name in ref else dict(color=PALETTE[k % 7], lw=1.3)
        ax.plot(sweep["sizes"], values, marker="o", ms=3,
                ls="-" if impl.get(name) != "numba" else "--", label=name, **style)
    ax.set_xscale("log", base=2)
    ax.axvspan(min(sweep["sizes"]), 50e6 / 4, color="0.92", zorder=0)
    ax.text(min(sweep["sizes"]), ax.get_ylim()[1] * 0.97, " fits in L2 (50 MB)", va="top", fontsize=8)
    label(ax, "n [float32 elements]", "effective bandwidth [GB/s]")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig
