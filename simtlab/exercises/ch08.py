"""Checks for chapter 8 (a whole CNN).

- ``check_fusion_bytes(bytes_written)``: a prediction: the bytes a convolution and its 2x2
  pooling write to global memory, as two kernels or fused, against the formula and against what
  the emulator's trace counts for the network's conv1 and conv2.
- ``check_maxpool(maxpool)``: the 2x2 max-pooling kernel (one thread per output, a 1-D grid of
  ceil(y.size / 128) blocks of 128): every output right and written once, odd input sizes too.
- ``check_fused_conv_pool(conv_pool)``: convolution + bias + ReLU + 2x2 max-pooling in one kernel:
  the right pooled map, and from the trace: each pooled output written once, none read back,
  no other global writes (no full-size map).

Every check draws new random inputs on each call.
"""

from __future__ import annotations

import numpy as np

from ._common import cdiv, rng
from .report import CheckFailed, call_student, compare_arrays, failing_in, passed, poison, run_student_kernel
from .card import student_check

__all__ = ["check_fusion_bytes", "check_maxpool", "check_fused_conv_pool", "conv_pool_bytes", "BLOCK", "TILE"]

BLOCK = 128
TILE = 16


# ------------------------------------------------------------------------------------------
# Exercise 1: predict what fusing the pooling into the convolution saves
# ------------------------------------------------------------------------------------------
def conv_pool_bytes(b, m, ho, wo, fused: bool) -> int:
    """Bytes a convolution (M maps of Ho x Wo) and its 2x2 pooling write to global memory for B
    images, in float32: the map and the pooled map, or only the pooled map when fused."""
    pooled = b * m * (ho // 2) * (wo // 2)
    return 4 * (pooled if fused else b * m * ho * wo + pooled)


@student_check("ch08.predict")
def check_fusion_bytes(bytes_written) -> None:
    """``bytes_written(b, m, ho, wo, fused)``: the bytes a convolution with M output maps of
    Ho x Wo and its 2x2 max-pooling write to global memory for B images (float32), as two
    kernels (``fused=False``) or one; compared with the formula on random layers and with what
    the emulator's trace counts for the network's own conv1 and conv2 on 2 images."""
    from ..cnn_data import load_weights
    from ..kernels.cnn import bytes_written as traced_bytes

    r = rng()
    params = load_weights()
    x = r.random((2, 1, 28, 28), dtype=np.float32)
    measured = {False: traced_bytes(params, x, "implicit"), True: traced_bytes(params, x, "fused")}
    layers = [("conv1", 6, 24, 24), ("conv2", 16, 8, 8)]
    for fused in (False, True):
        for name, m, ho, wo in layers:
            steps = (f"{name}+pool{name[-1]}",) if fused else (name, f"pool{name[-1]}")
            want = sum(measured[fused][s] for s in steps)
            got = call_student(bytes_written, "bytes_written", 2, m, ho, wo, fused)
            if got != want:
                hint = ""
                if got == want // 4:
                    hint = " Count bytes: a float32 is 4 of them."
                elif not fused and got == 4 * 2 * m * ho * wo:
                    hint = " The pooling kernel writes its pooled map too."
                elif fused and got == 4 * 2 * m * ho * wo:
                    hint = " Fused, the full-size map is never written: only the pooled one."
                raise CheckFailed(f"bytes_written(b=2, m={m}, ho={ho}, wo={wo}, fused={fused}) for the network's {name} "
                                  f"returned {got!r}; the emulator's trace counts {want:,} bytes written by "
                                  f"{' and '.join(steps)}.{hint}")
    for _ in range(10):
        b, m = int(r.integers(1, 10_000)), int(r.integers(1, 65))
        ho, wo = 2 * int(r.integers(1, 50)), 2 * int(r.integers(1, 50))
        for fused in (False, True):
            want = conv_pool_bytes(b, m, ho, wo, fused)
            got = call_student(bytes_written, "bytes_written", b, m, ho, wo, fused)
            if got != want:
                raise CheckFailed(f"bytes_written(b={b}, m={m}, ho={ho}, wo={wo}, fused={fused}) returned {got!r}, "
                                  f"expected {want:,}.")
    saved = conv_pool_bytes(10_000, 6, 24, 24, False) - conv_pool_bytes(10_000, 6, 24, 24, True)
    passed(f"your formula matches the trace: at batch 10,000 fusing conv1 with pool1 writes {saved / 1e6:.0f} MB "
           "less (and the pooling kernel no longer reads them back)")


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
# Exercise 3: convolution + bias + ReLU + pooling in one kernel
# ------------------------------------------------------------------------------------------
def _conv_pool_reference(x, w, bias):
    from ..kernels.cnn import maxpool_cpu
    from ..kernels.conv import conv2d_cpu

    z = conv2d_cpu(x, w) + bias[None, :, None, None]
    return maxpool_cpu(np.maximum(z, 0).astype(np.float32))


@student_check("ch08.fusedpool")
def check_fused_conv_pool(conv_pool) -> None:
    """``conv_pool(x, w, bias, y)``: y (B, M, Ho//2, Wo//2) = maxpool2x2(relu(conv(x, w) + bias)),
    one thread per pooled output on a grid (ceil(B*Po*Qo / BLOCK), M) of BLOCK threads; from the
    trace: y written once per element and never read, nothing else written to global memory
    (no full-size map anywhere)."""
    r = rng()
    cases = [((2, 1, 12, 12), 3, 5), ((1, 6, 12, 12), 16, 5), ((2, 2, 9, 11), 4, 3),
             ((int(r.integers(1, 3)), int(r.integers(1, 4)), int(r.integers(6, 14)), int(r.integers(6, 14))),
              int(r.integers(1, 7)), 3)]
    for shape, m, k in cases:
        b, c, h, wd = shape
        po, qo = (h - k + 1) // 2, (wd - k + 1) // 2
        x = r.standard_normal(shape).astype(np.float32)
        w = (r.standard_normal((m, c, k, k)) / k).astype(np.float32)
        bias = r.standard_normal(m).astype(np.float32)
        y = poison((b, m, po, qo), np.float32)
        grid = (cdiv(b * po * qo, BLOCK), m)
        context = (f"x {shape}, {m} filters of {k}x{k}: the conv map would be {h - k + 1}x{wd - k + 1}, y is "
                   f"{y.shape}; grid {grid} of {BLOCK} threads.")
        with failing_in(context, "Thread i of column blockIdx.y = m owns pooled output i of filter m: guard "
                                 "i < B * Po * Qo, then decode (b, py, px)."):
            run = run_student_kernel(conv_pool, grid, BLOCK, x, w, bias, y)
        with failing_in(context, "Keep the four convolution outputs under the pooled one in registers, take "
                                 "their max, add bias[m], clamp at 0, store once (max commutes with both)."):
            compare_arrays(y, _conv_pool_reference(x, w, bias), "y", rtol=1e-4, atol=1e-4,
                           index_names=("b", "m", "py", "px"))
        if len(run.accesses("y", "read")):
            raise CheckFailed(f"{context}\nThe kernel reads y back: a max built up in global memory (read, compare, "
                              "write) costs a round trip per convolution output; keep the four values in registers.")
        per_out = np.bincount(run.accesses("y", "write").index.astype(np.int64), minlength=y.size)
        if per_out.max() > 1:
            raise CheckFailed(f"{context}\nSome pooled outputs are written {per_out.max()} times: store the "
                              "finished value once.")
        mem = run.memory
        others = {info.name for info in run.arrays if info.space == "global" and info.name != "y"
                  and ((mem.array == info.id) & (mem.kind == 1) & (mem.space == 0)).any()}
        if others:
            raise CheckFailed(f"{context}\nThe kernel writes {sorted(others)} in global memory: the fused kernel "
                              "writes only the pooled map y.")
    passed("conv_pool writes each pooled output once, reads none back and writes no full-size map: the "
           "fusion the trace shows is the traffic it saves")
