"""Chapter 3 checks: pass on correct answers, fail with a precise message on the stub and typical mistakes."""

from __future__ import annotations

import re

import pytest
from numba import cuda, float32

from simtlab.exercises import ch03
from simtlab.exercises.report import CheckFailed, ExerciseNotWritten, NotWrittenYet
from simtlab.kernels import patterns as P
from simtlab.kernels.patterns import BLOCK_ROWS, RADIUS, STENCIL_BLOCK, STENCIL_SHARED, TILE, TILE_PAD


# ------------------------------------------------------------------ exercise 1: scale rows
@cuda.jit
def scale_rows(a, s, out):
    col, row = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[1]:
        out[row, col] = a[row, col] * s[row]


@cuda.jit
def scale_rows_swapped(a, s, out):
    # right values (the grid is a square of threads that covers both ways round) but
    # threadIdx.x walks down a column
    t, u = cuda.grid(2)
    n = cuda.gridsize(2)
    for row in range(t, a.shape[0], n[0]):
        for col in range(u, a.shape[1], n[1]):
            out[row, col] = a[row, col] * s[row]


@cuda.jit
def scale_rows_no_guard(a, s, out):
    col, row = cuda.grid(2)
    out[row, col] = a[row, col] * s[row]


@cuda.jit
def scale_rows_wrong_factor(a, s, out):
    col, row = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[1]:
        out[row, col] = a[row, col] * s[0]


@cuda.jit
def scale_rows_stub(a, s, out):
    raise NotWrittenYet("ch03.scale_rows")


def test_scale_rows_passes(capsys):
    for _ in range(2):
        ch03.check_scale_rows(scale_rows)
    assert "at most 4 sectors per request" in capsys.readouterr().out


def test_scale_rows_stub():
    with pytest.raises(ExerciseNotWritten, match=r"^Exercise ch03.scale_rows is not written yet"):
        ch03.check_scale_rows(scale_rows_stub)


def test_scale_rows_uncoalesced():
    with pytest.raises(CheckFailed) as e:
        ch03.check_scale_rows(scale_rows_swapped)
    msg = str(e.value)
    assert "The values are right, but the accesses are not coalesced" in msg
    sectors = int(re.search(r"touches (\d+) sectors", msg).group(1))
    assert sectors > 4 and "warp 0 of block (0, 0)" in msg
    assert "lane 0 reads a[0, 0], lane 1 reads a[1, 0]" in msg
    assert "256 bytes apart" in msg          # rows of 64 floats
    assert "col, row = cuda.grid(2)" in msg


def test_scale_rows_out_of_bounds():
    with pytest.raises(CheckFailed) as e:
        ch03.check_scale_rows(scale_rows_no_guard)
    msg = str(e.value)
    assert "out-of-bounds" in msg and "Guard the access" in msg and "Launch: a of shape" in msg


def test_scale_rows_wrong_values():
    with pytest.raises(CheckFailed) as e:
        ch03.check_scale_rows(scale_rows_wrong_factor)
    msg = str(e.value)
    assert "have the wrong value" in msg and "(row=1, col=0)" in msg
    assert "out[row, col] = a[row, col] * s[row]" in msg


# ------------------------------------------------------------------ exercise 2: stencil with halo
def test_stencil_passes_on_the_course_kernel(capsys):
    ch03.check_stencil_shared(P.stencil1d_v2_shared)
    assert "reads its 128 + 2 x 3 elements of x once" in capsys.readouterr().out


@cuda.jit
def stencil_stub(x, w, out):
    raise NotWrittenYet("ch03.stencil_shared")


@cuda.jit
def stencil_no_sync(x, w, out):
    s = cuda.shared.array(STENCIL_SHARED, float32)
    t = cuda.threadIdx.x
    start = cuda.blockIdx.x * STENCIL_BLOCK - RADIUS
    for j in range(t, STENCIL_SHARED, STENCIL_BLOCK):
        g = start + j
        s[j] = x[g] if 0 <= g < x.size else 0.0
    i = cuda.grid(1)
    if i < x.size:
        acc = 0.0
        for k in range(2 * RADIUS + 1):
            acc += w[k] * s[t + k]
        out[i] = acc


@cuda.jit
def stencil_no_padding(x, w, out):
    # reads outside the array at both ends
    s = cuda.shared.array(STENCIL_SHARED, float32)
    t = cuda.threadIdx.x
    start = cuda.blockIdx.x * STENCIL_BLOCK - RADIUS
    for j in range(t, STENCIL_SHARED, STENCIL_BLOCK):
        s[j] = x[start + j]
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < x.size:
        acc = 0.0
        for k in range(2 * RADIUS + 1):
            acc += w[k] * s[t + k]
        out[i] = acc


STENCIL_SHARED_PLUS_ONE = STENCIL_SHARED + 1      # numba sizes shared arrays from constants only


@cuda.jit
def stencil_shifted(x, w, out):
    # reads s[t + k + 1]: off by one
    s = cuda.shared.array(STENCIL_SHARED_PLUS_ONE, float32)
    t = cuda.threadIdx.x
    start = cuda.blockIdx.x * STENCIL_BLOCK - RADIUS
    for j in range(t, STENCIL_SHARED_PLUS_ONE, STENCIL_BLOCK):
        g = start + j
        s[j] = x[g] if 0 <= g < x.size else 0.0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < x.size:
        acc = 0.0
        for k in range(2 * RADIUS + 1):
            acc += w[k] * s[t + k + 1]
        out[i] = acc


@cuda.jit
def stencil_load_whole_array(x, w, out):
    # right values, one read per element per block, but every block reads all of x
    s = cuda.shared.array(STENCIL_SHARED, float32)
    t = cuda.threadIdx.x
    start = cuda.blockIdx.x * STENCIL_BLOCK - RADIUS
    for g in range(t, x.size, STENCIL_BLOCK):
        v = x[g]
        j = g - start
        if 0 <= j < STENCIL_SHARED:
            s[j] = v
    for j in range(t, STENCIL_SHARED, STENCIL_BLOCK):
        if not 0 <= start + j < x.size:
            s[j] = 0.0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < x.size:
        acc = 0.0
        for k in range(2 * RADIUS + 1):
            acc += w[k] * s[t + k]
        out[i] = acc


def test_stencil_stub():
    with pytest.raises(ExerciseNotWritten, match=r"^Exercise ch03.stencil_shared is not written yet"):
        ch03.check_stencil_shared(stencil_stub)


def test_stencil_global_reads_are_counted():
    with pytest.raises(CheckFailed) as e:
        ch03.check_stencil_shared(P.stencil1d_v1_global)
    msg = str(e.value)
    assert "The values are right, but block 0 read x[3] 7 times" in msg
    assert "threads 0, 1, 2, 3, 4, 5, ..." in msg and "acc += w[k] * x[j]" in msg


def test_stencil_missing_barrier():
    with pytest.raises(CheckFailed) as e:
        ch03.check_stencil_shared(stencil_no_sync)
    msg = str(e.value)
    assert "uninitialised shared memory" in msg and "cuda.syncthreads()" in msg


def test_stencil_no_zero_padding():
    with pytest.raises(CheckFailed) as e:
        ch03.check_stencil_shared(stencil_no_padding)
    msg = str(e.value)
    assert "out-of-bounds" in msg and "block (0, 0, 0), thread (0, 0, 0)" in msg
    assert "zero padding" in msg


def test_stencil_wrong_values():
    with pytest.raises(CheckFailed) as e:
        ch03.check_stencil_shared(stencil_shifted)
    msg = str(e.value)
    assert "have the wrong value" in msg and "element (i=0)" in msg and "s[t + k]" in msg


def test_stencil_reads_only_what_the_block_needs():
    with pytest.raises(CheckFailed) as e:
        ch03.check_stencil_shared(stencil_load_whole_array)
    msg = str(e.value)
    assert "which it does not need: block 0 needs only x[0..130]" in msg


# ------------------------------------------------------------------ exercise 3: transpose
def test_transpose_passes_on_padded_and_big_tiles(capsys):
    ch03.check_transpose(P.transpose_v3_padded)
    out = capsys.readouterr().out
    assert "each shared request needs 1 wavefront" in out and "(mean 4.0)" in out


@cuda.jit
def transpose_swizzled(a, out):
    # another right answer: no padding, the column index XOR-ed with the row spreads the banks
    tile = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if y + j < a.shape[0] and x < a.shape[1]:
            tile[ty + j, tx ^ (ty + j)] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if y + j < out.shape[0] and x < out.shape[1]:
            out[y + j, x] = tile[tx, (ty + j) ^ tx]


def test_transpose_accepts_a_swizzled_tile():
    ch03.check_transpose(transpose_swizzled)


@cuda.jit
def transpose_stub(a, out):
    raise NotWrittenYet("ch03.transpose")


def test_transpose_stub():
    with pytest.raises(ExerciseNotWritten, match=r"^Exercise ch03.transpose is not written yet"):
        ch03.check_transpose(transpose_stub)


def test_transpose_naive_is_uncoalesced():
    with pytest.raises(CheckFailed) as e:
        ch03.check_transpose(P.transpose_v1_naive)
    msg = str(e.value)
    assert "a global access is not coalesced" in msg and "out[0, 0] = a" not in msg
    assert "makes a write request to out that touches 32 sectors" in msg
    assert "warp 0 of block (0, 0)" in msg and "lane 0 writes out[0, 0], lane 1 writes out[1, 0]" in msg


def test_transpose_tile_has_bank_conflicts():
    with pytest.raises(CheckFailed) as e:
        ch03.check_transpose(P.transpose_v2_tile)
    msg = str(e.value)
    assert "bank conflicts" in msg and "needs 32 wavefronts: 32 different words in bank 0" in msg
    assert "lane 0 reads tile[0, 0], lane 1 reads tile[1, 0]" in msg and "TILE + 1" in msg


@cuda.jit
def transpose_no_guard(a, out):
    tile = cuda.shared.array((TILE, TILE_PAD), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        out[y + j, x] = tile[tx, ty + j]


@cuda.jit
def transpose_not_transposed(a, out):
    # the tile lands in the same block position instead of the mirrored one
    tile = cuda.shared.array((TILE, TILE_PAD), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if y + j < a.shape[0] and x < a.shape[1]:
            tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    for j in range(0, TILE, BLOCK_ROWS):
        if y + j < out.shape[0] and x < out.shape[1]:
            out[y + j, x] = tile[tx, ty + j] if tx < 32 else 0.0


def test_transpose_out_of_bounds():
    with pytest.raises(CheckFailed) as e:
        ch03.check_transpose(transpose_no_guard)
    msg = str(e.value)
    assert "out-of-bounds" in msg and "Guard both loops" in msg


def test_transpose_wrong_values():
    with pytest.raises(CheckFailed) as e:
        ch03.check_transpose(transpose_not_transposed)
    msg = str(e.value)
    assert "out[c, r] must be a[r, c]" in msg and ("wrong value" in msg or "never written" in msg)
