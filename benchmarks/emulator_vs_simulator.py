"""Emulator vs numba's CUDA simulator, on the same kernels, in one run.

    python benchmarks/emulator_vs_simulator.py [--repeat 3] [--out benchmarks/results/emulator_vs_simulator.json]

Kernels: the shared-memory tree reduction over 2^14 floats (kernels/reduction.py) and the
64x64 tiled GEMM (kernels/gemm.py). numba's simulator reads NUMBA_ENABLE_CUDASIM when
numba.cuda is first imported, so it runs in a child process; both sides time only the launch
and check the result against NumPy. Goal: emulator >= 50x faster with tracing off, >= 20x
with full tracing (memory accesses and executed lines). A third column runs with
``checks=False`` too (plain NumPy arrays: no negative-index or uninitialised-read checks).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

CASES = {
    "tree reduction, 2^14 float32": "reduction",
    "tiled GEMM 64x64x64 float32": "gemm",
}


def make_case(name, seed=0):
    """Kernel, grid, block, args and a checker: the same for both sides."""
    from simtlab.kernels import gemm, reduction
    rng = np.random.default_rng(seed)
    if name == "reduction":
        n = 2**14
        x = rng.random(n, dtype=np.float32)
        partial = np.zeros(n // reduction.BLOCK, np.float32)

        def check():
            return np.allclose(partial.sum(), x.sum(dtype=np.float64), rtol=1e-4)
        return reduction.block_sum_tree, n // reduction.BLOCK, reduction.BLOCK, (x, partial), check
    a = rng.random((64, 64), dtype=np.float32)
    b = rng.random((64, 64), dtype=np.float32)
    c = np.zeros((64, 64), np.float32)

    def check():
        return np.allclose(c, gemm.gemm_cpu(a, b), rtol=1e-4, atol=1e-4)
    return gemm.gemm_tiled, (4, 4), (gemm.TILE, gemm.TILE), (a, b, c), check


def time_simulator(name):
    """Child process: launch with numba's simulator, print seconds as JSON."""
    kernel, grid, block, args, check = make_case(name)
    t0 = time.perf_counter()
    kernel[grid, block](*args)
    dt = time.perf_counter() - t0
    print(json.dumps({"seconds": dt, "correct": bool(check())}))


def run_simulator(name):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    out = subprocess.run([sys.executable, __file__, "--simulator-child", name], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def time_emulator(name, trace, repeat, checks=True):
    import simtlab
    times, ok = [], True
    for _ in range(repeat):
        kernel, grid, block, args, check = make_case(name)
        t0 = time.perf_counter()
        simtlab.emulate(kernel, grid, block, *args, trace=trace, checks=checks)
        times.append(time.perf_counter() - t0)
        ok = ok and bool(check())
    return {"seconds": float(np.median(times)), "all": times, "correct": ok}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" /
                                        "emulator_vs_simulator.json"))
    p.add_argument("--simulator-child")
    a = p.parse_args(argv)
    if a.simulator_child:
        return time_simulator(a.simulator_child)
    rows = []
    for label, name in CASES.items():
        print(f"{label}: numba simulator ...", flush=True)
        sim = run_simulator(name)
        print(f"  simulator {sim['seconds']:.2f} s; emulator ...", flush=True)
        off = time_emulator(name, False, a.repeat)
        full = time_emulator(name, True, a.repeat)
        fast = time_emulator(name, False, a.repeat, checks=False)
        rows.append({"case": label, "simulator_s": sim["seconds"],
                     "emulator_trace_off_s": off["seconds"], "emulator_full_trace_s": full["seconds"],
                     "emulator_checks_off_s": fast["seconds"],
                     "ratio_trace_off": sim["seconds"] / off["seconds"],
                     "ratio_full_trace": sim["seconds"] / full["seconds"],
                     "ratio_checks_off": sim["seconds"] / fast["seconds"],
                     "all_correct": all(r["correct"] for r in (sim, off, full, fast))})
    import numba
    result = {"date": time.strftime("%Y-%m-%d"), "python": platform.python_version(),
              "numba": numba.__version__, "cpu": platform.processor() or platform.machine(),
              "cores": os.cpu_count(), "goal": {"trace_off": 50, "full_trace": 20}, "rows": rows}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"\n{'case':30} {'simulator':>9} | {'trace off':>9} {'ratio':>5} | {'full trace':>10} "
          f"{'ratio':>5} | {'checks off':>10} {'ratio':>5}")
    for r in rows:
        print(f"{r['case']:30} {r['simulator_s']:8.2f}s | {r['emulator_trace_off_s']:8.3f}s "
              f"{r['ratio_trace_off']:4.0f}x | {r['emulator_full_trace_s']:9.3f}s "
              f"{r['ratio_full_trace']:4.0f}x | {r['emulator_checks_off_s']:9.3f}s "
              f"{r['ratio_checks_off']:4.0f}x  {'ok' if r['all_correct'] else 'WRONG'}")
    print(f"written to {a.out}")


if __name__ == "__main__":
    main()
