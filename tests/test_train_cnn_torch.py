"""tools/train_cnn_torch.py, tools/export_fashion_npz.py and tools/check_cnn_weights.py without a GPU:
the trainer's network and export have kernels/cnn.py's layouts (checked against forward_cpu), its
NumPy check is forward_cpu's sums, the validation split and the schedule do what they say, and
the accuracy stored with a weight file is forward_cpu's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from simtlab import cnn_data
from simtlab.kernels import cnn

TOOLS = Path(__file__).resolve().parents[1] / "tools"


def _tool(name):
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _images(n, seed):
    return np.random.default_rng(seed).integers(0, 256, (n, 28, 28), dtype=np.uint8)


def test_trainer_numpy_check_is_forward_cpu():
    train = _tool("train_cnn_torch")
    params = cnn.init_params(3)
    params["fc2_b"] = np.linspace(-1, 1, 10, dtype=np.float32)
    images = _images(6, 4)
    logits = train.numpy_forward(params, images)
    want = cnn.forward_cpu(params, cnn_data.to_input(images))["fc2"]
    np.testing.assert_allclose(logits, want, rtol=1e-5, atol=1e-5)


def test_trainer_network_exports_kernels_cnn_layouts():
    torch = pytest.importorskip("torch")
    train = _tool("train_cnn_torch")
    torch.manual_seed(0)
    model = train.network().eval()
    images = _images(5, 5)
    params = train.export_params(model)
    assert {k: v.shape for k, v in params.items()} == cnn.PARAM_SHAPES
    with torch.no_grad():
        logits = model(torch.from_numpy(cnn_data.to_input(images))).numpy()
    np.testing.assert_allclose(logits, cnn.forward_cpu(params, cnn_data.to_input(images))["fc2"], rtol=1e-4, atol=1e-5)


def test_validation_split_holds_out_500_per_class():
    train = _tool("train_cnn_torch")
    labels = np.repeat(np.arange(10), 700)
    keep, held = train.split_validation(labels, seed=1)
    assert np.bincount(labels[held], minlength=10).tolist() == [500] * 10
    assert len(np.intersect1d(keep, held)) == 0 and len(keep) + len(held) == len(labels)


def test_schedule_warms_up_then_decays_to_zero():
    train = _tool("train_cnn_torch")
    steps, epochs, peak = 10, 5, 2e-3
    lrs = [train.lr_at(s, steps, epochs, peak) for s in range(steps * epochs)]
    assert lrs[0] == pytest.approx(peak / steps) and lrs[steps - 1] == pytest.approx(peak)
    assert max(lrs) == pytest.approx(peak) and lrs[-1] == pytest.approx(0.0, abs=1e-12)
    assert all(a >= b for a, b in zip(lrs[steps:], lrs[steps + 1:]))


def test_export_writes_train_and_test_uint8(tmp_path, monkeypatch):
    export = _tool("export_fashion_npz")
    fake = {"train": cnn_data.Images(_images(20, 6), np.arange(20) % 10),
            "test": cnn_data.Images(_images(10, 7), np.arange(10) % 10)}
    monkeypatch.setattr(cnn_data, "load_fashion_mnist", lambda split: fake[split])
    out = tmp_path / "fm.npz"
    assert export.main(["--out", str(out)]) == 0
    data = _tool("train_cnn_torch").load_data(out)
    np.testing.assert_array_equal(data["train_images"], fake["train"].images)
    np.testing.assert_array_equal(data["test_labels"], fake["test"].labels)
    assert data["train_labels"].dtype == np.uint8


def test_check_stores_forward_cpus_accuracy_and_keeps_the_rest(tmp_path):
    check = _tool("check_cnn_weights")
    params = cnn.init_params(8)
    path = tmp_path / "w.npz"
    np.savez_compressed(path, **params, meta_trainer=np.str_("test"), meta_torch_test_accuracy=np.float64(0.5))
    test = cnn_data.Images(_images(30, 9), np.arange(30) % 10)
    sample = cnn_data.Images(_images(12, 10), np.arange(12) % 10)
    check.rewrite(path, check.measure(path, test, sample))
    info = cnn_data.weights_info(path)
    want_test = float((cnn.forward_cpu(params, cnn_data.to_input(test.images))["labels"] == test.labels).mean())
    want_sample = float((cnn.forward_cpu(params, cnn_data.to_input(sample.images))["labels"] == sample.labels).mean())
    assert info["test_accuracy"] == want_test and info["sample_accuracy"] == want_sample
    assert info["trainer"] == "test" and info["torch_test_accuracy"] == 0.5
    for name, value in cnn_data.load_weights(path).items():
        np.testing.assert_array_equal(value, params[name])
