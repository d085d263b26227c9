"""Measure a weight file's accuracy with kernels/cnn.py's NumPy reference and store it with the
weights; optionally install them as the chapter's weights.

    python tools/check_cnn_weights.py benchmarks/results/cnn_weights_trained.npz            # measure
    python tools/check_cnn_weights.py benchmarks/results/cnn_weights_trained.npz --install  # and install

The file is tools/train_cnn_torch.py's (or tools/train_cnn.py's): kernels/cnn.py's eight
parameters and ``meta_*`` entries. This runs ``forward_cpu`` (float64 sums, rounded to float32
per layer: what the chapter and its tests use) on the 10,000 test images
(simtlab.cnn_data.load_fashion_mnist, downloaded once) and on the 2,000 shipped sample images,
writes the two accuracies into the file as ``meta_test_accuracy`` and ``meta_sample_accuracy``
(the chapter prints them, tests/test_kernels_cnn.py checks the second), keeps every other entry,
and prints them beside the trainer's own figure. ``--install`` then copies the file to
simtlab/data/cnn_weights.npz.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from simtlab import cnn_data  # noqa: E402
from simtlab.kernels import cnn  # noqa: E402


def reference_accuracy(params: dict, images, labels, batch: int = 1000) -> float:
    """Fraction of ``images`` that forward_cpu classifies as ``labels``."""
    hits = 0
    for s in range(0, len(images), batch):
        out = cnn.forward_cpu(params, cnn_data.to_input(images[s:s + batch]))
        hits += int((out["labels"] == labels[s:s + batch]).sum())
    return hits / len(images)


def measure(path: Path, test=None, sample=None) -> dict:
    """``{"meta_test_accuracy", "meta_sample_accuracy"}`` of the weights in ``path``."""
    params = cnn.check_params(cnn_data.load_weights(path))
    test = cnn_data.load_fashion_mnist("test") if test is None else test
    sample = cnn_data.load_sample() if sample is None else sample
    return {"meta_test_accuracy": np.float64(reference_accuracy(params, test.images, test.labels)),
            "meta_sample_accuracy": np.float64(reference_accuracy(params, sample.images, sample.labels))}


def rewrite(path: Path, updates: dict) -> None:
    """Write ``updates`` into the .npz at ``path``, keeping its other entries as they are."""
    with np.load(path) as f:
        entries = {k: f[k] for k in f.files}
    entries.update(updates)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **entries)
    tmp.replace(path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("weights", type=Path)
    parser.add_argument("--install", action="store_true", help=f"copy to {cnn_data.WEIGHTS_PATH.relative_to(REPO)}")
    args = parser.parse_args(argv)
    acc = measure(args.weights)
    rewrite(args.weights, acc)
    with np.load(args.weights) as f:
        trainer = {k: f[k].item() for k in f.files if k.startswith("meta_") and k not in acc}
    print(f"forward_cpu: test accuracy {acc['meta_test_accuracy']:.4f} (10,000 images), "
          f"sample {acc['meta_sample_accuracy']:.4f} (2,000); the trainer's metadata: {trainer}")
    if args.install:
        shutil.copyfile(args.weights, cnn_data.WEIGHTS_PATH)
        print(f"installed as {cnn_data.WEIGHTS_PATH.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
