"""Chapter 1: first kernels. One thread per element, the grid-stride loop, conv2d + ReLU.

Every kernel here is ordinary numba-cuda: the same function runs on a GPU
(``kernel[grid, block](...)``) and in the emulator (``simtlab.emulate(kernel, grid, block, ...)``).
"""

from __future__ import annotations

import numpy as np
from numba import cuda


# ------------------------------------------------------------------------------------------
# CPU references
# ------------------------------------------------------------------------------------------
def vector_add_cpu(a, b):
    return a + b


def conv2d_relu_cpu(image, filters):
    """Non-overlapping convolution (stride = filter size) followed by ReLU.

    ``image`` (H, W), ``filters`` (F, K, K) -> (F, H // K, W // K). This is the Waterloo lab report's layer:
    a 100x100 image, ten 5x5 filters with stride 5 -> 10x20x20.
    """
    f, k, _ = filters.shape
    h, w = image.shape[0] // k, image.shape[1] // k
    tiles = image[: h * k, : w * k].reshape(h, k, w, k).transpose(0, 2, 1, 3)   # (h, w, k, k)
    out = np.einsum("hwij,fij->fhw", tiles.astype(np.float64), filters.astype(np.float64))
    return np.maximum(out, 0).astype(image.dtype)


# ------------------------------------------------------------------------------------------
# Who am I? Each thread writes its own ids, so a student can see the mapping
# ------------------------------------------------------------------------------------------
@cuda.jit
def whoami_2d(block_id, thread_id, warp_id):
    """Write, for each element (row y, column x), the block, thread and warp that owns it."""
    x, y = cuda.grid(2)
    if y < block_id.shape[0] and x < block_id.shape[1]:
        block_id[y, x] = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x
        linear = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x   # linear thread id
        thread_id[y, x] = linear
        warp_id[y, x] = linear // 32


# ------------------------------------------------------------------------------------------
# Vector add
# ------------------------------------------------------------------------------------------
# v1: one thread per element; the grid must cover the array (ceil-div), extra threads idle
@cuda.jit
def vector_add_v1(a, b, out):
    i = cuda.grid(1)                   # blockIdx.x * blockDim.x + threadIdx.x
    if i < out.size:                   # the last block may stick out past the array
        out[i] = a[i] + b[i]


# v2: grid-stride loop; any grid size covers any n, so launch ~4 blocks per SM and reuse threads
@cuda.jit
def vector_add_v2(a, b, out):
    start = cuda.grid(1)
    stride = cuda.gridsize(1)          # gridDim.x * blockDim.x: every thread of the grid
    for i in range(start, out.size, stride):
        out[i] = a[i] + b[i]


def vector_add_bytes(n, itemsize=4):
    """Bytes moved: read a and b, write out."""
    return 3 * n * itemsize


def vector_add_flops(n):
    return n


# ------------------------------------------------------------------------------------------
# conv2d + ReLU (the lab seed's first kernel), float32
# ------------------------------------------------------------------------------------------
# v1: grid-stride loop over the flattened (F, H', W') output; each thread computes whole outputs
@cuda.jit
def conv2d_relu_v1(image, filters, out):
    k = filters.shape[1]
    out_h, out_w = out.shape[1], out.shape[2]
    per_filter = out_h * out_w
    start = cuda.grid(1)
    stride = cuda.gridsize(1)          # NOT blockDim.x * blockDim.x, as the Waterloo lab report's text says
    for o in range(start, out.size, stride):
        f = o // per_filter            # which filter
        r = (o % per_filter) // out_w  # output row and column inside that filter's map
        c = o % out_w
        acc = 0.0
        for i in range(k):
            for j in range(k):
                acc += image[r * k + i, c * k + j] * filters[f, i, j]
        out[f, r, c] = acc if acc > 0.0 else 0.0   # ReLU


def conv2d_relu_bytes(image_shape, filters_shape, itemsize=4):
    """Bytes moved if every input is read once: image + filters + output."""
    f, k, _ = filters_shape
    out = f * (image_shape[0] // k) * (image_shape[1] // k)
    return (image_shape[0] * image_shape[1] + f * k * k + out) * itemsize


def conv2d_relu_flops(image_shape, filters_shape):
    f, k, _ = filters_shape
    out = f * (image_shape[0] // k) * (image_shape[1] // k)
    return 2 * k * k * out
