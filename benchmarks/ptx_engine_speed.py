"""The PTX engine's speed: thread-instructions per second for a reduction, with and without
the trace, and its time against the vector engine running the numba twin of the same kernel.

    .venv/bin/python benchmarks/ptx_engine_speed.py [--n 1048576] [--repeat 3]

Thread-instructions are counted by the engine itself (every executed PTX instruction times
its active lanes); each figure is the best of ``--repeat`` runs, after one warm-up run (NVRTC,
parsing and compiling the PTX happen once and are not timed).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import simtlab
from simtlab import cuda_c_kernels as CC
from simtlab.kernels import reduction as R
from simtlab.versions import emulate as emulate_numba, find


def count_thread_instructions(kernel, grid, block, *args) -> int:
    """Executed PTX instructions times active lanes, for one launch: the traced run's own
    per-instruction profile (``run.ptx_profile``, what the PTX source view shows)."""
    run = simtlab.emulate(kernel, grid, block, *args, trace=True)
    return int(run.ptx_profile.lanes.sum())


def best_of(repeat, fn) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--version", default="v3 sequential")
    args = ap.parse_args()
    version = find(R.VERSIONS, args.version)
    x = np.random.default_rng(0).random(args.n, dtype=np.float32)
    kernel = CC.course_kernel("reduction", version.cuda_c)
    grid = -(-args.n // R.BLOCK)
    partial = np.zeros(grid, np.float32)
    launch = (kernel, grid, R.BLOCK, x, partial, np.int64(args.n))
    instructions = count_thread_instructions(*launch)
    untraced = best_of(args.repeat, lambda: simtlab.emulate(*launch, trace=False))
    traced = best_of(args.repeat, lambda: simtlab.emulate(*launch, trace=True).metrics)
    numba_kernel = getattr(R, version.numba)
    numba_partial = np.zeros(grid, np.float32)
    vector = best_of(args.repeat, lambda: simtlab.emulate(numba_kernel, grid, R.BLOCK, x,
                                                          numba_partial, trace=False))
    vector_traced = best_of(args.repeat, lambda: simtlab.emulate(
        numba_kernel, grid, R.BLOCK, x, numba_partial, trace=True).metrics)
    assert np.allclose(partial, numba_partial, rtol=1e-5)
    engine = simtlab.emulate(numba_kernel, grid, R.BLOCK, x, numba_partial, trace=False).engine
    print(f"reduction {version.label}, n = {args.n:,}, {grid:,} blocks of {R.BLOCK}: "
          f"{instructions:,} thread-instructions")
    print(f"PTX engine, no trace:   {untraced:8.3f} s  {instructions / untraced / 1e6:8.1f} M thread-instructions/s")
    print(f"PTX engine, full trace: {traced:8.3f} s  {instructions / traced / 1e6:8.1f} M thread-instructions/s"
          " (trace + metrics)")
    print(f"numba twin on the {engine} engine, no trace:   {vector:8.3f} s  "
          f"(PTX / vector = {untraced / vector:.2f})")
    print(f"numba twin on the {engine} engine, full trace: {vector_traced:8.3f} s  "
          f"(PTX / vector = {traced / vector_traced:.2f})")


if __name__ == "__main__":
    main()
