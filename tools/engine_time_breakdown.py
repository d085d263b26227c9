"""Where the vector engine's traced launch spends its time, stage by stage.

    python tools/engine_time_breakdown.py [case ...]     (cases: reduction gemm64 conv shuffle)

For each case, in one process: the first traced launch with ``run.metrics`` (what the
benchmark times), then a second one timed stage by stage: the engine run, the memory columns
and the race check (inside ``emulate``: a racing kernel goes back to the greenlet engine), the
line columns, and each analysis behind ``run.metrics``. Last, for reference, the record arrays
``run.memory`` and ``run.lines`` (built only when a caller reads them; not in the benchmark).
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import simtlab  # noqa: E402
from emulator_vs_simulator import CASES, make_case  # noqa: E402
from simtlab.analysis import bank_conflicts, coalescing, divergence, races  # noqa: E402
from simtlab.emulator import tracing, vector  # noqa: E402


def timed(stages, label, module, name):
    """Wrap ``module.name`` so that each call adds its wall time to ``stages[label]``."""
    original = getattr(module, name)

    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            stages[label] = stages.get(label, 0.0) + time.perf_counter() - t0
    setattr(module, name, wrapper)
    return lambda: setattr(module, name, original)


def clock(stages, label, fn):
    t0 = time.perf_counter()
    out = fn()
    stages[label] = time.perf_counter() - t0
    return out


def breakdown(name):
    k, g, b, args, _, _ = make_case(name)
    t0 = time.perf_counter()
    simtlab.emulate(k, g, b, *args, engine="vector").metrics
    first = time.perf_counter() - t0

    stages = {}
    undo = [timed(stages, "engine", vector, "run"),
            timed(stages, "memory columns", tracing.Trace, "memory"),
            timed(stages, "race check", races, "find_races")]
    k, g, b, args, _, _ = make_case(name)
    try:
        t0 = time.perf_counter()
        run = simtlab.emulate(k, g, b, *args, engine="vector")
        mem = run.memory_columns                  # already built by the race check
        lines = clock(stages, "line columns", lambda: run.line_columns)
        clock(stages, "coalescing", lambda: coalescing.summary(mem))
        clock(stages, "bank conflicts", lambda: bank_conflicts.summary(mem))
        clock(stages, "divergence", lambda: divergence.simt_efficiency(lines))
        run.metrics
        total = time.perf_counter() - t0
    finally:
        for u in undo:
            u()
    clock(stages, "(run.memory records)", lambda: run.memory)
    clock(stages, "(run.lines records)", lambda: run.lines)
    print(f"{name}: {len(mem):,} memory rows, {len(lines):,} line rows; first launch "
          f"{first:.3f} s, second {total:.3f} s =", ", ".join(f"{k} {v * 1e3:.0f} ms"
                                                          for k, v in stages.items()))


if __name__ == "__main__":
    for case in sys.argv[1:] or list(CASES):
        breakdown(case)
