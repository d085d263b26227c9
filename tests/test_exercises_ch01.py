"""Chapter 1 checks: pass on correct answers, fail with a precise message on the stub and typical mistakes."""

from __future__ import annotations

import re

import pytest
from numba import cuda

from simtlab.exercises import ch01
from simtlab.exercises.report import CheckFailed, ExerciseNotWritten, NotWrittenYet


# ------------------------------------------------------------------ exercise 1: scale_add
@cuda.jit
def scale_add(a, b, out, alpha):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = alpha * a[i] + b[i]


@cuda.jit
def scale_add_stub(a, b, out, alpha):
    raise NotWrittenYet("ch01.first_kernel")


@cuda.jit
def scale_add_no_guard(a, b, out, alpha):
    i = cuda.grid(1)
    out[i] = alpha * a[i] + b[i]


@cuda.jit
def scale_add_thread_idx_only(a, b, out, alpha):
    i = cuda.threadIdx.x
    if i < out.size:
        out[i] = alpha * a[i] + b[i]


@cuda.jit
def scale_add_forgets_alpha(a, b, out, alpha):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


def test_first_kernel_passes(capsys):
    for _ in range(3):                       # new random inputs every call
        ch01.check_first_kernel(scale_add)
    assert "\u2714 scale_add computes alpha * a + b" in capsys.readouterr().out


def test_first_kernel_stub():
    with pytest.raises(ExerciseNotWritten, match=r"^Exercise ch01.first_kernel is not written yet"):
        ch01.check_first_kernel(scale_add_stub)


def test_first_kernel_missing_guard():
    with pytest.raises(CheckFailed) as e:
        ch01.check_first_kernel(scale_add_no_guard)
    msg = str(e.value)
    assert "out-of-bounds" in msg
    assert re.search(r"n = \d+ elements, [34] blocks of 256 threads \((768|1024) threads in the grid\)", msg)
    assert "has no element" in msg and "if i < out.size:" in msg


def test_first_kernel_thread_idx_only():
    with pytest.raises(CheckFailed) as e:
        ch01.check_first_kernel(scale_add_thread_idx_only)
    msg = str(e.value)
    assert "were never written" in msg and "elements (i=256) to" in msg
    assert "cuda.threadIdx.x alone repeats in every block" in msg


def test_first_kernel_wrong_formula():
    with pytest.raises(CheckFailed, match="multiply a\\[i\\] by alpha"):
        ch01.check_first_kernel(scale_add_forgets_alpha)


# ------------------------------------------------------------------ exercise 2: grid-stride conv2d + ReLU
@cuda.jit(device=True)
def conv_relu_at(image, filters, f, r, c):
    k = filters.shape[1]
    acc = 0.0
    for i in range(k):
        for j in range(k):
            acc += image[r * k + i, c * k + j] * filters[f, i, j]
    return acc if acc > 0.0 else 0.0


@cuda.jit
def conv2d_relu_gs(image, filters, out):
    out_h, out_w = out.shape[1], out.shape[2]
    per_filter = out_h * out_w
    for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        f = o // per_filter
        r = (o % per_filter) // out_w
        c = o % out_w
        out[f, r, c] = conv_relu_at(image, filters, f, r, c)


@cuda.jit
def conv2d_relu_gs_stub(image, filters, out):
    raise NotWrittenYet("ch01.grid_stride")


@cuda.jit
def conv2d_relu_seed_stride(image, filters, out):
    out_h, out_w = out.shape[1], out.shape[2]
    per_filter = out_h * out_w
    for o in range(cuda.grid(1), out.size, cuda.blockDim.x * cuda.blockDim.x):   # the lab report's typo
        f = o // per_filter
        r = (o % per_filter) // out_w
        c = o % out_w
        out[f, r, c] = conv_relu_at(image, filters, f, r, c)


@cuda.jit
def conv2d_relu_block_stride(image, filters, out):
    out_h, out_w = out.shape[1], out.shape[2]
    per_filter = out_h * out_w
    for o in range(cuda.grid(1), out.size, cuda.blockDim.x):
        f = o // per_filter
        r = (o % per_filter) // out_w
        c = o % out_w
        out[f, r, c] = conv_relu_at(image, filters, f, r, c)


@cuda.jit
def conv2d_relu_hardcoded(image, filters, out):
    # written for the lab's 100x100 image and ten 5x5 filters only
    for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        f = o // (out.shape[1] * out.shape[2])
        r = (o % (out.shape[1] * out.shape[2])) // 20
        c = o % 20
        if r < out.shape[1] and c < out.shape[2]:
            out[f, r, c] = conv_relu_at(image, filters, f, r, c)


@cuda.jit
def conv2d_relu_no_guard_one_per_thread(image, filters, out):
    o = cuda.grid(1)
    per_filter = out.shape[1] * out.shape[2]
    f = o // per_filter
    r = (o % per_filter) // out.shape[2]
    c = o % out.shape[2]
    out[f, r, c] = conv_relu_at(image, filters, f, r, c)


def test_grid_stride_passes(capsys):
    for _ in range(2):
        ch01.check_grid_stride(conv2d_relu_gs)
    out = capsys.readouterr().out
    assert "grids of 1 block, 3 blocks and" in out


def test_grid_stride_stub():
    with pytest.raises(ExerciseNotWritten, match=r"^Exercise ch01.grid_stride is not written yet"):
        ch01.check_grid_stride(conv2d_relu_gs_stub)


def test_grid_stride_seed_typo():
    with pytest.raises(CheckFailed) as e:
        ch01.check_grid_stride(conv2d_relu_seed_stride)
    msg = str(e.value)
    assert "1 block of 64 threads" in msg
    assert "were never written" in msg and "Only outputs 0..63 were written" in msg
    assert "blockDim.x * blockDim.x, the Waterloo lab report's typo, is 4096 here" in msg
    assert "cuda.gridsize(1)" in msg


def test_grid_stride_block_stride_duplicates_work():
    with pytest.raises(CheckFailed) as e:
        ch01.check_grid_stride(conv2d_relu_block_stride)
    msg = str(e.value)
    assert "3 blocks of 64 threads" in msg
    assert "was computed by 2 threads" in msg and "global thread 0 (block 0, thread 0)" in msg
    assert "the stride is smaller than the 192 threads of the grid" in msg


def test_grid_stride_hardcoded_sizes():
    with pytest.raises(CheckFailed) as e:
        ch01.check_grid_stride(conv2d_relu_hardcoded)
    assert "read the sizes" in str(e.value) or "never written" in str(e.value)


def test_grid_stride_one_output_per_thread_without_guard():
    with pytest.raises(CheckFailed) as e:
        ch01.check_grid_stride(conv2d_relu_no_guard_one_per_thread)
    msg = str(e.value)
    # 1 block of 64: in bounds but most outputs missing
    assert "Only outputs 0..63 were written: each thread computed one output and stopped" in msg


def test_grid_stride_hint_recognises_the_typo_when_it_lands_inside_the_array():
    # 3 blocks of 16 threads: blockDim.x ** 2 = 256 is inside a 300-output array, so the
    # written outputs show the typo's own pattern (0..47 and 256..299)
    import numpy as np

    expected = np.zeros((3, 10, 10), np.float32)
    out = np.full(expected.shape, np.nan, np.float32).ravel()
    for t in range(48):
        out[t::256] = 0.0
    hint = ch01._stride_hint(out.reshape(expected.shape), expected, 3, 16)
    assert "blockDim.x * blockDim.x = 256, the Waterloo lab report's typo" in hint
    assert "gridDim.x * blockDim.x = 48" in hint


# ------------------------------------------------------------------ exercise 3: linear ids
def linear_thread_id(tx, ty, tz, bdx, bdy):
    return tx + ty * bdx + tz * bdx * bdy


def global_thread_id(thread_idx, block_idx, block_dim, grid_dim):
    block = linear_thread_id(*block_idx, grid_dim[0], grid_dim[1])
    return block * block_dim[0] * block_dim[1] * block_dim[2] + linear_thread_id(*thread_idx, block_dim[0], block_dim[1])


def test_linear_id_passes(capsys):
    ch01.check_linear_id(linear_thread_id, global_thread_id)
    assert "x fastest" in capsys.readouterr().out


def test_linear_id_stub():
    def stub(*args):
        raise NotWrittenYet("ch01.linear_id")

    with pytest.raises(ExerciseNotWritten, match="is not written yet"):
        ch01.check_linear_id(stub, global_thread_id)
    with pytest.raises(ExerciseNotWritten, match="is not written yet"):
        ch01.check_linear_id(linear_thread_id, stub)


def test_linear_id_y_fastest():
    def y_fastest(tx, ty, tz, bdx, bdy):
        return ty + tx * bdy + tz * bdx * bdy

    with pytest.raises(CheckFailed, match="with ty = tz = 0 the id is just tx"):
        ch01.check_linear_id(y_fastest, global_thread_id)


def test_linear_id_missing_z_term():
    def no_z(tx, ty, tz, bdx, bdy):
        return tx + ty * bdx + tz * bdx

    with pytest.raises(CheckFailed, match="layer of threads comes before layer tz"):
        ch01.check_linear_id(no_z, global_thread_id)


def test_global_id_forgets_block_size():
    def per_block_x(thread_idx, block_idx, block_dim, grid_dim):
        block = linear_thread_id(*block_idx, grid_dim[0], grid_dim[1])
        return block * block_dim[0] + linear_thread_id(*thread_idx, block_dim[0], block_dim[1])

    with pytest.raises(CheckFailed) as e:
        for _ in range(5):   # a 1-D block passes; a random 2-D one must fail
            ch01.check_linear_id(linear_thread_id, per_block_x)
    assert "every block before it holds" in str(e.value)


def test_linear_id_float():
    def as_float(tx, ty, tz, bdx, bdy):
        return float(tx + ty * bdx + tz * bdx * bdy)

    with pytest.raises(CheckFailed, match="a float: thread ids are whole numbers"):
        ch01.check_linear_id(as_float, global_thread_id)
