"""Chapter 8 checks: pass on correct answers, fail with a precise message on the stubs and on
typical mistakes."""

from __future__ import annotations

import pytest
from numba import cuda, float32

from simtlab.exercises import ch08
from simtlab.exercises.report import CheckFailed, NotWrittenYet
from simtlab.kernels import cnn

TILE = ch08.TILE


# ------------------------------------------------------------------ exercise 1: what fusion saves (prediction)
def bytes_ok(b, m, ho, wo, fused):
    pooled = b * m * (ho // 2) * (wo // 2)
    return 4 * pooled if fused else 4 * (b * m * ho * wo + pooled)


def test_fusion_bytes_pass_on_the_right_formula():
    ch08.check_fusion_bytes(bytes_ok)


def test_fusion_bytes_stub_fails():
    def stub(*a):
        raise NotWrittenYet("ch08.predict")
    with pytest.raises(CheckFailed, match="not written yet"):
        ch08.check_fusion_bytes(stub)


@pytest.mark.parametrize("answer, match", [
    (lambda b, m, ho, wo, fused: bytes_ok(b, m, ho, wo, fused) // 4, "a float32 is 4"),
    (lambda b, m, ho, wo, fused: 4 * b * m * ho * wo, "pooling kernel writes its pooled map too"),
    (lambda b, m, ho, wo, fused: 4 * b * m * ho * wo if fused else bytes_ok(b, m, ho, wo, fused),
     "full-size map is never written"),
])
def test_fusion_bytes_typical_mistakes_are_named(answer, match):
    with pytest.raises(CheckFailed, match=match):
        ch08.check_fusion_bytes(answer)


def test_fusion_bytes_reference_is_what_the_trace_counts():
    """The check's formula against the emulator's count of the course's launches (conv1 on 2
    images: 6 maps of 24 x 24 written, then 6 of 12 x 12) and NumPy's sizes of the maps."""
    import numpy as np

    from simtlab.cnn_data import load_weights

    x = np.random.default_rng(1).random((2, 1, 28, 28), dtype=np.float32)
    traced = cnn.bytes_written(load_weights(), x, "implicit")
    assert traced["conv1"] == np.zeros((2, 6, 24, 24), np.float32).nbytes
    assert traced["pool1"] == np.zeros((2, 6, 12, 12), np.float32).nbytes
    assert ch08.conv_pool_bytes(2, 6, 24, 24, False) == traced["conv1"] + traced["pool1"]
    assert cnn.bytes_written(load_weights(), x, "fused")["conv1+pool1"] == traced["pool1"]


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


# ------------------------------------------------------------------ exercise 3: conv + pool fused
@cuda.jit
def conv_pool_stub(x, w, bias, y):
    raise NotWrittenYet("ch08.fusedpool")


@cuda.jit
def conv_pool_in_global(x, w, bias, y):      # builds the max in y: reads it back for every conv output
    m = cuda.blockIdx.y
    po, qo = y.shape[2], y.shape[3]
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < y.shape[0] * po * qo:
        b, pix = i // (po * qo), i % (po * qo)
        py, px = pix // qo, pix % qo
        k = w.shape[2]
        y[b, m, py, px] = float32(0.0)
        for dy in range(2):
            for dx in range(2):
                acc = bias[m]
                for c in range(x.shape[1]):
                    for p in range(k):
                        for q in range(k):
                            acc += x[b, c, 2 * py + dy + p, 2 * px + dx + q] * w[m, c, p, q]
                y[b, m, py, px] = max(y[b, m, py, px], acc)


@cuda.jit
def conv_pool_no_bias(x, w, bias, y):
    m = cuda.blockIdx.y
    po, qo = y.shape[2], y.shape[3]
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < y.shape[0] * po * qo:
        b, pix = i // (po * qo), i % (po * qo)
        py, px = pix // qo, pix % qo
        k = w.shape[2]
        best = float32(-1e30)
        for dy in range(2):
            for dx in range(2):
                acc = float32(0.0)
                for c in range(x.shape[1]):
                    for p in range(k):
                        for q in range(k):
                            acc += x[b, c, 2 * py + dy + p, 2 * px + dx + q] * w[m, c, p, q]
                best = max(best, acc)
        y[b, m, py, px] = best if best > 0 else float32(0.0)


def test_fused_conv_pool_passes_on_the_course_kernel():
    ch08.check_fused_conv_pool(cnn.conv_bias_relu_pool)


def test_fused_conv_pool_stub_fails():
    with pytest.raises(CheckFailed, match="not written yet"):
        ch08.check_fused_conv_pool(conv_pool_stub)


def test_fused_conv_pool_max_in_global_memory_is_caught():
    with pytest.raises(CheckFailed, match="reads y back"):
        ch08.check_fused_conv_pool(conv_pool_in_global)


def test_fused_conv_pool_missing_bias_fails():
    with pytest.raises(CheckFailed):
        ch08.check_fused_conv_pool(conv_pool_no_bias)
