"""Checks for chapter 8 (a whole CNN).

- ``check_layer_sizes(conv_layer, fc_layer)``: output shape and FLOPs of a 'valid' stride-1
  convolution and of a fully connected layer, the network's own layers among the cases.
- ``check_maxpool(maxpool)``: the 2x2 max-pooling kernel (one thread per output, a 1-D grid of
  ceil(y.size / 128) blocks of 128): every output right and written once, odd input sizes too.
- ``check_fused_dense(dense_bias_relu)``: the fully connected layer with bias and ReLU fused
  into the GEMM's store: the right output, each element of ``y`` written once, never read back.

Every check draws new random inputs on each call.
"""

from __future__ import annotations

import numpy as np

from ._common import cdiv, rng
from .report import CheckFailed, call_student, compare_arrays, failing_in, passed, poison, run_student_kernel
from .card import student_check

__all__ = ["check_layer_sizes", "check_maxpool", "check_fused_dense", "BLOCK", "TILE"]

BLOCK = 128
TILE = 16


# ------------------------------------------------------------------------------------------
# Exercise 1: a layer's output shape and FLOPs
# ------------------------------------------------------------------------------------------
@student_check("ch08.sizes")
def check_layer_sizes(conv_layer, fc_layer) -> None:
    """``conv_layer(b, c, h, w, m, k) -> ((b, m, ho, wo), flops)`` ('valid', stride 1) and
    ``fc_layer(b, k, n) -> ((b, n), flops)``; a multiply and an add are 2 FLOPs."""
    r = rng()
    convs = [("conv1", 1, 1, 28, 28, 6, 5), ("conv2", 1, 6, 12, 12, 16, 5), ("conv1 at batch 10,000", 10_000, 1, 28, 28, 6, 5)]
    convs += [("a random layer", int(r.integers(1, 40)), int(r.integers(1, 9)), int(r.integers(8, 40)),
               int(r.integers(8, 40)), int(r.integers(1, 33)), int(r.integers(1, 8))) for _ in range(10)]
    for name, b, c, h, w, m, k in convs:
        ho, wo = h - k + 1, w - k + 1
        want = ((b, m, ho, wo), 2 * b * m * ho * wo * c * k * k)
        got = call_student(conv_layer, "conv_layer", b, c, h, w, m, k)
        try:
            shape, flops = got
            shape = tuple(int(v) for v in shape)
        except (TypeError, ValueError):
            raise CheckFailed(f"conv_layer must return ((B, M, Ho, Wo), flops), got {got!r}") from None
        if shape != want[0]:
            hint = ""
            if shape == (b, m, h - k, w - k):
                hint = " One short: a K-wide window fits at H - K + 1 positions (the first at 0)."
            elif shape[1] == c:
                hint = " The output has one map per filter: M maps, not C."
            raise CheckFailed(f"conv_layer for {name} (B={b}, C={c}, {h}x{w}, M={m} filters of {k}x{k}) gave "
                              f"shape {shape}, expected {want[0]}.{hint}")
        if flops != want[1]:
            hint = ""
            if flops * 2 == want[1]:
                hint = " Each weight of each output is a multiply AND an add: 2 FLOPs."
            elif flops == 2 * b * m * ho * wo * k * k:
                hint = " Every filter spans all C input channels: C * K * K weights per output."
            raise CheckFailed(f"conv_layer for {name} gave {flops!r} FLOPs, expected {want[1]:,}.{hint}")
    fcs = [("fc1", 1, 256, 64), ("fc2", 1, 64, 10), ("fc1 at batch 10,000", 10_000, 256, 64)]
    fcs += [("a random layer", int(r.integers(1, 100)), int(r.integers(1, 500)), int(r.integers(1, 100)))
            for _ in range(10)]
    for name, b, k, n in fcs:
        want = ((b, n), 2 * b * k * n)
        got = call_student(fc_layer, "fc_layer", b, k, n)
        try:
            shape, flops = got
            shape = tuple(int(v) for v in shape)
        except (TypeError, ValueError):
            raise CheckFailed(f"fc_layer must return ((B, N), flops), got {got!r}") from None
        if shape != want[0]:
            raise CheckFailed(f"fc_layer for {name} (B={b}, K={k} inputs, N={n} outputs) gave shape {shape}, "
                              f"expected {want[0]}: one row of N outputs per image.")
        if flops != want[1]:
            hint = " Each output is a dot product of K inputs: K multiplies and K adds." if flops * 2 == want[1] else ""
            raise CheckFailed(f"fc_layer for {name} gave {flops!r} FLOPs, expected {want[1]:,}.{hint}")
    passed("conv_layer and fc_layer are right for the network's layers and random ones: conv2 is "
           f"{2 * 16 * 8 * 8 * 6 * 25:,} FLOPs per image, 5.3 times conv1")


# ------------------------------------------------------------------------------------------
# Exercise 2: the max-pooling kernel
# ------------------------------------------------------------------------------------------
@student_check("ch08.maxpool")
def check_maxpool(maxpool) -> None:
    """``maxpool(x, y)``: y (B, C, H//2, W//2) = the max of each 2x2 window of x; one thread per
    output on a 1-D grid of ceil(y.size / BLOCK) blocks of BLOCK threads."""
    from ..kernels.cnn import maxpool_cpu

    r = rng()
    shapes = [(1, 1, 4, 4), (2, 6, 24, 24), (1, 3, 7, 9), (int(r.integers(1, 4)), int(r.integers(1, 5)),
                                                         int(r.integers(2, 15)), int(r.integers(2, 15)))]
    for shape in shapes:
        b, c, h, w = shape
        x = r.standard_normal(shape).astype(np.float32) - 3.0       # mostly negative: a 0-initialised max shows
        y = poison((b, c, h // 2, w // 2), np.float32)
        grid = cdiv(y.size, BLOCK)
        context = (f"x of shape {shape} -> y of shape {y.shape}; launch of {grid} blocks of {BLOCK} threads.")
        with failing_in(context, "Thread i owns output i: guard with i < y.size and decode (b, c, oy, ox) from i."):
            run = run_student_kernel(maxpool, grid, BLOCK, x, y)
        with failing_in(context, "Output (oy, ox) is the max of x at rows 2*oy, 2*oy+1 and columns 2*ox, 2*ox+1; "
                                 "start the max from one of the four values, not from 0."):
            compare_arrays(y, maxpool_cpu(x), "y", rtol=0, atol=0, index_names=("b", "c", "oy", "ox"))
        writes = run.accesses("y", "write")
        per_out = np.bincount(writes.index.astype(np.int64), minlength=y.size)
        if per_out.max() > 1:
            e = int(np.argmax(per_out))
            raise CheckFailed(f"{context}\ny{np.unravel_index(e, y.shape)} was written {per_out.max()} times: "
                              "each thread should write its own output once.")
    passed("maxpool takes the max of every 2x2 window, odd sizes included (the last row/column is dropped), "
           "and writes each output once")


# ------------------------------------------------------------------------------------------
# Exercise 3: bias + ReLU fused into the GEMM's store
# ------------------------------------------------------------------------------------------
@student_check("ch08.fused")
def check_fused_dense(dense_bias_relu) -> None:
    """``dense_bias_relu(x, w, bias, y)``: y (B x N) = max(x @ w.T + bias, 0), blocks of
    TILE x TILE threads on a grid (ceil(N / TILE), ceil(B / TILE)); y is written once per
    element and never read."""
    from ..kernels.cnn import dense_cpu

    r = rng()
    cases = [(3, 20, 5), (17, 256, 64), (int(r.integers(1, 40)), int(r.integers(1, 70)), int(r.integers(1, 40)))]
    for b, k, n in cases:
        x = r.standard_normal((b, k)).astype(np.float32)
        w = r.standard_normal((n, k)).astype(np.float32)
        bias = (r.standard_normal(n) * 2).astype(np.float32)
        y = poison((b, n), np.float32)
        grid = (cdiv(n, TILE), cdiv(b, TILE))
        context = f"x {x.shape}, w {w.shape}, bias ({n},): grid {grid} of {TILE}x{TILE} threads."
        with failing_in(context, "Store only inside y: row < y.shape[0] and col < y.shape[1]."):
            run = run_student_kernel(dense_bias_relu, grid, (TILE, TILE), x, w, bias, y)
        no_bias = dense_cpu(x, w, np.zeros(n), relu=True)
        if np.allclose(y, no_bias, rtol=1e-4, atol=1e-4) and not np.allclose(y, dense_cpu(x, w, bias, True), 1e-4, 1e-4):
            raise CheckFailed(f"{context}\ny is max(x @ w.T, 0) without the bias: add bias[col] before the ReLU.")
        with failing_in(context, "In the store: acc + bias[col] (the bias of the output neuron, the column), "
                                 "then max(., 0), then one write."):
            compare_arrays(y, dense_cpu(x, w, bias, relu=True), "y", rtol=1e-4, atol=1e-4, index_names=("image", "neuron"))
        if len(run.accesses("y", "read")):
            raise CheckFailed(f"{context}\nThe kernel reads y back: the bias and the ReLU belong in registers, "
                              "applied to acc before the one store, not to y after it.")
        per_out = np.bincount(run.accesses("y", "write").index.astype(np.int64), minlength=y.size)
        if per_out.max() > 1:
            raise CheckFailed(f"{context}\nSome elements of y are written {per_out.max()} times: store the finished "
                              "value once (the Cairo graduation report's epilogue stored P, then stored again: two trips to memory).")
    passed("dense_bias_relu adds the bias and applies the ReLU in registers and stores each output once: "
           "the activation costs no extra pass over memory")
