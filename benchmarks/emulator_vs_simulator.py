"""Both emulator engines against numba's CUDA simulator, on the same kernels, in one run.

    python benchmarks/emulator_vs_simulator.py [--repeat 3] [--skip-simulator-growth]

Kernels: the shared-memory tree reduction over 2^14 floats (reduction.block_sum_tree), the
16x16-tiled GEMM 64x64x64 (gemm.gemm_tiled), a 2-D convolution (5x5 filter, one channel,
64x64 image, shared-memory patch: filter2d.conv2d_v2_shared) and the warp-shuffle reduction over
2^14 floats (reduction.reduce_v5_warp_shuffle). Then the tiled GEMM at 64, 128 and 256 on the
vector engine, to see how time grows with the FLOPs.

Every measurement runs in a fresh child process and times the *first* launch (binding, static
checks, instrumentation and, for numba's simulator, its own set-up all count; ``import`` does
not), then the median of ``--repeat`` more launches. numba's simulator reads
NUMBA_ENABLE_CUDASIM when numba.cuda is first imported, hence the child processes. "trace"
is the emulator's full trace (every access and executed line) and includes ``run.metrics``
(coalescing, bank conflicts, divergence, races); "no trace" is ``trace=False``.
Goals for the vector engine: >= 200x numba's simulator with the trace, >= 1000x
without it, first call included. Results: benchmarks/results/emulator_vs_simulator.{json,md}.
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
    "reduction": "tree reduction, 2^14 float32",
    "gemm64": "tiled GEMM 64x64x64 float32",
    "conv": "conv2d 5x5, 64x64, shared patch",
    "shuffle": "warp-shuffle reduction, 2^14 float32",
}
GROWTH = ["gemm64", "gemm128", "gemm256"]


def make_case(name, seed=0):
    """Kernel, grid, block, args, a checker and the FLOPs: the same for every side."""
    from simtlab.kernels import filter2d, gemm, reduction
    rng = np.random.default_rng(seed)
    if name in ("reduction", "shuffle"):
        n = 2**14
        x = rng.random(n, dtype=np.float32)
        if name == "reduction":
            kernel, per_block = reduction.block_sum_tree, reduction.BLOCK
        else:
            kernel, per_block = reduction.reduce_v5_warp_shuffle, 2 * reduction.BLOCK
        partial = np.zeros(n // per_block, np.float32)

        def check():
            return bool(np.allclose(partial.sum(), x.sum(dtype=np.float64), rtol=1e-4))
        return kernel, n // per_block, reduction.BLOCK, (x, partial), check, n
    if name == "conv":
        image = rng.random((64, 64), dtype=np.float32)
        filt = rng.random((filter2d.K, filter2d.K), dtype=np.float32)
        out = np.zeros((60, 60), np.float32)

        def check():
            return bool(np.allclose(out, filter2d.conv2d_cpu(image, filt), rtol=1e-4, atol=1e-4))
        return (filter2d.conv2d_v2_shared, (4, 4), (filter2d.TILE, filter2d.TILE), (image, filt, out),
                check, filter2d.conv2d_flops((64, 64)))
    size = int(name[4:])
    a = rng.random((size, size), dtype=np.float32)
    b = rng.random((size, size), dtype=np.float32)
    c = np.zeros((size, size), np.float32)

    def check():
        return bool(np.allclose(c, gemm.gemm_cpu(a, b), rtol=1e-4, atol=1e-4))
    grid = size // gemm.TILE
    return (gemm.gemm_tiled, (grid, grid), (gemm.TILE, gemm.TILE), (a, b, c), check,
            gemm.gemm_flops(size, size, size))


def child(side, name, trace, repeat, make=make_case, simulator_repeat=0):
    """In a fresh process: time the first launch, then ``repeat`` more; print JSON. ``make``:
    the case builder (another benchmark passes its own); numba's simulator launches
    ``simulator_repeat`` more times after the first (0: its first launch only)."""
    if side == "simulator":
        times, ok = [], True
        for _ in range(1 + simulator_repeat):
            kernel, grid, block, args, check, _ = make(name)
            t0 = time.perf_counter()
            kernel[grid, block](*args)
            times.append(time.perf_counter() - t0)
            ok = ok and bool(check())
        print(json.dumps({"first_s": times[0], "median_s": float(np.median(times[1:] or times)),
                          "correct": ok}))
        return
    import simtlab
    times, ok, engine, reason = [], True, None, None
    for _ in range(1 + repeat):
        kernel, grid, block, args, check, _ = make(name)
        t0 = time.perf_counter()
        run = simtlab.emulate(kernel, grid, block, *args, trace=trace, engine=side)
        if trace:
            run.metrics                    # the analyses the trace is for
        times.append(time.perf_counter() - t0)
        ok = ok and bool(check())
        engine, reason = run.engine, run.engine_reason
    print(json.dumps({"first_s": times[0], "median_s": float(np.median(times[1:] or times)),
                      "correct": ok, "engine": engine, "engine_reason": reason}))


def measure(side, name, trace=True, repeat=0, script=__file__, extra=()):
    """``child`` in a fresh process (``script``: the benchmark whose ``--child`` runs it;
    ``extra``: more arguments for it). ``side``: "simulator" or an engine ("auto" too)."""
    env = dict(os.environ)
    if side == "simulator":
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    out = subprocess.run([sys.executable, str(script), "--child", side, name,
                          "--trace", str(int(trace)), "--repeat", str(repeat), *extra],
                         env=env, capture_output=True, text=True)
    if out.returncode != 0 and side == "simulator":
        last = out.stderr.strip().splitlines()[-1]
        return {"first_s": None, "median_s": None, "correct": True, "refused": last}
    if out.returncode != 0:
        raise RuntimeError(f"{side} {name}: {out.stderr[-2000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if side in ("greenlet", "vector") and result["engine"] != side:
        raise RuntimeError(f"{name} ran on {result['engine']}, not {side}")
    return result


def markdown(result) -> str:
    lines = [f"# Emulator vs numba's CUDA simulator ({result['date']}, {result['cpu']}, "
             f"{result['cores']} cores{', shared with other jobs' if result['shared_box'] else ''})",
             "",
             f"Command: `{result['command']}`. First launch in a fresh process (binding, checks "
             "and instrumentation counted, `import` not); ratio = simulator time / engine time. "
             "'trace' includes `run.metrics`.", "",
             "| kernel | simulator | greenlet trace | greenlet no trace | vector trace | ratio "
             "| vector no trace | ratio | vector no trace, later calls | vector / greenlet "
             "(trace, no trace) | correct |", "|---|---|---|---|---|---|---|---|---|---|---|"]

    def x(v):
        return "-" if v is None else f"{v:.0f}x"
    for r in result["rows"]:
        sim = "refused: " + r["simulator_refused"].split(":", 1)[-1].strip()[:60] \
            if r["simulator_refused"] else f"{r['simulator_s']:.2f} s"
        lines.append(
            f"| {r['case']} | {sim} | {r['greenlet_trace_s']:.3f} s | "
            f"{r['greenlet_no_trace_s']:.3f} s | {r['vector_trace_s']:.3f} s | "
            f"{x(r['ratio_vector_trace'])} | {r['vector_no_trace_s']:.4f} s | "
            f"{x(r['ratio_vector_no_trace'])} | {r['vector_no_trace_median_s']:.4f} s | "
            f"{r['vector_over_greenlet_trace']:.1f}x, {r['vector_over_greenlet_no_trace']:.0f}x | "
            f"{'yes' if r['all_correct'] else 'NO'} |")
    lines += ["", "Growth with the work (tiled GEMM, vector engine, first launch / median of "
              "repeats):", "", "| size | GFLOP | trace | no trace (first) | no trace (median) "
              "| time per MFLOP, no trace |", "|---|---|---|---|---|---|"]
    for g in result["growth"]:
        traced = "-" if g["trace_s"] is None else f"{g['trace_s']:.3f} s"
        lines.append(f"| {g['size']} | {g['flops'] / 1e9:.4f} | {traced} | "
                     f"{g['no_trace_first_s']:.4f} s | {g['no_trace_median_s']:.4f} s | "
                     f"{g['no_trace_median_s'] / (g['flops'] / 1e6) * 1e3:.3f} ms |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" /
                                        "emulator_vs_simulator.json"))
    p.add_argument("--child", nargs=2)
    p.add_argument("--trace", type=int, default=1)
    a = p.parse_args(argv)
    if a.child:
        return child(a.child[0], a.child[1], bool(a.trace), a.repeat)
    rows = []
    for name, label in CASES.items():
        print(f"{label}: numba simulator ...", flush=True)
        sim = measure("simulator", name)
        cells = {}
        for side in ("greenlet", "vector"):
            for trace in (True, False):
                cells[side, trace] = measure(side, name, trace, a.repeat)
        vt, vn = cells["vector", True], cells["vector", False]
        gt, gn = cells["greenlet", True], cells["greenlet", False]

        def ratio(a, b):
            return None if a is None else a / b
        rows.append({
            "case": label, "simulator_s": sim["first_s"],
            "greenlet_trace_s": cells["greenlet", True]["first_s"],
            "greenlet_no_trace_s": cells["greenlet", False]["first_s"],
            "vector_trace_s": vt["first_s"], "vector_no_trace_s": vn["first_s"],
            "vector_trace_median_s": vt["median_s"], "vector_no_trace_median_s": vn["median_s"],
            "simulator_refused": sim.get("refused"),
            "ratio_vector_trace": ratio(sim["first_s"], vt["first_s"]),
            "ratio_vector_no_trace": ratio(sim["first_s"], vn["first_s"]),
            "ratio_greenlet_trace": ratio(sim["first_s"], gt["first_s"]),
            "ratio_greenlet_no_trace": ratio(sim["first_s"], gn["first_s"]),
            "vector_over_greenlet_trace": gt["first_s"] / vt["first_s"],
            "vector_over_greenlet_no_trace": gn["first_s"] / vn["first_s"],
            "all_correct": sim["correct"] and all(c["correct"] for c in cells.values())})
        print("  " + json.dumps(rows[-1]), flush=True)
    growth = []
    for name in GROWTH:
        *_, flops = make_case(name)
        # traced, 128 would record 4.7 million accesses (over max_trace) and 256 38 million
        t = measure("vector", name, True, 0) if name == "gemm64" else {"first_s": None,
                                                                        "correct": True}
        n = measure("vector", name, False, a.repeat)
        growth.append({"size": int(name[4:]), "flops": flops, "trace_s": t["first_s"],
                       "no_trace_first_s": n["first_s"], "no_trace_median_s": n["median_s"],
                       "correct": t["correct"] and n["correct"]})
        print(f"  GEMM {name[4:]}: {growth[-1]}", flush=True)
    import numba
    result = {"date": time.strftime("%Y-%m-%d"), "python": platform.python_version(),
              "numba": numba.__version__, "cpu": platform.processor() or platform.machine(),
              "cores": os.cpu_count(), "shared_box": True,
              "command": "nice python benchmarks/emulator_vs_simulator.py",
              "goal": {"vector_trace": 200, "vector_no_trace": 1000}, "rows": rows,
              "growth": growth}
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))
    print(f"written to {out} and {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
