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

    CUPY_TF32=0 python benchmarks/conv_gpu.py --optim [--batches 1000] [--out FILE]

``--optim`` times chapter 7's optimisation rows instead (``gpubench.conv.optim_cases``): im2col
judged fairly, with cuBLAS SGEMM (FP32) as its GEMM (the whole layer, and the SGEMM alone), the
course's v2, v3 and v3b (the offset table, CUDA C and numba), v6, against cuDNN in the same run;
and the SASS of v3's and v3b's CUDA C (opcode counts of the whole kernel and of its hottest loop,
``benchmarks/sass_gemm.py``'s helpers). It writes plain JSON to ``--out`` (default
``benchmarks/results/conv_optim_h100.json``) and the same entry to ``topics.conv_optim`` of the
package's store, which chapter 7 reads (a built wheel ships the store, not benchmarks/).

    python benchmarks/conv_gpu.py --storage [--layers C1 C3] [--batches 1000] [--out FILE]

``--storage`` times v6 (FP32) against v6h, the same kernel and tile with x and y stored in FP16
and in BF16 (``gpubench.conv.storage_cases``), in one run: each row's bytes (x and y in its own
width, w in FP32), its achieved GB/s, and its time against v6 FP32. Plain JSON to ``--out``
(default ``benchmarks/results/conv_storage_h100.json``) and to ``topics.conv_storage`` of the store,
which chapter 7 reads.
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
    p.add_argument("--out", type=Path, default=None, help="the store to write (default: simtlab/data/h100_timings.json; "
                   "with --optim: benchmarks/results/conv_optim_h100.json)")
    p.add_argument("--optim", action="store_true", help="time the optimisation rows (im2col + cuBLAS, v3b) instead")
    p.add_argument("--storage", action="store_true", help="time v6 FP32 against v6h (FP16 and BF16 storage) instead")
    args = p.parse_args(argv)
    if not backend.gpu_available():
        print(f"conv_gpu: no usable GPU ({backend.unavailable_reason()})", file=sys.stderr)
        return 1
    if args.optim:
        return optim(args)
    if args.storage:
        return storage(args)
    args.out = args.out or gpubench.RESULTS_PATH
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


def sass_counts(names=("conv_v3_implicit_gemm", "conv_v3b_offset_table")) -> dict:
    """Opcode counts of CUDA C kernels of conv.cu (the whole kernel and its hottest loop), with
    benchmarks/sass_gemm.py's NVRTC + cuobjdump path; an error string where that path fails."""
    import collections

    from sass_gemm import cuda_c_sass, hottest_loop, instructions

    from simtlab.cuda_c_kernels import kernel_only_source
    from simtlab.cuda_source import cu_path

    source = cu_path("conv").read_text()
    out = {}
    for name in names:
        try:
            ins = instructions(cuda_c_sass(name, kernel_only_source(source, name)))
            loop = hottest_loop(ins)
            out[name] = {"instructions": len(ins), "opcodes": dict(collections.Counter(op for _, op, _ in ins)),
                         "loop_instructions": len(loop),
                         "loop_opcodes": dict(collections.Counter(op for _, op, _ in loop))}
        except Exception as e:                      # no cuobjdump: the timings still count
            out[name] = {"error": f"{type(e).__name__}: {e}"}
    return out


def _layer_rows(args, module_of, cases_of, title: str, extra=None) -> tuple:
    """Run ``module_of(layer)`` (a gpubench topic of rows) on each layer and batch in one run:
    ``(data, batches)``, every row with its TFLOP/s, every layer entry with ``extra(res, flops)``
    added (bytes, roofline, ...)."""
    from simtlab.gpubench import conv as G
    from simtlab.gpubench.harness import run_topic, stamp

    batches = args.batches if args.batches != list(G.BATCHES) else [1000]
    data = {**stamp(), "peaks": {"fp32_tflops": H100_FP32_TFLOPS, "hbm_gbps": H100_HBM_GBPS}, "layers": {}}
    for layer in args.layers:
        for batch in batches:
            print(f"== {layer}, batch {batch:,}: {title} ==", flush=True)
            res = run_topic(module_of(layer), n=batch, sweep=None, check_n=G.CHECK_BATCH,
                            only=getattr(args, "only", None), log=lambda s: print(s, flush=True))
            flops = cases_of(layer)[0].flops(batch)
            for r in res["rows"]:
                r["tflops"] = flops / (r["median_ms"] * 1e-3) / 1e12
            res.update(layer=layer, batch=batch, flops=flops, shape=G.layer_shape(layer), **(extra(res, flops) if extra else {}))
            data["layers"].setdefault(layer, {})[str(batch)] = res
    return data, batches


def _write(data: dict, out: Path, key: str) -> None:
    """The run's JSON file, and the same entry in the package's store (what a built wheel shows)."""
    import json

    from simtlab import gpubench

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    gpubench.store(key, data)
    print(f"written to {out} and topics.{key} of the store")


def optim(args) -> int:
    """``--optim``: the optimisation rows of each layer and batch, then the SASS of v3 and v3b."""
    from simtlab.gpubench import conv as G

    def roofline(res, flops):
        nbytes = res["rows"][0]["bytes"]
        return {"bytes": nbytes, "roofline_ms": max(flops / (H100_FP32_TFLOPS * 1e12), nbytes / (H100_HBM_GBPS * 1e9)) * 1e3}

    data, batches = _layer_rows(args, G.optim_module, G.optim_cases, "optimisation rows", roofline)
    for layer in args.layers:
        for batch in batches:
            print(G.summary_table({**data, "source": "measured"}, layer, batch), flush=True)
    data["sass"] = sass_counts()
    _write(data, args.out or ROOT / G.OPTIM_PATH, G.OPTIM_KEY)
    for layer in args.layers:
        for batch in batches:
            print(G.fair_gemm_summary({**data, "source": "recorded"}, layer, batch))
    return 0


def storage(args) -> int:
    """``--storage``: v6 FP32, v6h FP16 and v6h BF16 on each layer and batch, in one run."""
    from simtlab.gpubench import conv as G

    data, batches = _layer_rows(args, G.storage_module, G.storage_cases, "v6 FP32 against FP16 and BF16 storage")
    _write(data, args.out or ROOT / G.STORAGE_PATH, G.STORAGE_KEY)
    for layer in args.layers:
        for batch in batches:
            print(G.storage_summary({**data, "source": "measured"}, layer, batch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
