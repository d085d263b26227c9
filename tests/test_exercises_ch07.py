"""Chapter 7 checks: pass on correct answers, fail with a precise message on the stubs and on
typical mistakes."""

from __future__ import annotations

import re

import pytest
from numba import cuda, float32

from simtlab.exercises import ch07
from simtlab.exercises.report import CheckFailed, NotWrittenYet
from simtlab.kernels import conv as K

TILE = ch07.TILE


# ------------------------------------------------------------------ exercise 1: layer numbers
def out_ok(n, k, stride, pad):
    return (n + 2 * pad - k) // stride + 1


def flops_ok(b, c, m, k, ho, wo):
    return 2 * b * m * ho * wo * c * k * k


def out_stub(n, k, stride, pad):
    raise NotWrittenYet("ch07.numbers")


def test_layer_numbers_pass_on_right_answers():
    ch07.check_layer_numbers(out_ok, flops_ok)
    ch07.check_layer_numbers(lambda n, k, s, p: K.conv_geometry(n, n, k, s, p)[0], flops_ok)


def test_layer_numbers_stub_fails():
    with pytest.raises(CheckFailed, match="ch07.* is not written yet"):
        ch07.check_layer_numbers(out_stub, flops_ok)


@pytest.mark.parametrize("out, flops, match", [
    (lambda n, k, s, p: (n + 2 * p - k) // s, flops_ok, "one short"),
    (lambda n, k, s, p: (n - k) // s + 1, flops_ok, "n \\+ 2 \\* pad"),
    (lambda n, k, s, p: (n + 2 * p - k) / s + 1, flops_ok, "integer division"),
    (out_ok, lambda b, c, m, k, ho, wo: b * m * ho * wo * c * k * k, "multiply AND an add"),
    (out_ok, lambda b, c, m, k, ho, wo: 2 * b * m * ho * wo * k * k, "all C input channels"),
])
def test_layer_numbers_typical_mistakes_are_named(out, flops, match):
    with pytest.raises(CheckFailed, match=match):
        ch07.check_layer_numbers(out, flops)


# ------------------------------------------------------------------ exercise 2: unroll
@cuda.jit
def unroll_ok(x, cols, k, wo, stride, pad):
    i = cuda.grid(1)
    if i < cols.size:
        n_cols = cols.shape[1]
        row, n = i // n_cols, i % n_cols
        hw = n_cols // x.shape[0]
        c, p, q = row // (k * k), (row % (k * k)) // k, row % k
        b, oy, ox = n // hw, (n % hw) // wo, n % wo
        iy, ix = oy * stride + p - pad, ox * stride + q - pad
        if 0 <= iy < x.shape[2] and 0 <= ix < x.shape[3]:
            cols[row, n] = x[b, c, iy, ix]
        else:
            cols[row, n] = 0.0


@cuda.jit
def unroll_stub(x, cols, k, wo, stride, pad):
    raise NotWrittenYet("ch07.unroll")


@cuda.jit
def unroll_ignores_stride(x, cols, k, wo, stride, pad):
    i = cuda.grid(1)
    if i < cols.size:
        n_cols = cols.shape[1]
        row, n = i // n_cols, i % n_cols
        hw = n_cols // x.shape[0]
        c, p, q = row // (k * k), (row % (k * k)) // k, row % k
        b, oy, ox = n // hw, (n % hw) // wo, n % wo
        iy, ix = oy + p - pad, ox + q - pad
        if 0 <= iy < x.shape[2] and 0 <= ix < x.shape[3]:
            cols[row, n] = x[b, c, iy, ix]
        else:
            cols[row, n] = 0.0


@cuda.jit
def unroll_no_bounds(x, cols, k, wo, stride, pad):
    i = cuda.grid(1)
    if i < cols.size:
        n_cols = cols.shape[1]
        row, n = i // n_cols, i % n_cols
        hw = n_cols // x.shape[0]
        c, p, q = row // (k * k), (row % (k * k)) // k, row % k
        b, oy, ox = n // hw, (n % hw) // wo, n % wo
        cols[row, n] = x[b, c, oy * stride + p - pad, ox * stride + q - pad]


@cuda.jit
def unroll_swapped_pq(x, cols, k, wo, stride, pad):
    i = cuda.grid(1)
    if i < cols.size:
        n_cols = cols.shape[1]
        row, n = i // n_cols, i % n_cols
        hw = n_cols // x.shape[0]
        c, q, p = row // (k * k), (row % (k * k)) // k, row % k
        b, oy, ox = n // hw, (n % hw) // wo, n % wo
        iy, ix = oy * stride + p - pad, ox * stride + q - pad
        if 0 <= iy < x.shape[2] and 0 <= ix < x.shape[3]:
            cols[row, n] = x[b, c, iy, ix]
        else:
            cols[row, n] = 0.0


def test_unroll_passes_on_right_answers():
    ch07.check_unroll(unroll_ok)
    ch07.check_unroll(K.im2col)                        # the course's grid-stride version


def test_unroll_stub_fails():
    with pytest.raises(CheckFailed, match="ch07.* is not written yet"):
        ch07.check_unroll(unroll_stub)


@pytest.mark.parametrize("kernel, match", [
    (unroll_ignores_stride, "stride 2"),
    (unroll_no_bounds, "out-of-bounds access: reads x"),
    (unroll_swapped_pq, "cols: .* elements have the wrong value"),
])
def test_unroll_mistakes_fail(kernel, match):
    with pytest.raises(CheckFailed, match=match):
        ch07.check_unroll(kernel)


# ------------------------------------------------------------------ exercise 3: implicit GEMM
def _implicit(gather):
    """The exercise's kernel with one gather (a device function) plugged in."""
    @cuda.jit
    def conv(x, w, y, stride, pad):
        sa = cuda.shared.array((TILE, TILE), float32)
        sb = cuda.shared.array((TILE, TILE), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        k = w.shape[2]
        kk = k * k
        depth = x.shape[1] * kk
        hw = y.shape[2] * y.shape[3]
        n_cols = y.shape[0] * hw
        n = cuda.blockIdx.x * TILE + tx
        m = cuda.blockIdx.y * TILE + ty
        nl = cuda.blockIdx.x * TILE + ty
        b, pix = nl // hw, nl % hw
        oy, ox = pix // y.shape[3], pix % y.shape[3]
        acc = float32(0.0)
        for t in range((depth + TILE - 1) // TILE):
            r = t * TILE + tx
            if m < w.shape[0] and r < depth:
                sa[ty, tx] = w[m, r // kk, (r % kk) // k, r % k]
            else:
                sa[ty, tx] = 0.0
            gather(x, sb, r, depth, nl, n_cols, b, oy, ox, k, stride, pad, tx, ty)
            cuda.syncthreads()
            for j in range(TILE):
                acc += sa[ty, j] * sb[j, tx]
            cuda.syncthreads()
        if m < w.shape[0] and n < n_cols:
            y[n // hw, m, (n % hw) // y.shape[3], n % y.shape[3]] = acc
    return conv


@cuda.jit(device=True)
def gather_ok(x, sb, r, depth, nl, n_cols, b, oy, ox, k, stride, pad, tx, ty):
    v = float32(0.0)
    if r < depth and nl < n_cols:
        kk = k * k
        c, p, q = r // kk, (r % kk) // k, r % k
        iy, ix = oy * stride + p - pad, ox * stride + q - pad
        if 0 <= iy < x.shape[2] and 0 <= ix < x.shape[3]:
            v = x[b, c, iy, ix]
    sb[tx, ty] = v


@cuda.jit(device=True)
def gather_skips_padding(x, sb, r, depth, nl, n_cols, b, oy, ox, k, stride, pad, tx, ty):
    # forgets to store 0 where the window is outside x: those sb entries keep the last phase's value
    if r < depth and nl < n_cols:
        kk = k * k
        c, p, q = r // kk, (r % kk) // k, r % k
        iy, ix = oy * stride + p - pad, ox * stride + q - pad
        if 0 <= iy < x.shape[2] and 0 <= ix < x.shape[3]:
            sb[tx, ty] = x[b, c, iy, ix]


@cuda.jit(device=True)
def gather_transposed(x, sb, r, depth, nl, n_cols, b, oy, ox, k, stride, pad, tx, ty):
    v = float32(0.0)
    if r < depth and nl < n_cols:
        kk = k * k
        c, p, q = r // kk, (r % kk) // k, r % k
        iy, ix = oy * stride + p - pad, ox * stride + q - pad
        if 0 <= iy < x.shape[2] and 0 <= ix < x.shape[3]:
            v = x[b, c, iy, ix]
    sb[ty, tx] = v                                    # row and column of the tile swapped


@cuda.jit
def implicit_stub(x, w, y, stride, pad):
    raise NotWrittenYet("ch07.implicit")


@cuda.jit
def implicit_without_tiles(x, w, y, stride, pad):
    # the right output from the same launch, but each thread sums its window from global memory
    hw = y.shape[2] * y.shape[3]
    n = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    m = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    if m < y.shape[1] and n < y.shape[0] * hw:
        b, pix = n // hw, n % hw
        oy, ox = pix // y.shape[3], pix % y.shape[3]
        y[b, m, oy, ox] = K.output_sum(x, w, b, m, oy, ox, stride, pad)


def test_implicit_gemm_passes_on_right_answers():
    ch07.check_implicit_gemm(_implicit(gather_ok))
    ch07.check_implicit_gemm(K.conv_v3_implicit_gemm)


def test_implicit_gemm_stub_fails():
    with pytest.raises(CheckFailed, match="ch07.* is not written yet"):
        ch07.check_implicit_gemm(implicit_stub)


def test_implicit_gemm_with_uninitialised_tile_fails():
    with pytest.raises(CheckFailed, match="uninitialised shared memory"):
        ch07.check_implicit_gemm(_implicit(gather_skips_padding))


def test_implicit_gemm_with_transposed_gather_fails_nearly_everywhere():
    # the check draws new inputs on every call: an element whose products happen to sum to the
    # same value within the tolerance can come out right (349 of 350 wrong in one CI run)
    with pytest.raises(CheckFailed, match=r"y: (\d+) of 350 elements have the wrong value") as failed:
        ch07.check_implicit_gemm(_implicit(gather_transposed))
    wrong = int(re.search(r"y: (\d+) of 350", str(failed.value)).group(1))
    assert wrong >= 340


def test_implicit_gemm_without_shared_tile_fails():
    with pytest.raises(CheckFailed, match="writes no shared memory"):
        ch07.check_implicit_gemm(implicit_without_tiles)


# ------------------------------------------------------------------ prediction: which side of the ridge
def intensity_ok(b, c, h, w, m, k):
    ho, wo = h - k + 1, w - k + 1
    return 2 * b * m * ho * wo * c * k * k / (4 * (b * c * h * w + m * c * k * k + b * m * ho * wo))


def test_layer_intensity_passes_on_the_right_formula():
    ch07.check_layer_intensity(intensity_ok)


def test_layer_intensity_stub_fails():
    def stub(*a):
        raise NotWrittenYet("ch07.predict")
    with pytest.raises(CheckFailed, match="not written yet"):
        ch07.check_layer_intensity(stub)


@pytest.mark.parametrize("answer, match", [
    (lambda *a: intensity_ok(*a) * 4, "4 bytes"),
    (lambda b, c, h, w, m, k: 2 * b * m * (h - k + 1) * (w - k + 1) * c * k * k
     / (4 * (b * c * h * w + b * m * (h - k + 1) * (w - k + 1))), "weights cross DRAM"),
])
def test_layer_intensity_typical_mistakes_are_named(answer, match):
    with pytest.raises(CheckFailed, match=match):
        ch07.check_layer_intensity(answer)


def test_c1_sits_just_under_the_ridge_and_c3_far_right():
    """C1: 2*4*80*80*49 FLOPs per image over (86*86 + 4*80*80) floats (weights negligible at a
    batch of 1000): 19.0; C3: 72.8; the H100's ridge 66.9 / 3.35 = 20.0."""
    c1 = intensity_ok(1000, 1, 86, 86, 4, 7)
    c3 = intensity_ok(1000, 4, 40, 40, 16, 7)
    assert 18.9 < c1 < ch07.RIDGE_H100 < 20.0 < c3 and 72 < c3 < 73


# ------------------------------------------------------------------ exercise 5: the offset table (optimisation)
def taps_ok(c, h, w, k):
    return K.gather_table(c, h, w, k)


def taps_stub(c, h, w, k):
    raise NotWrittenYet("ch07.offsets")


def taps_swapped_pq(c, h, w, k):
    t = K.gather_table(c, h, w, k)
    return t[[0, 2, 1]]


@cuda.jit
def offsets_divide_per_element(x, w, taps, y, h, wd, stride, pad):
    # the right output, but the channel of each gathered row is recomputed with a division
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    mo, ho, wo = y.shape[1], y.shape[2], y.shape[3]
    depth = w.shape[1]
    kk = depth // (x.size // (y.shape[0] * h * wd))
    hw = ho * wo
    n_cols = y.shape[0] * hw
    n = cuda.blockIdx.x * TILE + tx
    m = cuda.blockIdx.y * TILE + ty
    nl = cuda.blockIdx.x * TILE + ty
    b, pix = nl // hw, nl % hw
    iy0 = (pix // wo) * stride - pad
    ix0 = (pix % wo) * stride - pad
    acc = float32(0.0)
    for t in range((depth + TILE - 1) // TILE):
        r = t * TILE + tx
        if m < mo and r < depth:
            sa[ty, tx] = w[m, r]
        else:
            sa[ty, tx] = 0.0
        v = float32(0.0)
        if r < depth and nl < n_cols:
            c = r // kk
            iy = iy0 + taps[1, r]
            ix = ix0 + taps[2, r]
            if 0 <= iy < h and 0 <= ix < wd:
                v = x[((b * (x.size // (y.shape[0] * h * wd)) + c) * h + iy) * wd + ix]
        sb[tx, ty] = v
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if m < mo and n < n_cols:
        y[n // hw, m, (n % hw) // wo, n % wo] = acc


def test_offset_gather_passes_on_the_course_kernel():
    ch07.check_offset_gather(taps_ok, K.conv_v3b_offset_table)


def test_offset_gather_stub_fails():
    with pytest.raises(CheckFailed, match="ch07.* is not written yet"):
        ch07.check_offset_gather(taps_stub, K.conv_v3b_offset_table)


def test_offset_gather_names_a_wrong_table_entry():
    with pytest.raises(CheckFailed, match=r"the p of unrolled row 1 = \(c, p, q\) = \(0, 0, 1\) is 1, expected 0"):
        ch07.check_offset_gather(taps_swapped_pq, K.conv_v3b_offset_table)


def test_offset_gather_fails_a_right_kernel_that_divides_per_element():
    """The output is right (the check's first part passes); the trace shows a division per element."""
    with pytest.raises(CheckFailed, match=r"the gather still divides for every element it loads.*line \d+"):
        ch07.check_offset_gather(taps_ok, offsets_divide_per_element)
