"""The vector engine in two source trees, alternated in fresh processes (ratios in one run).

    git archive <commit> | tar -x -C /tmp/base      # the version to compare against
    python benchmarks/vector_ab.py /tmp/base . --cases gemm64,conv --repeats 5

Each process times the first ``emulate(..., trace=False, engine="vector")`` (``import simtlab``
not counted) and the median of 10 later launches, with the tree on ``PYTHONPATH``. The
processes alternate base, new, base, new... (on a shared box, load moves both alike); the
figures are the minimum over ``--repeats`` processes per tree. Same kernels and inputs as
``emulator_vs_simulator.py``.
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
import simtlab
from emulator_vs_simulator import make_case
name = sys.argv[1]
kernel, grid, block, args, check, _ = make_case(name)
t0 = time.perf_counter()
simtlab.emulate(kernel, grid, block, *args, trace=False, engine="vector")
first = time.perf_counter() - t0
assert check(), "wrong result"
later = []
for _ in range(10):
    kernel, grid, block, args, check, _ = make_case(name)
    t0 = time.perf_counter()
    simtlab.emulate(kernel, grid, block, *args, trace=False, engine="vector")
    later.append(time.perf_counter() - t0)
print(json.dumps([first, statistics.median(later)]))
'''


def measure(tree: Path, case: str):
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, "-c", CHILD, case], cwd=tree, env=env,
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
    a = p.parse_args(argv)
    for case in a.cases.split(","):
        runs = {"base": [], "new": []}
        for _ in range(a.repeats):
            for side, tree in (("base", a.base), ("new", a.new)):
                runs[side].append(measure(tree.resolve(), case))
        (bf, bl), (nf, nl) = ([min(r[i] for r in runs[s]) for i in (0, 1)]
                              for s in ("base", "new"))
        print(f"{case}: first call base {bf * 1e3:.2f} ms, new {nf * 1e3:.2f} ms "
              f"(x{bf / nf:.2f}); later calls base {bl * 1e3:.2f} ms, new {nl * 1e3:.2f} ms "
              f"(x{bl / nl:.2f})")


if __name__ == "__main__":
    main()
