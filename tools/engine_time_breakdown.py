"""Where the vector engine's traced launch spends its time, stage by stage.

    python tools/engine_time_breakdown.py [case ...]     (cases: reduction gemm64 conv shuffle)

For each case, in one fresh process, the first traced launch with ``run.metrics`` (what the
benchmark times) and a second one, each timed stage by stage: the engine run, the race check
(inside ``emulate``: a racing kernel goes back to the greenlet engine) and each analysis behind
``run.metrics`` (the trace's fields are derived when first read, so a stage pays for the fields
it is the first to read: ``seq`` by the coalescing count, for example), and the page faults of
the launch. Last, for reference, the record arrays ``run.memory`` and
``run.lines`` (built only when a caller reads them; not in the benchmark).
"""
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import simtlab  # noqa: E402
from emulator_vs_simulator import CASES, make_case  # noqa: E402
from simtlab.analysis import bank_conflicts, coalescing, divergence, races  # noqa: E402
from simtlab.emulator import vector  # noqa: E402


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


def staged_launch(name):
    """One traced launch with ``run.metrics``, timed stage by stage; also counts the page
    faults (fresh memory the process takes from the kernel) of the whole launch."""
    stages = {}
    undo = [timed(stages, "engine", vector, "run"),
            timed(stages, "race check", races, "find_races")]
    k, g, b, args, _, _ = make_case(name)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    try:
        t0 = time.perf_counter()
        run = simtlab.emulate(k, g, b, *args, engine="vector")
        mem = run.memory_columns                  # already built by the race check
        lines = run.line_columns                  # its fields are derived when first read
        clock(stages, "coalescing", lambda: coalescing.summary(mem))
        clock(stages, "bank conflicts", lambda: bank_conflicts.summary(mem))
        clock(stages, "divergence", lambda: divergence.simt_efficiency(lines))
        run.metrics
        stages["total"] = time.perf_counter() - t0
    finally:
        for u in undo:
            u()
    stages["page faults"] = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    return run, stages


def breakdown(name):
    _, first = staged_launch(name)
    run, second = staged_launch(name)
    records = {}
    clock(records, "memory", lambda: run.memory)
    clock(records, "lines", lambda: run.lines)
    print(f"{name}: {len(run.memory):,} memory rows, {len(run.lines):,} line rows")
    for label in first:
        print(f"  {label:16s} first {_fmt(label, first[label])}, second "
              f"{_fmt(label, second[label])}")
    print(f"  (not in the benchmark: run.memory and run.lines as record arrays, "
          f"{records['memory'] * 1e3:.0f} + {records['lines'] * 1e3:.0f} ms)")


def _fmt(label, value):
    return f"{value:8d}" if label == "page faults" else f"{value * 1e3:6.0f} ms"


if __name__ == "__main__":
    for case in sys.argv[1:] or list(CASES):
        breakdown(case)
