"""Chapter 8's tensor-core convolution on a GPU: each WMMA kernel of kernels/cnn.cu (TF32, BF16)
against the float64 convolution within its precision's bound (cnn.tc_conv_bound), on odd sizes
and on the network's layers; and the benchmark (benchmarks/gpu_cnn_tensor_cores.py, PyTorch in
its child process) runs every row, checks the course's and names the kernels cuDNN ran."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_support import requires_gpu
from simtlab.kernels import cnn

pytestmark = [pytest.mark.gpu, requires_gpu]

#: (B, C, H, W, M): not a multiple of the 64-pixel block, depths 50 and 150 (partial stages),
#: 17 channels (a second 16-channel block), and the network's two layers
SHAPES = [(3, 2, 11, 13, 5), (5, 6, 16, 13, 17), (37, 1, 28, 28, 6), (37, 6, 12, 12, 16)]


def _run(precision, x, w, bias):
    import cupy

    from simtlab.cuda_source import cu_kernel

    b, _, h, wd = x.shape
    m, _, k, _ = w.shape
    y = cupy.full((b, m, h - k + 1, wd - k + 1), np.nan, cupy.float32)
    launch = cnn.tc_conv_launch(precision, *(cupy.asarray(a) for a in (x, w, bias)), y)
    grid = launch.grid if isinstance(launch.grid, tuple) else (launch.grid,)
    cu_kernel(cnn.TOPIC, launch.kernel)(grid, (launch.block,), launch.args)
    cupy.cuda.runtime.deviceSynchronize()
    return cupy.asnumpy(y)


@pytest.mark.parametrize("precision", sorted(cnn.TC_CONV_KERNELS))
@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
def test_tensor_core_conv_is_within_its_precisions_bound(precision, shape):
    b, c, h, w_, m = shape
    r = np.random.default_rng(sum(shape))
    x = (r.random((b, c, h, w_), dtype=np.float32) + np.float32(0.5))
    w = r.random((m, c, 5, 5), dtype=np.float32) * np.float32(2) - np.float32(1)
    bias = r.random(m, dtype=np.float32) - np.float32(0.5)
    got = _run(precision, x, w, bias).astype(np.float64)
    assert np.isfinite(got).all(), "outputs left unwritten"
    for rounded in (False, True):
        err = np.abs(got - cnn.tc_conv_reference(x, w, bias, precision if rounded else None))
        bound = cnn.tc_conv_bound(x, w, bias, precision, inputs_rounded=rounded)
        assert (err <= bound).all(), (f"{precision} {shape}: {int((err > bound).sum())} outputs beyond the bound "
                                      f"(reference of {'rounded' if rounded else 'float32'} inputs); worst "
                                      f"{float((err / bound).max()):.3g} of it")


def test_tensor_core_conv_on_the_trained_network_predicts_what_fp32_predicts():
    """The network's conv layers on the tensor cores, the rest in FP32: on the shipped sample the
    tensor-core paths predict the FP32 labels on (almost) every image; conv1 stays within its bound."""
    from simtlab import cnn_data

    params = cnn_data.load_weights()
    x = cnn_data.to_input(cnn_data.load_sample().images[:500])
    ref = cnn.forward_cpu(params, x)
    for precision in cnn.TC_CONV_KERNELS:
        c1 = _run(precision, x, params["conv1_w"], params["conv1_b"])
        assert (np.abs(c1 - cnn.tc_conv_reference(x, params["conv1_w"], params["conv1_b"]))
                <= cnn.tc_conv_bound(x, params["conv1_w"], params["conv1_b"], precision)).all()
        p1 = cnn.maxpool_cpu(c1)
        c2 = _run(precision, p1, params["conv2_w"], params["conv2_b"])
        flat = cnn.maxpool_cpu(c2).reshape(len(x), -1)
        logits = cnn.dense_cpu(cnn.dense_cpu(flat, params["fc1_w"], params["fc1_b"], True), params["fc2_w"],
                               params["fc2_b"], False)
        # BF16 moves activations by up to 2^-7 of their window's sum |x||w|: near-ties may flip
        assert (logits.argmax(1) == ref["labels"]).mean() >= (0.99 if precision == "tf32" else 0.98), precision


def test_the_benchmark_runs_every_row_and_checks_the_course(tmp_path):
    """benchmarks/gpu_cnn_tensor_cores.py at a small batch, in a subprocess (PyTorch in its own child)."""
    import importlib.util
    import json
    import subprocess
    import sys
    from pathlib import Path

    from simtlab.gpubench import cnn as G

    if importlib.util.find_spec("torch") is None:
        pytest.skip("PyTorch is not installed")
    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "tc.json"
    proc = subprocess.run([sys.executable, str(root / "benchmarks" / "gpu_cnn_tensor_cores.py"), "--batch", "400",
                           "--repeat", "3", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert not res.get("errors"), res.get("errors")
    for layer in G.TC_LAYERS:
        rows = res["layers"][layer]["rows"]
        assert {r["name"] for r in rows if r["impl"] == "course"} == set(G.TC_COURSE_ROWS)
        assert {(r["precision"], r["layout"]) for r in rows if r["impl"] == "cudnn"} == \
            {(p, lay) for p in G.TC_CUDNN_PRECISIONS for lay in G.TC_CUDNN_LAYOUTS}
        assert all(r["ms"] > 0 for r in rows)
        assert all(r["check"]["within_bound"] for r in rows if r["impl"] == "course")
        for r in rows:
            if r["impl"] == "cudnn":
                assert r["kernels"], f"{layer} {r['name']}: the profiler saw no kernel"
                # cuDNN's own output (BF16 rounds it to 8 bits) against the float64 reference
                assert r["max_rel_diff"] < (2e-2 if r["precision"] == "bf16" else 5e-3), (layer, r["name"], r["max_rel_diff"])
