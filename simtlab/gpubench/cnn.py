"""Chapter 8 on a GPU: the network's forward pass from the course's kernels, and the same
network in PyTorch (cuDNN, FP32, TF32 off) to hold it against.

- :func:`course_forward`: ``(run, out, steps)``: ``run()`` enqueues one forward pass of
  kernels/cnn.py's plan (numba-cuda or CUDA C) on CuPy arrays; ``steps`` maps each layer to a
  function enqueuing that layer alone (the per-layer timing table).
- :func:`torch_model`: the same network and weights as ``torch.nn`` layers, and its layers one
  by one.
- :func:`capture_graph`: a CUDA graph of any enqueueing function (CuPy stream capture); numba's
  launches follow CuPy's current stream (``gpubench.launch.bind``), so it captures both twins.
- :func:`batch1_graphs`: the batch-1 forward in numba-cuda and CUDA C, eager and as a CUDA graph,
  all on one stream timed by CUDA events; :func:`cudnn_fused_rows`: each convolution with bias
  + ReLU (+ pooling) as cuDNN's fused kernel, PyTorch's separate layers, ``torch.compile`` and
  the course's kernels (benchmarks/gpu_cnn_graph_fused.py records both);
  :func:`tensor_core_rows`: each convolution on the tensor cores (the course's WMMA kernels in
  TF32 and BF16) against cuDNN in the same precision and the course's FP32 kernels
  (benchmarks/gpu_cnn_tensor_cores.py records it).
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from ..kernels import cnn
from .launch import bind
from .torch_timing import events_ms, kernel_times

__all__ = ["course_forward", "conv1_paths", "torch_model", "torch_layers", "capture_graph", "to_gpu_params",
           "measure", "results", "wall_ms", "batch1_kernels", "pytorch_modes", "BATCH1_KERNELS",
           "batch1_graphs", "cudnn_fused_rows", "graph_fused_recorded", "GRAPH_FUSED_TOPIC",
           "tensor_core_rows", "tensor_cores_recorded", "TENSOR_CORES_TOPIC"]


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


def capture_graph(run, stream=None):
    """``(replay, stream)``: ``replay()`` launches a CUDA graph of what ``run()`` enqueues, on
    ``stream`` (default: a new non-blocking stream; a capture cannot use the legacy default
    stream). Works for numba-cuda and CUDA C launches alike: both go to CuPy's current stream."""
    import cupy

    stream = stream if stream is not None else cupy.cuda.Stream(non_blocking=True)
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
        for impl in ("cuda-c", "numba"):        # both twins launch on the capturing stream
            replay, stream = capture_graph(course_forward(pg, x1g, impl=impl, conv="fused", fc="vecmat")[0])
            lat[f"course {impl} CUDA graph"] = wall_ms(replay, stream.synchronize)
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


# ------------------------------------------------------------------------------------------
# Batch 1 as CUDA graphs (numba and CUDA C), and cuDNN's fused conv + bias + ReLU
# (benchmarks/gpu_cnn_graph_fused.py; recorded under topics.cnn_graph_fused of the one store)
# ------------------------------------------------------------------------------------------
GRAPH_FUSED_TOPIC = "cnn_graph_fused"
#: the batch-1 variants :func:`batch1_graphs` times, in the order the chapter lists them
BATCH1_GRAPH_ROWS = ("numba eager", "numba CUDA graph", "cuda-c eager", "cuda-c CUDA graph")


def batch1_graphs(params: dict | None = None, x=None, *, repeat: int = 9, log=print) -> dict:
    """The fused batch-1 forward (conv + pool fused, vector-matrix FC: 5 kernels) in numba-cuda
    and CUDA C, launched kernel by kernel ("eager") and replayed as one CUDA graph. Every variant
    runs on one non-blocking CuPy stream and is timed by CUDA events recorded on that stream
    around up to 1000 back-to-back forward passes (``harness.time_launches``): the time per pass
    with the host's launch work hidden only as far as the GPU's queue allows. ``us``: variant ->
    µs per pass. ``checks``: per implementation, whether the graph's probabilities equal the
    eager launches' bit for bit (the same kernels on the same input), and the largest
    difference from the NumPy reference. The graph is replayed on a new image with every output
    poisoned first, so a capture that recorded nothing cannot pass."""
    import cupy

    from .. import cnn_data
    from .harness import stamp, time_launches

    params = cnn_data.load_weights() if params is None else params
    images = cnn_data.to_input(cnn_data.load_sample().images[:2]) if x is None else np.asarray(x, np.float32)
    pg = to_gpu_params(params)
    stream = cupy.cuda.Stream(non_blocking=True)
    us, checks = {}, {}
    for impl in ("numba", "cuda-c"):
        xg = cupy.asarray(images[:1])
        run, out, _ = course_forward(pg, xg, impl=impl, conv="fused", fc="vecmat")
        with stream:
            us[f"{impl} eager"] = 1e3 * time_launches(run, repeat=repeat, batch_ms=200.0)["median_ms"]
        replay, _ = capture_graph(run, stream)
        with stream:
            us[f"{impl} CUDA graph"] = 1e3 * time_launches(replay, repeat=repeat, batch_ms=200.0)["median_ms"]
        checks[impl] = _graph_replays_eager(run, replay, stream, xg, out, images[-1:], params)
        log(f"batch 1, {impl}: eager {us[f'{impl} eager']:.1f} µs, CUDA graph {us[f'{impl} CUDA graph']:.1f} µs "
            f"per forward; {checks[impl]}")
    return {"us": us, "checks": checks, **stamp(), "kernels": len(BATCH1_KERNELS),
            "timer": "CUDA events on the graph's stream, up to 1000 back-to-back forwards, median of "
                     f"{repeat}"}


def _graph_replays_eager(run, replay, stream, xg, out, image, params) -> dict:
    """Replay the graph on ``image`` after poisoning every output, then launch eagerly on the
    same input: are the probabilities the same bits, and how far from the reference?"""
    import cupy

    with stream:
        xg[...] = cupy.asarray(image)
        for name, a in out.items():
            a.fill(-1 if name == "labels" else np.nan)
        replay()
        stream.synchronize()
        captured = cupy.asnumpy(out["softmax"])
        run()
        stream.synchronize()
        eager = cupy.asnumpy(out["softmax"])
    ref = cnn.forward_cpu(params, image)["softmax"]
    return {"graph_equals_eager_bits": bool(np.array_equal(captured.view(np.uint32), eager.view(np.uint32))),
            "graph_max_abs_diff_vs_reference": float(np.abs(captured - ref).max())}


def _torch_kernels(fn) -> list:
    """``[kernel name, ...]`` of the CUDA kernels one ``fn()`` ran (torch.profiler), longest first."""
    return [name for name, _ in kernel_times(fn)][:4]


def cudnn_fused_rows(batch: int = 10_000, *, compile: bool = True, log=print) -> dict:
    """Each convolution layer of the network (conv1: 1 -> 6 maps on 28 x 28, conv2: 6 -> 16 on
    12 x 12, 5 x 5 filters) with its bias and ReLU, then with its 2 x 2 max-pool, at batch
    ``batch`` (the shipped sample repeated, trained weights, conv2 on pool1's real output), FP32
    with TF32 off and cuDNN's algorithm search on, in one run:

    - PyTorch ``conv2d`` (cuDNN, bias) then ``relu`` [then ``max_pool2d``];
    - cuDNN's fused convolution + bias + ReLU, ``torch.cudnn_convolution_relu`` [then max_pool2d];
    - ``torch.compile`` of conv -> ReLU [-> max-pool] (``compile=False`` skips it: minutes);
    - the course's CUDA C kernels: implicit GEMM and direct convolution, each with bias + ReLU in
      its store [then maxpool2], and the fused conv + bias + ReLU + pool, one kernel.

    ``layers``: layer -> ``{"conv+bias+relu": {name: ms}, "+pool": {name: ms}}``; ``kernels``:
    the CUDA kernels cuDNN's fused call ran (their names say whether cuDNN fused or fell back
    to a convolution followed by its own bias/activation kernel); ``max_rel_diff``: each output's
    largest difference from the NumPy reference (``forward_cpu``) over the reference's largest
    value (cuDNN may pick an FFT, whose rounding is not a direct sum's)."""
    import cupy
    import torch
    import torch.nn.functional as F

    from .. import cnn_data
    from .harness import stamp

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    params = cnn_data.load_weights()
    sample = cnn_data.load_sample()
    reps = -(-batch // len(sample))
    x = cnn_data.to_input(np.tile(sample.images, (reps, 1, 1))[:batch])
    ref = cnn.forward_cpu(params, x)
    course = {conv: course_forward(to_gpu_params(params), cupy.asarray(x), impl="cuda-c", conv=conv, fc="gemm")
              for conv in ("implicit", "direct", "fused")}
    for run, _, _ in course.values():
        run()
    cupy.cuda.runtime.deviceSynchronize()
    result = {"batch": batch, "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "tf32": False,
              "layers": {}, "kernels": {}, "max_rel_diff": {}, **stamp()}
    inputs = {"1": x, "2": ref["pool1"]}
    for layer, xin in inputs.items():
        xt = torch.from_numpy(np.ascontiguousarray(xin)).cuda()
        wt = torch.from_numpy(params[f"conv{layer}_w"]).cuda()
        bt = torch.from_numpy(params[f"conv{layer}_b"]).cuda()
        with torch.inference_mode():
            separate = lambda: F.relu(F.conv2d(xt, wt, bt))                                  # noqa: E731
            fused = lambda: torch.cudnn_convolution_relu(xt, wt, bt, (1, 1), (0, 0), (1, 1), 1)  # noqa: E731
            conv = {"PyTorch conv2d, then ReLU": events_ms(separate),
                    "cuDNN fused conv + bias + ReLU": events_ms(fused)}
            pooled = {"PyTorch conv2d, ReLU, max-pool": events_ms(lambda: F.max_pool2d(separate(), 2)),
                      "cuDNN fused conv + bias + ReLU, then max-pool":
                          events_ms(lambda: F.max_pool2d(fused(), 2))}
            result["kernels"][f"conv{layer}"] = _torch_kernels(fused)
            diffs = {"cuDNN fused": _rel_diff(fused().cpu().numpy(), ref[f"conv{layer}"]),
                     "PyTorch separate": _rel_diff(separate().cpu().numpy(), ref[f"conv{layer}"])}
            if compile:
                both = torch.compile(lambda: F.relu(F.conv2d(xt, wt, bt)))
                pool = torch.compile(lambda: F.max_pool2d(F.relu(F.conv2d(xt, wt, bt)), 2))
                conv["torch.compile conv, ReLU"] = events_ms(both)
                pooled["torch.compile conv, ReLU, max-pool"] = events_ms(pool)
        steps = {conv_path: course[conv_path][2] for conv_path in course}
        direct, pool = steps["direct"][f"conv{layer}"], steps["direct"][f"pool{layer}"]
        conv["course implicit GEMM, bias + ReLU in the store"] = events_ms(steps["implicit"][f"conv{layer}"])
        conv["course direct, bias + ReLU in the store"] = events_ms(direct)
        pooled["course direct, then max-pool"] = events_ms(lambda: (direct(), pool()))
        pooled["course conv + bias + ReLU + pool, one kernel"] = events_ms(steps["fused"][f"conv{layer}+pool{layer}"])
        for conv_path in ("implicit", "direct"):
            diffs[f"course {conv_path}"] = _rel_diff(cupy.asnumpy(course[conv_path][1][f"conv{layer}"]),
                                                     ref[f"conv{layer}"])
        diffs["course fused (pooled)"] = _rel_diff(cupy.asnumpy(course["fused"][1][f"pool{layer}"]), ref[f"pool{layer}"])
        result["layers"][f"conv{layer}"] = {"conv+bias+relu": conv, "+pool": pooled}
        result["max_rel_diff"][f"conv{layer}"] = diffs
        log(f"conv{layer}, batch {batch:,}: " + ", ".join(f"{k} {v:.4f} ms" for k, v in {**conv, **pooled}.items())
            + f"; cuDNN's fused call ran {result['kernels'][f'conv{layer}']}")
    return result


def _rel_diff(got, want) -> float:
    return float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-30))


def _recorded_topic(topic: str, what: str, script: str, data: dict | None) -> dict:
    """``data`` if given, else the store's ``topic``; LookupError naming ``script`` while nothing is recorded."""
    if data is not None:
        return data
    from . import stored

    entry = stored(topic)
    if entry is None:
        raise LookupError(f"no {what} recorded yet: run python benchmarks/{script} --store on a GPU")
    return entry


def graph_fused_recorded(data: dict | None = None) -> dict:
    """What benchmarks/gpu_cnn_graph_fused.py recorded on an H100 (topics.cnn_graph_fused of the
    one store); LookupError while nothing is recorded."""
    return _recorded_topic(GRAPH_FUSED_TOPIC, "batch-1 graph / fused cuDNN timings", "gpu_cnn_graph_fused.py", data)


# ------------------------------------------------------------------------------------------
# The convolutions on the tensor cores: the course's WMMA kernels (TF32, BF16) against cuDNN
# in the same precision and the course's FP32 kernels (benchmarks/gpu_cnn_tensor_cores.py;
# recorded under topics.cnn_tensor_cores of the one store)
# ------------------------------------------------------------------------------------------
TENSOR_CORES_TOPIC = "cnn_tensor_cores"
#: the network's convolutions: name -> (input channels, output channels, filter size)
TC_LAYERS = {"conv1": (1, 6, 5), "conv2": (6, 16, 5)}
#: the course's rows per layer: name -> (precision, conv path of cnn.conv_launches or None for the WMMA kernel)
TC_COURSE_ROWS = {"course TF32 tensor cores (WMMA)": ("tf32", None),
                  "course BF16 tensor cores (WMMA)": ("bf16", None),
                  "course FP32 implicit GEMM": ("fp32", "implicit"),
                  "course FP32 direct": ("fp32", "direct")}
#: cuDNN's rows: precisions (FP32 is TF32 off) and layouts (NHWC = channels_last)
TC_CUDNN_PRECISIONS = ("fp32", "tf32", "bf16")
TC_CUDNN_LAYOUTS = ("NCHW", "NHWC")
#: images whose outputs are checked against the float64 reference on the CPU (every image
#: runs the same code; the check's CPU time stays small at batch 10,000)
TC_CHECK_IMAGES = 300
TC_CHILD_TIMEOUT_S = 150


def _tc_inputs(batch: int, log=print) -> dict:
    """The shipped sample repeated to ``batch`` images, trained weights, and pool1 of the course's
    fused FP32 kernel (conv2's real input), as NumPy arrays."""
    import cupy

    from .. import cnn_data

    params = cnn_data.load_weights()
    sample = cnn_data.load_sample()
    reps = -(-batch // len(sample))
    x = cnn_data.to_input(np.tile(sample.images, (reps, 1, 1))[:batch])
    run, out, _ = course_forward(to_gpu_params(params), cupy.asarray(x), impl="cuda-c", conv="fused", fc="gemm")
    run()
    cupy.cuda.runtime.deviceSynchronize()
    return {"conv1": x, "conv2": cupy.asnumpy(out["pool1"]), **{k: v for k, v in params.items() if k.startswith("conv")}}


def _tc_check(got, x, w, bias, precision: str) -> dict:
    """The first TC_CHECK_IMAGES outputs against the float64 reference: the largest error as a
    share of the precision's bound (cnn.tc_conv_bound; FP32 kernels: the TF32 bound, far above
    their own error), and the largest error over the reference's largest value."""
    n = min(TC_CHECK_IMAGES, len(x))
    x, got = x[:n], np.asarray(got[:n], np.float64)
    want = cnn.tc_conv_reference(x, w, bias)
    bound = cnn.tc_conv_bound(x, w, bias, "tf32" if precision == "fp32" else precision)
    err = np.abs(got - want)
    share = err / np.where(bound > 0, bound, 1.0)        # a window of zeros with no bias: bound 0, error must be 0
    return {"images": n, "max_error_over_bound": float(share.max()), "within_bound": bool((err <= bound).all()),
            "max_rel_diff": _rel_diff(got, want)}


def _tc_course_rows(inputs: dict, repeat: int, log) -> dict:
    """layer -> [row]: the course's WMMA kernels and FP32 kernels, each timed (harness.time_launches,
    L2-warm) and checked."""
    import cupy

    from .harness import time_launches

    rows = {}
    for layer, (c, m, k) in TC_LAYERS.items():
        x = inputs[layer]
        w, bias = inputs[f"{layer}_w"], inputs[f"{layer}_b"]
        xg, wg, bg = (cupy.asarray(a) for a in (x, w, bias))
        ho, wo = x.shape[2] - k + 1, x.shape[3] - k + 1
        rows[layer] = []
        for name, (precision, path) in TC_COURSE_ROWS.items():
            row = {"name": name, "impl": "course", "precision": precision, "layout": "NCHW"}
            try:
                y = cupy.full((len(x), m, ho, wo), np.nan, cupy.float32)
                launches = ([cnn.tc_conv_launch(precision, xg, wg, bg, y)] if path is None
                            else cnn.conv_launches(cupy, "cuda-c", xg, wg, bg, y, path))
                bound = [bind("cuda-c", cnn.TOPIC, s.kernel, s.grid, s.block, *s.args, shared=s.shared) for s in launches]

                def run(bound=bound):
                    for b in bound:
                        b()
                row["kernel"] = launches[0].kernel
                row["ms"] = time_launches(run, repeat=repeat)["median_ms"]
                row["check"] = _tc_check(cupy.asnumpy(y), x, w, bias, precision)
            except Exception as e:                        # noqa: BLE001 (one row fails, the others run)
                row["error"] = f"{type(e).__name__}: {str(e)[:1500]}"
            rows[layer].append(row)
            log(f"{layer} {name}: " + (f"{row['ms']:.4f} ms, {row['check']}" if "ms" in row else row["error"]))
    return rows


def _tc_cudnn_child(request_json: str) -> None:
    """The cuDNN rows, in a child process (PyTorch stays out of the process where CuPy holds the
    GPU, and a failure ends only the child): prints ``RESULT <json>`` last."""
    import json

    import torch
    import torch.nn.functional as F

    req = json.loads(request_json)
    with np.load(req["inputs"]) as f:
        inputs = {k: f[k] for k in f.files}
    torch.backends.cudnn.benchmark = True                # cuDNN's algorithm search on, as PyTorch users run it
    torch.backends.cuda.matmul.allow_tf32 = False
    dtypes = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16}
    out = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "layers": {}}
    for layer in TC_LAYERS:
        x, w, bias = inputs[layer], inputs[f"{layer}_w"], inputs[f"{layer}_b"]
        rows = out["layers"][layer] = []
        for precision in TC_CUDNN_PRECISIONS:
            torch.backends.cudnn.allow_tf32 = precision == "tf32"
            for layout in TC_CUDNN_LAYOUTS:
                fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
                name = f"cuDNN {precision.upper()}{' (TF32 off)' if precision == 'fp32' else ''} {layout}"
                row = {"name": name, "impl": "cudnn", "precision": precision, "layout": layout}
                try:
                    xa = torch.from_numpy(x).cuda().to(dtypes[precision]).contiguous(memory_format=fmt)
                    wa = torch.from_numpy(w).cuda().to(dtypes[precision]).contiguous(memory_format=fmt)
                    ba = torch.from_numpy(bias).cuda().to(dtypes[precision])
                    with torch.inference_mode():
                        conv = lambda: F.conv2d(xa, wa, ba)                           # noqa: E731
                        layer_fn = lambda: F.relu(F.conv2d(xa, wa, ba))               # noqa: E731
                        row["ms"] = events_ms(layer_fn, repeat=req["repeat"])   # conv + bias + ReLU
                        row["ms_conv_only"] = events_ms(conv, repeat=req["repeat"])
                        kernels = kernel_times(layer_fn)
                        row["kernels"] = [[n, t] for n, t in kernels[:4]]
                        row["kernel_ms"] = sum(t for _, t in kernels) / 1e3          # the GPU's own time, no gaps
                        got = layer_fn()[:TC_CHECK_IMAGES].float().contiguous().cpu().numpy()
                    want = cnn.tc_conv_reference(x[:TC_CHECK_IMAGES], w, bias)
                    row["max_rel_diff"] = _rel_diff(got, want)
                except Exception as e:                    # noqa: BLE001 (one row fails, the others run)
                    row["error"] = f"{type(e).__name__}: {str(e)[:1500]}"
                rows.append(row)
                print(f"{layer} {name}: {row.get('ms', float('nan')):.4f} ms {[k for k, _ in row.get('kernels', [])][:2]}",
                      file=sys.stderr, flush=True)
    print("RESULT " + json.dumps(out, default=str), flush=True)


def _tc_cudnn_rows(inputs: dict, repeat: int, log) -> dict:
    """_tc_cudnn_child in a fresh interpreter on the same inputs (an .npz file)."""
    import json
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "inputs.npz")
        np.savez(path, **inputs)
        code = (f"import sys; sys.path.insert(0, {str(root)!r}); from simtlab.gpubench import cnn as G; "
                "G._tc_cudnn_child(sys.argv[1])")
        try:
            done = subprocess.run([sys.executable, "-c", code, json.dumps({"inputs": path, "repeat": repeat})],
                                  capture_output=True, text=True, timeout=TC_CHILD_TIMEOUT_S, cwd=str(root))
        except subprocess.TimeoutExpired as e:
            raise RuntimeError(f"the cuDNN child ran past {TC_CHILD_TIMEOUT_S} s: {str(e.stderr)[-1500:]}") from None
    for line in done.stderr.splitlines()[-40:]:
        if line.startswith("conv"):
            log(line)
    results = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not results:
        raise RuntimeError(f"the cuDNN child failed (exit {done.returncode}): {(done.stderr or done.stdout)[-2000:]}")
    return json.loads(results[-1][len("RESULT "):])


def tensor_core_rows(batch: int = 10_000, *, repeat: int = 15, cudnn: bool = True, log=print) -> dict:
    """conv1 and conv2 of the network with bias + ReLU at batch ``batch`` (the shipped sample
    repeated, trained weights, conv2 on pool1's real output), in one run:

    - the course's tensor-core kernels (kernels/cnn.cu: implicit GEMM on WMMA, TF32 / BF16
      inputs converted on staging, FP32 accumulate and output) and its FP32 kernels (implicit
      GEMM, direct), timed by ``harness.time_launches`` and checked on the first TC_CHECK_IMAGES
      images against the float64 reference within the precision's bound;
    - cuDNN through PyTorch (``conv2d`` + bias, then ReLU; algorithm search on) in FP32 (TF32
      off), TF32 (``allow_tf32``, float32 tensors) and BF16 (BF16 input, weights and output), in
      NCHW and channels_last, in a child process: CUDA events around back-to-back calls, the
      convolution alone too, the kernels cuDNN ran with their own GPU time (torch.profiler: the
      algorithm it chose), and each output's largest difference from the reference.

    ``layers``: layer -> {"rows": [...], "gemm": the GEMM the tensor cores see (cnn.tc_conv_padding
    per precision), "flops", "fewest_bytes_fp32"}; ``errors`` names a part that failed."""
    import traceback

    from .harness import stamp

    t0 = time.perf_counter()
    inputs = _tc_inputs(batch, log)
    result = {"batch": batch, **stamp(), "layers": {}, "check_images": TC_CHECK_IMAGES}
    for layer, (c, m, k) in TC_LAYERS.items():
        x = inputs[layer]
        ho, wo = x.shape[2] - k + 1, x.shape[3] - k + 1
        result["layers"][layer] = {
            "shape": {"C": c, "M": m, "K": k, "H": int(x.shape[2]), "W": int(x.shape[3])},
            "gemm": {p: cnn.tc_conv_padding(c, m, k, p) for p in cnn.TC_CONV_KERNELS},
            "flops": 2 * batch * m * ho * wo * c * k * k,
            "fewest_bytes_fp32": 4 * (x.size + m * c * k * k + m + batch * m * ho * wo)}
    for layer, rows in _tc_course_rows(inputs, repeat, log).items():
        result["layers"][layer]["rows"] = rows
    if cudnn:
        try:
            child = _tc_cudnn_rows(inputs, repeat, log)
            result.update(torch=child["torch"], cudnn=child["cudnn"])
            for layer, rows in child["layers"].items():
                result["layers"][layer]["rows"] += rows
        except Exception:                                 # noqa: BLE001 (the course rows stay)
            result.setdefault("errors", {})["cudnn"] = traceback.format_exc()
            log(result["errors"]["cudnn"])
    failed = [f"{layer}: {r['name']}" for layer, e in result["layers"].items() for r in e["rows"] if "error" in r]
    unchecked = [f"{layer}: {r['name']}" for layer, e in result["layers"].items() for r in e["rows"]
                 if r["impl"] == "course" and "check" in r and not r["check"]["within_bound"]]
    if failed:
        result.setdefault("errors", {})["rows"] = failed
    if unchecked:
        result.setdefault("errors", {})["beyond the bound"] = unchecked
    result["seconds"] = round(time.perf_counter() - t0, 1)
    return result


def tensor_cores_recorded(data: dict | None = None) -> dict:
    """What benchmarks/gpu_cnn_tensor_cores.py recorded on an H100 (topics.cnn_tensor_cores of the
    one store); LookupError while nothing is recorded."""
    return _recorded_topic(TENSOR_CORES_TOPIC, "tensor-core convolution timings", "gpu_cnn_tensor_cores.py", data)
