"""2-D filter of one image: one channel, a K x K filter, "valid" output. The emulator
benchmark's convolution (its shared-memory version); chapter 7's convolutions with batches and
channels live in ``conv.py``.

Output-stationary: one thread per output element, which sums its K x K window of the image
times the filter. ``out`` has shape ``(H - K + 1, W - K + 1)``.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float32

K = 5                        # filter width and height
TILE = 16                    # a block computes a TILE x TILE patch of the output
HALO = TILE + K - 1          # ... from a HALO x HALO patch of the image


def conv2d_cpu(image, filt):
    """The reference in float64, rounded once to float32."""
    image = image.astype(np.float64)
    k = filt.shape[0]
    h, w = image.shape[0] - k + 1, image.shape[1] - k + 1
    out = np.zeros((h, w))
    for u in range(k):
        for v in range(k):
            out += image[u:u + h, v:v + w] * filt[u, v]
    return out.astype(np.float32)


# v1: each thread reads its K x K window straight from global memory: every image value is
#   read by up to K*K threads
@cuda.jit
def conv2d_v1_global(image, filt, out):
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        acc = float32(0.0)
        for u in range(K):
            for v in range(K):
                acc += image[row + u, col + v] * filt[u, v]
        out[row, col] = acc


# v2: the block first copies its HALO x HALO image patch into shared memory (each value read
#   once from global memory), then every window is read from shared memory
@cuda.jit
def conv2d_v2_shared(image, filt, out):
    patch = cuda.shared.array((HALO, HALO), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row0 = cuda.blockIdx.y * TILE
    col0 = cuda.blockIdx.x * TILE
    # HALO * HALO = 400 cells for TILE * TILE = 256 threads: a block-stride loop over the cells
    for cell in range(ty * TILE + tx, HALO * HALO, TILE * TILE):
        r = row0 + cell // HALO
        c = col0 + cell % HALO
        inside = r < image.shape[0] and c < image.shape[1]
        patch[cell // HALO, cell % HALO] = image[r, c] if inside else float32(0.0)
    cuda.syncthreads()
    row, col = row0 + ty, col0 + tx
    if row < out.shape[0] and col < out.shape[1]:
        acc = float32(0.0)
        for u in range(K):
            for v in range(K):
                acc += patch[ty + u, tx + v] * filt[u, v]
        out[row, col] = acc


def conv2d_flops(image_shape, k=K):
    h, w = image_shape[0] - k + 1, image_shape[1] - k + 1
    return 2 * h * w * k * k


def conv2d_bytes(image_shape, k=K, itemsize=4):
    """Bytes if the image, the filter and the output each cross memory once."""
    h, w = image_shape[0] - k + 1, image_shape[1] - k + 1
    return (image_shape[0] * image_shape[1] + k * k + h * w) * itemsize
