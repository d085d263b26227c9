"""Chapter 6's top: every v8 configuration (kernels/gemm.cu V8_KERNEL lines) against cuBLAS SGEMM,
and numba's v7 against its float4 variant, in one run on this GPU.

    python benchmarks/gemm_v8_sweep.py [--size 4096] [--v8 all|champion|none] [--out DIR]

1. cuBLAS SGEMM (``cupy.matmul``, FP32, ``CUPY_TF32=0``) and the course's v7 (CUDA C) at n^3,
   timed first and again at the end (cuBLAS's two medians bracket the run's clock drift).
2. Each v8 and v9 configuration, compiled alone (``kernels/gemm.py: v8_source, v9_source``, NVRTC through CuPy),
   checked against a float64 product at an odd shape (the 4-byte copy path) and at a
   float4-aligned shape with ragged edges (the 16-byte path), then timed at n^3: TFLOP/s, the
   ratio to cuBLAS, registers and local (spill) bytes. Each in its own try: one configuration
   that fails to build or is wrong is reported and the others still run.
3. numba: v7 (kernels/gemm.py) and ``numba_v7_float4_kernel`` (float4 loads through linked CUDA C),
   each checked, then timed.

Writes ``DIR/gemm_v8_sweep.json`` and ``DIR/gemm_v8_sweep.txt`` (DIR: ``$OUT`` or
benchmarks/results). The best correct v8 is ``best``, v9 ``best_v9``; put their kernels into
kernels/gemm.py ``V8_CHAMPION`` and ``V9_CHAMPION`` (the chapter's rows) and keep the JSON as
benchmarks/results/gemm_v8_sweep_h100.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

os.environ.setdefault("CUPY_TF32", "0")          # before CuPy is imported: cuBLAS in plain FP32

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: (M, N, K) every configuration is checked at before it is timed: odd (4-byte copies and
#: stores), and K, N multiples of 4 with ragged M, N, K edges (float4 copies and stores)
CHECK_SHAPES = ((1001, 999, 997), (1003, 1028, 1020))
#: the numba float4 kernel needs K, N % 4 == 0: its check shape
NUMBA_F4_CHECK = (1001, 1004, 996)


def _matrices(m, n, k, seed):
    import cupy

    from simtlab.gpubench.harness import nonzero_random

    return nonzero_random((m, k), seed) - cupy.float32(1.0), nonzero_random((k, n), seed + 1) - cupy.float32(1.0)


def _relative_error(c, a, b) -> float:
    import cupy

    want = a.astype(cupy.float64) @ b.astype(cupy.float64)
    scale = cupy.abs(a).astype(cupy.float64) @ cupy.abs(b).astype(cupy.float64)
    return float(cupy.max(cupy.abs(c - want) / scale))


def _check(prepare, shape, seed=3) -> float:
    """Largest error of ``prepare(a, b, c)()`` at ``shape`` relative to sum |a||b| (C starts as NaN:
    an output never written shows); AssertionError above 1e-5."""
    import cupy

    m, n, k = shape
    a, b = _matrices(m, n, k, seed)
    c = cupy.full((m, n), cupy.nan, cupy.float32)
    prepare(a, b, c)()
    cupy.cuda.runtime.deviceSynchronize()
    err = _relative_error(c, a, b)
    assert err < 1e-5, f"relative error {err:.2e} at {shape}"
    return err


def _time(prepare, n) -> dict:
    """Median of one launch at n^3 (CUDA events, batches of ~20 ms, L2-warm as the course times)."""
    import cupy

    from simtlab.gpubench import time_launches

    a, b = _matrices(n, n, n, 1)
    c = cupy.empty((n, n), cupy.float32)
    t = time_launches(prepare(a, b, c), warmup=3, repeat=10, batch_ms=20.0)
    return {"median_ms": t["median_ms"], "spread": t["spread"], "tflops": 2 * n ** 3 / (t["median_ms"] * 1e-3) / 1e12}


# every launcher below is prepare(a, b, c) -> run(): binding once, launching many times
def cublas_launch(a, b, c):
    from simtlab.gpubench.gemm import cublas_runner

    return cublas_runner(a, b, c)


def course_launch(label, impl):
    from simtlab.gpubench.gemm import gemm_runner

    return lambda a, b, c: gemm_runner(label, impl, a, b, c)


def v8_launch(config):
    """``(launch, kernel)``: ``config`` compiled alone, launched by its plan's grid and shared bytes."""
    import cupy

    from simtlab.cuda_source import NVRTC_OPTIONS
    from simtlab.kernels import gemm as G

    kernel = cupy.RawModule(code=G.v8_source(config.kernel), options=NVRTC_OPTIONS).get_function(config.kernel)
    if config.shared_bytes > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = config.shared_bytes

    def prepare(a, b, c):
        m, k = a.shape
        n = b.shape[1]
        grid, args = config.plan.grid(m, n), (a, b, c, cupy.int32(m), cupy.int32(n), cupy.int32(k))

        def run():
            kernel(grid, config.plan.block, args, shared_mem=config.shared_bytes)
        return run
    return prepare, kernel


def v9_launch(config):
    """``(launch, kernel)``: ``config``'s two kernels compiled alone; the launch picks the float4
    kernel when K and N are multiples of 4, else the scalar twin (as the chapter's plan does)."""
    import cupy

    from simtlab.cuda_source import NVRTC_OPTIONS
    from simtlab.kernels import gemm as G

    module = cupy.RawModule(code=G.v9_source(config.kernel), options=NVRTC_OPTIONS)
    vec, scalar = module.get_function(config.kernel), module.get_function(config.kernel + "_scalar")

    def prepare(a, b, c):
        m, k = a.shape
        n = b.shape[1]
        kernel = vec if k % 4 == 0 and n % 4 == 0 else scalar
        grid, args = config.plan.grid(m, n), (a, b, c, cupy.int32(m), cupy.int32(n), cupy.int32(k))

        def run():
            kernel(grid, config.plan.block, args)
        return run
    return prepare, vec


def numba_f4_launch():
    from numba import cuda

    from simtlab.kernels import gemm as G

    kern = G.numba_v7_float4_kernel()

    def prepare(a, b, c):
        grid, block = G.numba_v7_float4_launch(a.shape[0], b.shape[1], a.shape[1])
        launch, views = kern[grid, block], [cuda.as_cuda_array(x, sync=False) for x in (a, b, c)]

        def run():
            launch(*views)
        run.keep = (a, b, c)
        return run
    return prepare, kern


def _resources_numba(kern) -> dict:
    out = {}
    for what, key in (("get_regs_per_thread", "registers"), ("get_local_mem_per_thread", "local_bytes")):
        try:
            value = getattr(kern, what)()
            out[key] = int(next(iter(value.values())) if isinstance(value, dict) else value)
        except Exception as e:                                  # noqa: BLE001
            out[key + "_error"] = repr(e)
    return out


def run_row(name, body, log) -> dict:
    """``body()`` -> dict, in its own try: a failure is the row's ``error``."""
    t0 = time.perf_counter()
    try:
        row = {"name": name, **body()}
    except Exception as e:                                      # noqa: BLE001 (one row fails, the sweep goes on)
        row = {"name": name, "error": f"{type(e).__name__}: {str(e)[:400]}", "trace": traceback.format_exc()[-1500:]}
    row["seconds"] = round(time.perf_counter() - t0, 1)
    log(f"  {name:<48} " + (f"{row['tflops']:6.2f} TFLOP/s" + (f"  regs {row.get('registers')}  local {row.get('local_bytes')} B"
                                                               if "registers" in row else "")
                              if "tflops" in row else "FAILED " + row["error"][:200]))
    return row


def sweep(n, log, v8="all") -> dict:
    from simtlab.kernels import gemm as G

    result = {"n": n, "check_shapes": CHECK_SHAPES, "rows": []}
    rows = result["rows"]

    def reference(name, launch, impl):
        def body():
            _check(launch, CHECK_SHAPES[0])
            return {"impl": impl, **_time(launch, n)}
        rows.append(run_row(name, body, log))

    reference("cuBLAS SGEMM (first)", cublas_launch, "library")
    reference("v7 warp tiling (CUDA C)", course_launch("v7 warp tiling", "cuda-c"), "cuda-c")
    v8_configs = {"all": G.V8_CONFIGS, "champion": (G.v8_config(G.V8_CHAMPION),), "none": ()}[v8]
    for config in v8_configs:
        def body(config=config):
            launch, kernel = v8_launch(config)
            errors = [_check(launch, shape) for shape in CHECK_SHAPES]
            return {"impl": "cuda-c", "kernel": config.kernel, "config": config.describe, "reason": config.reason,
                    "max_rel_error": max(errors), "registers": int(kernel.num_regs),
                    "local_bytes": int(kernel.local_size_bytes), "shared_bytes": config.shared_bytes,
                    **_time(launch, n)}
        rows.append(run_row(config.kernel, body, log))
    for config in G.V9_CONFIGS:
        def body(config=config):
            launch, kernel = v9_launch(config)
            errors = [_check(launch, shape) for shape in CHECK_SHAPES]
            return {"impl": "cuda-c", "kernel": config.kernel, "family": "v9", "config": config.describe,
                    "reason": config.reason, "max_rel_error": max(errors), "registers": int(kernel.num_regs),
                    "local_bytes": int(kernel.local_size_bytes), "shared_bytes": config.shared_bytes,
                    **_time(launch, n)}
        rows.append(run_row(config.kernel, body, log))
    reference("v7 warp tiling (numba)", course_launch("v7 warp tiling", "numba"), "numba")

    def numba_f4():
        launch, kern = numba_f4_launch()
        err = _check(launch, NUMBA_F4_CHECK)
        return {"impl": "numba", "max_rel_error": err, **_time(launch, n), **_resources_numba(kern)}
    rows.append(run_row("v7 float4 (numba + linked CUDA C loads)", numba_f4, log))
    reference("cuBLAS SGEMM (last)", cublas_launch, "library")

    cublas = [r["tflops"] for r in rows if r["name"].startswith("cuBLAS") and "tflops" in r]
    if cublas:
        result["cublas_tflops"] = sum(cublas) / len(cublas)
        for r in rows:
            if "tflops" in r:
                r["of_cublas"] = r["tflops"] / result["cublas_tflops"]
    for family, key in (("v8", "best"), ("v9", "best_v9")):
        found = [r for r in rows if r.get("kernel", "").startswith(f"gemm_{family}_") and "tflops" in r]
        if found:
            best = max(found, key=lambda r: r["tflops"])
            result[key] = {k: best[k] for k in ("kernel", "config", "tflops", "of_cublas") if k in best}
    return result


def table(result) -> str:
    lines = [f"GEMM {result['n']}^3 FP32, {result.get('device', '?')}, {result.get('date', '?')}; cuBLAS = mean of "
             f"the first and last cuBLAS rows ({result.get('cublas_tflops', float('nan')):.2f} TFLOP/s)",
             f"{'kernel':<48} {'ms':>8} {'TFLOP/s':>8} {'cuBLAS':>7} {'regs':>5} {'local':>6}  reason"]
    for r in result["rows"]:
        if "tflops" not in r:
            lines.append(f"{r['name']:<48} FAILED: {r['error'][:150]}")
            continue
        lines.append(f"{r['name']:<48} {r['median_ms']:8.3f} {r['tflops']:8.2f} {r.get('of_cublas', float('nan')):7.1%} "
                     f"{r.get('registers', ''):>5} {r.get('local_bytes', ''):>6}  {r.get('reason', '')}")
    for family, key in (("v8", "best"), ("v9", "best_v9")):
        if key in result:
            b = result[key]
            lines.append(f"\nbest {family}: {b['kernel']} ({b.get('config', '')}): {b['tflops']:.2f} TFLOP/s = "
                         f"{b.get('of_cublas', float('nan')):.1%} of cuBLAS")
            lines.append(f'set kernels/gemm.py: {family.upper()}_CHAMPION = "{b["kernel"]}"')
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--v8", choices=("all", "champion", "none"), default="all",
                   help="which v8 configurations to time (all: the whole sweep)")
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or ROOT / "benchmarks" / "results"))
    args = p.parse_args(argv)
    from simtlab.gpubench.gemm import fp32_reference
    from simtlab.gpubench.harness import stamp

    fp32_reference()
    t0 = time.perf_counter()
    result = sweep(args.size, lambda s: print(s, flush=True), v8=args.v8)
    result.update(stamp())
    result["seconds"] = round(time.perf_counter() - t0, 1)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gemm_v8_sweep.json").write_text(json.dumps(result, indent=1) + "\n")
    text = table(result)
    (args.out / "gemm_v8_sweep.txt").write_text(text + "\n")
    print("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
