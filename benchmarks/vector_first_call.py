"""Where a first launch on the vector engine spends its time (trace=False), step by step.

    python benchmarks/vector_first_call.py [--processes 5] [--cases gemm64,conv,reduction,shuffle]
    python benchmarks/vector_first_call.py --paired 3 --cases gemm64,conv

Each process is fresh (``import simtlab`` not counted) and times, in order: reading the
kernel's source (``function_ast``), the static checks numba would apply, the vector engine's
subset check, parsing the kernel for the interpreter, then the first ``emulate`` (what those
steps leave: binding, the run itself) and the median of 10 later launches. The figures are
the minimum over ``--processes`` processes (this box is shared: the minimum is the least
disturbed run). Same kernels and inputs as ``emulator_vs_simulator.py``.

``--paired N``: numba's simulator and the vector engine's first call alternated N times in
the same minutes, and the ratio of their medians (on a shared box, load moves both).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

STEPS = ("source", "static_checks", "subset", "parse_for_interpreter", "first_emulate_rest",
         "first_total", "later_median")


def child(name):
    sys.path.insert(0, str(Path(__file__).parent))
    import numpy as np
    import simtlab
    from emulator_vs_simulator import make_case
    from simtlab.emulator import function_ast, static_checks
    from simtlab.emulator.vector import engine, subset
    kernel, grid, block, args, check, _ = make_case(name)
    func = kernel.py_func
    out = {}

    def step(key, fn):
        t0 = time.perf_counter()
        fn()
        out[key] = time.perf_counter() - t0
    step("source", lambda: function_ast.parse_function(func, shared=True))
    step("static_checks", lambda: static_checks.check_source(func, kernel=True))
    step("subset", lambda: subset.why_not(func))
    step("parse_for_interpreter", lambda: engine._parsed(func, 0))
    step("first_emulate_rest", lambda: simtlab.emulate(kernel, grid, block, *args, trace=False,
                                                       engine="vector"))
    assert check()
    out["first_total"] = sum(out.values())
    later = []
    for _ in range(10):
        kernel, grid, block, args, check, _ = make_case(name)
        t0 = time.perf_counter()
        simtlab.emulate(kernel, grid, block, *args, trace=False, engine="vector")
        later.append(time.perf_counter() - t0)
    out["later_median"] = float(np.median(later))
    print(json.dumps(out))


def paired(cases, times):
    import statistics
    sys.path.insert(0, str(Path(__file__).parent))
    from emulator_vs_simulator import measure
    for name in cases:
        sims, vecs = [], []
        for _ in range(times):
            sims.append(measure("simulator", name)["first_s"])
            vecs.append(measure("vector", name, False, 0)["first_s"])
        ratio = statistics.median(sims) / statistics.median(vecs)
        print(f"{name}: simulator {[round(x, 2) for x in sims]} s, vector first call "
              f"{[round(x * 1e3, 1) for x in vecs]} ms, ratio of the medians {ratio:.0f}x")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--processes", type=int, default=5)
    p.add_argument("--cases", default="gemm64,conv,reduction,shuffle")
    p.add_argument("--paired", type=int, default=0)
    p.add_argument("--child")
    a = p.parse_args(argv)
    if a.child:
        return child(a.child)
    if a.paired:
        return paired(a.cases.split(","), a.paired)
    print("| kernel | " + " | ".join(STEPS) + " |")
    print("|---" * (len(STEPS) + 1) + "|")
    for name in a.cases.split(","):
        best = {}
        for _ in range(a.processes):
            done = subprocess.run([sys.executable, __file__, "--child", name],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(done.stderr[-2000:])
            for key, value in json.loads(done.stdout.strip().splitlines()[-1]).items():
                best[key] = min(best.get(key, value), value)
        print(f"| {name} | " + " | ".join(f"{best[k] * 1e3:.2f} ms" for k in STEPS) + " |")


if __name__ == "__main__":
    main()
