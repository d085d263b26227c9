"""Time every GEMM version of chapter 6 against cuBLAS SGEMM (FP32, no tensor cores), on this GPU.

    python benchmarks/gpu_gemm.py [--size 4096] [--no-sweep] [--tune] [--out FILE] [--json FILE]
    python benchmarks/gpu_gemm.py --split-k [--split-k-out benchmarks/results/gemm_splitk_h100.json]

Every version (kernels/gemm.py with numba-cuda, kernels/gemm.cu with CUDA C through CuPy) is
first checked at an odd size (1001^3) against a float64 product, then timed at
n x n x n (default 4096^3) with CUDA events (warm-up, batches, median), in one run with
cuBLAS (``cupy.matmul``, ``CUPY_TF32=0``): TFLOP/s = 2 n^3 / time, and the ratio to cuBLAS.
Each kernel's registers per thread come from the compiler (numba: ``get_regs_per_thread``,
CuPy: ``RawKernel.num_regs``). ``--tune`` also times other tile configurations of v7 (CUDA C,
compiled with -DV7_CONFIG=...) and of v5 and v7 in numba (the same code with other tile constants).

``--split-k`` times only split-K (kernels/gemm.cu ``gemm_splitk``: v7's tile over one slice of K
per blockIdx.z, added into a zeroed C) on shapes with few output tiles and a long K
(:data:`SPLIT_K_SHAPES`), for each number of slices in :data:`SPLIT_K_SPLITS`, beside v7 (plain
stores, no split) and cuBLAS on the same inputs in the same run, and writes JSON
(``--split-k-out``); ``python tools/store_gemm_optim.py`` copies it into the store for chapter 6.

The results are merged into the store of GPU figures, ``simtlab/data/h100_timings.json``, under
``topics["gemm"]`` (or ``--out``), which chapter 6 plots when there is no GPU
(``simtlab.gpubench.recorded("gemm")``). ``benchmarks/gpu_bandwidth.py --topics gemm`` times
the same cases without the tuning and the compilers' resource report.
Prints a table at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import types
from pathlib import Path

os.environ.setdefault("CUPY_TF32", "0")          # before CuPy is imported: cuBLAS in plain FP32

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: v7 (CUDA C) configurations --tune times: (BM, BN, BK, WM, WN, WNITER, TM, TN, GROUP), threads,
#: minimum blocks per SM
V7_CONFIGS = [
    ((128, 128, 16, 64, 32, 2, 8, 4, 0), 256, 1),
    ((128, 128, 16, 64, 32, 2, 8, 4, 8), 256, 1),
    ((128, 128, 16, 64, 32, 2, 8, 4, 16), 256, 1),
    ((128, 128, 16, 64, 32, 2, 8, 4, 0), 256, 2),
    ((128, 128, 8, 64, 32, 2, 8, 4, 8), 256, 2),
    ((128, 128, 16, 64, 64, 4, 8, 4, 8), 128, 1),
    ((128, 128, 8, 64, 64, 4, 8, 4, 8), 128, 1),
    ((128, 128, 16, 32, 64, 2, 4, 8, 8), 256, 1),
    ((128, 128, 16, 32, 64, 4, 4, 4, 8), 256, 1),
    ((128, 64, 16, 64, 32, 2, 8, 4, 8), 128, 1),
]
#: numba configurations --tune times: the kernel's module constants, overridden
NUMBA_CONFIGS = {
    "gemm_v5_blocking_2d": [dict(BM5=bm, BN5=bn, BK5=bk, TM5=tm, TN5=tn, TX5=bn // tn, TY5=bm // tm,
                                 THREADS5=(bn // tn) * (bm // tm))
                            for bm, bn, bk, tm, tn in [(128, 128, 8, 8, 8), (128, 64, 8, 8, 4),
                                                       (64, 64, 16, 4, 4), (128, 128, 16, 8, 8)]],
    "gemm_v7_warptile": [dict(BM7=bm, BN7=bn, BK7=bk, WM7=wm, WN7=wn, LM7=lm, LN7=ln, TM7=wm // lm,
                              TN7=wn // ln, WARPS_N7=bn // wn, THREADS7N=(bm // wm) * (bn // wn) * 32,
                              LOADS7A=bm * bk // ((bm // wm) * (bn // wn) * 32),
                              LOADS7B=bk * bn // ((bm // wm) * (bn // wn) * 32), SA7_WIDTH=bm + 4)
                         for bm, bn, bk, wm, wn, lm, ln in [(128, 128, 8, 32, 64, 4, 8), (128, 128, 16, 32, 64, 4, 8),
                                                            (128, 64, 8, 32, 32, 4, 8), (128, 128, 8, 64, 32, 8, 4),
                                                            (64, 128, 8, 32, 64, 4, 8), (128, 64, 16, 64, 32, 8, 4)]],
}


#: split-K's shapes (M, N, K): 16 and 64 output tiles of 128 x 128 for 264 block slots, long K
SPLIT_K_SHAPES = [(512, 512, 16384), (1024, 1024, 16384)]
SPLIT_K_SPLITS = [1, 2, 4, 8, 16]


def split_k_sweep(log, shapes=SPLIT_K_SHAPES, splits=SPLIT_K_SPLITS) -> dict:
    """Per shape: cuBLAS, v7 (no split) and split-K with each number of slices, on the same
    inputs, each checked against a float64 product before it is timed."""
    import cupy

    from simtlab import versions
    from simtlab.analysis.waves import gemm_waves
    from simtlab.cuda_source import cu_kernel
    from simtlab.gpubench import gemm as bench
    from simtlab.gpubench import time_launches
    from simtlab.gpubench.harness import nonzero_random
    from simtlab.kernels import gemm as G

    rows = []
    for m, n, k in shapes:
        a = nonzero_random((m, k), seed=1) - cupy.float32(1.0)
        b = nonzero_random((k, n), seed=2) - cupy.float32(1.0)
        want = a.astype(cupy.float64) @ b.astype(cupy.float64)
        scale = cupy.abs(a).astype(cupy.float64) @ cupy.abs(b).astype(cupy.float64)
        c = cupy.empty((m, n), cupy.float32)
        runs = [("cuBLAS SGEMM", "library", None, bench.cublas_runner(a, b, c)),
                ("v7 warp tiling (no split)", "cuda-c", None, bench.gemm_runner("v7 warp tiling", "cuda-c", a, b, c))]
        for s in splits:
            run, _ = versions.gpu_runner("gemm", G.splitk_version(s), "cuda-c", a, b, out=c)
            runs.append((f"split-K x{s}", "cuda-c", s, run))
        shape_rows = []
        for name, impl, s, run in runs:
            c[...] = cupy.nan                           # an element never written stays NaN
            run()
            cupy.cuda.runtime.deviceSynchronize()
            err = float(cupy.max(cupy.abs(c - want) / scale))
            t = time_launches(run, warmup=3, repeat=15, batch_ms=20.0)
            tile_waves = gemm_waves(m, n, G.SPLITK_TILE, G.SPLITK_BLOCKS_PER_SM, s or 1) if impl == "cuda-c" else None
            row = {"m": m, "n": n, "k": k, "name": name, "impl": impl, "splits": s, "median_ms": t["median_ms"],
                   "spread": t["spread"], "tflops": G.gemm_flops(m, n, k) / (t["median_ms"] * 1e-3) / 1e12,
                   "max_rel_error": err,
                   "blocks": tile_waves.blocks if tile_waves else None,
                   "waves": tile_waves.waves if tile_waves else None}
            shape_rows.append(row)
            log(f"  {m}x{n}x{k} {name:<28} {row['median_ms']:8.3f} ms {row['tflops']:6.2f} TFLOP/s  err {err:.1e}"
                + (f"  {row['blocks']} blocks = {row['waves']:.2f} waves" if tile_waves else ""))
            if not err < 1e-5:
                raise AssertionError(f"{name} at {m}x{n}x{k}: relative error {err:.2e}")
        ref = shape_rows[0]["tflops"]
        for row in shape_rows:
            row["of_cublas"] = row["tflops"] / ref
        rows += shape_rows
        del a, b, c, want, scale, runs
        _free()
    kern = cu_kernel("gemm", "gemm_splitk")
    return {"rows": rows, "shapes": [list(x) for x in shapes], "splits": list(splits),
            "tile": list(G.SPLITK_TILE), "blocks_per_sm": G.SPLITK_BLOCKS_PER_SM,
            "registers": int(kern.num_regs), "local_bytes": int(kern.local_size_bytes),
            "command": "python benchmarks/gpu_gemm.py --split-k"}


def _timing(run, est_ms):
    from simtlab.gpubench import time_launches

    if est_ms > 50:                       # the slow versions: a few single runs are enough
        return time_launches(run, warmup=1, repeat=3, batch_ms=1.0)
    return time_launches(run, warmup=3, repeat=15, batch_ms=20.0)


def _probe_ms(run):
    import cupy

    run()
    cupy.cuda.runtime.deviceSynchronize()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    run()
    end.record()
    end.synchronize()
    return float(cupy.cuda.get_elapsed_time(start, end))


def time_case(case, n):
    run = case.prepare(n)
    t = _timing(run, _probe_ms(run))
    del run
    _free()
    t["tflops"] = case.flops(n) / (t["median_ms"] * 1e-3) / 1e12
    t["gbps"] = case.bytes_moved(n) / (t["median_ms"] * 1e-3) / 1e9
    return t


def _free():
    import gc

    import cupy

    gc.collect()
    cupy.cuda.runtime.deviceSynchronize()
    cupy.get_default_memory_pool().free_all_blocks()


def resources() -> dict:
    """Registers per thread, shared bytes per block and spills of every kernel, from the
    compilers (call after the kernels ran once, so each is compiled)."""
    from simtlab.cuda_source import cu_kernel
    from simtlab.kernels import gemm as G

    out = {}
    for v in G.VERSIONS:
        threads = int(np_prod(v.plan.block))
        for name in [v.cuda_c] + ([v.plan.scalar] if v.plan.scalar else []):
            k = cu_kernel("gemm", name)
            out[f"{name} (CUDA C)"] = {"version": v.label, "registers": int(k.num_regs),
                                       "shared_bytes": int(k.shared_size_bytes),
                                       "local_bytes": int(k.local_size_bytes), "threads": threads}
        if v.numba:
            d = getattr(G, v.numba)
            try:
                regs = _regs(d)
                shared = _numba_stat(d, "get_shared_mem_per_block")
                local = _numba_stat(d, "get_local_mem_per_thread")
            except Exception as e:
                print(f"  resources of {v.numba}: {type(e).__name__}: {e}")
                continue
            out[f"{v.numba} (numba)"] = {"version": v.label, "registers": regs, "shared_bytes": shared,
                                         "local_bytes": local, "threads": threads}
    return out


def np_prod(t):
    p = 1
    for x in t:
        p *= x
    return p


def tune_v7(n, log):
    """Time the v7 body with other tiles (CUDA C, NVRTC with -DV7_CONFIG)."""
    import cupy

    from simtlab.cuda_source import NVRTC_OPTIONS, cu_path
    from simtlab.gpubench import time_launches
    from simtlab.gpubench.harness import nonzero_random
    from simtlab.kernels import gemm as G

    src = cu_path("gemm").read_text()
    a, b = nonzero_random((n, n), 1), nonzero_random((n, n), 2)
    c = cupy.empty((n, n), cupy.float32)
    want = cupy.matmul(a, b)
    rows = []
    for cfg, threads, min_blocks in V7_CONFIGS:
        label = "v7 " + ",".join(map(str, cfg)) + f" /{threads} min{min_blocks}"
        try:
            opts = NVRTC_OPTIONS + (f"-DV7_CONFIG={','.join(map(str, cfg))}", f"-DV7_THREADS={threads}",
                                    f"-DV7_MIN_BLOCKS={min_blocks}")
            kern = cupy.RawModule(code=src, options=opts).get_function("gemm_v7_warptile")
            grid = (G.cdiv(n, cfg[1]), G.cdiv(n, cfg[0]))
            args = (a, b, c, cupy.int32(n), cupy.int32(n), cupy.int32(n))

            def run():
                kern(grid, (threads,), args)
            run()
            err = float(cupy.max(cupy.abs(c - want)) / cupy.max(cupy.abs(want)))
            t = time_launches(run, warmup=3, repeat=10, batch_ms=20.0)
            tf = G.gemm_flops(n, n, n) / (t["median_ms"] * 1e-3) / 1e12
            row = {"config": label, "tflops": tf, "median_ms": t["median_ms"], "rel_error": err,
                   "registers": int(kern.num_regs), "local_bytes": int(kern.local_size_bytes)}
        except Exception as e:
            row = {"config": label, "error": f"{type(e).__name__}: {str(e)[:300]}"}
        rows.append(row)
        log(f"  {label:<40} " + (f"{row['tflops']:6.2f} TFLOP/s  regs {row['registers']}  "
                                 f"spill {row['local_bytes']} B  err {row['rel_error']:.1e}"
                                 if "tflops" in row else row["error"]))
    return rows


def _regs(dispatcher) -> int:
    """Registers per thread of a numba kernel compiled for one signature."""
    regs = dispatcher.get_regs_per_thread()
    return int(next(iter(regs.values())) if isinstance(regs, dict) else regs)


def _numba_stat(dispatcher, what) -> int:
    value = getattr(dispatcher, what)()
    return int(next(iter(value.values())) if isinstance(value, dict) else value)


def tune_numba(n, log):
    """Time numba kernels with other tile constants: the same code, compiled with other
    values of its module-level constants."""
    import cupy
    from numba import cuda

    from simtlab.gpubench import time_launches
    from simtlab.gpubench.harness import nonzero_random
    from simtlab.kernels import gemm as G

    a, b = nonzero_random((n, n), 1), nonzero_random((n, n), 2)
    c = cupy.empty((n, n), cupy.float32)
    want = cupy.matmul(a, b)
    views = [cuda.as_cuda_array(x, sync=False) for x in (a, b, c)]
    rows = []
    for name, configs in NUMBA_CONFIGS.items():
        f = getattr(G, name).py_func
        for consts in configs:
            bm, bn = (consts.get("BM5") or consts["BM7"]), (consts.get("BN5") or consts["BN7"])
            threads = consts.get("THREADS5") or consts["THREADS7N"]
            label = f"{name} " + ",".join(f"{k}={v}" for k, v in consts.items() if not k.startswith(("T", "L", "W", "S")) or k in ("TM5", "TN5", "WM7", "WN7"))
            try:
                kern = cuda.jit(types.FunctionType(f.__code__, dict(f.__globals__, **consts), name + "_variant"))
                launch = kern[(G.cdiv(n, bn), G.cdiv(n, bm)), threads]

                def run():
                    launch(*views)
                run()
                cupy.cuda.runtime.deviceSynchronize()
                err = float(cupy.max(cupy.abs(c - want)) / cupy.max(cupy.abs(want)))
                t = time_launches(run, warmup=3, repeat=10, batch_ms=20.0)
                tf = G.gemm_flops(n, n, n) / (t["median_ms"] * 1e-3) / 1e12
                row = {"config": label, "tflops": tf, "median_ms": t["median_ms"], "rel_error": err,
                       "registers": _regs(kern)}
            except Exception as e:
                row = {"config": label, "error": f"{type(e).__name__}: {str(e)[:300]}"}
            rows.append(row)
            log(f"  {label:<60} " + (f"{row['tflops']:6.2f} TFLOP/s  regs {row['registers']}  err {row['rel_error']:.1e}"
                                     if "tflops" in row else row["error"]))
    return rows


def table(entry) -> str:
    lines = [f"{'version':<34} {'ms':>9} {'TFLOP/s':>8} {'vs cuBLAS':>10}"]
    for r in entry["rows"]:
        lines.append(f"{r['name']:<34} {r['median_ms']:9.3f} {r['tflops']:8.2f} {r['ratio']:10.1%}")
    for e in entry.get("errors") or []:
        lines.append(f"{e['name']:<34} FAILED: {e['error']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    from simtlab import backend, gpubench
    from simtlab.gpubench import gemm as bench

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=bench.DEFAULT_N)
    p.add_argument("--no-sweep", action="store_true")
    p.add_argument("--tune", action="store_true")
    p.add_argument("--out", type=Path, default=gpubench.RESULTS_PATH)
    p.add_argument("--split-k", action="store_true", help="time only split-K against v7 and cuBLAS")
    p.add_argument("--split-k-out", type=Path, default=ROOT / "benchmarks/results/gemm_splitk_h100.json")
    args = p.parse_args(argv)
    if not backend.gpu_available():
        print(f"gpu_gemm: no usable GPU ({backend.unavailable_reason()})", file=sys.stderr)
        return 1
    bench.fp32_reference()

    def log(s):
        print(s, flush=True)

    if args.split_k:
        log("== split-K against v7 and cuBLAS ==")
        result = {**split_k_sweep(log), **gpubench.harness.stamp()}
        args.split_k_out.parent.mkdir(parents=True, exist_ok=True)
        args.split_k_out.write_text(json.dumps(result, indent=1) + "\n")
        log(f"written to {args.split_k_out}")
        return 0

    t0 = time.perf_counter()
    n = args.size
    rows, errors = [], []
    cases = bench.cases()
    log(f"== gemm: every version checked at {bench.CHECK_N}^3, timed at {n}^3 ==")
    for k, case in enumerate(cases, 1):
        try:
            case.check(bench.CHECK_N)
            t = time_case(case, n)
        except Exception as e:
            if case.reference:
                raise
            errors.append({"name": case.name, "impl": case.impl, "error": f"{type(e).__name__}: {e}"})
            log(f"  [{k}/{len(cases)}] {case.name:<34} FAILED: {type(e).__name__}: {e}")
            continue
        rows.append({"name": case.name, "impl": case.impl, "reference": case.reference,
                     "median_ms": t["median_ms"], "min_ms": t["min_ms"], "spread": t["spread"],
                     "tflops": t["tflops"], "gbps": t["gbps"], "bytes": case.bytes_moved(n),
                     "flops": case.flops(n)})
        log(f"  [{k}/{len(cases)}] {case.name:<34} {t['median_ms']:9.3f} ms {t['tflops']:7.2f} TFLOP/s "
            f"(spread {t['spread']:.1%}, {time.perf_counter() - t0:.0f} s)")
    ref = next(r for r in rows if r["reference"])
    for r in rows:
        r["ratio"] = r["tflops"] / ref["tflops"]
    entry = {"n": n, "reference": bench.REFERENCE, "rows": rows, "errors": errors,
             "check_n": bench.CHECK_N}
    entry["resources"] = resources()
    if not args.no_sweep:
        best = {impl: max((r for r in rows if r["impl"] == impl), key=lambda r: r["tflops"])["name"]
                for impl in ("numba", "cuda-c") if any(r["impl"] == impl for r in rows)}
        names = [ref["name"], *best.values(), "v3 shared tiles (CUDA C)"]
        series = {name: [] for name in names if any(c.name == name for c in cases)}
        for size in bench.SWEEP_SIZES:
            for case in cases:
                if case.name in series:
                    series[case.name].append(time_case(case, size)["tflops"])
            log(f"  sweep n = {size}: " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in series.items()))
        entry["sweep"] = {"sizes": list(bench.SWEEP_SIZES), "tflops": series}
    if args.tune:
        log("== tuning v7 (CUDA C) ==")
        entry["tuning_v7"] = tune_v7(n, log)
        log("== tuning v5 and v7 (numba) ==")
        entry["tuning_numba"] = tune_numba(n, log)
    stamp = gpubench.harness.stamp()
    entry.update(stamp)
    data = json.loads(args.out.read_text()) if args.out.exists() else {"topics": {}}
    data.setdefault("topics", {})["gemm"] = entry
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    log(f"\n{stamp['device']}, {stamp['date']}; {time.perf_counter() - t0:.0f} s in all; written to {args.out}")
    log(f"\ngemm at {n}^3 FP32 (reference: {bench.REFERENCE})\n" + table(entry))
    return 0


if __name__ == "__main__":
    sys.exit(main())
