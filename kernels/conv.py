"""Chapter 7: convolution layers (NCHW, float32), from one thread per output to an implicit GEMM.

Shapes: input ``x`` is (B, C, H, W) -- B images of C channels; weights ``w`` are (M, C, K, K)
-- M filters of K x K over every channel; output ``y`` is (B, M, Ho, Wo). Each output is

    y[b, m, oy, ox] = sum over c, p, q of x[b, c, oy*S + p - P, ox*S + q - P] * w[m, c, p, q]

with stride S and P zero rows/columns of padding before the input (reads outside the input
are 0). 'valid' means P = 0; 'same' means Ho = ceil(H / S), with the padding split as
TensorFlow and PyTorch split it (the odd one after), so P is the part before.

Every numba kernel takes ``(..., stride, pad)`` as integers and reads the other sizes from its
arrays' shapes; kernels/conv.cu has the same versions in CUDA C, plus the tuned kernels that
the benchmark holds against cuDNN, and v6h: v6 with x and y stored in FP16 or BF16 (FP32 weights
and sums; uint16 arrays of 16-bit patterns, ``to_storage``/``from_storage``), which checks whether
halving C1's bytes makes v6 faster.

Sources (named in chapter 7): the Waterloo lab report's conv2d+ReLU (v0, its grid-stride step is wrong: v1 fixes it), the
LeNet-5 blog post's unroll + GEMM and its fused unroll (v2, v3), the Toronto electrode-CNN report's weights in
constant memory (v4).
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32

from simtlab.simt import cdiv
from simtlab.versions import Launch, Version

TOPIC = "conv"

TILE = 16                     # the GEMM tile of v2/v3: TILE x TILE outputs per block, K-slices of TILE
BLOCK = 128                   # threads per block of the 1-D kernels (v0, v1, im2col)

# ECE408's modified LeNet-5 (86 x 86 Fashion-MNIST images): its two convolution layers
LENET_C1 = {"C": 1, "H": 86, "W": 86, "M": 4, "K": 7}          # 86x86 -> 4 maps of 80x80
LENET_C3 = {"C": 4, "H": 40, "W": 40, "M": 16, "K": 7}         # after 2x2 pooling: 40x40 -> 16 of 34x34
# the electrode CNN (56 x 100 recordings, 'same' padding): its first two convolutions
ELECTRODE_CONV1 = {"C": 1, "H": 56, "W": 100, "M": 64, "K": 8, "padding": "same"}
ELECTRODE_CONV2 = {"C": 64, "H": 28, "W": 50, "M": 64, "K": 4, "padding": "same"}


# ------------------------------------------------------------------------------------------
# Shapes and the CPU references
# ------------------------------------------------------------------------------------------
def conv_geometry(h: int, w: int, k: int, stride: int = 1, padding="valid"):
    """``(Ho, Wo, pad)``: output size and the zero padding before the input (top and left).

    ``padding``: 'valid' (none), 'same' (Ho = ceil(H / stride)) or an int P (P on every side).
    """
    if stride < 1:
        raise ValueError(f"stride must be at least 1, got {stride}")
    if k < 1:
        raise ValueError(f"the filter size K must be at least 1, got {k}")
    if padding == "valid":
        pads = (0, 0)
        ho, wo = (h - k) // stride + 1, (w - k) // stride + 1
    elif padding == "same":
        ho, wo = -(-h // stride), -(-w // stride)
        pad_h = max((ho - 1) * stride + k - h, 0)
        pad_w = max((wo - 1) * stride + k - w, 0)
        pads = (pad_h // 2, pad_w // 2)
        if pads[0] != pads[1]:
            raise ValueError(f"'same' padding of a {h}x{w} input needs {pads[0]} rows but {pads[1]} columns "
                             "before it; the kernels take one pad for both: use an input whose height and width give the same padding (a square one does)")
    elif isinstance(padding, (int, np.integer)) and padding >= 0:
        pads = (int(padding), int(padding))
        ho, wo = (h + 2 * padding - k) // stride + 1, (w + 2 * padding - k) // stride + 1
    else:
        raise ValueError(f"padding must be 'valid', 'same' or a non-negative int, got {padding!r}")
    if ho < 1 or wo < 1:
        raise ValueError(f"a {k}x{k} filter does not fit a {h}x{w} input with padding {padding!r}: "
                         "make the input larger or pad it")
    return ho, wo, pads[0]


def _padded(x, k, stride, padding):
    b, c, h, w = x.shape
    ho, wo, pad = conv_geometry(h, w, k, stride, padding)
    # room for every window: the part after the input may be larger than `pad` ('same', odd total)
    hp = max(h + pad, (ho - 1) * stride + k)
    wp = max(w + pad, (wo - 1) * stride + k)
    xp = np.zeros((b, c, hp, wp), np.float64)
    xp[:, :, pad:pad + h, pad:pad + w] = x
    return xp, ho, wo, pad


def conv2d_float64(x, w, stride: int = 1, padding="valid"):
    """The convolution in float64 (exact for float32 or 16-bit inputs up to the sums' rounding)."""
    x = np.asarray(x)
    w = np.asarray(w)
    if x.ndim != 4 or w.ndim != 4 or w.shape[1] != x.shape[1] or w.shape[2] != w.shape[3]:
        raise ValueError(f"need x (B, C, H, W) and w (M, C, K, K) with the same C; got x {x.shape}, w {w.shape}")
    k = w.shape[2]
    xp, ho, wo, _ = _padded(x, k, stride, padding)
    windows = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))
    windows = windows[:, :, ::stride, ::stride][:, :, :ho, :wo]          # (B, C, Ho, Wo, K, K)
    return np.einsum("bchwpq,mcpq->bmhw", windows, w.astype(np.float64), optimize=True)


def conv2d_cpu(x, w, stride: int = 1, padding="valid", relu: bool = False):
    """The reference every version is checked against: float64 sums, rounded once to float32."""
    y = conv2d_float64(x, w, stride, padding)
    if relu:
        y = np.maximum(y, 0.0)
    return y.astype(np.float32)


def im2col_cpu(x, k: int, stride: int = 1, padding="valid"):
    """The unrolled input: row (c, p, q), column (b, oy, ox), so that ``w.reshape(M, -1) @ cols``
    is the convolution (output column n = b*Ho*Wo + oy*Wo + ox)."""
    x = np.asarray(x, np.float32)
    b, c = x.shape[:2]
    xp, ho, wo, _ = _padded(x, k, stride, padding)
    windows = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))
    windows = windows[:, :, ::stride, ::stride][:, :, :ho, :wo]          # (B, C, Ho, Wo, K, K)
    return windows.transpose(1, 4, 5, 0, 2, 3).reshape(c * k * k, b * ho * wo).astype(np.float32)


# ------------------------------------------------------------------------------------------
# v0/v1: the Waterloo lab report's conv2d+ReLU, one output per loop turn of a 1-D grid-stride loop
# ------------------------------------------------------------------------------------------
@cuda.jit(device=True)
def output_sum(x, w, b, m, oy, ox, stride, pad):
    """One output: the K x K x C window at (oy, ox) of image b times filter m (zero outside)."""
    acc = float32(0.0)
    for c in range(x.shape[1]):
        for p in range(w.shape[2]):
            iy = oy * stride + p - pad
            if 0 <= iy < x.shape[2]:
                for q in range(w.shape[3]):
                    ix = ox * stride + q - pad
                    if 0 <= ix < x.shape[3]:
                        acc += x[b, c, iy, ix] * w[m, c, p, q]
    return acc


# v0: the Waterloo lab report's kernel as written: the loop steps by blockDim.x * blockDim.x instead of the grid's
#   thread count, so with fewer threads than outputs whole ranges of outputs are never computed
@cuda.jit
def conv_v0_seed(x, w, y, stride, pad):
    mo, ho, wo = y.shape[1], y.shape[2], y.shape[3]
    total = y.shape[0] * mo * ho * wo
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    while i < total:
        ox = i % wo
        oy = (i // wo) % ho
        m = (i // (wo * ho)) % mo
        b = i // (wo * ho * mo)
        acc = output_sum(x, w, b, m, oy, ox, stride, pad)
        y[b, m, oy, ox] = acc if acc > 0 else 0.0          # ReLU
        i += cuda.blockDim.x * cuda.blockDim.x            # BUG: the grid has gridDim.x * blockDim.x threads


# v1: the grid-stride loop stepping by the grid's thread count: every output once, any grid size
@cuda.jit
def conv_v1_direct(x, w, y, stride, pad):
    mo, ho, wo = y.shape[1], y.shape[2], y.shape[3]
    total = y.shape[0] * mo * ho * wo
    i = cuda.grid(1)
    while i < total:
        ox = i % wo                                        # consecutive threads: consecutive outputs
        oy = (i // wo) % ho
        m = (i // (wo * ho)) % mo
        b = i // (wo * ho * mo)
        acc = output_sum(x, w, b, m, oy, ox, stride, pad)
        y[b, m, oy, ox] = acc if acc > 0 else 0.0          # ReLU
        i += cuda.gridsize(1)


# ------------------------------------------------------------------------------------------
# v2: unroll (im2col) into a (C*K*K) x (B*Ho*Wo) matrix, then a tiled GEMM with the weights
# ------------------------------------------------------------------------------------------
# v2a: one thread per element of the unrolled matrix; each input element is copied up to K*K
#   times (once per window that covers it), in exchange the GEMM reads a plain matrix
@cuda.jit
def im2col(x, cols, k, wo, stride, pad):
    n_cols = cols.shape[1]
    hw = n_cols // x.shape[0]                          # Ho * Wo
    i = cuda.grid(1)
    while i < cols.size:
        row = i // n_cols                              # (c, p, q)
        n = i % n_cols                                 # (b, oy, ox): consecutive threads, consecutive columns
        c, pq = row // (k * k), row % (k * k)
        b, pix = n // hw, n % hw
        iy = (pix // wo) * stride + pq // k - pad
        ix = (pix % wo) * stride + pq % k - pad
        inside = 0 <= iy < x.shape[2] and 0 <= ix < x.shape[3]
        cols[row, n] = x[b, c, iy, ix] if inside else 0.0
        i += cuda.gridsize(1)


# v2b: the tiled GEMM (TILE x TILE tiles of A and B in shared memory) of w (as M x CKK) by cols;
#   the only change from chapter 6's tiled GEMM is the store: column n = (b, pixel) of the
#   product goes to y[b, m, pixel], so the output comes out in NCHW without a transpose
@cuda.jit
def gemm_tiled_nchw(w, cols, y):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    n = cuda.blockIdx.x * TILE + tx                     # output column (b, pixel)
    m = cuda.blockIdx.y * TILE + ty                     # output row: the filter
    depth = w.shape[1]
    acc = float32(0.0)
    for t in range((depth + TILE - 1) // TILE):
        k0 = t * TILE
        sa[ty, tx] = w[m, k0 + tx] if m < w.shape[0] and k0 + tx < depth else 0.0
        sb[ty, tx] = cols[k0 + ty, n] if k0 + ty < depth and n < cols.shape[1] else 0.0
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()                              # the next phase overwrites sa/sb
    hw = y.shape[2]                                     # y is (B, M, Ho*Wo)
    if m < w.shape[0] and n < cols.shape[1]:
        y[n // hw, m, n % hw] = acc


# ------------------------------------------------------------------------------------------
# v3: implicit GEMM: the same tiles, but the B tile is gathered from x into shared memory
# ------------------------------------------------------------------------------------------
# v3: the unrolled matrix is never written: each phase gathers its TILE x TILE slice of it from
#   x straight into shared memory, so DRAM sees the input once instead of K*K times
@cuda.jit
def conv_v3_implicit_gemm(x, w, y, stride, pad):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    mo, ho, wo = y.shape[1], y.shape[2], y.shape[3]
    k = w.shape[2]
    kk = k * k
    depth = x.shape[1] * kk                              # rows of the (virtual) unrolled matrix
    hw = ho * wo
    n_cols = y.shape[0] * hw
    n = cuda.blockIdx.x * TILE + tx                      # this thread's column (b, oy, ox) ...
    m = cuda.blockIdx.y * TILE + ty                      # ... and filter
    nl = cuda.blockIdx.x * TILE + ty                     # the column this thread gathers for the tile
    b, pix = nl // hw, nl % hw
    oy, ox = pix // wo, pix % wo
    acc = float32(0.0)
    for t in range((depth + TILE - 1) // TILE):
        r = t * TILE + tx                                # the unrolled row (c, p, q) this thread gathers
        if m < mo and t * TILE + tx < depth:
            sa[ty, tx] = w[m, r // kk, (r % kk) // k, r % k]
        else:
            sa[ty, tx] = 0.0
        v = float32(0.0)
        if r < depth and nl < n_cols:
            c, pq = r // kk, r % kk
            iy = oy * stride + pq // k - pad
            ix = ox * stride + pq % k - pad
            if 0 <= iy < x.shape[2] and 0 <= ix < x.shape[3]:
                v = x[b, c, iy, ix]
        sb[tx, ty] = v                                   # sb[row of the tile, column of the tile]
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if m < mo and n < n_cols:
        y[n // hw, m, (n % hw) // wo, n % wo] = acc


# ------------------------------------------------------------------------------------------
# v3b: the implicit GEMM with its gather indices precomputed (one table row per unrolled row)
# ------------------------------------------------------------------------------------------
def gather_table(c: int, h: int, w: int, k: int) -> np.ndarray:
    """v3b's table, int32 (3, C*K*K): for each row r = (c, p, q) of the unrolled matrix, the
    offset c*H*W + p*W + q of its input element from the window's corner, and p and q (the
    bounds check needs them). Built once on the host; the kernel divides nothing per element."""
    r = np.arange(c * k * k)
    ch, p, q = r // (k * k), (r % (k * k)) // k, r % k
    return np.stack([ch * h * w + p * w + q, p, q]).astype(np.int32)


# v3b: v3 with the per-element divisions replaced by a table lookup: each phase v3 splits its row r
#   into (c, p, q) with four divisions and remainders for x and four more for w; v3b reads the
#   offset, p and q of row r from the table (coalesced: the lanes of a warp read consecutive
#   rows) and w as a 2-D (M, C*K*K) matrix. The column's divisions stay, once per thread.
@cuda.jit
def conv_v3b_offset_table(x, w, taps, y, h, wd, stride, pad):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    mo, ho, wo = y.shape[1], y.shape[2], y.shape[3]
    depth = w.shape[1]                                   # x is flat (B*C*H*W), w is (M, C*K*K)
    hw = ho * wo
    n_cols = y.shape[0] * hw
    n = cuda.blockIdx.x * TILE + tx
    m = cuda.blockIdx.y * TILE + ty
    nl = cuda.blockIdx.x * TILE + ty                     # the column this thread gathers: decoded once
    b, pix = nl // hw, nl % hw
    iy0 = (pix // wo) * stride - pad                     # the window's top-left corner
    ix0 = (pix % wo) * stride - pad
    corner = b * (x.size // y.shape[0]) + iy0 * wd + ix0
    acc = float32(0.0)
    for t in range((depth + TILE - 1) // TILE):
        r = t * TILE + tx
        if m < mo and r < depth:
            sa[ty, tx] = w[m, r]
        else:
            sa[ty, tx] = 0.0
        v = float32(0.0)
        if r < depth and nl < n_cols:
            iy = iy0 + taps[1, r]
            ix = ix0 + taps[2, r]
            if 0 <= iy < h and 0 <= ix < wd:
                v = x[corner + taps[0, r]]
        sb[tx, ty] = v
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if m < mo and n < n_cols:
        y[n // hw, m, (n % hw) // wo, n % wo] = acc


# ------------------------------------------------------------------------------------------
# The implicit GEMM in NHWC: the channel innermost in memory and in the unrolled row
# ------------------------------------------------------------------------------------------
# v3 for x (B, H, W, C), w (M, K, K, C) and y (B, Ho, Wo, M): the unrolled row is r = (p, q, c),
#   c innermost, so a window row p of the input, K*C floats, is one contiguous run in memory
#   (in NCHW it is C runs of K floats, H*W floats apart). The lanes of a warp gather 16
#   consecutive rows r for two columns: in NHWC those are (nearly) consecutive addresses.
@cuda.jit
def conv_v3_implicit_gemm_nhwc(x, w, y, stride, pad):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    ho, wo, mo = y.shape[1], y.shape[2], y.shape[3]
    k, c_in = w.shape[1], w.shape[3]
    kc = k * c_in
    depth = k * kc
    hw = ho * wo
    n_cols = y.shape[0] * hw
    n = cuda.blockIdx.x * TILE + tx
    m = cuda.blockIdx.y * TILE + ty
    nl = cuda.blockIdx.x * TILE + ty
    b, pix = nl // hw, nl % hw
    oy, ox = pix // wo, pix % wo
    acc = float32(0.0)
    for t in range((depth + TILE - 1) // TILE):
        r = t * TILE + tx                                # the unrolled row (p, q, c)
        if m < mo and r < depth:
            sa[ty, tx] = w[m, r // kc, (r % kc) // c_in, r % c_in]
        else:
            sa[ty, tx] = 0.0
        v = float32(0.0)
        if r < depth and nl < n_cols:
            iy = oy * stride + r // kc - pad
            ix = ox * stride + (r % kc) // c_in - pad
            if 0 <= iy < x.shape[1] and 0 <= ix < x.shape[2]:
                v = x[b, iy, ix, r % c_in]
        sb[tx, ty] = v
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if m < mo and n < n_cols:
        y[n // hw, (n % hw) // wo, n % wo, m] = acc


# ------------------------------------------------------------------------------------------
# v4: the filter in constant memory (a numba kernel is compiled for one weight tensor)
# ------------------------------------------------------------------------------------------
CONST_BYTES = 64 * 1024       # constant memory a kernel can address (the weights must fit)


def make_conv_v4_const_weights(w):
    """v4 for the weights ``w``: a kernel ``(x, y, stride, pad)`` with ``w`` in constant memory.

    numba copies a constant array into the compiled kernel, so each weight tensor gets its own
    kernel (the CUDA C twin copies the weights into one ``__constant__`` buffer instead).
    """
    weights = np.ascontiguousarray(w, np.float32)
    if weights.ndim != 4 or weights.shape[2] != weights.shape[3]:
        raise ValueError(f"w must be (M, C, K, K), got {weights.shape}")
    if weights.nbytes > CONST_BYTES:
        raise ValueError(f"the weights take {weights.nbytes:,} bytes but constant memory holds "
                         f"{CONST_BYTES:,}: use v3 (weights in shared memory) for this layer")

    # v4: one thread per output of a 2-D tile, grid (column tiles, row tiles x M, B): the filter m
    #   is the same for the whole block, so every lane of a warp reads the same weight at the same
    #   time, which the constant cache broadcasts in one transaction
    @cuda.jit
    def conv_v4_const_weights(x, y, stride, pad):
        wc = cuda.const.array_like(weights)
        row_tiles = (y.shape[2] + cuda.blockDim.y - 1) // cuda.blockDim.y
        b, m = cuda.blockIdx.z, cuda.blockIdx.y // row_tiles
        ox = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        oy = (cuda.blockIdx.y % row_tiles) * cuda.blockDim.y + cuda.threadIdx.y
        if oy < y.shape[2] and ox < y.shape[3]:
            acc = float32(0.0)
            for c in range(x.shape[1]):
                for p in range(wc.shape[2]):
                    iy = oy * stride + p - pad
                    if 0 <= iy < x.shape[2]:
                        for q in range(wc.shape[3]):
                            ix = ox * stride + q - pad
                            if 0 <= ix < x.shape[3]:
                                acc += x[b, c, iy, ix] * wc[m, c, p, q]
            y[b, m, oy, ox] = acc

    return conv_v4_const_weights


# ------------------------------------------------------------------------------------------
# v6: one block per image at a time (the CUDA C twin is the fast one; numba is made per shape)
# ------------------------------------------------------------------------------------------
def make_conv_v6_image_per_block(c: int, m: int, k: int, tw: int, nt: int, ih: int, iwp: int):
    """v6 for one layer shape: a kernel ``(x, w, y, pad)`` on a 1-D grid of ``nt`` threads per
    block, with ``v6_shared_bytes(...)`` of dynamic shared memory. Its register arrays need
    compile-time sizes, so each shape gets its own kernel."""
    ckk = c * k * k
    wlen = tw + k - 1                        # inputs under tw neighbouring windows (a constant for numba)

    # v6: blocks loop over the images (grid-stride over the batch); the block stages the padded
    #   image and all the weights in shared memory once per image, then each thread computes tw
    #   neighbouring outputs of every filter from a window of tw + k - 1 inputs held in registers
    @cuda.jit
    def conv_v6_image_per_block(x, w, y, pad):
        smem = cuda.shared.array(0, float32)                 # dynamic: ckk*m weights, then the tile
        acc = cuda.local.array((m, tw), float32)
        win = cuda.local.array(wlen, float32)
        t = cuda.threadIdx.x
        ho, wo = y.shape[2], y.shape[3]
        groups = (wo + tw - 1) // tw
        for i in range(t, ckk * m, nt):                      # ws[(c, p, q), m] = w[m, c, p, q]
            smem[(i % ckk) * m + i // ckk] = w[i // ckk, (i % ckk) // (k * k), (i % (k * k)) // k, i % k]
        tile0 = ckk * m                                      # tile[ch, r, col] at tile0 + (ch*ih + r)*iwp + col
        b = cuda.blockIdx.x
        while b < x.shape[0]:
            cuda.syncthreads()                               # the previous image is done with the tile
            for i in range(t, c * ih * iwp, nt):
                ch, r, col = i // (ih * iwp), (i // iwp) % ih, i % iwp
                iy, ix = r - pad, col - pad
                inside = 0 <= iy < x.shape[2] and 0 <= ix < x.shape[3]
                smem[tile0 + i] = x[b, ch, iy, ix] if inside else 0.0
            cuda.syncthreads()
            for item in range(t, ho * groups, nt):
                oy, ox0 = item // groups, (item % groups) * tw
                for mm in range(m):
                    for j in range(tw):
                        acc[mm, j] = 0.0
                for cp in range(c * k):
                    ch, p = cp // k, cp % k
                    row = tile0 + (ch * ih + oy + p) * iwp + ox0
                    for j in range(wlen):
                        win[j] = smem[row + j]
                    for q in range(k):
                        for mm in range(m):
                            wv = smem[(cp * k + q) * m + mm]
                            for j in range(tw):
                                acc[mm, j] += win[j + q] * wv
                for mm in range(m):
                    for j in range(tw):
                        if ox0 + j < wo:
                            y[b, mm, oy, ox0 + j] = acc[mm, j]
            b += cuda.gridDim.x

    return conv_v6_image_per_block


# ------------------------------------------------------------------------------------------
# Launch plans and the table of versions: the emulator, the GPU tests and the benchmark all
# run a version through its plan (simtlab.versions)
# ------------------------------------------------------------------------------------------
#: v5's tile shape (TX, TH, TW) per layer shape (C, M, K), the fastest in benchmarks/conv_gpu.py
V5_TILES = {(1, 4, 7): (16, 8, 2), (4, 16, 7): (16, 8, 4)}


def v5_name(c: int, m: int, k: int, tile) -> str:
    """The CUDA C name of v5 for one layer shape and tile (TX, TH, TW), as instantiated in conv.cu."""
    return "conv_v5_c{}m{}k{}_{}x{}x{}".format(c, m, k, *tile)


def _layer(xp, x, w, stride, padding):
    bsz, c, h, wd = map(int, x.shape)
    m, c_w, k, k2 = map(int, w.shape)
    if c_w != c or k != k2:
        raise ValueError(f"need x (B, C, H, W) and w (M, C, K, K) with the same C; got x {x.shape}, w {w.shape}")
    ho, wo, pad = conv_geometry(h, wd, k, stride, padding)
    y = xp.zeros((bsz, m, ho, wo), np.float32)
    sizes = tuple(np.int32(v) for v in (bsz, c, h, wd, m, k, ho, wo, stride, pad))
    return (bsz, c, h, wd, m, k, ho, wo, pad), y, sizes


def _grid_1d(n: int, max_blocks):
    g = cdiv(n, BLOCK)
    return min(g, max_blocks) if max_blocks else g


def plan_direct(version, impl, xp, x, w, stride=1, padding="valid", max_blocks=None, **_):
    """v0/v1: one 1-D grid-stride launch, ``max_blocks`` caps the grid (to see the loop at work)."""
    (bsz, c, h, wd, m, k, ho, wo, pad), y, sizes = _layer(xp, x, w, stride, padding)
    args = (x, w, y, *sizes) if impl == "cuda-c" else (x, w, y, stride, pad)
    return [Launch(version.kernel(impl), _grid_1d(y.size, max_blocks), BLOCK, args)], y


def plan_im2col(version, impl, xp, x, w, stride=1, padding="valid", max_blocks=None, cols=None, **_):
    """v2: the unroll kernel, then the GEMM. ``cols``: an array to receive the unrolled matrix."""
    (bsz, c, h, wd, m, k, ho, wo, pad), y, sizes = _layer(xp, x, w, stride, padding)
    depth, n_cols = c * k * k, bsz * ho * wo
    if cols is None:
        cols = xp.empty((depth, n_cols), np.float32)
    elif tuple(cols.shape) != (depth, n_cols):
        raise ValueError(f"cols must be {(depth, n_cols)}, got {tuple(cols.shape)}")
    w2 = w.reshape(m, depth)
    grid_cols = _grid_1d(depth * n_cols, max_blocks)
    grid_gemm = (cdiv(n_cols, TILE), cdiv(m, TILE))
    if impl == "cuda-c":
        unroll_args = (x, cols, *sizes[:4], sizes[5], *sizes[6:])
        gemm_args = (w2, cols, y, np.int32(m), np.int32(depth), np.int64(n_cols), np.int32(ho * wo))
    else:
        unroll_args = (x, cols, k, wo, stride, pad)
        gemm_args = (w2, cols, y.reshape(bsz, m, ho * wo))
    return [Launch("im2col", grid_cols, BLOCK, unroll_args),
            Launch("gemm_tiled_nchw", grid_gemm, (TILE, TILE), gemm_args)], y


def plan_implicit(version, impl, xp, x, w, stride=1, padding="valid", **_):
    """v3: one launch, TILE x TILE blocks on a (column tiles, filter tiles) grid."""
    (bsz, c, h, wd, m, k, ho, wo, pad), y, sizes = _layer(xp, x, w, stride, padding)
    args = (x, w, y, *sizes) if impl == "cuda-c" else (x, w, y, stride, pad)
    return [Launch(version.kernel(impl), (cdiv(bsz * ho * wo, TILE), cdiv(m, TILE)), (TILE, TILE), args)], y


def plan_offsets(version, impl, xp, x, w, stride=1, padding="valid", **_):
    """v3b: v3's launch, plus the gather table (``gather_table``) built on the host; numba's
    kernel takes x flat and w as (M, C*K*K), so that one table offset addresses any row."""
    (bsz, c, h, wd, m, k, ho, wo, pad), y, sizes = _layer(xp, x, w, stride, padding)
    taps = xp.asarray(gather_table(c, h, wd, k))
    grid = (cdiv(bsz * ho * wo, TILE), cdiv(m, TILE))
    if impl == "cuda-c":
        args = (x, w, taps, y, *sizes)
    else:
        args = (x.reshape(-1), w.reshape(m, c * k * k), taps, y, h, wd, stride, pad)
    return [Launch(version.kernel(impl), grid, (TILE, TILE), args)], y


def _const_weights(w) -> dict:
    """conv.cu's ``__constant__ c_weights`` for the weights ``w``: what a CUDA C launch copies in
    before it runs (``Launch.constants``: the GPU and the PTX engine both fill it)."""
    if w.nbytes > CONST_BYTES:
        raise ValueError(f"the weights take {w.nbytes:,} bytes; constant memory holds {CONST_BYTES:,}")
    return {"c_weights": w.ravel()}


def _check_batch(bsz, version):
    if bsz > 65535:
        raise ValueError(f"{version.label} puts the batch in gridDim.z, at most 65,535; got a batch of {bsz:,}: "
                         "split the batch into several launches")


def plan_const(version, impl, xp, x, w, stride=1, padding="valid", **_):
    """v4: grid (column tiles, row tiles x M, B); numba compiles a kernel for these weights,
    CUDA C names them in the launch's ``constants``, copied into constant memory before it runs."""
    (bsz, c, h, wd, m, k, ho, wo, pad), y, sizes = _layer(xp, x, w, stride, padding)
    _check_batch(bsz, version)
    grid = (cdiv(wo, TILE), cdiv(ho, TILE) * m, bsz)
    if impl == "cuda-c":
        return [Launch(version.kernel(impl), grid, (TILE, TILE), (x, y, *sizes), constants=_const_weights(w))], y
    host_w = w.get() if hasattr(w, "get") else w
    return [Launch(make_conv_v4_const_weights(host_w), grid, (TILE, TILE), (x, y, stride, pad))], y


def plan_tuned(version, impl, xp, x, w, stride=1, padding="valid", tile=None, **_):
    """v5 (CUDA C): the kernel instantiated for this layer shape, ``tile`` (TX, TH, TW) or the best."""
    (bsz, c, h, wd, m, k, ho, wo, pad), y, sizes = _layer(xp, x, w, stride, padding)
    version.kernel(impl)
    _check_batch(bsz, version)
    if stride != 1:
        raise ValueError("v5 is written for stride 1: use v3 for strided layers")
    if tile is None:
        if (c, m, k) not in V5_TILES:
            raise ValueError(f"v5 is instantiated for (C, M, K) in {sorted(V5_TILES)}, not {(c, m, k)}: "
                             "add a CONV_V5 line to kernels/conv.cu, or use v3")
        tile = V5_TILES[(c, m, k)]
    tx, th, tw = tile
    grid = (cdiv(wo, tx * tw), cdiv(ho, th), bsz)
    args = (x, y, *(np.int32(v) for v in (h, wd, ho, wo, pad)))
    return [Launch(v5_name(c, m, k, tile), grid, (tx, th), args, constants=_const_weights(w))], y


#: v6's instantiations per layer shape (C, M, K): (TW, NT, IH, IWP), the first is the default
V6_TILES = {(1, 4, 7): [(5, 256, 86, 86), (4, 320, 86, 86)],
            (4, 16, 7): [(4, 160, 40, 42), (4, 320, 40, 42), (2, 320, 40, 40)]}
#: v6's grid: at most this many blocks, each looping over images
V6_MAX_BLOCKS = 2048


def v6_shared_bytes(c: int, m: int, k: int, ih: int, iwp: int) -> int:
    """v6's shared memory: the weights and the padded image, float32."""
    return 4 * (c * k * k * m + c * ih * iwp)


def v6_name(c: int, m: int, k: int, tile) -> str:
    """The CUDA C name of v6 for one layer shape and (TW, NT, IH, IWP), as instantiated in conv.cu."""
    return "conv_v6_c{}m{}k{}_tw{}_nt{}_{}x{}".format(c, m, k, *tile)


def plan_image(version, impl, xp, x, w, stride=1, padding="valid", tile=None, max_blocks=None, **_):
    """v6: blocks loop over the images; the padded image must fit the tile (TW, NT, IH, IWP)."""
    (bsz, c, h, wd, m, k, ho, wo, pad), y, sizes = _layer(xp, x, w, stride, padding)
    version.kernel(impl)
    if stride != 1:
        raise ValueError("v6 is written for stride 1: use v3 for strided layers")
    if tile is None and impl == "numba":                 # numba compiles v6 for any shape: fit it
        tile = (2, 64, ho + k - 1, cdiv(wo, 2) * 2 + k - 1)
    if tile is None:
        if (c, m, k) not in V6_TILES:
            raise ValueError(f"v6 is instantiated for (C, M, K) in {sorted(V6_TILES)}, not {(c, m, k)}: "
                             "add a CONV_V6 line to kernels/conv.cu, or use v3")
        tile = V6_TILES[(c, m, k)][0]
    tw, nt, ih, iwp = tile
    if ho + k - 1 > ih or cdiv(wo, tw) * tw + k - 1 > iwp:
        raise ValueError(f"a {h}x{wd} input with padding {pad} needs a {ho + k - 1}x{cdiv(wo, tw) * tw + k - 1} "
                         f"tile; this v6 holds {ih}x{iwp}: instantiate a larger one in kernels/conv.cu")
    blocks = min(bsz, max_blocks or V6_MAX_BLOCKS)
    if impl == "cuda-c":
        args = (x, w, y, *(np.int32(v) for v in (bsz, h, wd, ho, wo, pad)))
        return [Launch(v6_name(c, m, k, tile), blocks, nt, args)], y
    kernel = make_conv_v6_image_per_block(c, m, k, tw, nt, ih, iwp)
    return [Launch(kernel, blocks, nt, (x, w, y, pad), shared=v6_shared_bytes(c, m, k, ih, iwp))], y


# v6h: v6's default tile with x and y stored in 16 bits (FP16 or BF16), weights and arithmetic FP32
#: the 16-bit storages of v6h (kernels/conv.cu: CONV_V6_16BIT), named as kernels/tensor_cores.py names them
STORAGES = ("fp16", "bf16")


def v6h_name(storage: str, c: int, m: int, k: int, tile) -> str:
    """The CUDA C name of v6 with ``storage`` ("fp16"/"bf16") x and y, for one layer shape and tile."""
    if storage not in STORAGES:
        raise ValueError(f"storage must be one of {', '.join(STORAGES)}, not {storage!r}")
    return "conv_v6{}_c{}m{}k{}_tw{}_nt{}_{}x{}".format(storage, c, m, k, *tile)


def to_storage(x, storage: str, xp=np):
    """float32 ``x`` as the 16-bit patterns (uint16 array of ``xp``) v6h reads, rounded to nearest
    even (kernels/tensor_cores.py's ``encode``, on the host: a plan's setup, not timed)."""
    from .tensor_cores import encode

    host = x.get() if hasattr(x, "get") else np.asarray(x)
    return xp.asarray(encode(host, storage))


def from_storage(bits, storage: str) -> np.ndarray:
    """The float64 values of 16-bit patterns (v6h's output, a NumPy or CuPy uint16 array)."""
    from .tensor_cores import decode

    return decode(bits.get() if hasattr(bits, "get") else np.asarray(bits), storage)


def storage_error_bound(x, w, storage: str) -> np.ndarray:
    """Per output, the most v6h's result can differ from the float64 convolution of the float32
    ``x`` by (``conv2d_cpu`` before its rounding). With S = sum |x| |w| over the output's window
    (n = C*K*K terms) and u = 2^-11 (FP16) or 2^-8 (BF16), half an ulp of the 16-bit format:

    - storing x in 16 bits moves each input by at most u |x| (plus 2^-25 where FP16 rounds to a
      subnormal, below 2^-14): at most u S + 2^-25 sum |w| on the sum;
    - the FP32 sum of n products, each product and addition rounded: (n + 1) 2^-24 of (1 + u) S;
    - storing y in 16 bits rounds the FP32 sum once more: u of |y| <= (1 + u)(1 + (n + 1) 2^-24) S
      (plus 2^-25 absolute for a subnormal FP16 output).

    A skipped tap changes an output by |x w| of one product, far above these bounds where the
    inputs stay away from 0 (the tests' inputs)."""
    from .tensor_cores import OUTPUT_ROUNDING

    u = OUTPUT_ROUNDING[storage]
    n = w.shape[1] * w.shape[2] * w.shape[3]
    x64, w64 = np.abs(np.asarray(x, np.float64)), np.abs(np.asarray(w, np.float64))
    s = conv2d_float64(x64, w64)
    fp32_sum = (n + 1) * 2.0 ** -24
    subnormal = 2.0 ** -25 * (1 + w64.sum(axis=(1, 2, 3))[None, :, None, None]) if storage == "fp16" else 0.0
    return s * (u + (1 + u) * fp32_sum + u * (1 + u) * (1 + fp32_sum)) + subnormal


def plan_image_16bit(storage: str):
    """v6h's plan for ``storage``: v6's plan (its checks, its default tile, grid and sizes) with x
    encoded in 16 bits, a 16-bit y (uint16 patterns: decode with :func:`from_storage`) and the
    16-bit kernel."""
    import dataclasses

    def plan(version, impl, xp, x, w, stride=1, padding="valid", tile=None, max_blocks=None, **_):
        (c, m, k) = (int(x.shape[1]), int(w.shape[0]), int(w.shape[2]))
        default = V6_TILES.get((c, m, k), [None])[0]
        if tile is not None and tuple(tile) != default or default is None:
            raise ValueError(f"v6h is instantiated for v6's default tile of each layer shape {dict((s, t[0]) for s, t in V6_TILES.items())}, "
                             f"not (C, M, K) = {(c, m, k)} with tile {tile}")
        (step,), y32 = plan_image(version, impl, xp, x, w, stride, padding, max_blocks=max_blocks)
        y = xp.zeros(y32.shape, np.uint16)
        _, w_arg, _, *sizes = step.args
        args = (to_storage(x, storage, xp), w_arg, y, *sizes)
        return [dataclasses.replace(step, kernel=v6h_name(storage, c, m, k, default), args=args)], y
    return plan


def _c1_bytes(n):
    """Napkin bytes of ECE408's C1 at a batch of n (the table's size is the batch of that layer)."""
    return conv_bytes(n, 1, 86, 86, 4, 7, 80, 80)


def _c1_flops(n):
    return conv_flops(n, 1, 4, 7, 80, 80)


def _c1_bytes_16bit(n):
    return storage_bytes(n, 1, 86, 86, 4, 7, 80, 80)


#: the table of versions: label, numba kernel, CUDA C kernel, launch plan, bytes, FLOPs
VERSIONS = (
    Version("v0 blog grid-stride", "conv_v0_seed", "conv_v0_seed", plan_direct, _c1_bytes, _c1_flops),
    Version("v1 direct", "conv_v1_direct", "conv_v1_direct", plan_direct, _c1_bytes, _c1_flops),
    Version("v2 im2col + GEMM", "im2col", "im2col", plan_im2col, _c1_bytes, _c1_flops),
    Version("v3 implicit GEMM", "conv_v3_implicit_gemm", "conv_v3_implicit_gemm", plan_implicit,
            _c1_bytes, _c1_flops),
    Version("v3b implicit GEMM, offset table", "conv_v3b_offset_table", "conv_v3b_offset_table", plan_offsets,
            _c1_bytes, _c1_flops),
    Version("v4 constant weights", "conv_v4_const_weights", "conv_v4_const_weights", plan_const,
            _c1_bytes, _c1_flops),
    Version("v5 tuned", None, v5_name(1, 4, 7, V5_TILES[(1, 4, 7)]), plan_tuned, _c1_bytes, _c1_flops),
    Version("v6 image per block", "conv_v6_image_per_block", v6_name(1, 4, 7, V6_TILES[(1, 4, 7)][0]), plan_image, _c1_bytes,
            _c1_flops),
    Version("v6h FP16 storage", None, v6h_name("fp16", 1, 4, 7, V6_TILES[(1, 4, 7)][0]), plan_image_16bit("fp16"),
            _c1_bytes_16bit, _c1_flops),
    Version("v6h BF16 storage", None, v6h_name("bf16", 1, 4, 7, V6_TILES[(1, 4, 7)][0]), plan_image_16bit("bf16"),
            _c1_bytes_16bit, _c1_flops),
)
#: the versions that run on the emulator (numba)
EMULATED = tuple(v.label for v in VERSIONS if v.numba)


def conv_with(version: str, x, w, launch, stride: int = 1, padding="valid", max_blocks=None, cols=None):
    """The convolution of ``x`` by ``w`` with one version's plan; every launch goes through
    ``launch(kernel, grid, block, *args)`` (the emulator, or a GPU copying arrays back).

    v0/v1 are conv + ReLU (the Waterloo lab report's layer); the others are the plain convolution.
    ``max_blocks`` caps the 1-D grids (v0, v1, im2col) to show a grid-stride loop at work.
    ``cols``: an array that receives the unrolled matrix of v2 (to draw it).
    Returns y (B, M, Ho, Wo) float32.
    """
    from simtlab.versions import find, run_plan

    v = find(VERSIONS, version)
    if v.numba is None:
        raise ValueError(f"{v.label} exists in CUDA C only: it has no numba kernel to emulate")
    x = np.ascontiguousarray(x, np.float32)
    w = np.ascontiguousarray(w, np.float32)
    launches, y = v.launches("numba", np, x, w, stride=stride, padding=padding, max_blocks=max_blocks, cols=cols)
    run_plan(TOPIC, launches, launch)
    return y


# ------------------------------------------------------------------------------------------
# Napkin math (the benchmark's bytes and FLOPs)
# ------------------------------------------------------------------------------------------
def conv_flops(b, c, m, k, ho, wo):
    """One multiply and one add per weight per output."""
    return 2 * b * m * ho * wo * c * k * k


def conv_bytes(b, c, h, w, m, k, ho, wo, itemsize=4):
    """The fewest bytes: the input once, the weights once, the output once."""
    return (b * c * h * w + m * c * k * k + b * m * ho * wo) * itemsize


def storage_bytes(b, c, h, w, m, k, ho, wo, itemsize=2):
    """v6h's fewest bytes: the input and the output once in ``itemsize`` bytes, the weights once
    in float32 (v6h keeps them FP32: M*C*K*K floats, a few hundred bytes)."""
    return (b * c * h * w + b * m * ho * wo) * itemsize + m * c * k * k * 4


def im2col_bytes(b, c, m, k, ho, wo, itemsize=4):
    """What v2 adds on top: the unrolled matrix written once and read once by the GEMM (at least)."""
    return 2 * c * k * k * b * ho * wo * itemsize


def layer_numbers(b, c, h, w, m, k, stride=1, padding="valid"):
    """Per-layer napkin math: output size, FLOPs, fewest bytes, the unrolled matrix's bytes,
    its duplication factor, and the arithmetic intensity (FLOPs per fewest byte)."""
    ho, wo, pad = conv_geometry(h, w, k, stride, padding)
    flops = conv_flops(b, c, m, k, ho, wo)
    nbytes = conv_bytes(b, c, h, w, m, k, ho, wo)
    unrolled = c * k * k * b * ho * wo * 4
    return {"Ho": ho, "Wo": wo, "pad": pad, "flops": flops, "bytes": nbytes,
            "unrolled_bytes": unrolled, "input_bytes": b * c * h * w * 4,
            "duplication": unrolled / (b * c * h * w * 4), "intensity": flops / nbytes}


__all__ = ["TILE", "BLOCK", "LENET_C1", "LENET_C3", "ELECTRODE_CONV1", "ELECTRODE_CONV2",
           "conv_geometry", "conv2d_cpu", "conv2d_float64", "im2col_cpu", "output_sum", "conv_v0_seed",
           "conv_v1_direct", "im2col", "gemm_tiled_nchw", "conv_v3_implicit_gemm",
           "gather_table", "conv_v3b_offset_table", "plan_offsets", "conv_v3_implicit_gemm_nhwc",
           "make_conv_v4_const_weights", "CONST_BYTES", "VERSIONS", "EMULATED", "conv_with", "cdiv",
           "V5_TILES", "v5_name", "V6_TILES", "v6_name", "plan_image", "STORAGES", "v6h_name", "to_storage",
           "from_storage", "storage_error_bound", "plan_image_16bit", "storage_bytes", "make_conv_v6_image_per_block", "v6_shared_bytes", "plan_direct", "plan_im2col", "plan_implicit", "plan_const", "plan_tuned",
           "conv_flops", "conv_bytes", "im2col_bytes", "layer_numbers"]
