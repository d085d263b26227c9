"""Train chapter 8's network properly, in PyTorch on a GPU, and write its weights in the format of
simtlab/data/cnn_weights.npz.

    python tools/export_fashion_npz.py                       # here, once: .data/fashion_mnist.npz
    python tools/train_cnn_torch.py --data .data/fashion_mnist.npz \\
        --out $OUT/cnn_weights_trained.npz --log $OUT/cnn_training_h100.json      # on the GPU machine
    python tools/check_cnn_weights.py benchmarks/results/cnn_weights_trained.npz --install   # here

Runs standalone with PyTorch and NumPy only (no simtlab, no network): the GPU machine has no
internet and the course's package is not needed to train. The network is kernels/cnn.py's, layer
for layer: conv 1 -> 6 maps 5x5 + bias, ReLU, 2x2 max-pool, conv 6 -> 16 maps 5x5 + bias, ReLU,
2x2 max-pool, flatten in NCHW order (16 x 4 x 4 = 256), fc 256 -> 64 + bias, ReLU, fc 64 -> 10
+ bias; inputs are the images / 255 (simtlab.cnn_data.to_input), no normalisation. PyTorch's
Conv2d (cross-correlation, weight (out, in, kh, kw)) and Linear (weight (out, in)) store their
parameters in kernels/cnn.py's layouts, so the export is a rename (:data:`EXPORT`).

The recipe: 5,000 of the 60,000 training images (500 per class) are held out for validation;
AdamW (lr 2e-3, weight decay 1e-4), mini-batches of 128, one epoch of linear warm-up then a
cosine decay to zero, 30 epochs; the weights of the epoch with the best validation accuracy are
kept. ``--augment auto`` trains twice, without augmentation and with random horizontal flips
(clothes are left-right symmetric; shifts and crops are left out for a network of 20,000
parameters, which underfits rather than overfits), and keeps the run with the better validation
accuracy. The test set (10,000 images, never used for a choice) is evaluated once, at the end.

The accuracy written with the weights here is PyTorch's (float32 on the GPU, ``meta_torch_*``);
tools/check_cnn_weights.py measures it again with kernels/cnn.py's NumPy reference, forward_cpu,
and stores that as ``meta_test_accuracy`` and ``meta_sample_accuracy``: what the chapter prints.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

#: kernels/cnn.py's parameter name -> index of the module in :func:`network` that holds it
EXPORT = {"conv1": 0, "conv2": 3, "fc1": 7, "fc2": 9}
#: kernels/cnn.py's PARAM_SHAPES, repeated so that the script needs no simtlab
PARAM_SHAPES = {"conv1_w": (6, 1, 5, 5), "conv1_b": (6,), "conv2_w": (16, 6, 5, 5), "conv2_b": (16,),
                "fc1_w": (64, 256), "fc1_b": (64,), "fc2_w": (10, 64), "fc2_b": (10,)}
VALIDATION_PER_CLASS = 500


def network():
    """kernels/cnn.py's network as torch.nn modules, logits out (the softmax is in the loss)."""
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(256, 64), nn.ReLU(), nn.Linear(64, 10))


def export_params(model) -> dict:
    """The model's parameters under kernels/cnn.py's names and shapes, float32, C-contiguous."""
    params = {}
    for name, index in EXPORT.items():
        module = model[index]
        params[name + "_w"] = np.ascontiguousarray(module.weight.detach().cpu().numpy(), np.float32)
        params[name + "_b"] = np.ascontiguousarray(module.bias.detach().cpu().numpy(), np.float32)
    for name, shape in PARAM_SHAPES.items():
        if params[name].shape != shape:
            raise AssertionError(f"{name}: {params[name].shape}, kernels/cnn.py needs {shape}")
    return params


def numpy_forward(params: dict, images) -> np.ndarray:
    """Logits of uint8 images (N, 28, 28) through the exported parameters, in float64 NumPy: the
    same sums as kernels/cnn.py's forward_cpu, so the export is checked without simtlab."""
    x = np.asarray(images, np.float64)[:, None] / 255.0

    def conv_relu(x, w, b):
        m, c, k, _ = w.shape
        win = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))      # (B, C, Ho, Wo, K, K)
        return np.maximum(np.einsum("bchwpq,mcpq->bmhw", win, w, optimize=True) + b[None, :, None, None], 0)

    def pool(x):
        b, c, h, w = x.shape
        return x.reshape(b, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))

    p = {k: v.astype(np.float64) for k, v in params.items()}
    h = pool(conv_relu(pool(conv_relu(x, p["conv1_w"], p["conv1_b"])), p["conv2_w"], p["conv2_b"]))
    h = np.maximum(h.reshape(len(h), -1) @ p["fc1_w"].T + p["fc1_b"], 0)
    return h @ p["fc2_w"].T + p["fc2_b"]


def load_data(path: Path) -> dict:
    """tools/export_fashion_npz.py's file: train/test images (uint8) and labels."""
    with np.load(path) as f:
        data = {k: f[k] for k in ("train_images", "train_labels", "test_images", "test_labels")}
    for split in ("train", "test"):
        if data[f"{split}_images"].shape[1:] != (28, 28) or data[f"{split}_images"].dtype != np.uint8:
            raise ValueError(f"{path}: {split}_images must be uint8 (N, 28, 28)")
    return data


def split_validation(labels, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train indices, validation indices): VALIDATION_PER_CLASS images of each class held out."""
    r = np.random.default_rng(seed)
    held = np.concatenate([r.permutation(np.flatnonzero(labels == c))[:VALIDATION_PER_CLASS] for c in range(10)])
    keep = np.setdiff1d(np.arange(len(labels)), held)
    return keep, np.sort(held)


def lr_at(step: int, steps_per_epoch: int, epochs: int, peak: float) -> float:
    """One epoch of linear warm-up, then a cosine decay to zero at the last step."""
    warm = steps_per_epoch
    if step < warm:
        return peak * (step + 1) / warm
    t = min(1.0, (step - warm) / max(1, epochs * steps_per_epoch - 1 - warm))
    return peak * 0.5 * (1 + math.cos(math.pi * t))


def accuracy(model, x, y, batch: int = 5000) -> float:
    import torch

    model.eval()
    hits = 0
    with torch.no_grad():
        for s in range(0, len(x), batch):
            hits += int((model(x[s:s + batch]).argmax(1) == y[s:s + batch]).sum())
    model.train()
    return hits / len(x)


def train_one(x, y, xv, yv, args, augment: str, log) -> dict:
    """Train from scratch; returns the best-validation epoch's state and the history."""
    import torch

    torch.manual_seed(args.seed)
    device = x.device
    model = network().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    loss_fn = torch.nn.CrossEntropyLoss()
    g = torch.Generator(device=device).manual_seed(args.seed)
    steps_per_epoch = -(-len(x) // args.batch)
    best = {"val": -1.0}
    history = []
    step = 0
    t0 = time.time()
    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(len(x), device=device, generator=g)
        total = 0.0
        for s in range(0, len(x), args.batch):
            idx = order[s:s + args.batch]
            xb, yb = x[idx], y[idx]
            if augment == "flip":
                flip = torch.rand(len(xb), device=device, generator=g) < 0.5
                xb = torch.where(flip[:, None, None, None], xb.flip(-1), xb)
            for group in opt.param_groups:
                group["lr"] = lr_at(step, steps_per_epoch, args.epochs, args.lr)
            loss = loss_fn(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
            step += 1
        val = accuracy(model, xv, yv)
        history.append({"epoch": epoch, "train_loss": total / len(x), "val_accuracy": val,
                        "seconds": round(time.time() - t0, 1)})
        log(f"[{augment}] epoch {epoch:2d}: train loss {total / len(x):.4f}, validation accuracy {val:.4f} "
            f"({time.time() - t0:.0f} s)")
        if val > best["val"]:
            best = {"val": val, "epoch": epoch,
                    "state": {k: v.detach().clone() for k, v in model.state_dict().items()}}
    model.load_state_dict(best["state"])
    return {"model": model, "augment": augment, "best_epoch": best["epoch"], "val_accuracy": best["val"],
            "history": history}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="tools/export_fashion_npz.py's .npz")
    parser.add_argument("--out", type=Path, required=True, help="the weights (.npz, cnn_weights.npz's format)")
    parser.add_argument("--log", type=Path, help="the training record (.json)")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--weight-decay", type=float, default=1e-4)
    parser.add_argument("--augment", choices=("auto", "none", "flip"), default="auto",
                        help="auto: train with and without flips, keep the better on validation")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None, help="default: cuda if there is one, else cpu")
    parser.add_argument("--limit", type=int, default=None, help="train on this many images only (a quick try)")
    args = parser.parse_args(argv)

    import torch

    torch.backends.cudnn.allow_tf32 = False             # the course's kernels compute in FP32
    torch.backends.cuda.matmul.allow_tf32 = False
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    log = lambda s: print(s, flush=True)                                   # noqa: E731
    data = load_data(args.data)
    keep, held = split_validation(data["train_labels"], args.seed)
    if args.limit:                                   # the images come sorted by class: a random subset
        keep = np.sort(np.random.default_rng(args.seed).permutation(keep)[:args.limit])

    def tensors(images, labels):
        x = torch.from_numpy(images.astype(np.float32) / 255.0)[:, None].to(device)
        return x, torch.from_numpy(labels.astype(np.int64)).to(device)

    x, y = tensors(data["train_images"][keep], data["train_labels"][keep])
    xv, yv = tensors(data["train_images"][held], data["train_labels"][held])
    log(f"{len(x):,} training and {len(xv):,} validation images on {device}"
        + (f" ({torch.cuda.get_device_name(device)})" if device.type == "cuda" else ""))
    t0 = time.time()
    runs = [train_one(x, y, xv, yv, args, a, log) for a in (("none", "flip") if args.augment == "auto"
                                                            else (args.augment,))]
    chosen = max(runs, key=lambda r: r["val_accuracy"])
    xt, yt = tensors(data["test_images"], data["test_labels"])
    test_acc = accuracy(chosen["model"], xt, yt)                 # the one look at the test set
    params = export_params(chosen["model"])
    numpy_labels = numpy_forward(params, data["test_images"]).argmax(1)
    numpy_acc = float((numpy_labels == data["test_labels"]).mean())
    log(f"chosen: augment={chosen['augment']}, epoch {chosen['best_epoch']}, validation {chosen['val_accuracy']:.4f}; "
        f"test accuracy {test_acc:.4f} (PyTorch), {numpy_acc:.4f} (the exported weights in float64 NumPy)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(args.out, **params, meta_epochs=np.int64(chosen["best_epoch"]),
                        meta_train_images=np.int64(len(x)), meta_validation_images=np.int64(len(xv)),
                        meta_validation_accuracy=np.float64(chosen["val_accuracy"]),
                        meta_torch_test_accuracy=np.float64(test_acc), meta_numpy_test_accuracy=np.float64(numpy_acc),
                        meta_augment=np.str_(chosen["augment"]), meta_trainer=np.str_("tools/train_cnn_torch.py"))
    log(f"wrote {args.out} ({args.out.stat().st_size / 1e3:.0f} kB)")
    if args.log:
        record = {"device": str(device) if device.type != "cuda" else torch.cuda.get_device_name(device),
                  "torch": torch.__version__, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                  "args": {k: str(v) for k, v in vars(args).items()}, "seconds": round(time.time() - t0, 1),
                  "chosen": {k: chosen[k] for k in ("augment", "best_epoch", "val_accuracy")},
                  "test_accuracy_torch": test_acc, "test_accuracy_numpy_export": numpy_acc,
                  "runs": [{k: r[k] for k in ("augment", "best_epoch", "val_accuracy", "history")} for r in runs]}
        args.log.parent.mkdir(parents=True, exist_ok=True)
        args.log.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
