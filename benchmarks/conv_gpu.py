"""Time every convolution version of chapter 7 against cuDNN, on this GPU.

    python benchmarks/conv_gpu.py [--layers C1 C3] [--batches 1000 10000] [--out FILE]

For each of ECE408's LeNet-5 layers (C1: 1 -> 4 maps, 7x7 on 86x86; C3: 4 -> 16 maps, 7x7 on
40x40) and each batch, every version of ``simtlab/gpubench/conv.py`` is first checked against
the CPU reference at a batch of 7, then timed with CUDA events (warm-up, batches of launches,
median of 15). cuDNN (PyTorch ``conv2d``, TF32 off, ``cudnn.benchmark`` on) is timed in the same
run; the ratio is cuDNN's time over the version's time (above 1: faster than cuDNN).

Results go to the key ``topics.conv`` of ``simtlab/data/h100_timings.json``, the one store of
recorded GPU figures (or of ``--out``), which chapter 7 plots when there
is no GPU; a table is printed at the end.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

H100_FP32_TFLOPS = 66.9      # 132 SMs x 128 FP32 lanes x 2 FLOPs x 1.98 GHz (boost)
H100_HBM_GBPS = 3350.0       # H100 SXM HBM3


def main(argv=None) -> int:
    from simtlab import backend, gpubench
    from simtlab.gpubench import conv as G
    from simtlab.gpubench.harness import run_topic, stamp

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", nargs="+", default=list(G.LAYERS), choices=G.LAYERS)
    p.add_argument("--batches", nargs="+", type=int, default=list(G.BATCHES))
    p.add_argument("--only", nargs="+", help="time only versions whose name contains one of these")
    p.add_argument("--out", type=Path, default=None, help="the store to write (default: simtlab/data/h100_timings.json)")
    args = p.parse_args(argv)
    args.out = args.out or gpubench.RESULTS_PATH
    if not backend.gpu_available():
        print(f"conv_gpu: no usable GPU ({backend.unavailable_reason()})", file=sys.stderr)
        return 1
    data = gpubench.stored("conv", args.out) or {}
    data.update(stamp())
    data.setdefault("layers", {})
    data["peaks"] = {"fp32_tflops": H100_FP32_TFLOPS, "hbm_gbps": H100_HBM_GBPS}
    t0 = time.perf_counter()
    for layer in args.layers:
        cases = {c.name: c for c in G.cases(layer)}
        for batch in args.batches:
            print(f"== {layer}, batch {batch:,} ==", flush=True)
            res = run_topic(G.layer_module(layer), n=batch, sweep=None, check_n=G.CHECK_BATCH,
                            only=args.only, log=lambda s: print(s, flush=True))
            flops = cases[res["rows"][0]["name"]].flops(batch)
            nbytes = res["rows"][0]["bytes"]
            for r in res["rows"]:
                r["tflops"] = flops / (r["median_ms"] * 1e-3) / 1e12
            res.update(layer=layer, batch=batch, flops=flops, bytes=nbytes, shape=G.layer_shape(layer),
                       roofline_ms=max(flops / (H100_FP32_TFLOPS * 1e12), nbytes / (H100_HBM_GBPS * 1e9)) * 1e3)
            data["layers"].setdefault(layer, {})[str(batch)] = res
            args.out.parent.mkdir(parents=True, exist_ok=True)
            gpubench.store("conv", data, args.out)
    print(f"\n{data['device']}, {data['date']}; {time.perf_counter() - t0:.0f} s in all; written to {args.out}")
    for layer in args.layers:
        for batch in args.batches:
            res = data["layers"][layer][str(batch)]
            print(f"\n{layer} batch {batch:,}: {res['flops'] / 1e9:.2f} GFLOP, {res['bytes'] / 1e6:.0f} MB, "
                  f"roofline {res['roofline_ms']:.3f} ms")
            print(f"{'version':<34} {'ms':>9} {'TFLOP/s':>8} {'GB/s':>7} {'vs cuDNN':>9}")
            for r in sorted(res["rows"], key=lambda r: r["median_ms"]):
                print(f"{r['name']:<34} {r['median_ms']:9.3f} {r['tflops']:8.2f} {r['gbps']:7.0f} {r['ratio']:8.2f}x")
            for e in res.get("errors") or []:
                print(f"{e['name']:<34} FAILED: {e['error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
