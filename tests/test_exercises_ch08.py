"""Chapter 8 checks: pass on correct answers, fail with a precise message on the stubs and on
typical mistakes."""

from __future__ import annotations

import pytest
from numba import cuda, float32

from simtlab.exercises import ch08
from simtlab.exercises.report import CheckFailed, NotWrittenYet
from simtlab.kernels import cnn

TILE = ch08.TILE


# ------------------------------------------------------------------ exercise 1: layer sizes
def conv_ok(b, c, h, w, m, k):
    return (b, m, h - k + 1, w - k + 1), 2 * b * m * (h - k + 1) * (w - k + 1) * c * k * k


def fc_ok(b, k, n):
    return (b, n), 2 * b * k * n


def test_layer_sizes_pass_on_right_answers():
    ch08.check_layer_sizes(conv_ok, fc_ok)


def test_layer_sizes_stub_fails():
    def stub(*a):
        raise NotWrittenYet("ch08.sizes")
    with pytest.raises(CheckFailed, match="not written yet"):
        ch08.check_layer_sizes(stub, fc_ok)


@pytest.mark.parametrize("conv, fc, match", [
    (lambda b, c, h, w, m, k: ((b, m, h - k, w - k), 0), fc_ok, "One short"),
    (lambda b, c, h, w, m, k: ((b, c, h - k + 1, w - k + 1), 0), fc_ok, "M maps"),
    (lambda b, c, h, w, m, k: (conv_ok(b, c, h, w, m, k)[0], conv_ok(b, c, h, w, m, k)[1] // 2), fc_ok, "multiply AND an add"),
    (lambda b, c, h, w, m, k: (conv_ok(b, c, h, w, m, k)[0], conv_ok(b, c, h, w, m, k)[1] // c), fc_ok, "all C input channels"),
    (conv_ok, lambda b, k, n: ((b, n), b * k * n), "K multiplies and K adds"),
    (conv_ok, lambda b, k, n: ((n, b), 2 * b * k * n), "one row of N outputs"),
    (lambda *a: 5, fc_ok, "must return"),
])
def test_layer_sizes_typical_mistakes_are_named(conv, fc, match):
    with pytest.raises(CheckFailed, match=match):
        ch08.check_layer_sizes(conv, fc)


# ------------------------------------------------------------------ exercise 2: max-pooling
@cuda.jit
def pool_zero_start(x, y):                   # starts the max from 0: wrong for negative maps
    i = cuda.grid(1)
    b, c, ho, wo = y.shape
    if i < y.size:
        ox, oy = i % wo, (i // wo) % ho
        ch, n = (i // (wo * ho)) % c, i // (wo * ho * c)
        best = float32(0.0)
        for p in range(2):
            for q in range(2):
                best = max(best, x[n, ch, 2 * oy + p, 2 * ox + q])
        y[n, ch, oy, ox] = best


@cuda.jit
def pool_stub(x, y):
    raise NotWrittenYet("ch08.maxpool")


@cuda.jit
def pool_unguarded(x, y):                    # no i < y.size guard
    i = cuda.grid(1)
    b, c, ho, wo = y.shape
    ox, oy = i % wo, (i // wo) % ho
    ch, n = (i // (wo * ho)) % c, i // (wo * ho * c)
    y[n, ch, oy, ox] = x[n, ch, 2 * oy, 2 * ox]


def test_maxpool_passes_on_the_course_kernel():
    ch08.check_maxpool(cnn.maxpool2)


def test_maxpool_stub_fails():
    with pytest.raises(CheckFailed, match="not written yet"):
        ch08.check_maxpool(pool_stub)


def test_maxpool_zero_start_is_caught():
    with pytest.raises(CheckFailed, match="not from 0"):
        ch08.check_maxpool(pool_zero_start)


def test_maxpool_unguarded_is_caught():
    with pytest.raises(CheckFailed):
        ch08.check_maxpool(pool_unguarded)


# ------------------------------------------------------------------ exercise 3: fused epilogue
@cuda.jit(device=True)
def _dot(x, w, row, col, sa, sb):
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    acc = float32(0.0)
    for t in range((x.shape[1] + TILE - 1) // TILE):
        k0 = t * TILE
        sa[ty, tx] = x[row, k0 + tx] if row < x.shape[0] and k0 + tx < x.shape[1] else 0.0
        wr = cuda.blockIdx.x * TILE + ty
        sb[tx, ty] = w[wr, k0 + tx] if wr < w.shape[0] and k0 + tx < x.shape[1] else 0.0
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    return acc


@cuda.jit
def dense_ok(x, w, bias, y):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    col = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    row = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    acc = _dot(x, w, row, col, sa, sb)
    if row < y.shape[0] and col < y.shape[1]:
        acc += bias[col]
        y[row, col] = acc if acc > 0 else float32(0.0)


@cuda.jit
def dense_two_passes(x, w, bias, y):          # stores, then reads back to add the bias
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    col = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    row = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    acc = _dot(x, w, row, col, sa, sb)
    if row < y.shape[0] and col < y.shape[1]:
        y[row, col] = acc
        v = y[row, col] + bias[col]
        y[row, col] = v if v > 0 else float32(0.0)


@cuda.jit
def dense_no_bias(x, w, bias, y):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    col = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    row = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    acc = _dot(x, w, row, col, sa, sb)
    if row < y.shape[0] and col < y.shape[1]:
        y[row, col] = acc if acc > 0 else float32(0.0)


@cuda.jit
def dense_stub(x, w, bias, y):
    raise NotWrittenYet("ch08.fused")


def test_fused_dense_passes_on_right_answer():
    ch08.check_fused_dense(dense_ok)


def test_fused_dense_stub_fails():
    with pytest.raises(CheckFailed, match="not written yet"):
        ch08.check_fused_dense(dense_stub)


def test_fused_dense_reading_y_back_is_caught():
    with pytest.raises(CheckFailed, match="reads y back"):
        ch08.check_fused_dense(dense_two_passes)


def test_fused_dense_missing_bias_is_named():
    with pytest.raises(CheckFailed, match="without the bias"):
        ch08.check_fused_dense(dense_no_bias)
