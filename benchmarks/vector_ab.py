"""The vector engine in two source trees, alternated in fresh processes (ratios in one run).

    git archive <commit> | tar -x -C /tmp/base      # the version to compare against
    python benchmarks/vector_ab.py /tmp/base . --cases gemm64,conv --repeats 5
    python benchmarks/vector_ab.py /tmp/base . --module emulator_kernel_mix --engine auto \
        --trace --cases collatz_steps,float_sum_atomic

Each process times the first ``emulate(..., trace=False, engine="vector")`` (``import simtlab``
not counted) and the median of 10 later launches, with the tree on ``PYTHONPATH``. The
processes alternate base, new, base, new... (on a shared box, load moves both alike); the
figures are the minimum over ``--repeats`` processes per tree. Kernels and inputs from
``--module``'s ``make_case`` (``emulator_vs_simulator.py`` by default); ``--engine`` and
``--trace`` as ``emulate`` takes them (the engine that ran is printed when it differs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r'''
import sys, time, json, statistics
sys.path.insert(0, "benchmarks")
import importlib, simtlab
name, module, engine, trace = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
make_case = importlib.import_module(module).make_case


def launch():
    kernel, grid, block, args, check, _ = make_case(name)
    t0 = time.perf_counter()
    run = simtlab.emulate(kernel, grid, block, *args, trace=trace, engine=engine)
    if trace:
        run.metrics
    return time.perf_counter() - t0, check, run.engine


first, check, ran = launch()
assert check(), "wrong result"
later = [launch()[0] for _ in range(10)]
print(json.dumps([first, statistics.median(later), ran]))
'''


def measure(tree: Path, case: str, module="emulator_vs_simulator", engine="vector",
            trace=False):
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, "-c", CHILD, case, module, engine, str(int(trace))],
                          cwd=tree, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{tree} {case}:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("base", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--cases", default="gemm64,conv,reduction,shuffle")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--module", default="emulator_vs_simulator")
    p.add_argument("--engine", default="vector")
    p.add_argument("--trace", action="store_true")
    a = p.parse_args(argv)
    print(f"load average {os.getloadavg()}")
    for case in a.cases.split(","):
        runs = {"base": [], "new": []}
        for _ in range(a.repeats):
            for side, tree in (("base", a.base), ("new", a.new)):
                runs[side].append(measure(tree.resolve(), case, a.module, a.engine, a.trace))
        (bf, bl), (nf, nl) = ([min(r[i] for r in runs[s]) for i in (0, 1)]
                              for s in ("base", "new"))
        engines = {s: runs[s][0][2] for s in runs}
        ran = "" if a.engine != "auto" else \
            f" [{engines['base']} -> {engines['new']}]"
        print(f"{case}: first call base {bf * 1e3:.2f} ms, new {nf * 1e3:.2f} ms "
              f"(x{bf / nf:.2f}); later calls base {bl * 1e3:.2f} ms, new {nl * 1e3:.2f} ms "
              f"(x{bl / nl:.2f}){ran}", flush=True)
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
