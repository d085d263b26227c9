"""Chapter 7 on the GPU: every convolution version against cuDNN (PyTorch's ``conv2d``).

The layers are ECE408's modified LeNet-5 convolutions, C1 (1 -> 4 maps, 7x7, 86x86 input) and
C3 (4 -> 16 maps, 7x7, 40x40 input), float32, NCHW, at a batch of 1,000 and 10,000. Each
version of ``kernels/conv.py`` (numba-cuda) and ``kernels/conv.cu`` (CUDA C through CuPy) is
timed for the whole layer (v2: the unroll and the GEMM). cuDNN runs with TF32 off and its
algorithm search on (``torch.backends.cudnn.benchmark``), timed in the same run.

Bytes moved (napkin math, the same for every version so that the ratio is the time ratio):
the input, the weights and the output once each. The inputs are positive, so v1's ReLU leaves
the convolution unchanged and it is compared like the others.

``conv_runner`` runs one version's launch plan (the table ``kernels.conv.VERSIONS``, the same
plan the emulator runs); tests/test_conv_gpu.py uses it too.
"""

from __future__ import annotations

import types

import numpy as np

from .harness import Case, nonzero_random

TOPIC = "conv"
REFERENCE = "torch conv2d (cuDNN, TF32 off)"
LAYERS = ("C1", "C3")
BATCHES = (1000, 10000)
#: the batch each version's output is checked at before it is timed (odd)
CHECK_BATCH = 7

#: v5 (CUDA C only): the tile shapes (TX, TH, TW) the benchmark tries per layer (kernels/conv.cu has them)
V5_CONFIGS = {
    "C1": [(32, 8, 1), (16, 8, 2), (16, 8, 5)],
    "C3": [(16, 8, 2), (8, 16, 4), (16, 8, 4)],
}

__all__ = ["TOPIC", "REFERENCE", "LAYERS", "BATCHES", "V5_CONFIGS", "layer_shape", "recorded",
           "probe", "cudnn_algorithm", "cudnn_table", "PROBE_KEY",
           "measure", "results", "summary_table", "conv_runner", "torch_runner", "layer_module", "cases",
           "CHECK_BATCH", "im2col_cublas_runner", "optim_cases", "optim_module", "OPTIM_PATH", "OPTIM_KEY", "optim_recorded",
           "fair_gemm_summary", "STORAGE_ROWS", "storage_cases", "storage_module", "STORAGE_PATH", "STORAGE_KEY",
           "storage_recorded", "storage_comparison", "storage_summary", "STORAGE_NOISE",
           "storage_report", "storage_measured_ms"]


def layer_shape(layer: str) -> dict:
    from ..kernels import conv as K

    shapes = {"C1": K.LENET_C1, "C3": K.LENET_C3}
    if layer not in shapes:
        raise ValueError(f"unknown layer {layer!r}; the benchmarked layers are {', '.join(shapes)}")
    return shapes[layer]


def conv_runner(version: str, impl: str, x, w, stride: int = 1, padding="valid", config=None):
    """``(run, y)``: ``run()`` enqueues the whole layer ``y = conv(x, w)`` with one version of
    ``kernels.conv.VERSIONS`` through its launch plan (``impl`` "numba" or "cuda-c"; v5 and v6
    are CUDA C only, ``config`` their tile: (TX, TH, TW) for v5, (TW, NT, IH, IWP) for v6,
    default the layer's first in ``V5_TILES``/``V6_TILES``).
    ``x`` (B, C, H, W) and ``w`` (M, C, K, K) are float32 CuPy arrays; ``padding`` as in
    ``kernels.conv.conv_geometry`` ('valid', 'same' or an int)."""
    from .. import versions
    from ..kernels import conv as K

    v = versions.find(K.VERSIONS, version)
    return versions.gpu_runner(TOPIC, v, impl, x, w, stride=stride, padding=padding, tile=config)


def torch_runner(x, w, stride: int = 1, pad: int = 0):
    """``(run, out)``: cuDNN's convolution through PyTorch on the same CuPy arrays (TF32 off,
    algorithm search on); ``out[0]`` is the last output (a torch tensor)."""
    import torch

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    xt, wt = torch.from_dlpack(x), torch.from_dlpack(w)
    out = [None]

    def run():
        out[0] = torch.nn.functional.conv2d(xt, wt, stride=stride, padding=pad)
    return run, out


# ------------------------------------------------------------------------------------------
# Cases: one layer, n = the batch
# ------------------------------------------------------------------------------------------
def _inputs(layer: str, batch: int, seed: int = 0):
    s = layer_shape(layer)
    x = nonzero_random((batch, s["C"], s["H"], s["W"]), seed=seed)
    w = nonzero_random((s["M"], s["C"], s["K"], s["K"]), seed=seed + 1) * np.float32(0.1)
    return x, w


def _check(layer, make):
    def check(batch):
        import cupy

        from ..kernels.conv import conv2d_cpu

        x, w = _inputs(layer, batch, seed=5)
        run, y = make(x, w)
        run()
        cupy.cuda.runtime.deviceSynchronize()
        got = y[0] if isinstance(y, list) else y
        got = got.cpu().numpy() if hasattr(got, "cpu") else cupy.asnumpy(got)
        want = conv2d_cpu(cupy.asnumpy(x), cupy.asnumpy(w))
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-4):
            err = np.abs(got - want).max() if got.shape == want.shape else "shape"
            raise AssertionError(f"{layer} batch {batch}: largest error {err} (allowed 1e-4 relative)")
    return check


def _case(layer, name, impl, make, reference=False) -> Case:
    from ..kernels.conv import conv_bytes, conv_flops

    s = layer_shape(layer)
    ho, wo = s["H"] - s["K"] + 1, s["W"] - s["K"] + 1

    def prepare(batch):
        run, _ = make(*_inputs(layer, batch))
        return run

    return Case(name=name, impl=impl, prepare=prepare, check=_check(layer, make), reference=reference,
                bytes_moved=lambda b: conv_bytes(b, s["C"], s["H"], s["W"], s["M"], s["K"], ho, wo),
                flops=lambda b: conv_flops(b, s["C"], s["M"], s["K"], ho, wo))


def cases(layer: str = "C1") -> list[Case]:
    out = [_case(layer, "cuDNN conv2d (reference)", "library", torch_runner, reference=True)]
    from ..kernels.conv import VERSIONS

    for version in VERSIONS:
        if version.label.startswith(("v0", "v5", "v6")):    # v0 is wrong on purpose; v5/v6 per tile below
            continue
        for impl in version.impls:
            out.append(_case(layer, f"{version.label} ({impl})", impl,
                             lambda x, w, v=version.label, i=impl: conv_runner(v, i, x, w)))
    for config in V5_CONFIGS[layer]:
        label = "v5 tuned {}x{}x{} (cuda-c)".format(*config)
        out.append(_case(layer, label, "cuda-c",
                         lambda x, w, cfg=config: conv_runner("v5 tuned", "cuda-c", x, w, config=cfg)))
    from ..kernels.conv import V6_TILES

    s = layer_shape(layer)
    for tile in V6_TILES[(s["C"], s["M"], s["K"])]:
        label = "v6 image per block tw{} nt{} (cuda-c)".format(*tile)
        out.append(_case(layer, label, "cuda-c",
                         lambda x, w, t=tile: conv_runner("v6 image per block", "cuda-c", x, w, config=t)))
    first = V6_TILES[(s["C"], s["M"], s["K"])][0]
    out.append(_case(layer, "v6 image per block tw{} nt{} (numba)".format(*first), "numba",
                     lambda x, w, t=first: conv_runner("v6 image per block", "numba", x, w, config=t)))
    return out


def layer_module(layer: str):
    """A topic-like object for ``harness.run_topic``: the cases of one layer."""
    return types.SimpleNamespace(__name__=f"{__name__}[{layer}]", REFERENCE=REFERENCE,
                                 cases=lambda: cases(layer))


# ------------------------------------------------------------------------------------------
# Optimisation rows: im2col judged with cuBLAS as its GEMM, v3 against v3b (the offset table)
# ------------------------------------------------------------------------------------------
def im2col_cublas_runner(x, w, part: str = "layer"):
    """``(run, y)``: the course's im2col (CUDA C) writes the unrolled matrix, then cuBLAS SGEMM
    (``cupy.matmul``, FP32: ``CUPY_TF32`` must be 0) multiplies w (M x C*K*K) by it into an
    (M, B*Ho*Wo) product, then a copy puts it in NCHW. ``part``: "layer" (all three), or "gemm"
    (the SGEMM alone, on a matrix unrolled once before; ``y`` is then not the layer)."""
    import cupy

    from .. import versions
    from ..kernels import conv as K
    from .gemm import fp32_reference
    from .launch import bind

    fp32_reference()
    launches, y = versions.find(K.VERSIONS, "v2 im2col + GEMM").launches("cuda-c", cupy, x, w)
    unroll = launches[0]
    cols = unroll.args[1]
    bsz, m = y.shape[0], y.shape[1]
    hw = y.shape[2] * y.shape[3]
    w2 = w.reshape(m, -1)
    product = cupy.empty((m, cols.shape[1]), cupy.float32)
    im2col = bind("cuda-c", TOPIC, unroll.kernel, unroll.grid, unroll.block, *unroll.args)

    def gemm():
        cupy.matmul(w2, cols, out=product)

    if part == "gemm":
        im2col()
        gemm.keep = (cols, x, w)
        return gemm, product
    if part != "layer":
        raise ValueError(f"part must be 'layer' or 'gemm', not {part!r}")

    def run():
        im2col()
        gemm()
        cupy.copyto(y.reshape(bsz, m, hw), product.reshape(m, bsz, hw).transpose(1, 0, 2))
    run.keep = (cols, x, w)
    return run, y


def optim_cases(layer: str = "C1") -> list[Case]:
    """The rows of ``benchmarks/conv_gpu.py --optim``: cuDNN (the reference), v2 with the course's
    tiled GEMM, im2col + cuBLAS (the whole layer, and the SGEMM alone), v3 and v3b (offset table)
    in CUDA C and numba, and v6's default tile."""
    from ..kernels.conv import V6_TILES

    out = [_case(layer, "cuDNN conv2d (reference)", "library", torch_runner, reference=True),
           _case(layer, "v2 im2col + GEMM (cuda-c)", "cuda-c", lambda x, w: conv_runner("v2 im2col + GEMM", "cuda-c", x, w)),
           _case(layer, "im2col + cuBLAS SGEMM (cuda-c + cupy.matmul)", "library", im2col_cublas_runner)]
    gemm_only = _case(layer, "cuBLAS SGEMM alone, on the unrolled matrix", "library",
                      lambda x, w: im2col_cublas_runner(x, w, part="gemm"))
    out.append(Case(**{**gemm_only.__dict__, "check": None}))
    for label in ("v3 implicit GEMM", "v3b implicit GEMM, offset table"):
        for impl in ("cuda-c", "numba"):
            out.append(_case(layer, f"{label} ({impl})", impl, lambda x, w, v=label, i=impl: conv_runner(v, i, x, w)))
    s = layer_shape(layer)
    tile = V6_TILES[(s["C"], s["M"], s["K"])][0]
    out.append(_case(layer, "v6 image per block tw{} nt{} (cuda-c)".format(*tile), "cuda-c",
                     lambda x, w, t=tile: conv_runner("v6 image per block", "cuda-c", x, w, config=t)))
    return out


def optim_module(layer: str):
    """A topic-like object for ``harness.run_topic``: the optimisation rows of one layer."""
    return types.SimpleNamespace(__name__=f"{__name__}[{layer}, optim]", REFERENCE=REFERENCE,
                                 cases=lambda: optim_cases(layer))


#: where ``benchmarks/conv_gpu.py --optim`` writes its results (recorded on an H100 by the lead)
OPTIM_PATH = "benchmarks/results/conv_optim_h100.json"


OPTIM_KEY = "conv_optim"


def _recorded_run(key: str, rel_path: str, missing: str, path=None) -> dict:
    """What a ``benchmarks/conv_gpu.py`` mode recorded (``source``: 'recorded'): the file at
    ``path`` when given, else the package's store (``topics[key]``, which a built wheel ships),
    else the checkout's ``rel_path``; ``{"source": "none", "message": missing}`` when none has it."""
    import json
    from pathlib import Path

    from . import stored
    from ..paths import checkout_root

    if path is None:
        entry = stored(key)
        if entry is not None:
            return {**entry, "source": "recorded"}
        root = checkout_root()
        path = root / rel_path if root else None
    if path is None or not Path(path).exists():
        return {"source": "none", "message": missing}
    return {**json.loads(Path(path).read_text()), "source": "recorded"}


def optim_recorded(path=None) -> dict:
    """The optimisation rows recorded by ``benchmarks/conv_gpu.py --optim`` (``source``:
    'recorded'), or ``{"source": "none", "message": ...}`` naming the command that records them."""
    return _recorded_run(OPTIM_KEY, OPTIM_PATH, "No optimisation rows recorded yet: run "
                         "CUPY_TF32=0 python benchmarks/conv_gpu.py --optim on a GPU.", path)


def _row(entry, start: str):
    return next((r for r in entry["rows"] if r["name"].startswith(start)), None)


def fair_gemm_summary(res: dict, layer: str, batch: int = 1000) -> str:
    """What the recorded optimisation rows say, in sentences built from the file: im2col with
    cuBLAS against the course's GEMM, the implicit GEMM and cuDNN; v3b against v3."""
    if res.get("source") == "none":
        return res["message"]
    entry = res["layers"][layer][str(batch)]
    ms = {key: (_row(entry, key) or {}).get("median_ms") for key in
          ("cuDNN", "v2 im2col + GEMM", "im2col + cuBLAS", "cuBLAS SGEMM alone", "v3 implicit GEMM (cuda-c)",
           "v3b implicit GEMM, offset table (cuda-c)", "v3 implicit GEMM (numba)",
           "v3b implicit GEMM, offset table (numba)", "v6")}
    missing = [k for k, v in ms.items() if v is None]
    if missing:
        return f"{layer} batch {batch:,}: rows missing from the recorded file: {', '.join(missing)}"
    lines = [
        f"{layer}, batch {batch:,} ({res.get('device')}, {res.get('date')}): im2col + cuBLAS takes "
        f"{ms['im2col + cuBLAS']:.3f} ms, of which the SGEMM alone {ms['cuBLAS SGEMM alone']:.3f} ms; "
        f"with the course's tiled GEMM {ms['v2 im2col + GEMM']:.3f} ms.",
        f"Against the implicit GEMM v3 ({ms['v3 implicit GEMM (cuda-c)']:.3f} ms): im2col + cuBLAS is "
        f"{ms['v3 implicit GEMM (cuda-c)'] / ms['im2col + cuBLAS']:.2f}x as fast; against cuDNN "
        f"({ms['cuDNN']:.3f} ms) {ms['cuDNN'] / ms['im2col + cuBLAS']:.2f}x; against v6 ({ms['v6']:.3f} ms) "
        f"{ms['v6'] / ms['im2col + cuBLAS']:.2f}x.",
        f"v3b (offset table) against v3: CUDA C {ms['v3 implicit GEMM (cuda-c)'] / ms['v3b implicit GEMM, offset table (cuda-c)']:.2f}x "
        f"as fast, numba {ms['v3 implicit GEMM (numba)'] / ms['v3b implicit GEMM, offset table (numba)']:.2f}x."]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------
# 16-bit storage: v6 against v6h (x and y in FP16 or BF16, FP32 arithmetic), the same tile
# ------------------------------------------------------------------------------------------
#: the label of v6 in the storage rows, and of the 16-bit versions (kernels.conv.VERSIONS)
STORAGE_ROWS = {"fp32": "v6 image per block", "fp16": "v6h FP16 storage", "bf16": "v6h BF16 storage"}


def _check_storage(layer, version, storage):
    """v6h's check: decoded, within ``storage_error_bound`` of the float64 convolution."""
    def check(batch):
        import cupy

        from ..kernels import conv as K

        x, w = _inputs(layer, batch, seed=5)
        run, y = conv_runner(version, "cuda-c", x, w)
        run()
        cupy.cuda.runtime.deviceSynchronize()
        xh, wh = cupy.asnumpy(x), cupy.asnumpy(w)
        err = np.abs(K.from_storage(y, storage) - K.conv2d_float64(xh, wh))
        bound = K.storage_error_bound(xh, wh, storage)
        if not (err <= bound).all():
            raise AssertionError(f"{layer} {storage} batch {batch}: error {err.max():.3g} above its bound "
                                 f"({int((err > bound).sum())} outputs)")
    return check


def storage_cases(layer: str = "C1") -> list[Case]:
    """The rows of ``benchmarks/conv_gpu.py --storage``: v6 (FP32, the reference) and v6h with FP16
    and BF16 storage, v6's default tile each; bytes: x and y in the stored width, w in FP32."""
    from ..kernels.conv import storage_bytes

    s = layer_shape(layer)
    ho, wo = s["H"] - s["K"] + 1, s["W"] - s["K"] + 1
    fp32 = _case(layer, "v6 FP32 (cuda-c)", "cuda-c",
                 lambda x, w: conv_runner(STORAGE_ROWS["fp32"], "cuda-c", x, w), reference=True)
    out = [fp32]
    for storage in ("fp16", "bf16"):
        version = STORAGE_ROWS[storage]
        row = _case(layer, f"{version} (cuda-c)", "cuda-c", lambda x, w, v=version: conv_runner(v, "cuda-c", x, w))
        out.append(Case(**{**row.__dict__, "check": _check_storage(layer, version, storage),
                           "bytes_moved": lambda b: storage_bytes(b, s["C"], s["H"], s["W"], s["M"], s["K"], ho, wo)}))
    return out


def storage_module(layer: str):
    """A topic-like object for ``harness.run_topic``: the storage rows of one layer."""
    return types.SimpleNamespace(__name__=f"{__name__}[{layer}, storage]", REFERENCE="v6 FP32 (cuda-c)",
                                 cases=lambda: storage_cases(layer))


#: where ``benchmarks/conv_gpu.py --storage`` writes its results
STORAGE_PATH = "benchmarks/results/conv_storage_h100.json"


STORAGE_KEY = "conv_storage"


def storage_recorded(path=None) -> dict:
    """The storage rows recorded by ``benchmarks/conv_gpu.py --storage`` (``source``: 'recorded'),
    or ``{"source": "none", "message": ...}`` naming the command that records them."""
    return _recorded_run(STORAGE_KEY, STORAGE_PATH, "The 16-bit storage variant is not measured yet: run "
                         "python benchmarks/conv_gpu.py --storage on a GPU.", path)


def storage_comparison(res: dict, layer: str = "C1", batch: int = 1000) -> dict:
    """v6 FP32 against v6h FP16 and BF16 from a ``--storage`` result: per storage ``ms``, ``bytes``,
    ``gbps`` (achieved: its own bytes over its time) and ``speedup`` (v6 FP32's time over its own;
    above 1: the 16-bit variant is faster), with ``device`` and ``date``."""
    entry = res["layers"][layer][str(batch)]
    rows = {}
    for storage, version in STORAGE_ROWS.items():
        name = "v6 FP32 (cuda-c)" if storage == "fp32" else f"{version} (cuda-c)"
        row = next((r for r in entry["rows"] if r["name"] == name), None)
        if row is None:
            raise KeyError(f"{layer} batch {batch}: the row {name!r} is missing from the recorded file")
        rows[storage] = {"ms": row["median_ms"], "bytes": row["bytes"], "gbps": row["gbps"]}
    for r in rows.values():
        r["speedup"] = rows["fp32"]["ms"] / r["ms"]
    return {"layer": layer, "batch": batch, "rows": rows, "device": res.get("device"), "date": res.get("date")}


#: below this, a time ratio is within the run-to-run noise of these timings (a few %)
STORAGE_NOISE = 0.03


def storage_summary(res: dict, layer: str = "C1", batch: int = 1000) -> str:
    """What the measurement says about 16-bit storage, in sentences built from the result: each
    variant's time, bytes and GB/s against v6 FP32, and whether halving the bytes made it faster."""
    if res.get("source") == "none":
        return res["message"]
    cmp = storage_comparison(res, layer, batch)
    r = cmp["rows"]
    lines = [f"{layer}, batch {batch:,} ({cmp['device']}, {cmp['date']}), v6's tile in every row:"]
    for storage, name in (("fp32", "v6 FP32"), ("fp16", "v6h FP16 storage"), ("bf16", "v6h BF16 storage")):
        lines.append(f"  {name:<18} {r[storage]['ms'] * 1e3:7.1f} µs  {r[storage]['bytes'] / 1e6:6.1f} MB  "
                     f"{r[storage]['gbps']:6.0f} GB/s  {r[storage]['speedup']:.2f}x v6 FP32")
    peak = (res.get("peaks") or {}).get("hbm_gbps")
    if peak:
        lines.append(f"v6 FP32 moves {r['fp32']['gbps']:.0f} GB/s, {r['fp32']['gbps'] / peak:.0%} of the "
                     f"{peak / 1e3:.2f} TB/s HBM peak.")
    best = max(("fp16", "bf16"), key=lambda st: r[st]["speedup"])
    gain = r[best]["speedup"]
    # what Nsight Compute measured (benchmarks/results/ncu_ch6_8_h100.txt): C1 only
    profiled = " (Nsight Compute calls v6 issue-bound on C1)" if layer == "C1" else ""
    if gain >= 1 + STORAGE_NOISE:
        lines.append(f"16-bit storage is faster: {best.upper()} {gain:.2f}x v6 FP32. Halving the bytes shortened v6, "
                     "so DRAM traffic was part of its time: the prediction that 16-bit storage would not help is wrong here.")
    elif gain <= 1 - STORAGE_NOISE:
        lines.append(f"Both 16-bit variants are slower (the better {gain:.2f}x v6 FP32): half the bytes did not make v6 "
                     f"faster, so DRAM traffic does not limit it here{profiled}, as predicted.")
    else:
        lines.append(f"Half the bytes, the same time (the better {gain:.2f}x v6 FP32, within {STORAGE_NOISE:.0%}): the "
                     f"time does not follow the bytes, so DRAM traffic does not limit v6 here{profiled}, as predicted.")
    return "\n".join(lines)


def storage_report(res: dict, layers=LAYERS, batch: int = 1000) -> str:
    """:func:`storage_summary` of every layer ``res`` holds at ``batch`` (chapter 7's cell), or the
    message saying the run is missing."""
    if res.get("source") == "none":
        return res["message"]
    held = [layer for layer in layers if str(batch) in res.get("layers", {}).get(layer, {})]
    return "\n\n".join(storage_summary(res, layer, batch) for layer in held)


def storage_measured_ms(res: dict, layer: str = "C1", batch: int = 1000) -> dict:
    """Name -> ms of the ``--storage`` rows (for ``plots.conv.plot_storage_floors``); empty when
    nothing is recorded."""
    if res.get("source") == "none":
        return {}
    rows = storage_comparison(res, layer, batch)["rows"]
    names = {"fp32": "v6 FP32", "fp16": "v6h FP16 storage", "bf16": "v6h BF16 storage"}
    return {names[st]: r["ms"] for st, r in rows.items()}


# ------------------------------------------------------------------------------------------
# Recorded results: the key topics.conv of the one store (simtlab/data/h100_timings.json),
# written by benchmarks/conv_gpu.py
# ------------------------------------------------------------------------------------------
def recorded(path=None) -> dict:
    """The figures benchmarks/conv_gpu.py recorded (``source``: 'recorded', or 'none')."""
    from . import RESULTS_PATH, stored

    data = stored("conv", path or RESULTS_PATH)
    if data is None:
        return {"source": "none", "message": "No convolution timings recorded yet: run benchmarks/conv_gpu.py on a GPU."}
    return {**data, "source": "recorded"}


def measure(layers=LAYERS, batches=(1000,), log=print) -> dict:
    """Check and time every version on this GPU now (the chapter uses a batch of 1,000: quick)."""
    from .harness import run_topic, stamp

    out = {**stamp(), "source": "measured", "layers": {}}
    for layer in layers:
        for batch in batches:
            log(f"Timing every version of LeNet {layer} at a batch of {batch:,} on this GPU ...")
            res = run_topic(layer_module(layer), n=batch, sweep=None, check_n=CHECK_BATCH, log=log)
            case = cases(layer)[0]
            flops, nbytes = case.flops(batch), case.bytes_moved(batch)
            for r in res["rows"]:
                r["tflops"] = flops / (r["median_ms"] * 1e-3) / 1e12
            peaks = recorded().get("peaks", {"fp32_tflops": 66.9, "hbm_gbps": 3350.0})
            res.update(layer=layer, batch=batch, flops=flops, bytes=nbytes,
                       roofline_ms=max(flops / (peaks["fp32_tflops"] * 1e12), nbytes / (peaks["hbm_gbps"] * 1e9)) * 1e3)
            out["layers"].setdefault(layer, {})[str(batch)] = res
    return out


def results(live: bool | None = None, log=print) -> dict:
    """Live measurements at a batch of 1,000 on a GPU (``live=None``: when one is usable), else
    the recorded ones (batches of 1,000 and 10,000)."""
    from .. import backend

    if live is None:
        live = backend.gpu_available()
    if live:
        return measure(log=log)
    res = recorded()
    if res["source"] == "recorded":
        log(f"No GPU here: showing the convolution timings recorded on {res.get('device')} on {res.get('date')}.")
    else:
        log(res["message"])
    return res


def summary_table(res: dict, layer: str, batch: int) -> str:
    """Version, ms, TFLOP/s, ratio to cuDNN (above 1: faster), fastest first."""
    if res.get("source") == "none":
        return res["message"]
    entry = res["layers"][layer][str(batch)]
    lines = [f"LeNet {layer}, batch {batch:,}: {entry['flops'] / 1e9:.2f} GFLOP, {entry['bytes'] / 1e6:.0f} MB, "
             f"roofline {entry['roofline_ms']:.3f} ms",
             f"{'version':<34} {'ms':>8} {'TFLOP/s':>8} {'vs cuDNN':>9}"]
    for r in sorted(entry["rows"], key=lambda r: r["median_ms"]):
        lines.append(f"{r['name']:<34} {r['median_ms']:8.3f} {r['tflops']:8.2f} {r['ratio']:8.2f}x")
    for e in entry.get("errors") or []:
        lines.append(f"{e['name']:<34} FAILED: {e['error'][:60]}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------
# cuDNN in every layout and precision (benchmarks/probe_ch6_8.py, recorded on an H100)
# ------------------------------------------------------------------------------------------
#: the entry of simtlab/data/h100_timings.json that tools/store_ch6_8_probe.py writes
PROBE_KEY = "ch6_8_probe"
#: the batch benchmarks/probe_ch6_8.py times every layout and precision at
PROBE_BATCH = 1000
PRECISIONS = {"fp32": "FP32 (TF32 off)", "tf32": "TF32 (PyTorch's default for cuDNN)",
              "fp16": "FP16", "bf16": "BF16"}
#: what a kernel's name says about the algorithm cuDNN chose (first match wins)
ALGORITHMS = (("fft", "FFT"), ("xmma_fprop_implicit_gemm", "implicit GEMM, tensor cores (xmma)"),
              ("cutlass", "implicit GEMM, tensor cores (CUTLASS)"),
              ("precomputed_convolve_sgemm", "GEMM with precomputed indices"),
              ("convolve_common_engine", "convolve_common_engine (no tensor cores)"))
_LAYOUT_KERNELS = ("ToNhwc", "ToNchw", "convertTensor", "AddPadding")


def probe(data: dict | None = None) -> dict:
    """The chapter 6-8 probe recorded on an H100 (``backend.recorded('ch6_8_probe')``)."""
    if data is not None:
        return data
    from ..backend import recorded as recorded_result

    return recorded_result(PROBE_KEY)


def cudnn_algorithm(kernels) -> str:
    """The algorithm cuDNN ran, from the names of the kernels it launched (longest first), and
    whether it also ran layout conversions (a transpose between NCHW and NHWC, padding)."""
    names = [k[0] if isinstance(k, (list, tuple)) else k for k in kernels]
    algorithm = next((label for name in names for key, label in ALGORITHMS if key in name), "other")
    if any(key in name for name in names for key in _LAYOUT_KERNELS):
        algorithm += " + layout conversion"
    return algorithm


def cudnn_table(layer: str, data: dict | None = None) -> dict:
    """cuDNN on ``layer`` ("C1" or "C3") in every layout and precision, beside the course's v5
    and v6 (CUDA C, FP32-exact) from the same run: ``rows`` of dicts (layout, precision, ms,
    algorithm, ``v6_speedup`` = cuDNN's time / v6's), ``course`` (name -> ms), ``batch``,
    ``device``, ``date``."""
    p = probe(data)
    rows, course = [], {}
    for r in p["cudnn"]["rows"]:
        if r["layer"] != layer or "ms" not in r:
            continue
        if "course" in r["precision"]:
            course[r["name"]] = r["ms"]
        else:
            rows.append({"layout": r["layout"], "precision": r["precision"], "ms": r["ms"],
                         "algorithm": cudnn_algorithm(r.get("kernels", [])),
                         "kernel": (r.get("kernels") or [["?"]])[0][0]})
    v6 = next((ms for name, ms in course.items() if name.startswith("v6")), None)
    for r in rows:
        r["v6_speedup"] = r["ms"] / v6 if v6 else None
    return {"layer": layer, "batch": PROBE_BATCH, "rows": rows, "course": course,
            "device": p["device"], "date": p["date"],
            "cudnn_version": p["cudnn"].get("cudnn"), "torch": p["cudnn"].get("torch")}
