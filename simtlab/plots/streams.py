"""Copies and kernels in streams, drawn as a timeline.

A stream is a queue: its operations run one after another, in the order they were issued.
Operations in different streams may overlap, each on its own engine: one copy engine per
direction and the SMs for kernels. ``stream_schedule`` lays the operations out under those two
rules (a model: it ignores launch gaps and bandwidth shared between engines), and
``plot_stream_timeline`` draws one stream against the same work cut into chunks over several.
"""

from __future__ import annotations

from simtlab.plots.style import PALETTE, label, new_figure

ENGINES = ("copy in (host to device)", "kernel (SMs)", "copy out (device to host)")


def stream_schedule(copy_in_ms: float, kernel_ms: float, copy_out_ms: float, chunks: int = 1,
                    streams: int = 1) -> list[dict]:
    """Start and end of every operation when the work is cut into ``chunks`` pieces issued
    round-robin over ``streams`` streams. Each chunk runs copy in, kernel, copy out in its
    stream's order; each engine runs one operation at a time, in issue order."""
    if chunks < 1 or streams < 1:
        raise ValueError(f"chunks and streams must be at least 1, got chunks={chunks}, streams={streams}")
    durations = (copy_in_ms / chunks, kernel_ms / chunks, copy_out_ms / chunks)
    engine_free = [0.0, 0.0, 0.0]
    stream_free = [0.0] * streams
    ops = []
    # the issue order of the host code: chunk by chunk, each chunk's three operations
    for c in range(chunks):
        s = c % streams
        for e, d in enumerate(durations):
            start = max(engine_free[e], stream_free[s])
            end = start + d
            engine_free[e] = stream_free[s] = end
            ops.append(dict(chunk=c, stream=s, engine=e, start=start, end=end))
    return ops


def makespan(ops) -> float:
    return max(op["end"] for op in ops)


def plot_stream_timeline(copy_in_ms: float, kernel_ms: float, copy_out_ms: float, chunks: int = 8,
                         streams: int = 4):
    """Two timelines of the same work: one stream (top) and ``chunks`` chunks over ``streams``
    streams (bottom); one row per engine, one bar per operation, coloured by chunk."""
    one = stream_schedule(copy_in_ms, kernel_ms, copy_out_ms, 1, 1)
    many = stream_schedule(copy_in_ms, kernel_ms, copy_out_ms, chunks, streams)
    t1, t2 = makespan(one), makespan(many)
    fig, axes = new_figure(f"Copy in, kernel, copy out: {t1:.1f} ms in one stream, {t2:.1f} ms in "
                           f"{chunks} chunks over {streams} streams (model)", nrows=2, figsize=(10.0, 4.6),
                           sharex=True)
    for ax, ops, name in [(axes[0], one, "one stream"), (axes[1], many, f"{chunks} chunks, {streams} streams")]:
        for op in ops:
            y = len(ENGINES) - 1 - op["engine"]
            ax.barh(y, op["end"] - op["start"], left=op["start"], height=0.6,
                    color=PALETTE[op["chunk"] % len(PALETTE)], edgecolor="white")
        ax.set_yticks(range(len(ENGINES)), ENGINES[::-1])
        label(ax, "time [ms]", "", name)
    return fig
