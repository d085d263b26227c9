"""Chapter 8 on a GPU: every layer of the network from the course's kernels (numba-cuda and
CUDA C, every conv path, the batch-1 vector-matrix product) equals the NumPy reference; on the
shipped Fashion-MNIST sample the GPU predicts what the reference predicts; a CUDA graph of the
forward pass, CUDA C or numba-cuda, gives the same result as its launches; PyTorch with the same
weights agrees, and so does cuDNN's fused conv + bias + ReLU (PyTorch in a subprocess)."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_support import requires_gpu
from simtlab import cnn_data
from simtlab.kernels import cnn

pytestmark = [pytest.mark.gpu, requires_gpu]

PATHS = [("numba", "implicit"), ("numba", "im2col"), ("numba", "fused"), ("cuda-c", "implicit"), ("cuda-c", "fused")]


def _params(seed=1):
    p = cnn.init_params(seed)
    r = np.random.default_rng(seed + 10)
    for k in p:
        if k.endswith("_b"):
            p[k] = (r.standard_normal(p[k].shape) * 0.1).astype(np.float32)
    return p


def _run(params, x, impl, conv, fc="gemm"):
    import cupy

    from simtlab.gpubench.cnn import course_forward, to_gpu_params

    run, out, _ = course_forward(to_gpu_params(params), cupy.asarray(x), impl=impl, conv=conv, fc=fc)
    run()
    cupy.cuda.runtime.deviceSynchronize()
    return {k: cupy.asnumpy(v) for k, v in out.items()}


@pytest.mark.parametrize("impl, conv", PATHS)
def test_every_layer_matches_the_reference(impl, conv):
    p = _params()
    x = np.random.default_rng(0).random((37, 1, 28, 28), dtype=np.float32)      # not a multiple of a tile
    ref = cnn.forward_cpu(p, x)
    out = _run(p, x, impl, conv)
    for layer, got in out.items():
        np.testing.assert_allclose(got, ref[layer], rtol=1e-4, atol=1e-5, err_msg=f"{impl} {conv}: {layer}")


@pytest.mark.parametrize("impl", ["numba", "cuda-c"])
def test_batch_1_vector_matrix_product(impl):
    p = _params(3)
    x = np.random.default_rng(4).random((1, 1, 28, 28), dtype=np.float32)
    ref = cnn.forward_cpu(p, x)
    out = _run(p, x, impl, "fused", fc="vecmat")
    for layer, got in out.items():
        np.testing.assert_allclose(got, ref[layer], rtol=1e-4, atol=1e-5, err_msg=f"{impl}: {layer}")


def test_sample_predictions_equal_the_reference():
    params = cnn_data.load_weights()
    s = cnn_data.load_sample()
    x = cnn_data.to_input(s.images)
    ref = cnn.forward_cpu(params, x)
    for impl, conv in [("cuda-c", "fused"), ("cuda-c", "implicit"), ("numba", "fused")]:
        out = _run(params, x, impl, conv)
        np.testing.assert_array_equal(out["labels"], ref["labels"], err_msg=f"{impl} {conv}")
    assert (ref["labels"] == s.labels).mean() >= 0.85


def test_cuda_graph_replays_the_forward_pass():
    import cupy

    from simtlab.gpubench.cnn import capture_graph, course_forward, to_gpu_params

    p = _params(5)
    x = np.random.default_rng(6).random((1, 1, 28, 28), dtype=np.float32)
    xg = cupy.asarray(x)
    run, out, _ = course_forward(to_gpu_params(p), xg, conv="fused", fc="vecmat")
    replay, stream = capture_graph(run)
    out["softmax"].fill(0)
    cupy.cuda.runtime.deviceSynchronize()          # the graph's stream does not wait for the default one
    replay()
    stream.synchronize()
    np.testing.assert_allclose(cupy.asnumpy(out["softmax"]), cnn.forward_cpu(p, x)["softmax"], rtol=1e-4, atol=1e-6)


def test_numba_forward_captured_in_a_cuda_graph_gives_the_eager_probabilities():
    """numba's launches go to CuPy's capturing stream: the graph holds the five kernels. It is
    replayed on a second image with every output poisoned, so a capture that recorded nothing
    (launches that ran at capture time on another stream) leaves NaN behind and fails."""
    import cupy

    from simtlab.gpubench.cnn import capture_graph, course_forward, to_gpu_params

    p = _params(11)
    images = np.random.default_rng(12).random((2, 1, 28, 28), dtype=np.float32)
    xg = cupy.asarray(images[:1])
    run, out, _ = course_forward(to_gpu_params(p), xg, impl="numba", conv="fused", fc="vecmat")
    replay, stream = capture_graph(run)
    with stream:
        xg[...] = cupy.asarray(images[1:])
        for name, a in out.items():
            a.fill(-1 if name == "labels" else np.nan)
        replay()
        stream.synchronize()
    captured = {k: cupy.asnumpy(v) for k, v in out.items()}
    run()                                              # eager, on the default stream, the same input
    cupy.cuda.runtime.deviceSynchronize()
    eager = cupy.asnumpy(out["softmax"])
    np.testing.assert_array_equal(captured["softmax"].view(np.uint32), eager.view(np.uint32))
    ref = cnn.forward_cpu(p, images[1:])
    np.testing.assert_allclose(captured["softmax"], ref["softmax"], rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(captured["labels"], ref["labels"])
    assert not np.allclose(ref["softmax"], cnn.forward_cpu(p, images[:1])["softmax"])   # the images differ


def test_batch1_graph_benchmark_checks_both_twins():
    from simtlab.gpubench.cnn import BATCH1_GRAPH_ROWS, batch1_graphs

    res = batch1_graphs(repeat=1, log=lambda s: None)
    assert set(res["us"]) == set(BATCH1_GRAPH_ROWS) and all(v > 0 for v in res["us"].values())
    for impl, check in res["checks"].items():
        assert check["graph_equals_eager_bits"], impl
        assert check["graph_max_abs_diff_vs_reference"] < 1e-5, impl


def test_cudnn_fused_conv_relu_agrees_with_the_reference(tmp_path):
    """cuDNN's fused conv + bias + ReLU row of benchmarks/gpu_cnn_graph_fused.py, in a subprocess:
    PyTorch is not imported into this process, where numba and CuPy already hold the GPU."""
    import importlib.util
    import json
    import subprocess
    import sys
    from pathlib import Path

    if importlib.util.find_spec("torch") is None:
        pytest.skip("PyTorch is not installed")
    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "fused.json"
    proc = subprocess.run([sys.executable, str(root / "benchmarks" / "gpu_cnn_graph_fused.py"), "--only", "fused",
                           "--batch", "300", "--no-compile", "--out", str(out)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())["fused"]
    for layer in ("conv1", "conv2"):
        assert set(res["layers"][layer]["conv+bias+relu"]) >= {"cuDNN fused conv + bias + ReLU",
                                                               "course direct, bias + ReLU in the store"}
        for name, diff in res["max_rel_diff"][layer].items():
            assert diff < 1e-4, f"{layer} {name}: {diff}"
        assert res["kernels"][layer], "the profiler saw no kernel of cuDNN's fused call"


def test_pytorch_with_the_same_weights_agrees():
    torch = pytest.importorskip("torch")
    from simtlab.gpubench.cnn import torch_model

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    p = _params(7)
    x = np.random.default_rng(8).random((9, 1, 28, 28), dtype=np.float32)
    with torch.inference_mode():
        probs = torch_model(p)(torch.from_numpy(x).cuda()).cpu().numpy()
    np.testing.assert_allclose(probs, cnn.forward_cpu(p, x)["softmax"], rtol=1e-4, atol=1e-6)


@pytest.mark.gpu
def test_the_chapter_measures_the_network_live_on_a_gpu():
    """What chapter 8 runs on a GPU: every part of the measurement completes, agrees with PyTorch
    and yields the figures the chapter plots."""
    from simtlab.gpubench import cnn as G
    from simtlab.plots import cnn as P

    res = G.results(live=True, big=1_000, log=lambda s: None)
    assert res["source"] == "measured" and not res.get("errors"), res.get("errors")
    assert res["agreement"]["course vs PyTorch labels equal"] > 0.99
    assert set(res["batch1_latency_ms"]) >= {"PyTorch eager", "PyTorch CUDA graph", "course cuda-c CUDA graph"}
    fig = P.plot_layer_timings(res)
    assert fig.axes and fig.axes[0].get_title() or fig._suptitle is not None
