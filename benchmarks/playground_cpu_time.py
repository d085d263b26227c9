"""CPU time of the playground's cold updates, tab by tab: a comparison that a shared box's load
does not blur (wall time does: another process's work counts in it, not in this one's CPU time).

    python benchmarks/playground_cpu_time.py                       # this checkout
    cd /tmp && PYTHONPATH=/path/to/other/checkout python /path/to/benchmarks/playground_cpu_time.py

Same kernels and updates as ``playground_latency.py`` (16 blocks of 256 threads, then the block
set to 128 and to 512: emulation, analyses and the tab in view, nothing cached, no prefetch);
prints one JSON line: which simtlab ran and the median CPU milliseconds per kernel and tab.
Run two checkouts alternately (A, B, A, B) and compare them as ratios.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> int:
    import simtlab
    from playground_latency import BLOCKS, kernels
    from simtlab.playground import playground
    from simtlab.playground.tabs import TITLES

    cpu_ms = {}
    for name, (kernel, args) in kernels().items():
        for tab in range(len(TITLES) - 2):             # the GPU and compare tabs hold text only
            pg = playground(kernel, 16, 256, *[a.copy() for a in args], gpu=False)
            pg.tabs.selected_index = tab
            times = []
            for v in BLOCKS:
                t0 = time.process_time()
                pg.controls["block"].value = v
                times.append(time.process_time() - t0)
            cpu_ms[f"{name}/{TITLES[tab]}"] = round(statistics.median(times) * 1e3, 1)
    print(json.dumps({"simtlab": simtlab.__file__, "cpu_ms": cpu_ms}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
