"""Chapter 8's pictures: the network layer by layer, its per-layer timings on the GPU, Amdahl
across layers, batch-1 latency with and without a CUDA graph, and images with predictions.

The timing figures read the benchmark's results (benchmarks/gpu_cnn.py, recorded on an H100 in
the key topics.cnn of simtlab/data/h100_timings.json, the one store of recorded GPU figures:
:func:`recorded`)."""

from __future__ import annotations


import numpy as np

from simtlab.plots.style import PALETTE, label, new_figure

__all__ = ["recorded", "plot_network", "plot_layer_timings", "plot_layer_shares", "plot_latency",
           "plot_predictions", "plot_activations", "layer_shares", "timing_rows", "LAYERS",
           "batch1_kernels_table", "pytorch_modes_table", "batch1_graphs_table", "cudnn_fused_table",
           "tensor_core_conv_summary", "tensor_core_conv_table", "tensor_core_conv_findings"]

#: the network's layers in order, as the forward passes name their outputs
LAYERS = ("conv1", "pool1", "conv2", "pool2", "fc1", "fc2", "softmax")


def recorded() -> dict:
    """The H100 results benchmarks/gpu_cnn.py recorded (topics.cnn of the one store)."""
    from ..gpubench import stored

    data = stored("cnn")
    if data is None:
        raise LookupError("no chapter 8 timings recorded: run benchmarks/gpu_cnn.py --store on a GPU")
    return data


def plot_network(batch: int = 1, *, title: str | None = None):
    """The network drawn layer by layer: each layer's output shape under its name, its work in
    FLOPs (bars) and its fewest bytes (dots: input, weights, output crossing DRAM once)."""
    from ..kernels.cnn import layer_table

    rows = layer_table(batch)
    fig, ax = new_figure(title or f"The network layer by layer, batch {batch:,}", figsize=(9, 4.5))
    xs = np.arange(len(rows))
    bars = ax.bar(xs, [r["flops"] for r in rows], color=PALETTE[0])
    ax.bar_label(bars, labels=[f"{r['flops'] / 1e3:,.1f} k" if r["flops"] < 1e6 else f"{r['flops'] / 1e6:,.2f} M"
                               for r in rows], fontsize=8)
    ax.set_yscale("log")
    ax.set_xticks(xs, [f"{r['layer']}\n{'x'.join(map(str, r['out_shape'][1:]))}" for r in rows])
    label(ax, "layer (output shape per image: maps x height x width)", "work [FLOP] (log scale)")
    ax2 = ax.twinx()
    ax2.plot(xs, [r["bytes"] for r in rows], "o", color=PALETTE[5])
    ax2.set_yscale("log")
    ax2.set_ylabel("fewest bytes moved [byte] (log scale)")
    ax.legend([bars, ax2.lines[0]], ["FLOPs", "bytes: input + weights + output once"], loc="upper right")
    return fig


def timing_rows(res: dict, batch: str = "big") -> list[tuple[str, dict]]:
    """``(layer, {implementation: ms})`` in network order, for batch "big" (10,000) or "1"."""
    table = res["per_layer_big_ms"] if batch == "big" else res["per_layer_1_ms"]
    cpu = res.get("per_layer_numpy_cpu_batch1000_ms", {}) if batch == "big" else {}
    order = ["conv1", "pool1", "conv1+pool1", "conv2", "pool2", "conv2+pool2", "fc1", "fc2", "softmax"]
    rows = []
    for layer in order:
        if layer in table:
            row = dict(table[layer])
            if layer in cpu:
                row["NumPy CPU (batch 1,000)"] = cpu[layer]
            rows.append((layer, row))
    return rows


def plot_layer_timings(res: dict, batch: str = "big", *, title: str | None = None):
    """Grouped bars per layer: the course's kernels (implicit GEMM path, and conv+pool fused),
    PyTorch/cuDNN, NumPy on the CPU; ms, log scale."""
    rows = timing_rows(res, batch)
    impls = ["course implicit", "course fused", "PyTorch", "NumPy CPU (batch 1,000)"]
    impls = [i for i in impls if any(i in r for _, r in rows)]
    n = res.get("batch_big", 10_000) if batch == "big" else 1
    fig, ax = new_figure(title or f"Time per layer, batch {n:,} ({res['stamp'].get('device', 'GPU')})", figsize=(10, 4.8))
    xs = np.arange(len(rows))
    width = 0.8 / len(impls)
    for j, impl in enumerate(impls):
        vals = [r.get(impl, np.nan) for _, r in rows]
        ax.bar(xs + (j - (len(impls) - 1) / 2) * width, vals, width, label=impl, color=PALETTE[j])
    ax.set_xticks(xs, [layer for layer, _ in rows])
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    label(ax, "layer", "time [ms] (log scale)")
    return fig


def layer_shares(res: dict, impl: str = "course implicit", batch: str = "big") -> dict:
    """Each layer's share of the whole forward pass's time (the sum of the per-layer times)."""
    rows = [(layer, r[impl]) for layer, r in timing_rows(res, batch) if "+" not in layer and impl in r]
    total = sum(ms for _, ms in rows)
    return {layer: ms / total for layer, ms in rows}


def plot_layer_shares(res: dict, batch: str = "big", *, title: str | None = None):
    """Amdahl across layers: each layer's share of the time, for the course's kernels and for
    PyTorch; the layer with the largest share bounds what speeding up any other can gain."""
    fig, ax = new_figure(title or "Where the time goes: share of each layer", figsize=(9, 3.2))
    for y, impl in enumerate(("course implicit", "PyTorch")):
        left = 0.0
        for j, (layer, share) in enumerate(layer_shares(res, impl, batch).items()):
            ax.barh(y, share * 100, left=left, color=PALETTE[j % len(PALETTE)], label=layer if y == 0 else None)
            if share > 0.06:
                ax.text(left + share * 50, y, f"{layer}\n{share:.0%}", ha="center", va="center", fontsize=8, color="white")
            left += share * 100
    ax.set_yticks([0, 1], ["course kernels", "PyTorch"])
    # a figure legend "outside": constrained layout makes room for it (anchored below the axes,
    # its second row fell off the figure)
    fig.legend(handles=ax.get_legend_handles_labels()[0], ncols=4, fontsize=8, loc="outside lower center")
    label(ax, "share of the forward pass [%]", "implementation")
    return fig


def plot_latency(res: dict, *, title: str | None = None):
    """Batch-1 latency (host wall clock to the end of a synchronize): launched one by one vs
    replayed as a CUDA graph, the course's kernels vs PyTorch."""
    lat = res["batch1_latency_ms"]
    names = sorted(lat, key=lat.get, reverse=True)
    fig, ax = new_figure(title or f"One image through the network ({res['stamp'].get('device', 'GPU')})",
                         figsize=(9, 1.4 + 0.4 * len(names)))
    ys = np.arange(len(names))
    colours = [PALETTE[7] if n.startswith("PyTorch") else PALETTE[0] for n in names]
    ax.barh(ys, [lat[n] * 1e3 for n in names], color=colours)
    for y, n in zip(ys, names):
        ax.text(lat[n] * 1e3, y, f" {lat[n] * 1e3:.0f} µs", va="center", fontsize=8)
    ax.set_yticks(ys, names)
    label(ax, "latency per image [µs]", "implementation")
    return fig


def plot_predictions(images, labels, predicted, probs, classes, *, title: str | None = None):
    """A grid of images, each titled with its predicted class and probability; wrong ones in red."""
    n = len(images)
    cols = min(n, 6)
    rows = -(-n // cols)
    fig, axes = new_figure(title or "Predictions of the course's kernels", nrows=rows, ncols=cols,
                           figsize=(1.6 * cols, 1.9 * rows + 0.4), squeeze=False)
    for i, ax in enumerate(axes.flat):
        ax.set_axis_off()
        if i >= n:
            continue
        ax.imshow(images[i], cmap="gray_r", vmin=0, vmax=255)
        ok = predicted[i] == labels[i]
        ax.set_title(f"{classes[predicted[i]]} {probs[i]:.0%}" + ("" if ok else f"\n(is {classes[labels[i]]})"),
                     fontsize=8, color="black" if ok else PALETTE[5])
    return fig


def plot_activations(image, outputs: dict, layer: str, classes, *, title: str | None = None):
    """One image and what one layer made of it: the feature maps of a convolution or pooling
    layer (one panel per channel), or the values of a fully connected layer (bars).
    ``outputs`` is a forward pass's dict (layer -> array with a batch axis of 1)."""
    if layer not in LAYERS:
        raise ValueError(f"unknown layer {layer!r}; the layers are {', '.join(LAYERS)}")
    act = np.asarray(outputs[layer])[0]
    maps = act.ndim == 3
    channels = act.shape[0] if maps else 0
    cols = 1 + (min(channels, 8) if maps else 3)
    rows = max(1, -(-channels // 8)) if maps else 1
    fig, default_ax = new_figure(title or f"Layer {layer}: output {tuple(act.shape)} for one image",
                                 figsize=(1.5 * cols + 0.5, 1.6 * rows + 0.8) if maps else (8, 2.8))
    default_ax.remove()                      # the panels below are laid out on their own grid
    grid = fig.add_gridspec(rows, cols, width_ratios=None if maps else [1, 1, 1, 1])
    ax = fig.add_subplot(grid[:, 0])
    ax.imshow(image, cmap="gray_r", vmin=0, vmax=255)
    ax.set_title("input 28 x 28", fontsize=8)
    ax.set_axis_off()
    if maps:
        top = float(act.max()) or 1.0
        for c in range(channels):
            a = fig.add_subplot(grid[c // 8, 1 + c % 8])
            a.imshow(act[c], cmap="viridis", vmin=0, vmax=top)
            a.set_title(f"channel {c}", fontsize=7)
            a.set_xticks([])
            a.set_yticks([])
    else:
        a = fig.add_subplot(grid[0, 1:])
        names = classes if act.size == len(classes) else [str(i) for i in range(act.size)]
        a.bar(range(act.size), act, color=PALETTE[0])
        if act.size == len(classes):
            a.set_xticks(range(act.size), names, rotation=60, fontsize=7)
        label(a, "class" if act.size == len(classes) else "unit", "probability" if layer == "softmax"
              else "activation (no unit)")
    return fig


def batch1_kernels_table(data: dict | None = None):
    """The batch-1 forward kernel by kernel (GPU time in Nsight Compute, launch-to-launch time
    alone), and the whole forward eager and as a CUDA graph, recorded on an H100."""
    from ..gpubench.cnn import batch1_kernels
    from .tables import RecordedTable

    t = batch1_kernels(data)
    rows = [(r["layer"], f"{r['gpu_us']:.2f}", f"{r['launch_us']:.1f}") for r in t["rows"]]
    rows.append(("sum of the five", f"{t['gpu_sum_us']:.1f}", ""))
    rows.append(("whole forward, 5 launches back to back", "", f"{t['eager_us']:.1f}"))
    rows.append(("whole forward, one CUDA graph", "", f"{t['graph_us']:.1f}"))
    note = ("GPU time: Nsight Compute's gpu__time_duration (ncu locks the clocks, so its times run long); "
            "launch-to-launch: CUDA events around 1000 back-to-back launches of that kernel alone. "
            "benchmarks/results/probe_ch6_8_h100.json, ncu_ch6_8_h100.txt")
    return RecordedTable(f"Batch 1, the fused CUDA C forward, {t['device']}, {t['date']}",
                         ("kernel", "GPU time (us)", "launch to launch (us)"), rows, note)


def pytorch_modes_table(data: dict | None = None):
    """PyTorch eager, channels_last and torch.compile against the course's fused forward (FP32,
    TF32 off), recorded on an H100 in one run."""
    from ..gpubench.cnn import pytorch_modes
    from ..gpubench.conv import probe
    from .tables import RecordedTable

    p = probe(data)
    rows = []
    for r in pytorch_modes(data):
        course = r["course_fused_ms"]
        for name, key in (("PyTorch eager (cuDNN)", "eager_ms"), ("PyTorch channels_last", "channels_last_ms"),
                          ("PyTorch torch.compile", "compile_ms"), ("course, CUDA C, conv + pool fused", "course_fused_ms")):
            rows.append((f"{r['batch']:,}", name, f"{r[key]:.3f}", f"{r[key] / course:.2f}"))
    note = ("GPU time between CUDA events (batch 1: over 20 back-to-back calls); FP32 with TF32 off; "
            "benchmarks/results/probe_ch6_8_h100.json")
    return RecordedTable(f"The chapter's network, FP32, {p['device']}, {p['date']}",
                         ("batch", "implementation", "time (ms)", "time / course's"), rows, note,
                         bold=[i for i, r in enumerate(rows) if r[1].startswith("course")])


def _graph_fused(section: str, data: dict | None):
    """``(entry, None)`` for a section of the recorded graph / fused-baseline run, or ``(None,
    RecordedTable)`` saying how to record it while nothing is recorded."""
    from ..gpubench.cnn import graph_fused_recorded
    from .tables import RecordedTable

    try:
        entry = graph_fused_recorded(data)[section]
    except (LookupError, KeyError):
        return None, RecordedTable("Not recorded yet", ("what to run",),
                                   [("python benchmarks/gpu_cnn_graph_fused.py --store, on a GPU",)])
    return entry, None


def batch1_graphs_table(data: dict | None = None):
    """The batch-1 fused forward (5 kernels) in numba-cuda and CUDA C, launched one by one and
    replayed as one CUDA graph, all on one stream, timed by CUDA events on it (µs per forward),
    with whether each graph reproduced its eager launches bit for bit."""
    from ..gpubench.cnn import BATCH1_GRAPH_ROWS
    from .tables import RecordedTable

    g, missing = _graph_fused("graphs", data)
    if missing is not None:
        return missing
    us, best = g["us"], min(g["us"].values())
    rows = [(name.replace("cuda-c", "CUDA C"), f"{us[name]:.1f}", f"{us[name] / best:.2f}",
             "same bits" if g["checks"][name.split()[0]]["graph_equals_eager_bits"] else "DIFFERENT")
            for name in BATCH1_GRAPH_ROWS]
    gain = {impl: us[f"{impl} eager"] - us[f"{impl} CUDA graph"] for impl in ("numba", "cuda-c")}
    note = (f"A graph saves {gain['numba']:.1f} µs per forward in numba-cuda and {gain['cuda-c']:.1f} µs in CUDA C. "
            f"{g['timer']}; the probabilities of the graph against the eager launches on a second image, "
            "every output poisoned before the replay. benchmarks/gpu_cnn_graph_fused.py")
    return RecordedTable(f"Batch 1, fused forward, eager and CUDA graph, {g['device']}, {g['date']}",
                         ("implementation", "time per forward (us)", "vs fastest", "graph vs eager"), rows, note,
                         bold=[i for i, r in enumerate(rows) if "graph" in r[0]])


def cudnn_fused_table(data: dict | None = None):
    """Each convolution with bias + ReLU (and then its max-pool): PyTorch's separate layers,
    cuDNN's fused conv + bias + ReLU, torch.compile and the course's CUDA C kernels, FP32 with
    TF32 off, one run; with the kernels cuDNN's fused call ran."""
    from .tables import RecordedTable

    f, missing = _graph_fused("fused", data)
    if missing is not None:
        return missing
    rows, bold = [], []
    for layer, parts in f["layers"].items():
        for part, what in (("conv+bias+relu", "conv + bias + ReLU"), ("+pool", "... + max-pool")):
            fastest = min(parts[part].values())
            for name, ms in sorted(parts[part].items(), key=lambda kv: kv[1]):
                if name.startswith("course"):
                    bold.append(len(rows))
                rows.append((layer, what, name, f"{ms:.4f}", f"{ms / fastest:.2f}"))
    kernels = "; ".join(f"{layer}: {', '.join(k[:60] for k in names[:2])}" for layer, names in f["kernels"].items())
    note = (f"Batch {f['batch']:,}, FP32 with TF32 off, cuDNN {f['cudnn']} (torch {f['torch']}), CUDA events around "
            f"back-to-back calls. The kernels cuDNN's fused call ran: {kernels}. benchmarks/gpu_cnn_graph_fused.py")
    return RecordedTable(f"Fused baselines per convolution layer, {f['device']}, {f['date']}",
                         ("layer", "what", "implementation", "time (ms)", "vs fastest"), rows, note, bold=bold)


# ------------------------------------------------------------------------------------------
# The convolutions on the tensor cores (benchmarks/gpu_cnn_tensor_cores.py; topics.cnn_tensor_cores)
# ------------------------------------------------------------------------------------------
_NOT_MEASURED = "python benchmarks/gpu_cnn_tensor_cores.py --store, on a GPU"


def tensor_core_conv_summary(data: dict | None = None) -> dict:
    """Per layer, the figures the chapter states from the recorded run: the course's TF32 / BF16
    kernels (``course``: precision -> ms), cuDNN's fastest layout in each precision (``cudnn``:
    precision -> {ms, layout, kernel}), the course's fastest FP32 kernel (``fp32``), the ratios
    (``vs_cudnn``: course / cuDNN time, above 1 slower; ``vs_fp32``: course FP32 time / tensor
    cores', above 1 faster), the share of the tensor cores' multiplies that is not padding
    (``useful``) and the course kernels' effective bandwidth (fewest FP32 bytes / time, GB/s).
    LookupError while nothing is recorded."""
    from ..gpubench.cnn import tensor_cores_recorded

    t = tensor_cores_recorded(data)
    layers = {}
    for layer, entry in t["layers"].items():
        rows = [r for r in entry["rows"] if "ms" in r]
        course = {r["precision"]: r for r in rows if r["impl"] == "course" and r["precision"] != "fp32"}
        fp32 = min((r for r in rows if r["impl"] == "course" and r["precision"] == "fp32"), key=lambda r: r["ms"])
        cudnn = {}
        for r in rows:
            if r["impl"] == "cudnn" and (r["precision"] not in cudnn or r["ms"] < cudnn[r["precision"]]["ms"]):
                cudnn[r["precision"]] = {"ms": r["ms"], "layout": r["layout"],
                                         "kernel": (r.get("kernels") or [["?"]])[0][0]}
        layers[layer] = {
            "course": {p: r["ms"] for p, r in course.items()}, "cudnn": cudnn,
            "fp32": {"name": fp32["name"], "ms": fp32["ms"]},
            "vs_cudnn": {p: r["ms"] / cudnn[p]["ms"] for p, r in course.items() if p in cudnn},
            "vs_fp32": {p: fp32["ms"] / r["ms"] for p, r in course.items()},
            "useful": {p: g["useful_fraction"] for p, g in entry["gemm"].items()},
            "gemm": entry["gemm"], "flops": entry["flops"],
            "gb_per_s": {p: entry["fewest_bytes_fp32"] / (r["ms"] * 1e-3) / 1e9 for p, r in course.items()}}
    return {"layers": layers, "device": t["device"], "date": t["date"], "batch": t["batch"],
            "cudnn_version": t.get("cudnn"), "torch": t.get("torch")}


def tensor_core_conv_table(data: dict | None = None):
    """conv1 and conv2 (bias + ReLU, batch 10,000): the course's WMMA kernels in TF32 and BF16,
    cuDNN in FP32 / TF32 / BF16 and NCHW / channels_last, and the course's FP32 kernels, one run;
    per layer fastest first, with what each ran (cuDNN's kernel names its algorithm)."""
    from ..gpubench.cnn import tensor_cores_recorded
    from .tables import RecordedTable

    try:
        t = tensor_cores_recorded(data)
    except LookupError:
        return RecordedTable("Not recorded yet", ("what to run",), [(_NOT_MEASURED,)])
    rows, bold = [], []
    for layer, entry in t["layers"].items():
        timed = sorted((r for r in entry["rows"] if "ms" in r), key=lambda r: r["ms"])
        for r in timed:
            if r["impl"] == "course" and r["precision"] != "fp32":
                bold.append(len(rows))
            ran = r.get("kernel") or ", ".join(k[0][:48] for k in r.get("kernels", [])[:1])
            rows.append((layer, r["name"], f"{r['ms']:.4f}", f"{r['ms'] / timed[0]['ms']:.2f}",
                         f"{entry['flops'] / (r['ms'] * 1e-3) / 1e12:.1f}", ran))
    g = {layer: e["gemm"] for layer, e in t["layers"].items()}
    padding = "; ".join(f"{layer}: N {x['tf32']['n']} -> {x['tf32']['n_padded']}, depth {x['tf32']['depth']} -> "
                        f"{x['tf32']['depth_padded']} (TF32) / {x['bf16']['depth_padded']} (BF16)" for layer, x in g.items())
    note = (f"Batch {t['batch']:,}, conv + bias + ReLU, cuDNN {t.get('cudnn')} (torch {t.get('torch')}) with its "
            f"algorithm search on, FP32 output for the course's kernels (they read float32 and round to TF32 / BF16 "
            f"while staging), BF16 in and out for cuDNN's BF16 rows (half the bytes). Useful TFLOP/s: the layer's "
            f"2*P*N*Kd FLOPs over the time. The tensor cores' GEMM: {padding}. Course rows checked against float64 "
            f"within their precision's bound. benchmarks/gpu_cnn_tensor_cores.py")
    return RecordedTable(f"Convolutions on the tensor cores, {t['device']}, {t['date']}",
                         ("layer", "implementation", "time (ms)", "vs fastest", "useful TFLOP/s", "kernel"),
                         rows, note, bold=bold)


def tensor_core_conv_findings(data: dict | None = None) -> str:
    """The chapter's sentences on the tensor-core rows, every figure from the recorded run
    (:func:`tensor_core_conv_summary`), in Markdown; a line saying what to run while nothing
    is recorded."""
    from ..hardware import H100_SXM

    try:
        s = tensor_core_conv_summary(data)
    except LookupError:
        return f"Not measured yet: run `{_NOT_MEASURED}`."
    out = []
    for layer, x in s["layers"].items():
        g = x["gemm"]["tf32"]
        parts = []
        for p in ("tf32", "bf16"):
            if p in x["course"] and p in x["cudnn"]:
                c = x["cudnn"][p]
                parts.append(f"{p.upper()} {x['course'][p]:.3f} ms, {x['vs_cudnn'][p]:.2f} × the time of cuDNN's "
                             f"fastest {p.upper()} ({c['ms']:.3f} ms, {c['layout']}, `{c['kernel'][:40]}`)")
        out.append(f"**{layer}** ({g['n']} channels padded to {g['n_padded']}, depth {g['depth']} to "
                   f"{g['depth_padded']} in TF32 and {x['gemm']['bf16']['depth_padded']} in BF16: "
                   f"{100 * x['useful']['tf32']:.0f} % / {100 * x['useful']['bf16']:.0f} % of the tensor cores' "
                   f"multiplies useful): the course's " + "; ".join(parts) + ". "
                   f"The course's fastest FP32 kernel ({x['fp32']['name'].replace('course ', '')}) takes "
                   f"{x['fp32']['ms']:.3f} ms: TF32 on the tensor cores runs it {x['vs_fp32']['tf32']:.2f} × as fast, "
                   f"BF16 {x['vs_fp32']['bf16']:.2f} ×.")
    best = max(v for x in s["layers"].values() for v in x["vs_fp32"].values())
    bw = max(v for x in s["layers"].values() for v in x["gb_per_s"].values())
    verdict = (f"the best the tensor cores do against the course's own FP32 kernels is {best:.2f} ×"
               + (": on layers this narrow they do not pay" if best < 1.1 else ""))
    out.append(f"What this supports: {verdict}. The course's tensor-core kernels move the layers' fewest bytes at "
               f"{bw:,.0f} GB/s at best ({100 * bw / H100_SXM.memory_bandwidth_gbs:.0f} % of the H100 SXM's "
               f"{H100_SXM.memory_bandwidth_gbs:,.0f} GB/s). It does not say where the rest of their time goes: no "
               f"profile of them was taken ({s['device']}, {s['date']}, batch {s['batch']:,}).")
    return "\n\n".join(out)
