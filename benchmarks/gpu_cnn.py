"""Chapter 8's benchmark: the LeNet-5-like network from the course's kernels vs PyTorch (cuDNN,
FP32, TF32 off) vs NumPy on the CPU, on one GPU, every ratio from this one run.

    python benchmarks/gpu_cnn.py --out benchmarks/results/cnn_gpu_h100.json

1. batch 1 latency: host wall-clock from the first launch to the end of a synchronize, median
   of 300 forward passes: course kernels (CUDA C via CuPy, and numba-cuda) launched one by one
   and replayed as a CUDA graph, against PyTorch eager and PyTorch with a CUDA graph;
2. batch 10,000 throughput: GPU time between CUDA events (simtlab.gpubench.harness.time_launches,
   runs queued back to back, L2-warm) of the whole forward pass;
3. per layer, at batch 10,000 and at batch 1: each layer alone on the previous layer's real
   output; NumPy's reference (kernels/cnn.py, float64 sums) timed on the CPU at batch 1,000.

The weights are the trained ones (simtlab/data/cnn_weights.npz); the images are the shipped
sample (repeated to 10,000). The results file feeds simtlab/data/cnn_gpu.json (the chapter's
recorded tables).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simtlab import cnn_data  # noqa: E402
from simtlab.gpubench.cnn import capture_graph, course_forward, to_gpu_params, torch_layers, torch_model  # noqa: E402
from simtlab.gpubench.harness import stamp, time_launches  # noqa: E402
from simtlab.kernels import cnn  # noqa: E402

BIG = 10_000


def wall_ms(fn, sync, n=300, warmup=30):
    """Median host wall-clock of ``fn(); sync()`` in ms: what a caller waiting for one answer sees."""
    for _ in range(warmup):
        fn()
        sync()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def cpu_layers(params, x):
    """NumPy reference per layer (ms), each on the previous layer's output."""
    p = params
    t = {}

    def timed(name, f):
        t0 = time.perf_counter()
        r = f()
        t[name] = (time.perf_counter() - t0) * 1e3
        return r

    c1 = timed("conv1", lambda: np.maximum(cnn.conv2d_cpu(x, p["conv1_w"]) + p["conv1_b"][None, :, None, None], 0))
    p1 = timed("pool1", lambda: cnn.maxpool_cpu(c1))
    c2 = timed("conv2", lambda: np.maximum(cnn.conv2d_cpu(p1, p["conv2_w"]) + p["conv2_b"][None, :, None, None], 0))
    p2 = timed("pool2", lambda: cnn.maxpool_cpu(c2))
    f1 = timed("fc1", lambda: cnn.dense_cpu(p2.reshape(len(x), -1), p["fc1_w"], p["fc1_b"], True))
    f2 = timed("fc2", lambda: cnn.dense_cpu(f1, p["fc2_w"], p["fc2_b"], False))
    timed("softmax", lambda: cnn.softmax_cpu(f2))
    return t


def main() -> None:
    import cupy
    import torch

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cnn_gpu.json")
    args = parser.parse_args()
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True              # cuDNN picks its fastest algorithm per shape

    params = cnn_data.load_weights()
    sample = cnn_data.load_sample()
    pg = to_gpu_params(params)
    model = torch_model(params)
    result = {"stamp": stamp(), "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
              "tf32": False, "batch_big": BIG}
    sync_all = cupy.cuda.runtime.deviceSynchronize
    args.out.parent.mkdir(parents=True, exist_ok=True)

    def save():
        args.out.write_text(json.dumps(result, indent=1, default=str))

    def section(name, body):
        """Run one part; a failure is recorded (and printed) and the next part still runs."""
        import traceback
        try:
            body()
        except Exception:
            result.setdefault("errors", {})[name] = traceback.format_exc()
            print(f"{name} FAILED:\n{traceback.format_exc()}", flush=True)
        save()

    # ---------------------------------------------------------------- batch 1 latency
    st = {}

    def batch1():
        x1 = cnn_data.to_input(sample.images[:1])
        x1g, x1t = cupy.asarray(x1), torch.from_numpy(x1).cuda()
        lat = {}
        for impl in ("cuda-c", "numba"):
            run, out, _ = course_forward(pg, x1g, impl=impl, conv="fused", fc="vecmat")
            lat[f"course {impl} eager"] = wall_ms(run, sync_all)
        # numba-cuda launches on the legacy default stream, which a capture cannot record: CUDA C only
        replay, stream = capture_graph(course_forward(pg, x1g, impl="cuda-c", conv="fused", fc="vecmat")[0])
        lat["course cuda-c CUDA graph"] = wall_ms(replay, stream.synchronize)
        run1, out1, steps1 = course_forward(pg, x1g, impl="cuda-c", conv="fused", fc="vecmat")
        run1i, out1i, steps1i = course_forward(pg, x1g, impl="cuda-c", conv="implicit", fc="gemm")
        lat["course cuda-c eager, implicit GEMM + tiled FC (7 launches)"] = wall_ms(run1i, sync_all)
        with torch.inference_mode():
            lat["PyTorch eager"] = wall_ms(lambda: model(x1t), torch.cuda.synchronize)
            static_x = x1t.clone()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    model(static_x)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                static_out = model(static_x)
            lat["PyTorch CUDA graph"] = wall_ms(graph.replay, torch.cuda.synchronize)
            np.testing.assert_allclose(static_out.cpu().numpy(), cnn.forward_cpu(params, x1)["softmax"], rtol=1e-4, atol=1e-6)
        run1()
        sync_all()
        np.testing.assert_allclose(cupy.asnumpy(out1["softmax"]), cnn.forward_cpu(params, x1)["softmax"], rtol=1e-4, atol=1e-6)
        result["batch1_latency_ms"] = lat
        result["batch1_ratios"] = {
            "course graph / PyTorch eager": lat["course cuda-c CUDA graph"] / lat["PyTorch eager"],
            "course graph / PyTorch graph": lat["course cuda-c CUDA graph"] / lat["PyTorch CUDA graph"],
            "course eager / PyTorch eager": lat["course cuda-c eager"] / lat["PyTorch eager"]}
        st.update(x1g=x1g, x1t=x1t, run1=run1, steps1=steps1, steps1i=steps1i)

    section("batch 1", batch1)

    # ---------------------------------------------------------------- batch 10,000 throughput
    def big():
        reps = -(-BIG // len(sample))
        xb = cnn_data.to_input(np.tile(sample.images, (reps, 1, 1))[:BIG])
        labels_b = np.tile(sample.labels, reps)[:BIG]
        xbg, xbt = cupy.asarray(xb), torch.from_numpy(xb).cuda()
        thr = {}
        runs = {}
        for conv in ("fused", "implicit"):
            run, out, steps = course_forward(pg, xbg, impl="cuda-c", conv=conv, fc="gemm")
            runs[conv] = (run, out, steps)
            thr[f"course cuda-c {conv}"] = time_launches(run, repeat=15)["median_ms"]
        run_n, out_n, _ = course_forward(pg, xbg, impl="numba", conv="fused", fc="gemm")
        thr["course numba fused"] = time_launches(run_n, repeat=15)["median_ms"]
        with torch.inference_mode():
            thr["PyTorch eager"] = time_launches(lambda: model(xbt), repeat=15)["median_ms"]
            torch_probs = model(xbt)
            torch_labels = torch_probs.argmax(1).cpu().numpy()
        run_f, out_f, steps_f = runs["fused"]
        run_f()
        sync_all()
        course_labels = cupy.asnumpy(out_f["labels"])
        result["batch_big_ms"] = thr
        result["batch_big_images_per_s"] = {k: BIG / (v / 1e3) for k, v in thr.items()}
        result["batch_big_ratio_pytorch_over_course"] = thr["PyTorch eager"] / thr["course cuda-c fused"]
        result["agreement"] = {"course vs PyTorch labels equal": float((course_labels == torch_labels).mean()),
                               "accuracy course": float((course_labels == labels_b).mean()),
                               "accuracy PyTorch": float((torch_labels == labels_b).mean())}
        st.update(xbg=xbg, xbt=xbt, runs=runs, steps_f=steps_f)

    section("batch big", big)

    # ---------------------------------------------------------------- per layer
    def per_layer(xg, xt, course_steps_implicit, course_steps_fused):
        rows = {}
        for layer, step in course_steps_implicit.items():
            rows.setdefault(layer, {})["course implicit"] = time_launches(step, repeat=10)["median_ms"]
        for layer, step in course_steps_fused.items():
            if "+" in layer:
                rows.setdefault(layer, {})["course fused"] = time_launches(step, repeat=10)["median_ms"]
        with torch.inference_mode():
            h = xt
            for layer, mods in torch_layers(model).items():
                inp = h
                rows[layer]["PyTorch"] = time_launches(lambda inp=inp, mods=mods: mods(inp), repeat=10)["median_ms"]
                h = mods(inp)
        for pair in ("1", "2"):
            rows[f"conv{pair}+pool{pair}"]["PyTorch"] = rows[f"conv{pair}"]["PyTorch"] + rows[f"pool{pair}"]["PyTorch"]
        return rows

    def layers_big():
        run_i, out_i, steps_i = st["runs"]["implicit"]
        run_i()
        st["runs"]["fused"][0]()
        sync_all()
        result["per_layer_big_ms"] = per_layer(st["xbg"], st["xbt"], steps_i, st["steps_f"])

    def layers_1():
        result["per_layer_1_ms"] = per_layer(st["x1g"], st["x1t"], st["steps1i"], st["steps1"])

    def numpy_cpu():
        xb = cnn_data.to_input(np.tile(sample.images, (5, 1, 1))[:1000])
        cpu = cpu_layers(params, xb)
        result["per_layer_numpy_cpu_batch1000_ms"] = cpu
        result["numpy_cpu_batch1000_total_ms"] = sum(cpu.values())

    section("per layer big", layers_big)
    section("per layer 1", layers_1)
    section("numpy cpu", numpy_cpu)
    result["layers"] = cnn.layer_table(BIG)
    save()
    cpu = result.get("per_layer_numpy_cpu_batch1000_ms", {})
    print(json.dumps({k: result.get(k) for k in ("batch1_latency_ms", "batch1_ratios", "batch_big_ms",
                                             "batch_big_ratio_pytorch_over_course", "agreement")}, indent=1))
    print("per layer, batch 10,000 (ms):")
    for layer, row in result.get("per_layer_big_ms", {}).items():
        print(f"  {layer:12s} " + "  ".join(f"{k} {v:.4f}" for k, v in row.items()) +
              (f"  NumPy(b=1000) {cpu[layer]:.1f}" if layer in cpu else ""))
    print("per layer, batch 1 (ms):")
    for layer, row in result.get("per_layer_1_ms", {}).items():
        print(f"  {layer:12s} " + "  ".join(f"{k} {v:.4f}" for k, v in row.items()))


if __name__ == "__main__":
    main()
