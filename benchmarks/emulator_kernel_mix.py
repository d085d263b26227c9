"""Small kernels of many kinds on the emulator and numba's CUDA simulator, in one run.

    python benchmarks/emulator_kernel_mix.py [--runs 3] [--repeat 2] [--kernels a,b] [--tag main]

Kinds the course's own benchmark (emulator_vs_simulator.py) does not have: atomic counters and
histograms (atomic.add on global and shared memory, atomic.max, a CAS retry loop, a ticket
whose returned old value is used, float atomic adds), divergent ``while`` loops (Collatz steps,
Euclid's gcd, a search that breaks out), a CSR row loop of per-lane length, warp votes and
shuffles, a 64-bit hash, float64 math and a grid-stride loop. Each is checked against a NumPy
reference on every side.

Each measurement is a fresh child process (``emulator_vs_simulator.measure``): the first launch
(binding, checks, instrumentation and the simulator's own set-up counted, ``import`` not), then
``--repeat`` more. The emulator runs with ``engine="auto"`` (``run.engine`` says which engine
ran, ``engine_reason`` why not the vector engine), traced (with ``run.metrics``) and untraced.
Each child runs ``--runs`` times and the medians are kept: the box may be shared, so the load
average is recorded too. Ratio = emulator time / simulator time (below 1: the emulator is
faster). Results: benchmarks/results/emulator_kernel_mix[_TAG].{json,md}.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from numba import cuda, float32, int32, uint64

sys.path.insert(0, str(Path(__file__).resolve().parent))
from emulator_vs_simulator import child, measure  # noqa: E402  (the shared runner)

N = 2048            # threads of most launches: the simulator takes ~0.1-1 s for these
BINS = 64


# --- atomics ----------------------------------------------------------------------------------
@cuda.jit
def count_positive(x, counter):
    i = cuda.grid(1)
    if i < x.size and x[i] > 0.5:
        cuda.atomic.add(counter, 0, 1)


@cuda.jit
def histogram_global(data, hist):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < data.size:                     # grid-stride: several atomics per thread
        cuda.atomic.add(hist, data[i] % BINS, 1)
        i += stride


@cuda.jit
def histogram_shared(data, hist):
    local = cuda.shared.array(BINS, int32)
    t = cuda.threadIdx.x
    if t < BINS:
        local[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < data.size:
        cuda.atomic.add(local, data[i] % BINS, 1)
    cuda.syncthreads()
    if t < BINS:
        cuda.atomic.add(hist, t, local[t])


@cuda.jit
def max_per_bin(data, values, best):
    i = cuda.grid(1)
    if i < data.size:
        cuda.atomic.max(best, data[i] % BINS, values[i])


@cuda.jit
def float_sum_atomic(x, total):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(total, 0, x[i])          # float32: the order of the adds rounds


@cuda.jit
def compact_ticket(x, counter, out):
    i = cuda.grid(1)
    if i < x.size and x[i] > 0.5:
        slot = cuda.atomic.add(counter, 0, 1)    # the old value is used: a ticket
        out[slot] = i


@cuda.jit
def cas_product(data, acc):
    i = cuda.grid(1)
    if i < data.size:
        slot = i % 16
        old = acc[slot]
        while True:                              # a CAS retry loop: multiply modulo a prime
            new = (old * data[i]) % 1000003
            seen = cuda.atomic.cas(acc, slot, old, new)
            if seen == old:
                break
            old = seen


# --- divergent loops --------------------------------------------------------------------------
@cuda.jit
def collatz_steps(start, steps):
    i = cuda.grid(1)
    if i < start.size:
        n = start[i]
        k = 0
        while n != 1:                            # lanes leave after 0 to ~350 iterations
            if n % 2 == 0:
                n = n // 2
            else:
                n = 3 * n + 1
            k += 1
        steps[i] = k


@cuda.jit
def gcd_pairs(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        x = a[i]
        y = b[i]
        while y != 0:
            x, y = y, x % y
        out[i] = x


@cuda.jit
def first_above(rows, limit, out):
    i = cuda.grid(1)
    if i < rows.shape[0]:
        found = -1
        for j in range(rows.shape[1]):           # leaves at the first element above the limit
            if rows[i, j] > limit[i]:
                found = j
                break
        out[i] = found


@cuda.jit
def csr_spmv(indptr, indices, values, x, y):
    row = cuda.grid(1)
    if row < y.size:
        acc = float32(0)
        for k in range(indptr[row], indptr[row + 1]):     # rows of different lengths
            acc += values[k] * x[indices[k]]
        y[row] = acc


# --- warps, integers, float64, grid-stride -----------------------------------------------------
@cuda.jit
def warp_votes(x, votes):
    i = cuda.grid(1)
    lane = cuda.threadIdx.x % 32
    big = x[i] > 0.5
    b = cuda.ballot_sync(0xFFFFFFFF, big)
    a = cuda.all_sync(0xFFFFFFFF, x[i] > 0.01)
    if lane == 0:
        votes[i // 32, 0] = b
        votes[i // 32, 1] = a


@cuda.jit
def warp_scan(x, out):
    i = cuda.grid(1)
    lane = cuda.threadIdx.x % 32
    v = x[i]
    offset = 1
    while offset < 32:
        n = cuda.shfl_up_sync(0xFFFFFFFF, v, offset)
        if lane >= offset:
            v += n
        offset *= 2
    out[i] = v


@cuda.jit
def hash64(keys, out):
    i = cuda.grid(1)
    if i < keys.size:
        h = keys[i] * uint64(6364136223846793005) + uint64(1442695040888963407)
        h ^= h >> uint64(33)
        out[i] = h


@cuda.jit
def float64_math(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        out[i] = math.exp(-v) * math.sin(3.0 * v) + math.sqrt(v) / (1.0 + v * v)


@cuda.jit
def grid_stride_saxpy(a, x, y):
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    for k in range(i, x.size, stride):
        y[k] = a * x[k] + y[k]


KINDS = {
    "count_positive": "atomic", "histogram_global": "atomic", "histogram_shared": "atomic",
    "max_per_bin": "atomic", "float_sum_atomic": "atomic", "compact_ticket": "atomic",
    "cas_product": "atomic", "collatz_steps": "loop", "gcd_pairs": "loop",
    "first_above": "loop", "csr_spmv": "loop", "warp_votes": "warp", "warp_scan": "warp",
    "hash64": "integer", "float64_math": "float64", "grid_stride_saxpy": "grid-stride",
}


def _csr(rng, rows, cols):
    lengths = rng.integers(0, 40, rows)
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    indices = rng.integers(0, cols, indptr[-1]).astype(np.int32)
    values = rng.random(indptr[-1], dtype=np.float32)
    return indptr, indices, values


def make_case(name, seed=0):
    """Kernel, grid, block, args, a check against NumPy and the threads: the same everywhere."""
    rng = np.random.default_rng(seed)
    block = 128
    grid = N // block
    x = rng.random(N, dtype=np.float32)
    data = rng.integers(0, 10_000, N).astype(np.int32)
    if name == "count_positive":
        counter = np.zeros(1, np.int32)
        return (count_positive, grid, block, (x, counter),
                lambda: counter[0] == (x > 0.5).sum(), N)
    if name == "histogram_global":
        data = rng.integers(0, 10_000, 4 * N).astype(np.int32)
        hist = np.zeros(BINS, np.int32)
        return (histogram_global, grid // 2, block, (data, hist),
                lambda: (hist == np.bincount(data % BINS, minlength=BINS)).all(), N // 2)
    if name == "histogram_shared":
        hist = np.zeros(BINS, np.int32)
        return (histogram_shared, grid, block, (data, hist),
                lambda: (hist == np.bincount(data % BINS, minlength=BINS)).all(), N)
    if name == "max_per_bin":
        values = rng.integers(-1000, 1000, N).astype(np.int32)
        best = np.full(BINS, -(2**31), np.int32)
        expect = np.full(BINS, -(2**31), np.int64)
        np.maximum.at(expect, data % BINS, values)
        return (max_per_bin, grid, block, (data, values, best),
                lambda: (best == expect).all(), N)
    if name == "float_sum_atomic":
        total = np.zeros(1, np.float32)
        return (float_sum_atomic, grid, block, (x, total),
                lambda: math.isclose(total[0], x.sum(dtype=np.float64), rel_tol=1e-4), N)
    if name == "compact_ticket":
        counter = np.zeros(1, np.int32)
        out = np.full(N, -1, np.int32)
        picked = np.flatnonzero(x > 0.5)
        return (compact_ticket, grid, block, (x, counter, out),
                lambda: counter[0] == picked.size and
                (np.sort(out[:picked.size]) == picked).all(), N)
    if name == "cas_product":
        factors = rng.integers(1, 1000, N).astype(np.int64)
        acc = np.ones(16, np.int64)
        expect = [1] * 16
        for i, f in enumerate(factors.tolist()):
            expect[i % 16] = expect[i % 16] * f % 1000003
        return (cas_product, grid, block, (factors, acc),
                lambda: acc.tolist() == expect, N)
    if name == "collatz_steps":
        start = rng.integers(1, 100_000, N).astype(np.int64)
        steps = np.zeros(N, np.int32)

        def collatz(n):
            k = 0
            while n != 1:
                n = n // 2 if n % 2 == 0 else 3 * n + 1
                k += 1
            return k
        return (collatz_steps, grid, block, (start, steps),
                lambda: steps.tolist() == [collatz(n) for n in start.tolist()], N)
    if name == "gcd_pairs":
        a = rng.integers(1, 2**30, N).astype(np.int64)
        b = rng.integers(1, 2**30, N).astype(np.int64)
        out = np.zeros(N, np.int64)
        return (gcd_pairs, grid, block, (a, b, out), lambda: (out == np.gcd(a, b)).all(), N)
    if name == "first_above":
        rows = rng.random((N, 64), dtype=np.float32)
        limit = (1 - rng.random(N, dtype=np.float32) ** 3).astype(np.float32)
        out = np.zeros(N, np.int32)
        above = rows > limit[:, None]
        expect = np.where(above.any(axis=1), above.argmax(axis=1), -1)
        return (first_above, grid, block, (rows, limit, out), lambda: (out == expect).all(), N)
    if name == "csr_spmv":
        indptr, indices, values = _csr(rng, N, N)
        y = np.zeros(N, np.float32)
        expect = np.array([values[indptr[r]:indptr[r + 1]] @ x[indices[indptr[r]:indptr[r + 1]]]
                           for r in range(N)])
        return (csr_spmv, grid, block, (indptr, indices, values, x, y),
                lambda: np.allclose(y, expect, rtol=1e-4, atol=1e-5), N)
    if name == "warp_votes":
        votes = np.zeros((N // 32, 2), np.uint32)
        bits = (x.reshape(-1, 32) > 0.5).astype(np.uint64) << np.arange(32, dtype=np.uint64)
        expect = np.stack([bits.sum(axis=1), (x.reshape(-1, 32) > 0.01).all(axis=1)], axis=1)
        return (warp_votes, grid, block, (x, votes),
                lambda: (votes.astype(np.uint64) == expect).all(), N)
    if name == "warp_scan":
        out = np.zeros(N, np.float32)
        expect = np.cumsum(x.reshape(-1, 32), axis=1).reshape(-1)
        return (warp_scan, grid, block, (x, out),
                lambda: np.allclose(out, expect, rtol=1e-5), N)
    if name == "hash64":
        keys = np.arange(N, dtype=np.uint64) * np.uint64(2654435761)
        out = np.zeros(N, np.uint64)
        with np.errstate(over="ignore"):
            h = keys * np.uint64(6364136223846793005) + np.uint64(1442695040888963407)
        expect = h ^ (h >> np.uint64(33))
        return (hash64, grid, block, (keys, out), lambda: (out == expect).all(), N)
    if name == "float64_math":
        v = rng.random(N) * 4
        out = np.zeros(N)
        expect = np.exp(-v) * np.sin(3.0 * v) + np.sqrt(v) / (1.0 + v * v)
        return (float64_math, grid, block, (v, out),
                lambda: np.allclose(out, expect, rtol=1e-12, atol=1e-15), N)
    if name == "grid_stride_saxpy":
        xs = rng.random(8 * N, dtype=np.float32)
        y = rng.random(8 * N, dtype=np.float32)
        expect = np.float32(2.5) * xs + y
        return (grid_stride_saxpy, grid // 2, block, (np.float32(2.5), xs, y),
                lambda: np.allclose(y, expect, rtol=1e-6), N // 2)
    raise KeyError(name)


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _measured(side, name, trace, repeat, runs):
    """``runs`` fresh processes of one side: median first launch, median later launch."""
    extra = ("--simulator-repeat", str(repeat)) if side == "simulator" else ()
    results = [measure(side, name, trace, repeat, script=__file__, extra=extra)
               for _ in range(runs)]
    first = results[0]
    return {"first_s": _median(r["first_s"] for r in results),
            "later_s": _median(r["median_s"] for r in results),
            "correct": all(r["correct"] for r in results),
            "engine": first.get("engine"), "engine_reason": first.get("engine_reason"),
            "refused": first.get("refused")}


def _ratio(a, b):
    return None if a is None or b is None else a / b


def run_kernel(name, runs, repeat):
    sim = _measured("simulator", name, True, repeat, runs)
    traced = _measured("auto", name, True, repeat, runs)
    untraced = _measured("auto", name, False, repeat, runs)
    return {
        "kernel": name, "kind": KINDS[name], "threads": make_case(name)[-1],
        "simulator_s": sim["first_s"], "simulator_later_s": sim["later_s"],
        "simulator_refused": sim["refused"],
        "trace_s": traced["first_s"], "trace_later_s": traced["later_s"],
        "no_trace_s": untraced["first_s"], "no_trace_later_s": untraced["later_s"],
        "engine_trace": traced["engine"], "engine_no_trace": untraced["engine"],
        "engine_reason_trace": traced["engine_reason"],
        "engine_reason_no_trace": untraced["engine_reason"],
        "ratio_trace": _ratio(traced["first_s"], sim["first_s"]),
        "ratio_no_trace": _ratio(untraced["first_s"], sim["first_s"]),
        "ratio_no_trace_later": _ratio(untraced["later_s"], sim["later_s"]),
        "correct": {"simulator": sim["correct"], "trace": traced["correct"],
                    "no_trace": untraced["correct"]},
    }


def markdown(result) -> str:
    def s(v):
        return "-" if v is None else f"{v:.3f} s"

    def r(v):
        return "-" if v is None else f"{v:.2f}"
    lines = [f"# Emulator (engine=\"auto\") vs numba's CUDA simulator: kernel mix "
             f"({result['date']}, {result['label']})", "",
             f"Command: `{result['command']}` at commit {result['commit']}. {result['cpu']}, "
             f"{result['cores']} cores, load average before/after "
             f"{result['load_before']} / {result['load_after']} (a shared box). Medians over "
             f"{result['runs']} fresh processes per cell: the first launch (set-up counted, "
             f"`import` not) and, in 'later', the median of {result['repeat']} more launches. "
             "Ratio = emulator / simulator (below 1: the emulator is faster). 'trace' includes "
             "`run.metrics`.", "",
             "| kernel | kind | threads | simulator | trace | ratio | no trace | ratio "
             "| no trace, later | ratio, later | engine (trace / no trace) | correct |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in result["rows"]:
        sim = s(row["simulator_s"]) if not row["simulator_refused"] else \
            "refused: " + row["simulator_refused"].split(":")[-1].strip()[:50]
        engines = f"{row['engine_trace']} / {row['engine_no_trace']}"
        correct = "yes" if all(row["correct"].values()) else \
            "NO: " + ", ".join(k for k, v in row["correct"].items() if not v)
        lines.append(f"| {row['kernel']} | {row['kind']} | {row['threads']} | {sim} | "
                     f"{s(row['trace_s'])} | {r(row['ratio_trace'])} | {s(row['no_trace_s'])} | "
                     f"{r(row['ratio_no_trace'])} | {s(row['no_trace_later_s'])} | "
                     f"{r(row['ratio_no_trace_later'])} | {engines} | {correct} |")
    reasons = [(row["kernel"], row["engine_reason_trace"] or row["engine_reason_no_trace"])
               for row in result["rows"]
               if row["engine_reason_trace"] or row["engine_reason_no_trace"]]
    if reasons:
        lines += ["", "Why not the vector engine:", ""]
        lines += [f"- {k}: {why}" for k, why in reasons]
    return "\n".join(lines) + "\n"


def _commit():
    import subprocess
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, cwd=Path(__file__).parent)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, cwd=Path(__file__).parent)
    return done.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--kernels", default=",".join(KINDS))
    p.add_argument("--tag", default="", help="suffix of the result files (e.g. main)")
    p.add_argument("--child", nargs=2)
    p.add_argument("--trace", type=int, default=1)
    p.add_argument("--simulator-repeat", type=int, default=0)
    a = p.parse_args(argv)
    if a.child:
        return child(a.child[0], a.child[1], bool(a.trace), a.repeat, make=make_case,
                     simulator_repeat=a.simulator_repeat)
    load_before = os.getloadavg()
    rows = []
    for name in a.kernels.split(","):
        rows.append(run_kernel(name, a.runs, a.repeat))
        print(json.dumps(rows[-1]), flush=True)
    import numba
    stem = "emulator_kernel_mix" + (f"_{a.tag}" if a.tag else "")
    result = {"date": time.strftime("%Y-%m-%d %H:%M"), "label": a.tag or "this tree",
              "commit": _commit(), "python": platform.python_version(),
              "numba": numba.__version__, "cpu": platform.processor() or platform.machine(),
              "cores": os.cpu_count(), "runs": a.runs, "repeat": a.repeat,
              "load_before": [round(v, 2) for v in load_before],
              "load_after": [round(v, 2) for v in os.getloadavg()],
              "command": "python benchmarks/emulator_kernel_mix.py "
                         + " ".join(argv if argv is not None else sys.argv[1:]),
              "rows": rows}
    out = Path(__file__).parent / "results" / f"{stem}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))
    print(f"written to {out} and {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
