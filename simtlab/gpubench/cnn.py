"""Chapter 8 on a GPU: the network's forward pass from the course's kernels, and the same
network in PyTorch (cuDNN, FP32, TF32 off) to hold it against.

- :func:`course_forward`: ``(run, out, steps)``: ``run()`` enqueues one forward pass of
  kernels/cnn.py's plan (numba-cuda or CUDA C) on CuPy arrays; ``steps`` maps each layer to a
  function enqueuing that layer alone (the per-layer timing table).
- :func:`torch_model`: the same network and weights as ``torch.nn`` layers, and its layers one
  by one.
- :func:`capture_graph`: a CUDA graph of any enqueueing function (CuPy stream capture).
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from ..kernels import cnn
from .launch import bind

__all__ = ["course_forward", "conv1_paths", "torch_model", "torch_layers", "capture_graph", "to_gpu_params",
           "measure", "results", "wall_ms", "batch1_kernels", "pytorch_modes", "BATCH1_KERNELS"]


def to_gpu_params(params: dict) -> dict:
    import cupy

    return {k: cupy.asarray(v, cupy.float32) for k, v in cnn.check_params(params).items()}


def course_forward(params_gpu: dict, x_gpu, impl: str = "cuda-c", conv: str = "fused", fc: str = "gemm"):
    """``(run, out, steps)`` for one forward pass of ``x_gpu`` (CuPy, (B, 1, 28, 28))."""
    plan, out = cnn.network_plan(params_gpu, x_gpu, xp=__import__("cupy"), impl=impl, conv=conv, fc=fc)
    steps = {}
    for layer, launches in plan:
        bound = [bind(impl, cnn.TOPIC, s.kernel, s.grid, s.block, *s.args, shared=s.shared) for s in launches]

        def step(bound=bound):
            for b in bound:
                b()
        step.keep = bound
        steps[layer] = step

    def run():
        for s in steps.values():
            s()
    run.keep = (plan, x_gpu, params_gpu)
    return run, out, steps


def conv1_paths(batch: int = 10_000, log=print) -> dict:
    """Chapter 8's first layer three ways at batch ``batch`` (CUDA C, the shipped sample
    repeated, trained weights), each step timed alone (CUDA events, L2-warm, on the real input):
    ``implicit`` (implicit GEMM conv1, then maxpool2), ``direct`` (the fused kernel's threads
    storing the conv map, then maxpool2: the direct algorithm, unfused) and ``fused``. So the
    1.41 -> 0.15 ms of chapter 8 splits into the algorithm's gain (implicit - direct) and the
    fusion's own (direct - fused). Also the whole forward pass per path and whether pool1 is the
    same bits in all three (direct and fused do the same sums in the same order)."""
    import cupy

    from .. import cnn_data
    from .harness import stamp, time_launches

    params = cnn_data.load_weights()
    sample = cnn_data.load_sample()
    reps = -(-batch // len(sample))
    xg = cupy.asarray(cnn_data.to_input(np.tile(sample.images, (reps, 1, 1))[:batch]))
    pg = to_gpu_params(params)
    rows, pools = {}, {}
    for conv in ("implicit", "direct", "fused"):
        run, out, steps = course_forward(pg, xg, impl="cuda-c", conv=conv, fc="gemm")
        run()
        cupy.cuda.runtime.deviceSynchronize()
        row = {layer: time_launches(steps[layer], repeat=15)["median_ms"]
               for layer in ("conv1", "pool1", "conv1+pool1") if layer in steps}
        row["conv1 and pool1"] = sum(row.values())
        row["forward"] = time_launches(run, repeat=10)["median_ms"]
        rows[conv] = row
        pools[conv] = cupy.asnumpy(out["pool1"])
        log(f"batch {batch:,} {conv:>8}: " + ", ".join(f"{k} {v:.4f} ms" for k, v in row.items()))
    total = {k: r["conv1 and pool1"] for k, r in rows.items()}
    return {"batch": batch, "ms": rows, **stamp(),
            "algorithm_gain_ms": total["implicit"] - total["direct"],
            "fusion_gain_ms": total["direct"] - total["fused"],
            "pool1_equal_bits": {k: bool(np.array_equal(pools[k].view(np.uint32), pools["fused"].view(np.uint32)))
                                 for k in ("implicit", "direct")},
            "pool1_max_abs_diff_vs_fused": {k: float(np.abs(pools[k] - pools["fused"]).max())
                                            for k in ("implicit", "direct")}}


def capture_graph(run):
    """``(replay, stream)``: ``replay()`` launches a CUDA graph of what ``run()`` enqueues, on a
    non-blocking stream (a capture cannot use the legacy default stream)."""
    import cupy

    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        run()                                  # compile and load every kernel outside the capture
        stream.synchronize()
        stream.begin_capture()
        run()
        graph = stream.end_capture()

    def replay():
        graph.launch(stream)
    replay.keep = (graph, run)
    return replay, stream


def torch_model(params: dict):
    """The network as ``torch.nn`` modules on the GPU, float32, with ``params``' weights."""
    import torch
    from torch import nn

    p = cnn.check_params(params)
    model = nn.Sequential(
        nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 10), nn.Softmax(dim=1))
    with torch.no_grad():
        for module, name in ((model[0], "conv1"), (model[3], "conv2"), (model[7], "fc1"), (model[9], "fc2")):
            module.weight.copy_(torch.from_numpy(p[name + "_w"]))
            module.bias.copy_(torch.from_numpy(p[name + "_b"]))
    return model.cuda().eval()


def torch_layers(model) -> dict:
    """The model's layers grouped as the course's plan names them: layer -> modules."""
    return {"conv1": model[0:2], "pool1": model[2:3], "conv2": model[3:5], "pool2": model[5:6],
            "fc1": model[6:9], "fc2": model[9:10], "softmax": model[10:11]}


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

def measure(big: int = 10_000, log=print, on_progress=None) -> dict:
    """Time the whole network on this GPU: batch-1 latency (course kernels eager and as a CUDA
    graph, PyTorch eager and as a CUDA graph), batch-``big`` throughput, each layer alone, and
    the NumPy reference on the CPU; checks every answer against the reference. Each part that
    fails is recorded under ``errors`` and the next one still runs. ``on_progress(result)`` is
    called after each part (the benchmark saves there)."""
    import cupy
    import torch

    from .. import cnn_data
    from .harness import stamp, time_launches

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True              # cuDNN picks its fastest algorithm per shape
    log(f"Timing the network on this GPU (batch 1 and batch {big:,}) ...")
    params = cnn_data.load_weights()
    sample = cnn_data.load_sample()
    pg = to_gpu_params(params)
    model = torch_model(params)
    result = {"stamp": stamp(), "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
              "tf32": False, "batch_big": big}
    sync_all = cupy.cuda.runtime.deviceSynchronize

    def save():
        if on_progress is not None:
            on_progress(result)

    def section(name, body):
        """Run one part; a failure is recorded (and printed) and the next part still runs."""
        import traceback
        try:
            body()
        except Exception:
            result.setdefault("errors", {})[name] = traceback.format_exc()
            log(f"{name} FAILED:\n{traceback.format_exc()}")
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
    def throughput():
        reps = -(-big // len(sample))
        xb = cnn_data.to_input(np.tile(sample.images, (reps, 1, 1))[:big])
        labels_b = np.tile(sample.labels, reps)[:big]
        xbg, xbt = cupy.asarray(xb), torch.from_numpy(xb).cuda()
        thr = {}
        runs = {}
        for conv in ("fused", "implicit", "direct"):
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
        result["batch_big_images_per_s"] = {k: big / (v / 1e3) for k, v in thr.items()}
        result["batch_big_ratio_pytorch_over_course"] = thr["PyTorch eager"] / thr["course cuda-c fused"]
        result["agreement"] = {"course vs PyTorch labels equal": float((course_labels == torch_labels).mean()),
                               "accuracy course": float((course_labels == labels_b).mean()),
                               "accuracy PyTorch": float((torch_labels == labels_b).mean())}
        st.update(xbg=xbg, xbt=xbt, runs=runs, steps_f=steps_f)

    section("batch big", throughput)

    # ---------------------------------------------------------------- per layer
    def per_layer(xg, xt, course_steps_implicit, course_steps_fused, course_steps_direct=None):
        rows = {}
        for layer, step in course_steps_implicit.items():
            rows.setdefault(layer, {})["course implicit"] = time_launches(step, repeat=10)["median_ms"]
        for layer, step in (course_steps_direct or {}).items():
            if layer.startswith(("conv", "pool")):       # the unfused direct convolution's layers
                rows.setdefault(layer, {})["course direct"] = time_launches(step, repeat=10)["median_ms"]
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
        st["runs"]["direct"][0]()
        sync_all()
        result["per_layer_big_ms"] = per_layer(st["xbg"], st["xbt"], steps_i, st["steps_f"], st["runs"]["direct"][2])

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
    result["layers"] = cnn.layer_table(big)
    save()
    return result


def results(live: bool | None = None, big: int = 1_000, log=print) -> dict:
    """Chapter 8's timings: measured now on a GPU (batch ``big``: about half a minute), else the
    figures recorded on an H100 (``topics.cnn`` of the one store). ``live`` forces either."""
    from .. import backend
    from ..plots.cnn import recorded

    if live is None:
        live = backend.gpu_available() and _torch_cuda()
    if not live:
        return {**recorded(), "source": "recorded"}
    return {**measure(big=big, log=log), "source": "measured"}


def _torch_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


# ------------------------------------------------------------------------------------------
# Batch 1 kernel by kernel, and PyTorch's other modes (benchmarks/probe_ch6_8.py, H100)
# ------------------------------------------------------------------------------------------
#: the five kernels of the fused batch-1 forward (conv="fused", fc="vecmat"), in launch order:
#: the order of the probe's batch1 section and of the ncu report's batch-1 pass
BATCH1_KERNELS = ("conv1+pool1", "conv2+pool2", "fc1", "fc2", "softmax")
_BATCH1_NCU = ("conv_bias_relu_pool", "conv_bias_relu_pool", "dense_bias_act", "dense_bias_act", "softmax_argmax")


def batch1_kernels(data: dict | None = None) -> dict:
    """The batch-1 forward, kernel by kernel: ``rows`` of (layer, ``gpu_us``: the kernel's own
    GPU time in Nsight Compute, ``launch_us``: CUDA events around 1000 back-to-back launches of
    it alone), ``gpu_sum_us``, and the whole forward launched one kernel after another
    (``eager_us``) and as a CUDA graph (``graph_us``)."""
    from .conv import probe

    p = probe(data)
    ncu = [k for k in p["ncu"] if k["kernel"] in _BATCH1_NCU and set(k) <= {"kernel", "stalls", "duration"}]
    if [k["kernel"] for k in ncu] != list(_BATCH1_NCU):
        raise ValueError(f"the ncu report's batch-1 pass has {[k['kernel'] for k in ncu]}, expected {_BATCH1_NCU}")
    rows = [{"layer": layer, "gpu_us": k["duration"], "launch_us": 1000 * p["batch1"]["kernels"][layer]["ms"]}
            for layer, k in zip(BATCH1_KERNELS, ncu)]
    return {"rows": rows, "gpu_sum_us": sum(r["gpu_us"] for r in rows),
            "eager_us": 1000 * p["batch1"]["forward_eager_ms"], "graph_us": 1000 * p["batch1"]["forward_graph_ms"],
            "device": p["device"], "date": p["date"]}


def pytorch_modes(data: dict | None = None) -> list[dict]:
    """The chapter-8 network in PyTorch eager, channels_last and ``torch.compile`` (FP32, TF32
    off) beside the course's fused forward, same run: one dict per batch (ms)."""
    from .conv import probe

    return [dict(r) for r in probe(data)["compile"]["rows"]]
