"""The ceiling of mma.sync on this GPU against cuBLAS in the same precision (chapter 9).

    python benchmarks/mma_peak.py [--out FILE] [--store]

benchmarks/mma_peak.cu's kernels issue nothing but mma.sync from registers (TF32 m16n8k8, FP16 and
BF16 m16n8k16, FP32 accumulate), CHAINS independent accumulators per warp, on every SM at 1-4
blocks of 4-8 warps; the fastest launch shape is the ceiling. cuBLAS (cublasGemmEx, 4096^3, the
same runner chapter 9's benchmark uses) in the same run: a GEMM built on mma.sync cannot pass
the ceiling, so ceiling / cuBLAS is the most any mma.sync GEMM can reach of cuBLAS here.
Writes JSON (``--out``; default ``$OUT/mma_peak.json`` or benchmarks/results/mma_peak.json).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("CUPY_TF32", "0")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CU = Path(__file__).with_suffix(".cu")
#: kernel, precision, FLOPs of one mma.sync (2 m n k)
KERNELS = (("mma_peak_tf32", "tf32", 2 * 16 * 8 * 8), ("mma_peak_f16", "fp16", 2 * 16 * 8 * 16),
           ("mma_peak_bf16", "bf16", 2 * 16 * 8 * 16))
CHAINS = 8
ITERATIONS = 4096         # loop trips of every warp (each trip: CHAINS independent mma.sync)
SHAPES = ((1, 128), (2, 128), (4, 128), (1, 256), (2, 256), (4, 256))    # blocks per SM, threads per block


def ceiling(kernel, flops_per_mma, sms, log) -> dict:
    import cupy

    from simtlab.gpubench import time_launches

    best = None
    for per_sm, threads in SHAPES:
        blocks = sms * per_sm
        iterations = ITERATIONS
        out = cupy.empty(blocks * threads, cupy.float32)
        args = (out, cupy.int32(iterations), cupy.uint32(7))
        t = time_launches(lambda: kernel((blocks,), (threads,), args), warmup=2, repeat=7, batch_ms=20.0)
        flops = blocks * threads // 32 * iterations * CHAINS * flops_per_mma
        row = {"blocks_per_sm": per_sm, "threads": threads, "median_ms": t["median_ms"],
               "tflops": flops / (t["median_ms"] * 1e-3) / 1e12}
        log(f"    {per_sm} x {threads:<4} {row['tflops']:7.1f} TFLOP/s")
        if best is None or row["tflops"] > best["tflops"]:
            best = row
    return best


def cublas(precision, n=4096) -> dict:
    import cupy

    from simtlab.gpubench import time_launches
    from simtlab.gpubench import tensor_cores as TC

    _, _, a, b = TC.device_inputs((n, n, n), precision)
    c = cupy.empty((n, n), cupy.float32)
    t = time_launches(TC.cublas_runner(precision, a, b, c), warmup=3, repeat=10, batch_ms=20.0)
    return {"median_ms": t["median_ms"], "tflops": 2 * n ** 3 / (t["median_ms"] * 1e-3) / 1e12}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or ROOT / "benchmarks/results") / "mma_peak.json")
    p.add_argument("--store", action="store_true", help="also write results.mma_peak of simtlab/data/h100_timings.json")
    args = p.parse_args(argv)
    import cupy

    from simtlab.gpubench.harness import stamp

    module = cupy.RawModule(code=CU.read_text(), options=("-std=c++17",))
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    result = {"sms": sms, "chains": CHAINS, "rows": []}
    for name, precision, flops in KERNELS:
        print(f"{name}:", flush=True)
        peak = ceiling(module.get_function(name), flops, sms, lambda s: print(s, flush=True))
        lib = cublas(precision)
        row = {"kernel": name, "precision": precision, "ceiling": peak, "cublas_4096": lib,
               "ceiling_of_cublas": peak["tflops"] / lib["tflops"]}
        print(f"  ceiling {peak['tflops']:.1f} TFLOP/s, cuBLAS {lib['tflops']:.1f}: "
              f"{100 * row['ceiling_of_cublas']:.1f} %", flush=True)
        result["rows"].append(row)
    result.update(stamp())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    if args.store:
        store = ROOT / "simtlab/data/h100_timings.json"
        data = json.loads(store.read_text())
        data.setdefault("results", {})["mma_peak"] = {**result, "file": "benchmarks/results/mma_peak_h100.json",
                                                      "command": "python benchmarks/mma_peak.py --store"}
        store.write_text(json.dumps(data, indent=1) + "\n")
        print(f"stored results.mma_peak in {store}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
