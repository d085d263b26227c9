"""The PTX engine's speed: thread-instructions per second for a reduction, a GEMM and a
convolution of the course, with and without the trace, and each one's time against the vector
engine running the numba twin of the same version (same inputs, same launch plan).

    .venv/bin/python benchmarks/ptx_engine_speed.py [--repeat 3] [--cases reduction,gemm,conv1,conv3]

Thread-instructions are counted by the engine itself (every executed PTX instruction times
its active lanes: the traced run's ``run.ptx_profile``, what the PTX source view shows); each
time is the best of ``--repeat`` runs, after one warm-up run (NVRTC, parsing and compiling the
PTX happen once and are not timed). "full trace" is the run with ``trace=True`` and its
``metrics`` read (coalescing, bank conflicts, SIMT efficiency, races).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from simtlab import cuda_c_kernels as CC
from simtlab import versions as V
from simtlab.kernels import conv as C
from simtlab.kernels import gemm as G
from simtlab.kernels import reduction as R


@dataclass
class Case:
    name: str
    topic: str
    version: object
    inputs: tuple


def cases(args):
    rng = np.random.default_rng(0)
    n = args.n
    x = rng.random(n, dtype=np.float32)
    g = args.gemm
    a, b = rng.random((g, g), dtype=np.float32), rng.random((g, g), dtype=np.float32)
    img = rng.random((args.batch, 3, 32, 32), dtype=np.float32)
    w = rng.random((8, 3, 5, 5), dtype=np.float32)
    return {
        "reduction": Case(f"reduction v3 sequential, n = {n:,}", "reduction",
                          V.find(R.VERSIONS, "v3 sequential"), (x,)),
        "gemm": Case(f"gemm v3 shared tiles, {g} x {g}", "gemm",
                     V.find(G.VERSIONS, "v3 shared tiles"), (a, b)),
        "conv1": Case(f"conv v1 direct, x {img.shape}, w {w.shape}", "conv",
                      V.find(C.VERSIONS, "v1 direct"), (img, w)),
        "conv3": Case(f"conv v3 implicit GEMM, x {img.shape}, w {w.shape}", "conv",
                      V.find(C.VERSIONS, "v3 implicit GEMM"), (img, w)),
    }


def run_cuda_c(case, trace):
    out, runs = CC.emulate_version(case.topic, case.version, *case.inputs, trace=trace)
    if trace:
        for r in runs:
            r.metrics
    return out, runs


def run_numba(case, trace):
    out, runs = V.emulate(case.topic, case.version, *case.inputs, trace=trace)
    if trace:
        for r in runs:
            r.metrics
    return out, runs


def best_of(repeat, fn) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def measure(case, repeat):
    out, runs = run_cuda_c(case, True)
    instructions = sum(int(r.ptx_profile.lanes.sum()) for r in runs)
    numba_out, numba_runs = run_numba(case, False)
    np.testing.assert_allclose(out, numba_out, rtol=1e-4, atol=1e-4)
    engine = numba_runs[0].engine
    untraced = best_of(repeat, lambda: run_cuda_c(case, False))
    traced = best_of(repeat, lambda: run_cuda_c(case, True))
    vector = best_of(repeat, lambda: run_numba(case, False))
    vector_traced = best_of(repeat, lambda: run_numba(case, True))
    print(f"{case.name}: {instructions:,} thread-instructions")
    print(f"  PTX engine, no trace:   {untraced:8.3f} s  {instructions / untraced / 1e6:8.1f} M thread-instructions/s")
    print(f"  PTX engine, full trace: {traced:8.3f} s  {instructions / traced / 1e6:8.1f} M thread-instructions/s"
          " (trace + metrics)")
    print(f"  numba twin on the {engine} engine, no trace:   {vector:8.3f} s  (PTX / vector = {untraced / vector:.2f})")
    print(f"  numba twin on the {engine} engine, full trace: {vector_traced:8.3f} s  "
          f"(PTX / vector = {traced / vector_traced:.2f})", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1 << 18, help="reduction: elements")
    ap.add_argument("--gemm", type=int, default=64, help="gemm: side of the square matrices")
    ap.add_argument("--batch", type=int, default=1, help="conv: images of 3 x 32 x 32")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cases", default="reduction,gemm,conv1,conv3")
    args = ap.parse_args()
    table = cases(args)
    with np.errstate(all="ignore"):
        for name in args.cases.split(","):
            measure(table[name], args.repeat)


if __name__ == "__main__":
    main()
