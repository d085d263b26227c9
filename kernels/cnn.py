"""Chapter 8: a whole LeNet-5-like network on Fashion-MNIST, every layer a course kernel.

The network (28 x 28 grey images, NCHW, float32):

    conv1  1 -> 6 maps, 5x5, + bias, ReLU     (B, 6, 24, 24)
    pool1  2x2 max                            (B, 6, 12, 12)
    conv2  6 -> 16 maps, 5x5, + bias, ReLU    (B, 16, 8, 8)
    pool2  2x2 max                            (B, 16, 4, 4)  = (B, 256) flattened
    fc1    256 -> 64, + bias, ReLU            (B, 64)
    fc2    64 -> 10, + bias                   (B, 10) logits
    softmax + argmax                          (B, 10) probabilities, (B,) classes

ECE408's modified LeNet-5 has the same shape of network (two convolutions with pooling, then
fully connected layers) on 86 x 86 images; this one keeps Fashion-MNIST's own 28 x 28.

:func:`forward_cpu` is the NumPy reference of every layer. The kernels, each with a CUDA C
twin in kernels/cnn.cu:

- convolution, three ways: chapter 7's implicit GEMM with bias + ReLU in its store
  (``conv_bias_relu``), chapter 7's im2col + a tiled GEMM with the same store
  (``gemm_bias_relu_nchw``), and a direct convolution that also max-pools before it stores
  (``conv_bias_relu_pool``: the pooling layer disappears); in CUDA C also that kernel's threads
  unfused (``conv_bias_relu_direct`` + ``maxpool2``, conv="direct"): what the fusion alone saves;
- ``maxpool2``: 2x2 max-pooling, one thread per output;
- fully connected: a tiled GEMM with bias and ReLU in the store (``dense_bias_act``), and for
  batch 1 the lab seed's vector-matrix product, one block per output reducing in shared
  memory (``vecmat_block_reduce``);
- ``softmax_argmax``: one thread per image;
- CUDA C only (numba has no tensor-core API): the convolution as an implicit GEMM on the tensor
  cores (WMMA, TF32 or BF16 inputs, FP32 accumulate, bias + ReLU in the epilogue:
  ``conv_wmma_tf32_bias_relu``, ``conv_wmma_bf16_bias_relu``; :func:`tc_conv_launch`), checked
  within :func:`tc_conv_bound` and timed against cuDNN in the same precision
  (``simtlab.gpubench.cnn.tensor_core_rows``).

:func:`network_plan` lists the launches of one forward pass (per layer); the emulator, the
GPU tests and benchmarks/gpu_cnn.py all run that plan.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32

from simtlab.kernels.conv import conv2d_cpu, conv_geometry, im2col  # noqa: F401  (im2col: run_plan finds it here)
from simtlab.simt import cdiv
from simtlab.versions import Launch, run_plan

TOPIC = "cnn"
TILE = 16                 # the GEMM tiles: TILE x TILE threads, one output each
TILE_PAD = TILE + 1       # a transposed tile's row: one spare column spreads its columns over the banks
BLOCK = 128               # threads per block of the 1-D kernels
REDUCE_BLOCK = 128        # threads of one vector-matrix block (a power of two: the tree halves it)
POOL = 2

#: the layers: name -> kind and shape; the input is (B, 1, 28, 28)
INPUT_SHAPE = (1, 28, 28)
LAYERS = (
    ("conv1", "conv", dict(C=1, M=6, K=5)),
    ("pool1", "pool", dict()),
    ("conv2", "conv", dict(C=6, M=16, K=5)),
    ("pool2", "pool", dict()),
    ("fc1", "fc", dict(N=64, K=256, relu=True)),
    ("fc2", "fc", dict(N=10, K=64, relu=False)),
    ("softmax", "softmax", dict(N=10)),
)
PARAM_SHAPES = {"conv1_w": (6, 1, 5, 5), "conv1_b": (6,), "conv2_w": (16, 6, 5, 5), "conv2_b": (16,),
                "fc1_w": (64, 256), "fc1_b": (64,), "fc2_w": (10, 64), "fc2_b": (10,)}
CONV_PATHS = ("implicit", "im2col", "fused", "direct")
#: the convolution paths with a numba twin ("direct" is CUDA C only: chapter 8's fusion ablation)
NUMBA_CONV_PATHS = ("implicit", "im2col", "fused")
FC_PATHS = ("gemm", "vecmat")


def check_params(params: dict) -> dict:
    """The parameters as contiguous float32, or a ValueError naming the wrong one."""
    out = {}
    for name, shape in PARAM_SHAPES.items():
        if name not in params:
            raise ValueError(f"the parameters lack {name!r}: need {', '.join(PARAM_SHAPES)}")
        a = np.ascontiguousarray(params[name], np.float32) if isinstance(params[name], np.ndarray) else params[name]
        if tuple(a.shape) != shape:
            raise ValueError(f"{name} must have shape {shape}, got {tuple(a.shape)}")
        out[name] = a
    return out


def init_params(seed: int = 0) -> dict:
    """Random parameters (He initialisation): what training starts from, and what tests use."""
    r = np.random.default_rng(seed)
    params = {}
    for name, shape in PARAM_SHAPES.items():
        if name.endswith("_b"):
            params[name] = np.zeros(shape, np.float32)
        else:
            fan_in = int(np.prod(shape[1:]))
            params[name] = (r.standard_normal(shape) * math.sqrt(2.0 / fan_in)).astype(np.float32)
    return params


# ------------------------------------------------------------------------------------------
# The NumPy reference: every layer, float64 sums rounded once per layer to float32
# ------------------------------------------------------------------------------------------
def maxpool_cpu(x, pool: int = POOL):
    """pool x pool max over each map (the last odd row/column, if any, is dropped)."""
    b, c, h, w = x.shape
    ho, wo = h // pool, w // pool
    return x[:, :, :ho * pool, :wo * pool].reshape(b, c, ho, pool, wo, pool).max(axis=(3, 5))


def dense_cpu(x, w, bias, relu: bool):
    z = np.asarray(x, np.float64) @ np.asarray(w, np.float64).T + np.asarray(bias, np.float64)
    return (np.maximum(z, 0.0) if relu else z).astype(np.float32)


def softmax_cpu(z):
    z = np.asarray(z, np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def forward_cpu(params: dict, x) -> dict:
    """Every layer's output for input ``x`` (B, 1, 28, 28): a dict layer name -> array, plus
    "labels" (the argmax)."""
    p = check_params(params)
    x = np.asarray(x, np.float32)
    out = {}
    h = conv2d_cpu(x, p["conv1_w"]) + p["conv1_b"][None, :, None, None]
    out["conv1"] = np.maximum(h, 0).astype(np.float32)
    out["pool1"] = maxpool_cpu(out["conv1"])
    h = conv2d_cpu(out["pool1"], p["conv2_w"]) + p["conv2_b"][None, :, None, None]
    out["conv2"] = np.maximum(h, 0).astype(np.float32)
    out["pool2"] = maxpool_cpu(out["conv2"])
    flat = out["pool2"].reshape(len(x), -1)
    out["fc1"] = dense_cpu(flat, p["fc1_w"], p["fc1_b"], relu=True)
    out["fc2"] = dense_cpu(out["fc1"], p["fc2_w"], p["fc2_b"], relu=False)
    out["softmax"] = softmax_cpu(out["fc2"])
    out["labels"] = out["fc2"].argmax(axis=1)
    return out


# ------------------------------------------------------------------------------------------
# Convolution + bias + ReLU
# ------------------------------------------------------------------------------------------
# conv, implicit GEMM: chapter 7's v3 (tiles of the unrolled input gathered into shared
#   memory), with bias + ReLU applied in registers before the one store, so the activation
#   never makes its own trip through DRAM
@cuda.jit
def conv_bias_relu(x, w, bias, y):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    mo, ho, wo = y.shape[1], y.shape[2], y.shape[3]
    k = w.shape[2]
    kk = k * k
    depth = x.shape[1] * kk
    hw = ho * wo
    n_cols = y.shape[0] * hw
    n = cuda.blockIdx.x * TILE + tx                      # output column (b, oy, ox)
    m = cuda.blockIdx.y * TILE + ty                      # output filter
    nl = cuda.blockIdx.x * TILE + ty                     # the column this thread gathers
    b, pix = nl // hw, nl % hw
    oy, ox = pix // wo, pix % wo
    acc = float32(0.0)
    for t in range((depth + TILE - 1) // TILE):
        r = t * TILE + tx
        if m < mo and r < depth:
            sa[ty, tx] = w[m, r // kk, (r % kk) // k, r % k]
        else:
            sa[ty, tx] = 0.0
        v = float32(0.0)
        if r < depth and nl < n_cols:
            c, pq = r // kk, r % kk
            v = x[b, c, oy + pq // k, ox + pq % k]       # 'valid', stride 1: always inside x
        sb[tx, ty] = v
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if m < mo and n < n_cols:
        acc += bias[m]                                   # the epilogue: bias, ReLU, one store
        y[n // hw, m, (n % hw) // wo, n % wo] = acc if acc > 0 else float32(0.0)


# conv, im2col + GEMM: chapter 7's tiled GEMM of the weights (M x CKK) by the unrolled input,
#   stored straight into NCHW with the same bias + ReLU epilogue
@cuda.jit
def gemm_bias_relu_nchw(w, cols, bias, y):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    n = cuda.blockIdx.x * TILE + tx
    m = cuda.blockIdx.y * TILE + ty
    depth = w.shape[1]
    acc = float32(0.0)
    for t in range((depth + TILE - 1) // TILE):
        k0 = t * TILE
        sa[ty, tx] = w[m, k0 + tx] if m < w.shape[0] and k0 + tx < depth else 0.0
        sb[ty, tx] = cols[k0 + ty, n] if k0 + ty < depth and n < cols.shape[1] else 0.0
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    hw = y.shape[2]                                      # y is (B, M, Ho*Wo)
    if m < w.shape[0] and n < cols.shape[1]:
        acc += bias[m]
        y[n // hw, m, n % hw] = acc if acc > 0 else float32(0.0)


# conv + pool fused: one thread per POOLED output computes the 2x2 convolution outputs under it
#   and stores only their max (+ bias, ReLU: both commute with max), so the full-size map is
#   never written and the pooling launch disappears; blockIdx.y is the filter, so every lane of
#   a block reads the same weight at the same time (one broadcast)
@cuda.jit
def conv_bias_relu_pool(x, w, bias, y):
    m = cuda.blockIdx.y
    po, qo = y.shape[2], y.shape[3]
    per_image = po * qo
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x    # (b, py, px) of filter m
    if i < y.shape[0] * per_image:
        b, pix = i // per_image, i % per_image
        oy, ox = 2 * (pix // qo), 2 * (pix % qo)                # top-left conv output of the window
        k = w.shape[2]
        a00 = float32(0.0)
        a01 = float32(0.0)
        a10 = float32(0.0)
        a11 = float32(0.0)
        for c in range(x.shape[1]):
            for p in range(k):
                for q in range(k):
                    wv = w[m, c, p, q]
                    a00 += x[b, c, oy + p, ox + q] * wv
                    a01 += x[b, c, oy + p, ox + q + 1] * wv
                    a10 += x[b, c, oy + p + 1, ox + q] * wv
                    a11 += x[b, c, oy + p + 1, ox + q + 1] * wv
        best = max(max(a00, a01), max(a10, a11)) + bias[m]
        y[b, m, pix // qo, pix % qo] = best if best > 0 else float32(0.0)


# ------------------------------------------------------------------------------------------
# Max-pooling
# ------------------------------------------------------------------------------------------
# pool: one thread per output, consecutive threads on consecutive outputs of a row; each reads
#   its own 2x2 window (the four reads of a warp cover two input rows, 64 floats each)
@cuda.jit
def maxpool2(x, y):
    i = cuda.grid(1)
    b, c, ho, wo = y.shape
    if i < y.size:
        ox = i % wo
        oy = (i // wo) % ho
        ch = (i // (wo * ho)) % c
        n = i // (wo * ho * c)
        iy, ix = 2 * oy, 2 * ox
        y[n, ch, oy, ox] = max(max(x[n, ch, iy, ix], x[n, ch, iy, ix + 1]),
                               max(x[n, ch, iy + 1, ix], x[n, ch, iy + 1, ix + 1]))


# ------------------------------------------------------------------------------------------
# Fully connected layers
# ------------------------------------------------------------------------------------------
# fc, tiled GEMM: y (B x N) = x (B x K) @ w.T (K x N): TILE x TILE tiles of x and of w staged
#   in shared memory (chapter 6's v3), bias + optional ReLU in the store
@cuda.jit
def dense_bias_act(x, w, bias, y, relu):
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE_PAD), float32)   # w's tile, stored transposed
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    col = cuda.blockIdx.x * TILE + tx                    # output neuron
    row = cuda.blockIdx.y * TILE + ty                    # image
    depth = x.shape[1]
    n_out = w.shape[0]
    wrow = cuda.blockIdx.x * TILE + ty                   # the neuron whose weights this thread loads
    acc = float32(0.0)
    for t in range((depth + TILE - 1) // TILE):
        k0 = t * TILE
        sa[ty, tx] = x[row, k0 + tx] if row < x.shape[0] and k0 + tx < depth else 0.0
        sb[tx, ty] = w[wrow, k0 + tx] if wrow < n_out and k0 + tx < depth else 0.0   # reads along w's rows
        cuda.syncthreads()
        for j in range(TILE):
            acc += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if row < y.shape[0] and col < n_out:
        acc += bias[col]
        if relu and acc < 0:
            acc = float32(0.0)
        y[row, col] = acc


# fc, batch 1: the lab seed's vector-matrix product: one block per output neuron, its threads
#   stride over K (consecutive threads, consecutive weights: coalesced), then halve a shared
#   array log2(blockDim) times; thread 0 adds the bias and stores
@cuda.jit
def vecmat_block_reduce(x, w, bias, y, relu):
    partial = cuda.shared.array(REDUCE_BLOCK, float32)
    t = cuda.threadIdx.x
    n = cuda.blockIdx.x
    acc = float32(0.0)
    for k in range(t, x.shape[1], cuda.blockDim.x):
        acc += x[0, k] * w[n, k]
    partial[t] = acc
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 0:
        if t < step:
            partial[t] += partial[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        s = partial[0] + bias[n]
        if relu and s < 0:
            s = float32(0.0)
        y[0, n] = s


# ------------------------------------------------------------------------------------------
# Softmax and argmax
# ------------------------------------------------------------------------------------------
# softmax: one thread per image (10 classes): subtract the max before exp so no exp overflows
@cuda.jit
def softmax_argmax(z, probs, labels):
    i = cuda.grid(1)
    if i < z.shape[0]:
        best = z[i, 0]
        arg = 0
        for j in range(1, z.shape[1]):
            if z[i, j] > best:
                best = z[i, j]
                arg = j
        total = float32(0.0)
        for j in range(z.shape[1]):
            e = math.exp(z[i, j] - best)
            probs[i, j] = e
            total += e
        for j in range(z.shape[1]):
            probs[i, j] /= total
        labels[i] = arg


# ------------------------------------------------------------------------------------------
# The forward pass: one plan, per layer
# ------------------------------------------------------------------------------------------
def _i32(*v):
    return tuple(np.int32(a) for a in v)


def pool_launch(x, y):
    """The 2x2 max-pool of ``x`` into ``y`` (B, C, Ho, Wo): one thread per output."""
    return Launch("maxpool2", cdiv(int(y.size), BLOCK), BLOCK, (x, y, *_i32(*y.shape)))


def softmax_launch(z, probs, labels):
    """Softmax and argmax of each row of ``z`` (B, N): one thread per image."""
    b, n = map(int, z.shape)
    return Launch("softmax_argmax", cdiv(b, BLOCK), BLOCK, (z, probs, labels, *_i32(b, n)))


def conv_launches(xp, impl, x, w, bias, y, path):
    b, c, h, wd = map(int, x.shape)
    m, _, k, _ = map(int, w.shape)
    ho, wo = h - k + 1, wd - k + 1
    if path == "implicit":
        return [Launch("conv_bias_relu", (cdiv(b * ho * wo, TILE), cdiv(m, TILE)), (TILE, TILE),
                       (x, w, bias, y, *_i32(b, c, h, wd, m, k, ho, wo)))]
    if path == "fused":
        po, qo = ho // 2, wo // 2
        return [Launch("conv_bias_relu_pool", (cdiv(b * po * qo, BLOCK), m), BLOCK,
                       (x, w, bias, y, *_i32(b, c, h, wd, m, k, po, qo)))]
    if path == "direct":
        # the fused kernel's threads, unfused: each stores its 2x2 window of the conv map
        if impl != "cuda-c" or (c, k) not in ((1, 5), (6, 5)) or ho % 2 or wo % 2:
            raise ValueError("the direct unfused path is CUDA C only (kernels/cnn.cu conv_bias_relu_direct), "
                             "for the network's layers (C = 1 or 6, K = 5, even outputs)")
        return [Launch("conv_bias_relu_direct", (cdiv(b * (ho // 2) * (wo // 2), BLOCK), m), BLOCK,
                       (x, w, bias, y, *_i32(b, c, h, wd, m, k, ho, wo)))]
    if impl == "cuda-c":
        raise ValueError("the im2col path is written in numba only (chapter 7's CUDA C im2col lives in "
                         "kernels/conv.cu): use conv='implicit' or 'fused' with impl='cuda-c'")
    depth, n_cols = c * k * k, b * ho * wo
    cols = xp.empty((depth, n_cols), np.float32)
    unroll = Launch("im2col", cdiv(depth * n_cols, BLOCK), BLOCK, (x, cols, k, wo, 1, 0))
    gemm = Launch("gemm_bias_relu_nchw", (cdiv(n_cols, TILE), cdiv(m, TILE)), (TILE, TILE),
                  (w.reshape(m, depth), cols, bias, y.reshape(b, m, ho * wo)))
    return [unroll, gemm]


def fc_launches(impl, x, w, bias, y, relu, path):
    b, k = map(int, x.shape)
    n = int(w.shape[0])
    # the ReLU flag: a plain int for numba (its NumPy-int sizes are CUDA C's only), an int for CUDA C
    flag = np.int32(relu) if impl == "cuda-c" else int(relu)
    if path == "vecmat":
        if b != 1:
            raise ValueError(f"the vector-matrix product computes one image (batch 1), got a batch of {b}: "
                             "use fc='gemm' for larger batches")
        return [Launch("vecmat_block_reduce", n, REDUCE_BLOCK, (x, w, bias, y, flag, *_i32(k, n)))]
    return [Launch("dense_bias_act", (cdiv(n, TILE), cdiv(b, TILE)), (TILE, TILE),
                   (x, w, bias, y, flag, *_i32(b, k, n)))]


def network_plan(params: dict, x, xp=np, impl: str = "numba", conv: str = "implicit", fc: str = "gemm"):
    """The launches of one forward pass: ``(steps, out)``; ``steps`` is a list of
    ``(layer name, [Launch, ...])`` and ``out`` maps each layer to its output array (allocated
    with ``xp``). ``conv``: "implicit", "im2col", "fused" (conv + pool in one kernel: the pool
    layers have no launches) or "direct" (CUDA C: the fused kernel's threads storing the conv
    map, then the pool); ``fc``: "gemm" or "vecmat" (batch 1 only)."""
    if conv not in CONV_PATHS:
        raise ValueError(f"conv must be one of {CONV_PATHS}, not {conv!r}")
    if fc not in FC_PATHS:
        raise ValueError(f"fc must be one of {FC_PATHS}, not {fc!r}")
    p = check_params(params)
    if tuple(x.shape[1:]) != INPUT_SHAPE:
        raise ValueError(f"the input must be (B, 1, 28, 28), got {tuple(x.shape)}: "
                         "simtlab.cnn_data.to_input turns uint8 images into it")
    b = int(x.shape[0])
    f32 = np.float32
    out = {"conv1": xp.empty((b, 6, 24, 24), f32), "pool1": xp.empty((b, 6, 12, 12), f32),
           "conv2": xp.empty((b, 16, 8, 8), f32), "pool2": xp.empty((b, 16, 4, 4), f32),
           "fc1": xp.empty((b, 64), f32), "fc2": xp.empty((b, 10), f32),
           "softmax": xp.empty((b, 10), f32), "labels": xp.empty(b, np.int32)}
    steps = []
    if conv == "fused":
        del out["conv1"], out["conv2"]
        steps.append(("conv1+pool1", conv_launches(xp, impl, x, p["conv1_w"], p["conv1_b"], out["pool1"], conv)))
        steps.append(("conv2+pool2", conv_launches(xp, impl, out["pool1"], p["conv2_w"], p["conv2_b"],
                                                    out["pool2"], conv)))
    else:
        for layer, src, dst in (("1", x, "pool1"), ("2", out["pool1"], "pool2")):
            conv_out = out["conv" + layer]
            steps.append(("conv" + layer, conv_launches(xp, impl, src, p[f"conv{layer}_w"], p[f"conv{layer}_b"],
                                                         conv_out, conv)))
            steps.append(("pool" + layer, [pool_launch(conv_out, out[dst])]))
    flat = out["pool2"].reshape(b, 256)
    steps.append(("fc1", fc_launches(impl, flat, p["fc1_w"], p["fc1_b"], out["fc1"], True, fc)))
    steps.append(("fc2", fc_launches(impl, out["fc1"], p["fc2_w"], p["fc2_b"], out["fc2"], False, fc)))
    steps.append(("softmax", [softmax_launch(out["fc2"], out["softmax"], out["labels"])]))
    return steps, out


def forward_with(params: dict, x, launch, conv: str = "implicit", fc: str = "gemm") -> dict:
    """One forward pass with the course's numba kernels, every launch through
    ``launch(kernel, grid, block, *args)`` (``simtlab.emulate``, or numba on a GPU).
    Returns every layer's output (as :func:`forward_cpu`)."""
    x = np.ascontiguousarray(x, np.float32)
    steps, out = network_plan(params, x, np, "numba", conv, fc)
    for _, launches in steps:
        run_plan(TOPIC, launches, launch)
    return out


def emulate_forward(params: dict, x, conv: str = "implicit", fc: str = "gemm", **options) -> dict:
    """:func:`forward_with` on the emulator (the CPU path of the chapter); ``options`` go to
    ``simtlab.emulate`` (``trace=False`` by default: the whole network records no accesses)."""
    from simtlab import emulate

    options.setdefault("trace", False)
    return forward_with(params, x, lambda k, g, b, *a, **kw: emulate(k, g, b, *a, **kw, **options), conv, fc)


def bytes_written(params: dict, x, conv: str = "implicit", fc: str = "gemm") -> dict:
    """Bytes each step of one forward pass writes to global memory, counted from the emulator's
    trace (every global store's width): step name ("conv1", "pool1", or "conv1+pool1" when
    fused, ...) -> bytes. What fusing saves, measured instead of assumed."""
    from simtlab import emulate

    x = np.ascontiguousarray(x, np.float32)
    steps, _ = network_plan(params, x, np, "numba", conv, fc)
    written = {}
    for name, launches in steps:
        runs = []
        run_plan(TOPIC, launches, lambda k, g, b, *a, **kw: runs.append(emulate(k, g, b, *a, **kw)))
        written[name] = sum(int(r.memory_columns.width[(r.memory_columns.space == 0)
                                                       & (r.memory_columns.kind == 1)].sum()) for r in runs)
    return written


# ------------------------------------------------------------------------------------------
# Tensor-core convolution (CUDA C only: numba has no tensor-core API; chapter 9 says why)
# ------------------------------------------------------------------------------------------
#: kernels/cnn.cu's tensor-core convolutions (implicit GEMM on WMMA, FP32 accumulate, bias +
#: ReLU in the epilogue), by input precision; both read float32 x and w and convert on staging
TC_CONV_KERNELS = {"tf32": "conv_wmma_tf32_bias_relu", "bf16": "conv_wmma_bf16_bias_relu"}
TC_BM, TC_BN, TC_BK, TC_THREADS = 64, 16, 32, 128     # kernels/cnn.cu's TC_BM, TC_BN, TC_BK, 4 warps
#: the k of one WMMA (m16n16k8 TF32, m16n16k16 BF16): the depth is padded to a multiple of it
TC_MMA_K = {"tf32": 8, "bf16": 16}


def tc_conv_launch(precision: str, x, w, bias, y):
    """The launch of the tensor-core convolution of ``x`` (B, C, H, W) by ``w`` (M, C, K, K) into
    ``y`` (B, M, Ho, Wo), bias + ReLU: 4 warps per 64 output pixels x 16 channels."""
    if precision not in TC_CONV_KERNELS:
        raise ValueError(f"precision must be one of {', '.join(TC_CONV_KERNELS)}, not {precision!r}")
    b, c, h, wd = map(int, x.shape)
    m, _, k, _ = map(int, w.shape)
    ho, wo = h - k + 1, wd - k + 1
    return Launch(TC_CONV_KERNELS[precision], (cdiv(b * ho * wo, TC_BM), cdiv(m, TC_BN)), TC_THREADS,
                  (x, w, bias, y, *_i32(b, c, h, wd, m, k, ho, wo)))


def tc_conv_padding(c: int, m: int, k: int, precision: str) -> dict:
    """The GEMM the tensor cores see for one convolution layer: N = output channels padded to the
    tile's 16, depth C*K*K padded to the WMMA's k, and the share of their multiplies that is not
    padding (the napkin math of kernels/cnn.cu's tensor-core section)."""
    depth = c * k * k
    n_pad = cdiv(m, TC_BN) * TC_BN
    k_pad = cdiv(depth, TC_MMA_K[precision]) * TC_MMA_K[precision]
    return {"n": m, "n_padded": n_pad, "depth": depth, "depth_padded": k_pad,
            "useful_fraction": m * depth / (n_pad * k_pad)}


def tc_conv_reference(x, w, bias, precision: str | None = None):
    """relu(conv(x, w) + bias) in float64, not rounded; with ``precision``, of the inputs rounded
    as the kernel stages them (TF32 to nearest, ties away: ``cvt.rna``; BF16 to nearest even)."""
    from .tensor_cores import round_to

    if precision is not None:
        x, w = round_to(x, precision, tf32="nearest"), round_to(w, precision, tf32="nearest")
    bias = np.asarray(bias, np.float64)[None, :, None, None]
    return np.maximum(conv2d_cpu_f64(x, w) + bias, 0.0)


def tc_conv_bound(x, w, bias, precision: str, *, inputs_rounded: bool = False):
    """Per output, the most a correct tensor-core convolution can differ from
    :func:`tc_conv_reference` (``inputs_rounded``: the one of the rounded inputs). With
    S = sum |x||w| over the output's window and S~ the same of the rounded inputs (the measure of
    kernels/tensor_cores.py's bounds):

    - the inputs rounded on staging (TF32: 10 mantissa bits, ``cvt.rna``; BF16: 7, to nearest
      even): each factor moves by up to u = 2^-10 (the TF32 bound is truncation's, rounding to
      nearest halves it) / 2^-8 of itself, a product by (2u + u^2) |x||w|: (2u + u^2) S
      (``source_tolerance`` less its accumulation); none against the rounded inputs' reference;
    - the tensor core's FP32 accumulation of the exact products, one ulp (it truncates) per
      addition: depth 2^-23 S~ (``tolerance("bf16", depth)``: inputs taken as exact);
    - the kernel's bias add, half an ulp of |sum| + |bias|: 2^-23 (S~ + |bias|) with room for
      the sum's own error. ReLU moves no error up (1-Lipschitz).

    Against the rounded inputs' reference the bound is the accumulation's alone (about depth
    2^-23 S): a missing depth column or channel (a wrong gather, a skipped k step) costs a whole
    term |x||w|, far above it, and so does a kernel that skipped the rounding (about 2^-9 S in
    BF16). Against the float32 inputs' reference BF16's input rounding allows up to 2^-7 S,
    more than one term of conv2's 150: that check alone would not see a dropped term."""
    from .tensor_cores import round_to, source_tolerance, tolerance

    if precision not in TC_CONV_KERNELS:
        raise ValueError(f"precision must be one of {', '.join(TC_CONV_KERNELS)}, not {precision!r}")
    depth = int(np.prod(w.shape[1:]))
    x_r, w_r = round_to(x, precision, tf32="nearest"), round_to(w, precision, tf32="nearest")
    rounded_scale = conv2d_cpu_f64(np.abs(x_r), np.abs(w_r))
    accumulation = tolerance("bf16", depth)
    bound = accumulation * rounded_scale + 2.0 ** -23 * (rounded_scale + np.abs(np.asarray(bias, np.float64))[None, :, None, None])
    if not inputs_rounded:
        scale = conv2d_cpu_f64(np.abs(np.asarray(x, np.float64)), np.abs(np.asarray(w, np.float64)))
        bound = bound + (source_tolerance(precision, depth) - accumulation) * scale
    return bound


def conv2d_cpu_f64(x, w):
    """'valid' convolution in float64, not rounded (the scale of :func:`tc_conv_bound`)."""
    k = w.shape[2]
    windows = np.lib.stride_tricks.sliding_window_view(np.asarray(x, np.float64), (k, k), axis=(2, 3))
    return np.einsum("bchwpq,mcpq->bmhw", windows, np.asarray(w, np.float64), optimize=True)


# ------------------------------------------------------------------------------------------
# Napkin math: per layer, for a batch of B
# ------------------------------------------------------------------------------------------
def layer_table(batch: int = 1) -> list[dict]:
    """Per layer: output shape, parameters, FLOPs (multiply + add = 2), and the fewest bytes
    (input, weights and output crossing DRAM once, float32)."""
    rows = []
    c, h, w = INPUT_SHAPE
    for name, kind, s in LAYERS:
        in_elems = batch * c * h * w
        if kind == "conv":
            ho, wo, _ = conv_geometry(h, w, s["K"])
            params = s["M"] * s["C"] * s["K"] ** 2 + s["M"]
            flops = 2 * batch * s["M"] * ho * wo * s["C"] * s["K"] ** 2
            c, h, w = s["M"], ho, wo
        elif kind == "pool":
            h, w = h // POOL, w // POOL
            params, flops = 0, batch * c * h * w * (POOL * POOL - 1)       # 3 comparisons per output
        elif kind == "fc":
            params = s["N"] * s["K"] + s["N"]
            flops = 2 * batch * s["N"] * s["K"]
            c, h, w = s["N"], 1, 1
        else:
            params, flops = 0, batch * c * 4                               # max, subtract, exp, divide
        out_shape = (batch, c, h, w) if kind in ("conv", "pool") else (batch, c)
        out_elems = int(np.prod(out_shape))
        rows.append({"layer": name, "kind": kind, "out_shape": out_shape, "params": params, "flops": flops,
                     "bytes": 4 * (in_elems + params + out_elems)})
    return rows


__all__ = ["TOPIC", "TILE", "BLOCK", "REDUCE_BLOCK", "LAYERS", "PARAM_SHAPES", "INPUT_SHAPE", "CONV_PATHS", "NUMBA_CONV_PATHS",
           "FC_PATHS", "check_params", "init_params", "maxpool_cpu", "dense_cpu", "softmax_cpu", "forward_cpu",
           "conv_bias_relu", "gemm_bias_relu_nchw", "conv_bias_relu_pool", "maxpool2", "dense_bias_act",
           "vecmat_block_reduce", "softmax_argmax", "network_plan", "forward_with", "emulate_forward",
           "layer_table", "bytes_written", "TC_CONV_KERNELS", "tc_conv_launch", "tc_conv_padding", "tc_conv_bound",
           "tc_conv_reference"]
