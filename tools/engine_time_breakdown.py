"""Where the vector engine's traced launch spends its time, warm (second launch in one process).

    python tools/engine_time_breakdown.py
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import simtlab  # noqa: E402
from simtlab.emulator import vector
from emulator_vs_simulator import make_case
for name in ("reduction", "gemm64", "conv", "shuffle"):
    k, g, b, args, check, _ = make_case(name)
    simtlab.emulate(k, g, b, *args, engine="vector").metrics      # warm-up
    k, g, b, args, check, _ = make_case(name)
    orig = vector.run
    t = {}
    def timed(launch):
        t0 = time.perf_counter(); tr = orig(launch); t["engine"] = time.perf_counter() - t0; return tr
    vector.run = timed
    t0 = time.perf_counter()
    run = simtlab.emulate(k, g, b, *args, engine="vector")
    t["emulate (engine + race check)"] = time.perf_counter() - t0
    vector.run = orig
    t0 = time.perf_counter(); run.lines; t["run.lines"] = time.perf_counter() - t0
    t0 = time.perf_counter(); run.metrics; t["run.metrics (analyses)"] = time.perf_counter() - t0
    print(name, len(run.memory), "memory rows,", len(run.lines), "line rows:",
          ", ".join(f"{k} {v:.3f} s" for k, v in t.items()))
