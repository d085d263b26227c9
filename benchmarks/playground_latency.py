"""How long the playground takes to update after a control change, for a 4096-thread kernel.

    python benchmarks/playground_latency.py [--repeat 3] [--out benchmarks/results/playground_latency.json]

Two kernels of 4096 threads (16 blocks of 256): a vector add (global memory only) and a
block sum through shared memory with barriers. For each, a playground is built (the first
run, not counted), then with each tab in view the ``block`` dropdown is set to settings not
seen before (cold: emulation, analyses and the tab in view are redone) and then to settings
seen before (cached: the stored run, the tab redrawn). Cold changes are made on ``repeat``
fresh playgrounds (a fresh playground has drawn nothing of the new settings; what a process
keeps, as a student's kernel process does, stays: the figures' layouts, the text cache). ``.value = v`` returns when the
observer has re-run and redrawn, as in the kernel when the front end sends a change. Third,
prefetched: what a student in JupyterLab gets, where the playground prefetches (after each run,
a thread emulates the launches one step away in the block and grid dropdowns and draws their
mapping tab); the block is set one step up once that thread is done.

The breakdown of one cold update is measured in the same run, stage by stage: the traced
emulation (``emulate``), the analyses (``run.metrics``), the tab's drawing; and the untraced
emulation (``trace=False``) as the reference for what tracing adds. The goal is 200 ms
(the playground's bar). This box may be shared: the load average at the start and end is recorded, and
chapter 1's mapping widget (one figure redrawn per change, the course's simplest widget) is
timed in the same run as a reference: ``ratio_to_reference`` is what a box's load cancels; and a
yardstick: one fixed figure drawn by plain matplotlib, which no playground change can speed up
(``ratio_to_yardstick``: the mapping plot that chapter 1 shares has changed).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
GOAL_MS = 200.0
BLOCKS = (128, 512)     # the block sizes the dropdown is set to, from 256: 2048 and 8192 threads around 4096


def kernels():
    from numba import cuda

    @cuda.jit
    def vector_add(a, b, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i] + b[i]

    @cuda.jit
    def block_sum(x, out):
        s = cuda.shared.array(1024, np.float32)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        s[t] = x[i] if i < x.size else 0
        cuda.syncthreads()
        stride = cuda.blockDim.x // 2
        while stride > 0:
            if t < stride:
                s[t] += s[t + stride]
            cuda.syncthreads()
            stride //= 2
        if t == 0:
            out[cuda.blockIdx.x] = s[0]

    n = 4096
    rng = np.random.default_rng(0)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    return {"vector_add": (vector_add, (a, b, np.zeros(n, np.float32))),
            "block_sum": (block_sum, (a, np.zeros(64, np.float32)))}


def _ms(seconds: float) -> float:
    return round(seconds * 1e3, 1)


def time_tab(kernel, args, tab: int, repeat: int) -> dict:
    from simtlab.playground import playground

    cold, cached = [], []
    for _ in range(repeat):                            # settings never seen: emulate + draw
        pg = playground(kernel, 16, 256, *[a.copy() for a in args], gpu=False)
        pg.tabs.selected_index = tab
        control = pg.controls["block"]
        for v in BLOCKS:
            t0 = time.perf_counter()
            control.value = v
            cold.append(time.perf_counter() - t0)
    for _ in range(repeat):                            # settings seen before: draw only
        for v in (256,) + BLOCKS:
            if control.value == v:
                continue
            t0 = time.perf_counter()
            control.value = v
            cached.append(time.perf_counter() - t0)
    prefetched = []
    for _ in range(repeat):
        pg = playground(kernel, 16, 256, *[a.copy() for a in args], gpu=False, prefetch=True)
        pg.tabs.selected_index = tab
        pg.wait_for_prefetch()
        t0 = time.perf_counter()
        pg.controls["block"].value = 512                 # one step up from 256
        prefetched.append(time.perf_counter() - t0)
        pg.wait_for_prefetch()
    return {"tab": pg.tabs.titles[tab],
            "prefetched_ms": {"median": _ms(statistics.median(prefetched)), "max": _ms(max(prefetched))},
            "cold_ms": {"median": _ms(statistics.median(cold)), "max": _ms(max(cold)), "n": len(cold)},
            "cached_ms": {"median": _ms(statistics.median(cached)), "max": _ms(max(cached)), "n": len(cached)}}


def breakdown(kernel, args, repeat: int) -> dict:
    """Stage by stage, one update with block=256 (median of ``repeat``)."""
    import simtlab
    from simtlab.playground import playground

    pg = playground(kernel, 16, 256, *[a.copy() for a in args], gpu=False)
    stages = {"emulate_untraced": [], "emulate_traced": [], "analyses": [], "draw_mapping_tab": []}
    for _ in range(repeat):
        fresh = [a.copy() for a in args]
        t0 = time.perf_counter()
        simtlab.emulate(kernel, 16, 256, *fresh, trace=False)
        stages["emulate_untraced"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        run = simtlab.emulate(kernel, 16, 256, *fresh)
        stages["emulate_traced"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        run.metrics
        stages["analyses"].append(time.perf_counter() - t0)
        pg.run = run
        t0 = time.perf_counter()
        pg._tabs[0].draw(pg)
        stages["draw_mapping_tab"].append(time.perf_counter() - t0)
    return {k: _ms(statistics.median(v)) for k, v in stages.items()}


def reference(repeat: int) -> float:
    """Median time of one change of chapter 1's mapping widget (block_x), figure not cached."""
    from simtlab.widgets import mapping_widget

    times = []
    for _ in range(repeat):
        w = mapping_widget()                       # a fresh widget: its drawings are not cached
        for v in (8, 2, 16):
            t0 = time.perf_counter()
            w.controls["block_x"].value = v
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def yardstick(repeat: int) -> float:
    """Median time to draw one fixed figure with plain matplotlib (no simtlab code): how fast
    this box draws today, unchanged by anything the playground does (chapter 1's widget, the
    other reference, uses the mapping plot that the playground shares)."""
    import io

    from matplotlib.figure import Figure

    times = []
    for _ in range(3 * repeat):
        t0 = time.perf_counter()
        fig = Figure(figsize=(8.0, 4.5), layout="constrained")
        ax = fig.subplots()
        fig.suptitle("yardstick: a 128 x 32 image, 16 ticks, labels")
        ax.imshow(np.arange(128 * 32).reshape(128, 32), aspect="auto")
        ax.set_xticks(range(0, 32, 4))
        ax.set_yticks(range(0, 128, 16))
        ax.set_xlabel("column")
        ax.set_ylabel("row")
        fig.savefig(io.BytesIO(), format="png", dpi=80)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(repeat: int = 3) -> dict:
    from simtlab.playground.tabs import TITLES

    load_start = os.getloadavg()
    ref_before = reference(repeat)
    yard_before = yardstick(repeat)
    rows, parts = [], {}
    for name, (kernel, args) in kernels().items():
        parts[name] = breakdown(kernel, args, repeat)
        for tab in range(len(TITLES) - 2):             # the GPU and compare tabs hold text only
            row = time_tab(kernel, args, tab, repeat)
            row["kernel"] = name
            rows.append(row)
            print(f"{name:11s} {row['tab']:15s} cold {row['cold_ms']['median']:7.1f} ms "
                  f"(max {row['cold_ms']['max']:.1f}), cached {row['cached_ms']['median']:7.1f} ms, "
                  f"prefetched {row['prefetched_ms']['median']:7.1f} ms", flush=True)
        print(f"{name}: one update, stage by stage (ms): {parts[name]}", flush=True)
    ref = statistics.median([ref_before, reference(repeat)])
    yard = statistics.median([yard_before, yardstick(repeat)])
    for row in rows:
        row["cold_ratio_to_reference"] = round(row["cold_ms"]["median"] / (ref * 1e3), 2)
        row["cold_ratio_to_yardstick"] = round(row["cold_ms"]["median"] / (yard * 1e3), 2)
    print(f"reference: chapter 1's mapping widget, one change: {ref * 1e3:.1f} ms", flush=True)
    print(f"yardstick: one fixed matplotlib figure: {yard * 1e3:.1f} ms", flush=True)
    return {
        "reference": "chapter 1 mapping_widget, one block_x change (median, ms)",
        "reference_ms": _ms(ref),
        "yardstick": "one fixed matplotlib figure drawn to PNG, no simtlab code (median, ms)",
        "yardstick_ms": _ms(yard),
        "date": datetime.date.today().isoformat(), "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
        "load_average_start": [round(x, 2) for x in load_start],
        "load_average_end": [round(x, 2) for x in os.getloadavg()],
        "goal_ms": GOAL_MS, "threads": 4096,
        "how": "    python benchmarks/playground_latency.py [--repeat 3] [--out benchmarks/results/playground_latency.json]",
        "rows": rows, "stages_ms": parts,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "playground_latency.json"))
    args = parser.parse_args(argv)
    result = run(args.repeat)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
