"""Measurements behind chapters 6-8's claims, on the GPU at hand (one run, one card).

    python benchmarks/probe_ch6_8.py [--out DIR] [--only cudnn compile gemm batch1]

Sections (each in its own try: one failure prints its error and the others still run):

- ``cudnn``: cuDNN (PyTorch ``conv2d``, ``cudnn.benchmark`` on) on ECE408's LeNet layers C1 and C3
  at batch 1000, in every layout (NCHW, NHWC = ``channels_last``) and precision (FP32 with TF32
  off, TF32, FP16, BF16), with the kernels cuDNN ran (from ``torch.profiler``: their names say
  the algorithm: fft, winograd, implicit_gemm, ...), next to the course's v5/v6 (FP32-exact) in
  the same run.
- ``compile``: the chapter-8 network at batch 1 and 10,000, PyTorch eager against
  ``torch.compile`` (FP32, TF32 off), beside the course's fused forward.
- ``gemm``: the register-cap ablation at 4096^3: v6 and v7 with ``__launch_bounds__(256, 1)``
  and ``(256, 2)`` (compiled with ``-DV6_MIN_BLOCKS`` / ``-DV7_MIN_BLOCKS``), their registers per
  thread (``RawKernel.num_regs``) and cuBLAS in the same run.
- ``batch1``: the chapter-8 forward at batch 1, each kernel timed alone (CUDA events around 1000
  back-to-back launches of that kernel: its launch-to-launch time) and the whole forward eager
  and as a CUDA graph.

Results: ``DIR/probe_ch6_8.json`` (DIR: ``$OUT`` or ``benchmarks/results``) and a printed table.
Nsight Compute runs on the same kernels are in ``tools/device_ch6_8_probe.sh``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("CUPY_TF32", "0")

from simtlab.gpubench.torch_timing import events_ms, kernel_times  # noqa: E402  (torch is imported when they run)

SECTIONS = ("cudnn", "compile", "gemm", "batch1")


def _kernels_run(fn):
    """``[(kernel name, total µs)]`` of the four longest CUDA kernels one ``fn()`` ran."""
    return kernel_times(fn)[:4]


def cudnn_table(log):
    import cupy
    import torch

    from simtlab.gpubench import conv as G
    from simtlab.kernels.conv import V6_TILES, conv_flops

    out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "rows": []}
    torch.backends.cudnn.benchmark = True
    batch = 1000
    precisions = {"fp32": (torch.float32, False), "tf32": (torch.float32, True),
                  "fp16": (torch.float16, False), "bf16": (torch.bfloat16, False)}
    for layer in ("C1", "C3"):
        s = G.layer_shape(layer)
        ho, wo = s["H"] - s["K"] + 1, s["W"] - s["K"] + 1
        flops = conv_flops(batch, s["C"], s["M"], s["K"], ho, wo)
        x, w = G._inputs(layer, batch)
        xt, wt = torch.from_dlpack(x), torch.from_dlpack(w)
        for layout in ("NCHW", "NHWC"):
            for pname, (dtype, tf32) in precisions.items():
                torch.backends.cudnn.allow_tf32 = tf32
                torch.backends.cuda.matmul.allow_tf32 = tf32
                fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
                xa = xt.to(dtype).contiguous(memory_format=fmt)
                wa = wt.to(dtype).contiguous(memory_format=fmt)
                try:
                    def run():
                        return torch.nn.functional.conv2d(xa, wa)
                    ms = events_ms(run)
                    kernels = _kernels_run(run)
                    row = {"layer": layer, "layout": layout, "precision": pname, "ms": ms,
                           "tflops": flops / ms / 1e9, "kernels": kernels}
                except Exception as e:                      # noqa: BLE001 (one cell fails, the table goes on)
                    row = {"layer": layer, "layout": layout, "precision": pname, "error": repr(e)}
                out["rows"].append(row)
                log(f"cuDNN {layer} {layout} {pname}: {row.get('ms', float('nan')):.3f} ms  "
                    f"{[k for k, _ in row.get('kernels', [])][:2]}")
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        course = []
        for v5 in G.V5_CONFIGS[layer][:1]:
            course.append(("v5 tuned {}x{}x{}".format(*v5), "v5 tuned", v5))
        for tile in V6_TILES[(s["C"], s["M"], s["K"])][:1]:
            course.append(("v6 image per block tw{} nt{}".format(*tile), "v6 image per block", tile))
        for name, label, cfg in course:
            try:
                run, _ = G.conv_runner(label, "cuda-c", x, w, config=cfg)
                ms = events_ms(run)
                out["rows"].append({"layer": layer, "layout": "NCHW", "precision": "fp32 (course)",
                                    "name": name, "ms": ms, "tflops": flops / ms / 1e9})
                log(f"course {layer} {name}: {ms:.3f} ms")
            except Exception as e:                          # noqa: BLE001
                out["rows"].append({"layer": layer, "name": name, "error": repr(e)})
        cupy.cuda.runtime.deviceSynchronize()
    return out


def compile_rows(log):
    import cupy
    import numpy as np
    import torch

    from simtlab.cnn_data import load_weights
    from simtlab.gpubench import cnn as GC

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    params = load_weights()
    model = GC.torch_model(params)
    out = {"rows": []}
    for batch in (1, 10_000):
        x = np.random.default_rng(0).random((batch, 1, 28, 28), dtype=np.float32)
        xt = torch.from_numpy(x).cuda()
        with torch.inference_mode():
            eager = events_ms(lambda: model(xt))
            t0 = time.perf_counter()
            compiled = torch.compile(model)
            compiled(xt)
            torch.cuda.synchronize()
            compile_s = time.perf_counter() - t0
            comp = events_ms(lambda: compiled(xt))
            cl_model = GC.torch_model(params).to(memory_format=torch.channels_last)
            xcl = xt.contiguous(memory_format=torch.channels_last)
            cl = events_ms(lambda: cl_model(xcl))
        run, _, _ = GC.course_forward(GC.to_gpu_params(params), cupy.asarray(x))
        course = events_ms(run)
        row = {"batch": batch, "eager_ms": eager, "channels_last_ms": cl, "compile_ms": comp,
               "compile_seconds": compile_s, "course_fused_ms": course}
        out["rows"].append(row)
        log(f"CNN batch {batch}: eager {eager:.3f}, channels_last {cl:.3f}, torch.compile {comp:.3f} "
            f"(compiled in {compile_s:.0f} s), course fused {course:.3f} ms")
    return out


def gemm_ablation(log):
    import cupy

    from simtlab.cuda_source import cu_path
    from simtlab.gpubench.gemm import cublas_runner
    from simtlab.gpubench.harness import nonzero_random

    n = 4096
    a, b = nonzero_random((n, n), 1), nonzero_random((n, n), 2)
    c = cupy.empty((n, n), cupy.float32)
    want = cupy.matmul(a.astype(cupy.float64), b.astype(cupy.float64)).astype(cupy.float32)
    source = cu_path("gemm").read_text()
    flops = 2.0 * n ** 3
    out = {"n": n, "rows": []}
    cublas_ms = events_ms(cublas_runner(a, b, c), inner=5)
    out["cublas_ms"] = cublas_ms
    log(f"cuBLAS SGEMM {n}^3: {cublas_ms:.3f} ms, {flops / cublas_ms / 1e9:.1f} TFLOP/s")
    bm = 128
    for kernel, macro in (("gemm_v6_float4", "V6_MIN_BLOCKS"), ("gemm_v7_warptile", "V7_MIN_BLOCKS")):
        for blocks in (1, 2):
            try:
                mod = cupy.RawModule(code=source, options=("-std=c++17", f"-D{macro}={blocks}"))
                k = mod.get_function(kernel)
                grid = ((n + bm - 1) // bm, (n + bm - 1) // bm)

                def run(k=k):
                    k(grid, (256,), (a, b, c, cupy.int32(n), cupy.int32(n), cupy.int32(n)))
                ms = events_ms(run, inner=5)
                err = float(cupy.abs(c - want).max() / cupy.abs(want).max())
                row = {"kernel": kernel, "min_blocks": blocks, "regs": int(k.num_regs),
                       "local_bytes": int(k.local_size_bytes), "ms": ms,
                       "tflops": flops / ms / 1e9, "of_cublas": cublas_ms / ms, "max_rel_err": err}
            except Exception as e:                          # noqa: BLE001
                row = {"kernel": kernel, "min_blocks": blocks, "error": repr(e)}
            out["rows"].append(row)
            log(f"{kernel} launch_bounds(256, {blocks}): {row}")
    return out


def batch1(log):
    import cupy
    import numpy as np

    from simtlab.cnn_data import load_weights
    from simtlab.gpubench import cnn as GC

    params = GC.to_gpu_params(load_weights())
    x = cupy.asarray(np.random.default_rng(0).random((1, 1, 28, 28), dtype=np.float32))
    out = {"kernels": {}}
    run, _, steps = GC.course_forward(params, x)
    for layer, step in steps.items():
        ms = events_ms(step, inner=1000, repeat=5)
        out["kernels"][layer] = {"ms": ms, "launches": len(step.keep)}
        log(f"batch 1, {layer} alone ({len(step.keep)} launches): {ms * 1e3:.1f} µs")
    out["forward_eager_ms"] = events_ms(run, inner=1000, repeat=5)
    replay, stream = GC.capture_graph(run)
    out["forward_graph_ms"] = events_ms(replay, inner=1000, repeat=5)
    log(f"batch 1 forward: eager {out['forward_eager_ms'] * 1e3:.1f} µs, graph "
        f"{out['forward_graph_ms'] * 1e3:.1f} µs")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or ROOT / "benchmarks" / "results"))
    p.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    args = p.parse_args(argv)
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    result = {"device": props["name"].decode(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    sections = {"cudnn": cudnn_table, "compile": compile_rows, "gemm": gemm_ablation, "batch1": batch1}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "probe_ch6_8.json"
    for name in args.only:
        t0 = time.perf_counter()
        try:
            result[name] = sections[name](lambda s: print(s, flush=True))
        except Exception:                                  # noqa: BLE001
            result[name] = {"error": traceback.format_exc()}
            print(result[name]["error"], flush=True)
        result.setdefault("seconds", {})[name] = round(time.perf_counter() - t0, 1)
        path.write_text(json.dumps(result, indent=1))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
