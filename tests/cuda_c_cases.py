"""CUDA C kernels that several test files run on the PTX engine, and the table of every kernel
of ``kernels/*.cu`` with its launches, inputs and NumPy reference (``CASES``).

``CASES`` is what both the CPU test (tests/test_ptx_course_kernels.py: the PTX engine against
NumPy) and the GPU test (tests/test_ptx_engine_gpu.py: the PTX engine against the GPU, bit for
bit, on the same PTX) run, so no case is written twice. A case's ``plan(xp, *inputs)`` gives
``(launches, outputs)``: ``simtlab.versions.Launch`` steps (kernel names of
``kernels/<topic>.cu``, arrays of ``xp``: NumPy for the engine, CuPy for the GPU) and the arrays
to compare, by name. Most cases are a course version's own plan; the others (kernels no
version table launches) build their launch here, from the kernel modules' constants.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

from simtlab.emulator.ptx.tma import TensorMap
from simtlab.versions import Launch, find
from simtlab.simt import cdiv

#: a block sum with a divergent loop and barriers: every tab has something to show
BLOCK_SUM = r"""
extern "C" __global__ void block_sum(const int* x, int* partial, int n) {
    __shared__ int s[128];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? x[i] : 0;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = s[0];
}
"""

#: the two sizes of every case: small on the CPU (CI, 2 cores), larger on the GPU machine,
#: where the PTX engine runs the same launches on its CPU for the comparison
CPU, GPU = "cpu", "gpu"


@dataclass(frozen=True)
class Case:
    """One launch plan over kernels of ``kernels/<topic>.cu``."""

    name: str                                  # the test id: "<topic>/<what>"
    topic: str
    kernels: tuple                             # the kernels its launches run
    inputs: Callable                           # (rng, CPU or GPU) -> tuple of NumPy arrays
    plan: Callable                             # (xp, *inputs) -> (launches, {name: array})
    check: Callable                            # ({name: NumPy array}, *inputs): asserts the reference
    # float atomics: {output: bound(*inputs)}, the most two orders of the same atomic adds can
    # differ by (the GPU's order is not the engine's); every other output is compared bit for bit
    atomic_bounds: dict | None = None
    # outputs computed through an .approx instruction (ex2 of expf): the engine rounds the exact
    # value, the GPU's unit is within the PTX ISA's bound (ulps, see APPROX_ULPS), not bit-exact
    approx: tuple = ()
    # tensor-core outputs: {output: bound(*inputs)}, per element, the most the GPU's tensor cores
    # (their own internal precision) and the engine (exact products, one float32 rounding per
    # MMA instruction) can differ by; see tensor_core_bound
    tensor_core_bound: dict | None = None
    xfail: str | None = None                   # why the engine cannot run it yet (strict xfail)
    gpu_skip: str | None = None                # why the GPU comparison has nothing to compare

    def seed(self) -> int:
        return zlib.crc32(self.name.encode())


#: ex2.approx.ftz.f32 is within 2 ulp of 2^x (PTX ISA), the engine's within 0.5 ulp: 3 ulp
#: apart at most per exp; softmax adds ten of them and divides (each exp's error reaches a
#: probability once through its numerator and once through the sum), the activations divide
#: once: 8 ulp covers both with room for the float32 roundings of the sum
APPROX_ULPS = 8


def _rand(rng, shape):
    """Random float32 in [0.5, 1.5): no zeros, no cancellation."""
    return rng.random(shape, dtype=np.float32) + np.float32(0.5)


def _signed(rng, shape):
    """Random float32 in [-1, 1): activations see both signs."""
    return rng.random(shape, dtype=np.float32) * np.float32(2) - np.float32(1)


def _steps(rng, n):
    """n values from {-2, -1, 1, 2}: every partial sum exact in float32, in any order."""
    return np.array([-2, -1, 1, 2], np.float32)[rng.integers(0, 4, n)]


def _version_plan(version, **options):
    def plan(xp, *inputs):
        launches, out = version.launches("cuda-c", xp, *inputs, **options)
        return launches, {"out": out}
    return plan


def _kernels_of(version, inputs, **options):
    """The kernels a version's plan launches, its own first (plans add second passes:
    vecmat_rows, add_block_prefix, the GEMM of im2col)."""
    launches, _ = version.launches("cuda-c", np, *inputs, **options)
    names = [step.kernel for step in launches]
    return tuple(dict.fromkeys(names))


def _check_with(message_fn):
    def check(outputs, *inputs):
        problem = message_fn(outputs["out"], *inputs)
        assert problem is None, problem
    return check


# --- intro (chapter 1) ------------------------------------------------------------------------------
def _intro_cases():
    from simtlab.kernels import intro as I

    block2d = (16, 8)                                     # 4 warps per block: warp ids vary

    def whoami_inputs(rng, scale):
        return (np.array({CPU: (13, 37), GPU: (301, 257)}[scale], np.int32),)   # rows, cols

    def whoami_plan(xp, shape):
        rows, cols = map(int, shape)
        ids = {k: xp.full((rows, cols), -1, xp.int32) for k in ("block_id", "thread_id", "warp_id")}
        grid = (cdiv(cols, block2d[0]), cdiv(rows, block2d[1]))
        return [Launch("whoami_2d", grid, block2d, (*ids.values(), np.int32(rows), np.int32(cols)))], ids

    def whoami_check(outputs, shape):
        rows, cols = map(int, shape)
        y, x = np.mgrid[:rows, :cols]
        linear = (y % block2d[1]) * block2d[0] + x % block2d[0]
        assert np.array_equal(outputs["block_id"], (y // block2d[1]) * cdiv(cols, block2d[0]) + x // block2d[0])
        assert np.array_equal(outputs["thread_id"], linear)
        assert np.array_equal(outputs["warp_id"], linear // 32)

    def add_inputs(rng, scale):
        n = {CPU: 1001, GPU: 100_003}[scale]
        return _signed(rng, n), _signed(rng, n)

    def add_plan(name, blocks=None):
        def plan(xp, a, b):
            n = int(a.size)
            out = xp.zeros_like(a)
            grid = blocks or cdiv(n, 256)                 # v2: a grid smaller than n, so threads loop
            return [Launch(name, grid, 256, (a, b, out, np.int32(n)))], {"out": out}
        return plan

    def add_check(outputs, a, b):
        assert np.array_equal(outputs["out"], I.vector_add_cpu(a, b))

    def conv_inputs(rng, scale):
        (h, w), f, k = {CPU: ((23, 31), 4, 3), GPU: ((101, 99), 10, 5)}[scale]   # H, W not multiples of K
        return _signed(rng, (h, w)), _signed(rng, (f, k, k))

    def conv_plan(xp, image, filters):
        f, k, _ = map(int, filters.shape)
        out_h, out_w = int(image.shape[0]) // k, int(image.shape[1]) // k
        out = xp.full((f, out_h, out_w), np.nan, xp.float32)
        sizes = map(np.int32, (image.shape[1], k, out_h, out_w, f * out_h * out_w))
        # 3 blocks of 32 threads: fewer threads than outputs, the grid-stride loop covers the rest
        return [Launch("conv2d_relu_v1", 3, 32, (image, filters, out, *sizes))], {"out": out}

    def conv_check(outputs, image, filters):
        want = I.conv2d_relu_cpu(image, filters)
        assert (want == 0).any() and (want > 0).any()     # the ReLU cuts some outputs, keeps others
        assert np.allclose(outputs["out"], want, rtol=1e-5, atol=1e-6)

    return [Case("intro/whoami_2d", "intro", ("whoami_2d",), whoami_inputs, whoami_plan, whoami_check),
            Case("intro/vector_add_v1", "intro", ("vector_add_v1",), add_inputs, add_plan("vector_add_v1"),
                 add_check),
            Case("intro/vector_add_v2", "intro", ("vector_add_v2",), add_inputs, add_plan("vector_add_v2", 3),
                 add_check),
            Case("intro/conv2d_relu_v1", "intro", ("conv2d_relu_v1",), conv_inputs, conv_plan, conv_check)]


# --- divergence (chapter 2) -------------------------------------------------------------------------
def _divergence_cases():
    from simtlab.kernels import divergence as DV

    sizes = {CPU: 1001, GPU: 100_003}                     # a partial last block of 256

    def branch_inputs(rng, scale):
        return (_signed(rng, sizes[scale]),)

    def branch_plan(name):
        def plan(xp, x):
            n = int(x.size)
            out = xp.zeros_like(x)
            return [Launch(name, cdiv(n, 256), 256, (x, out, np.int32(n)))], {"out": out}
        return plan

    def branch_check(reference):
        def check(outputs, x):
            assert np.array_equal(outputs["out"], reference(x))     # 2x and -x are exact
        return check

    def loop_inputs(rng, scale):
        n_terms = rng.integers(0, 64, sizes[scale]).astype(np.int32)
        return n_terms, np.argsort(n_terms, kind="stable").astype(np.int32)

    def loop_plan(name):
        def plan(xp, n_terms, order):
            n = int(n_terms.size)
            out = xp.full(n, -1, xp.int32)
            arrays = (n_terms, order) if name == "triangle_sum_by_order" else (n_terms,)
            return [Launch(name, cdiv(n, 256), 256, (*arrays, out, np.int32(n)))], {"out": out}
        return plan

    def loop_check(outputs, n_terms, order):
        assert np.array_equal(outputs["out"], DV.triangle_sum_cpu(n_terms))

    cases = [Case(f"divergence/{name}", "divergence", (name,), branch_inputs, branch_plan(name), branch_check(ref))
             for name, ref in (("branch_by_parity", DV.parity_cpu), ("branch_by_parity_select", DV.parity_cpu),
                               ("branch_by_warp", DV.by_warp_cpu))]
    cases += [Case(f"divergence/{name}", "divergence", (name,), loop_inputs, loop_plan(name), loop_check)
              for name in ("triangle_sum", "triangle_sum_by_order")]
    return cases


# --- patterns --------------------------------------------------------------------------------------
def _pattern_cases():
    from simtlab.gpubench.patterns import check
    from simtlab.kernels import patterns as P

    def inputs_for(group):
        def inputs(rng, scale):
            n = {CPU: 3001, GPU: 40_001}[scale]
            if group == "copy":
                return (_rand(rng, n),)
            if group == "transpose":
                return (_rand(rng, P.matrix_shape(n)),)
            if group == "stencil1d":
                return _rand(rng, n), _rand(rng, 2 * P.RADIUS + 1)
            if group == "stencil2d":
                side = 2 * P.RADIUS_2D + 1
                return _rand(rng, P.matrix_shape(n)), _rand(rng, (side, side))
            return _rand(rng, n), rng.permutation(n).astype(np.int32)
        return inputs

    cases = [Case(f"patterns/{v.cuda_c}", "patterns", (v.cuda_c,), inputs_for(v.group), _version_plan(v),
                  _check_with(lambda out, *inp, v=v: check(v, out, *inp)))
             for v in P.VERSIONS if v.cuda_c]

    def map_plan(xp, x):
        out = xp.zeros_like(x)
        n = int(x.size)
        return [Launch("map_v1", cdiv(n, P.BLOCK), P.BLOCK, (x, out, np.int32(n)))], {"out": out}

    def map_check(outputs, x):
        # 2.0f * x + 1.0f: 2x is exact, so NVRTC's fma rounds the same sum NumPy rounds once
        assert np.array_equal(outputs["out"], np.float32(2) * x + np.float32(1))

    cases.append(Case("patterns/map_v1", "patterns", ("map_v1",), inputs_for("copy"), map_plan, map_check))
    return cases


# --- reduction -------------------------------------------------------------------------------------
def _atomic_sum_bound(x):
    """Two orders of adding the blocks' partial sums to out[0] (each partial the same bits on
    both: a block's own order is fixed) differ by at most 2 (G - 1) u sum|partial| with u = 2^-24
    (each order's float32 sum is within (G - 1) u sum|p| of the exact sum; G <= 4 blocks here,
    sum|partial| <= sum|x| (1 + 2^-10) for positive x and a block's adds)."""
    blocks = 4
    return 2 * (blocks - 1) * 2.0 ** -24 * float(np.abs(x).astype(np.float64).sum()) * (1 + 2.0 ** -10)


def _reduction_cases():
    from simtlab.gpubench.reduction import check
    from simtlab.kernels import reduction as R

    def sum_inputs(rng, scale):
        return (_rand(rng, {CPU: 3001, GPU: 100_003}[scale]),)

    def vecmat_inputs(rng, scale):
        rows, cols = R.vecmat_shape({CPU: 40_001, GPU: 400_001}[scale])
        return _rand(rng, cols), _rand(rng, (rows, cols))

    cases = []
    for v in R.VERSIONS:
        if v.group == "vecmat":
            if v.numba == "vecmat_v1_seed":
                continue                                       # the seed has its own case below
            inputs = vecmat_inputs
        else:
            inputs = sum_inputs
        atomic = "atomic" in v.cuda_c and "last_block" not in v.cuda_c
        cases.append(Case(f"reduction/{v.cuda_c}", "reduction",
                          _kernels_of(v, inputs(np.random.default_rng(0), CPU)),
                          inputs, _version_plan(v), _check_with(lambda out, *inp, v=v: check(v, out, *inp)),
                          atomic_bounds={"out": _atomic_sum_bound} if atomic else None))

    # the seed: one block per (segment group, row) adds blockDim.x products per loop turn, but
    # steps by blockDim.x squared: with more than blockDim.x columns per block, segments are skipped
    seed = find(R.VERSIONS, "vecmat v1 seed (skips segments)")

    def seed_check(outputs, v, w):
        assert np.allclose(outputs["out"], seed_vecmat_cpu(v, w), rtol=1e-5)
        assert not np.allclose(outputs["out"], R.vecmat_cpu(v, w), rtol=1e-2)

    cases.append(Case("reduction/vecmat_v1_seed", "reduction", ("vecmat_v1_seed", "vecmat_rows"),
                      vecmat_inputs, _version_plan(seed), seed_check))

    def last_warp_plan(name):
        def plan(xp, x):
            blocks = cdiv(int(x.size), 2 * R.BLOCK)
            partial = xp.zeros(blocks, xp.float32)
            return [Launch(name, blocks, R.BLOCK, (x, partial, np.int64(x.size)))], {"partial": partial}
        return plan

    def last_warp_inputs(rng, scale):
        return (_steps(rng, {CPU: 2 * 256 * 3 - 7, GPU: 2 * 256 * 40 - 7}[scale]),)

    def unsafe_check(outputs, x):
        assert np.array_equal(outputs["partial"], unsafe_last_warp_cpu(x, R.BLOCK))

    def syncwarp_check(outputs, x):
        assert np.array_equal(outputs["partial"], block_pair_sums(x, R.BLOCK))

    cases.append(Case("reduction/reduce_last_warp_unsafe", "reduction", ("reduce_last_warp_unsafe",),
                      last_warp_inputs, last_warp_plan("reduce_last_warp_unsafe"), unsafe_check))
    cases.append(Case("reduction/reduce_last_warp_syncwarp", "reduction", ("reduce_last_warp_syncwarp",),
                      last_warp_inputs, last_warp_plan("reduce_last_warp_syncwarp"), syncwarp_check))

    # the row means (batch-norm statistics): partial sums per (block, row), then one block per row
    def row_inputs(rng, scale):
        return (_rand(rng, {CPU: (5, 777), GPU: (33, 20_001)}[scale]),)

    def row_plan(xp, x, blocks_per_row=3):
        rows, cols = map(int, x.shape)
        partial, out = xp.zeros((rows, blocks_per_row), xp.float32), xp.zeros(rows, xp.float32)
        return [Launch("row_sum_partials", (blocks_per_row, rows), R.BLOCK, (x, partial, np.int64(cols))),
                Launch("row_mean_finish", rows, R.BLOCK, (partial, np.float32(cols), out, np.int32(blocks_per_row)))], \
            {"partial": partial, "out": out}

    def row_check(outputs, x):
        assert np.allclose(outputs["out"], R.row_mean_cpu(x), rtol=1e-5)

    cases.append(Case("reduction/row_mean", "reduction", ("row_mean_finish", "row_sum_partials"),
                      row_inputs, row_plan, row_check))
    return cases


def seed_vecmat_cpu(v, w, block=256, blocks_per_row=None):
    """What vecmat_v1_seed computes on its plan's grid: block bx of a row adds the segments
    starting at bx * block + j * block * block (the seed's stride), in float64."""
    rows, n = w.shape
    if blocks_per_row is None:
        blocks_per_row = max(1, min(2, cdiv(n, block)))
    covered = np.zeros(n, bool)
    for bx in range(blocks_per_row):
        for start in range(bx * block, n, block * block):
            covered[start:start + block] = True
    return (w[:, covered].astype(np.float64) @ v[covered].astype(np.float64)).astype(np.float32)


def block_pair_sums(x, block):
    """Each block's sum of its 2 * block elements (exact: x holds small integers)."""
    n = x.size
    padded = np.zeros(cdiv(n, 2 * block) * 2 * block, np.float64)
    padded[:n] = x
    return padded.reshape(-1, 2 * block).sum(axis=1).astype(np.float32)


def unsafe_last_warp_cpu(x, block):
    """What reduce_last_warp_unsafe's PTX computes: after the barrier steps (down to 64 sums),
    NVRTC keeps s[t] in a register and loads s[t + 32], s[t + 16], ..., s[t + 1] before its one
    store, so lane 0 adds s[0] + s[32] + s[16] + s[8] + s[4] + s[2] + s[1]: 7 of the 64 sums
    (the volatile-free unrolled warp of the pre-Volta recipe; exact here: small integers)."""
    n = x.size
    blocks = cdiv(n, 2 * block)
    padded = np.zeros(blocks * 2 * block, np.float64)
    padded[:n] = x
    s = padded.reshape(blocks, 2, block).sum(axis=1)           # s[t] = x[i] + x[i + block]
    step = block // 2
    while step > 32:
        s[:, :step] += s[:, step:2 * step]
        step //= 2
    return s[:, [0, 32, 16, 8, 4, 2, 1]].sum(axis=1).astype(np.float32)


# --- scan ------------------------------------------------------------------------------------------
def _scan_cases():
    from simtlab.gpubench.scan import check, first_mismatch
    from simtlab.kernels import scan as S

    def inputs(rng, scale):
        # more than one tile of the CUDA C tile kernels (4096), so add_block_prefix runs
        return (_steps(rng, {CPU: 5003, GPU: 150_001}[scale]),)

    cases = [Case(f"scan/{v.cuda_c}", "scan", _kernels_of(v, inputs(np.random.default_rng(0), CPU)),
                  inputs, _version_plan(v), _check_with(lambda out, x, v=v: check(v, out, x)))
             for v in S.VERSIONS if v.cuda_c]

    # in place, one warp per block: lane t reads temp[t - d] in the step where lane t - d adds
    # to it; one warp keeps the GPU's result determined by the PTX's order (all lanes load,
    # then all store), which is the right scan of each block
    warp = 32

    def racy_plan(xp, x):
        n = int(x.size)
        blocks = cdiv(n, warp)
        out, sums = xp.zeros_like(x), xp.zeros(blocks, xp.float32)
        return [Launch("scan_in_place_racy", blocks, warp, (x, out, sums, np.int32(n)), shared=4 * warp)], \
            {"out": out, "block_sums": sums}

    def racy_inputs(rng, scale):
        return (_steps(rng, {CPU: 5 * warp - 3, GPU: 1001 * warp - 3}[scale]),)

    def racy_check(outputs, x):
        for b in range(cdiv(x.size, warp)):
            part = x[b * warp:(b + 1) * warp]
            assert first_mismatch(outputs["out"][b * warp:(b + 1) * warp], part) is None, b

    cases.append(Case("scan/scan_in_place_racy", "scan", ("scan_in_place_racy",), racy_inputs, racy_plan,
                      racy_check))
    return cases


# --- gemm ------------------------------------------------------------------------------------------
def _gemm_cases():
    from simtlab.kernels import gemm as G

    shapes = {"odd": {CPU: (37, 45, 29), GPU: (301, 259, 203)},       # the scalar twins of v6/v7
              "aligned": {CPU: (36, 44, 28), GPU: (260, 300, 196)}}   # K, N % 4 == 0: float4 loads

    def inputs_for(kind):
        def inputs(rng, scale):
            m, k, n = shapes[kind][scale]
            return _rand(rng, (m, k)), _rand(rng, (k, n))
        return inputs

    def check(outputs, a, b):
        assert np.allclose(outputs["out"], G.gemm_cpu(a, b), rtol=1e-5, atol=1e-5)

    cases = []
    for v in G.VERSIONS:
        if v.cuda_c.startswith(("gemm_v8_", "gemm_v9_")):
            continue                                  # v8's and v9's rows are configurations below
        for kind in ("odd", "aligned") if v.plan.scalar else ("odd",):
            inputs = inputs_for(kind)
            kernels = _kernels_of(v, inputs(np.random.default_rng(0), CPU))
            cases.append(Case(f"gemm/{kernels[0]}", "gemm", kernels, inputs, _version_plan(v), check))
    cases += _gemm_v8_cases(G, check)
    cases += _gemm_v9_cases(G, check)
    cases += _gemm_splitk_cases(G, check)

    def layer_inputs(rng, scale):
        m, k, n = {CPU: (19, 21, 23), GPU: (131, 257, 301)}[scale]
        return _signed(rng, (m, k)), _signed(rng, (k, n)), np.linspace(1, 2, m).astype(np.float32)

    def layer_plan(name, activation):
        def plan(xp, w, x, bias):
            m, k = map(int, w.shape)
            n = int(x.shape[1])
            p = xp.zeros((m, n), xp.float32)
            return [Launch(name, (cdiv(n, G.TILE), cdiv(m, G.TILE)), (G.TILE, G.TILE),
                           (w, x, p, bias, np.int32(1), np.int32(G.ACTIVATIONS[activation]),
                            *map(np.int32, (m, n, k))))], {"out": p}
        return plan

    def seed_check(outputs, w, x, bias):
        # the seed's bug: with bias and no activation, the biased value is never stored
        np.testing.assert_allclose(outputs["out"], G.dense_layer_cpu(w, x), rtol=1e-5, atol=1e-5)
        assert np.abs(outputs["out"] - G.dense_layer_cpu(w, x, bias)).min() >= 0.99

    def fixed_check(outputs, w, x, bias):
        np.testing.assert_allclose(outputs["out"], G.dense_layer_cpu(w, x, bias, "swish"), rtol=1e-5, atol=1e-5)

    cases.append(Case("gemm/gemm_bias_act_seed", "gemm", ("gemm_bias_act_seed",), layer_inputs,
                      layer_plan("gemm_bias_act_seed", "none"), seed_check))
    cases.append(Case("gemm/gemm_bias_act", "gemm", ("gemm_bias_act",), layer_inputs,
                      layer_plan("gemm_bias_act", "swish"), fixed_check, approx=("out",)))
    return cases


def _gemm_v8_cases(G, check):
    """Every v8 configuration (one kernel takes any sizes): float4-aligned K and N with ragged
    M, N, K edges and one tile more than the ring holds (the ring wraps, the last tile is
    partial), and odd sizes (the 4-byte copy and store path)."""
    from simtlab.versions import Version

    cases = []
    for c in G.V8_CONFIGS:
        shapes = {"aligned": {CPU: (c.bm + 3, (c.stages + 1) * c.bk + 4, c.bn + 4),
                              GPU: (c.bm + 3, (c.stages + 3) * c.bk + 4, 2 * c.bn + 4)},
                  "odd": {CPU: (c.bm - 5, 2 * c.bk + 3, c.bn + 5), GPU: (c.bm - 5, 5 * c.bk + 3, 2 * c.bn + 5)}}
        version = Version(c.kernel, None, c.kernel, c.plan, G.gemm_bytes)
        for kind, suffix in (("aligned", ""), ("odd", "/odd")):
            def inputs(rng, scale, size=shapes[kind]):
                m, k, n = size[scale]
                return _rand(rng, (m, k)), _rand(rng, (k, n))
            cases.append(Case(f"gemm/{c.kernel}{suffix}", "gemm", (c.kernel,), inputs, _version_plan(version), check))
    return cases


def _gemm_v9_cases(G, check):
    """Every v9 configuration, both kernels: float4 rows (K, N % 4 == 0) with ragged M, N, K edges
    over three tiles of K (both shared buffers reused), and odd sizes (the scalar twin)."""
    from simtlab.versions import Version

    cases = []
    for c in G.V9_CONFIGS:
        shapes = {"aligned": {CPU: (c.bm + 3, 2 * c.bk + 4, c.bn + 4), GPU: (c.bm + 3, 5 * c.bk + 4, 2 * c.bn + 4)},
                  "odd": {CPU: (c.bm - 5, 2 * c.bk + 3, c.bn + 5), GPU: (c.bm - 5, 5 * c.bk + 3, 2 * c.bn + 5)}}
        version = Version(c.kernel, None, c.kernel, c.plan, G.gemm_bytes)
        for kind, kernel in (("aligned", c.kernel), ("odd", c.kernel + "_scalar")):
            def inputs(rng, scale, size=shapes[kind]):
                m, k, n = size[scale]
                return _rand(rng, (m, k)), _rand(rng, (k, n))
            cases.append(Case(f"gemm/{kernel}", "gemm", (kernel,), inputs, _version_plan(version), check))
    return cases


def _gemm_splitk_cases(G, check):
    """Split-K with 3 slices of K: float4 rows (K, N % 4 == 0) and odd sizes (the scalar twin);
    K = 100 is 7 BK tiles, so the slices are 3, 3 and 1 tiles; with 9 splits of the GPU's K the
    last split gets none. Partial tiles meet in C through float atomics: the GPU adds them in its
    own order, within the bound of two orders of the same adds."""
    shapes = {"aligned": ({CPU: (36, 100, 44), GPU: (260, 196, 300)}, 3),
              "odd": ({CPU: (37, 101, 45), GPU: (301, 203, 259)}, 9)}

    def bound(splits):
        def of(a, b):
            # two orders of adding S partial sums differ by at most 2 (S - 1) u sum|partial|
            # (u = 2^-24), sum|partial| <= (|A| @ |B|) (1 + 2^-10) while K u < 2^-10
            scale = float((np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)).max())
            return 2 * (splits - 1) * 2.0 ** -24 * scale * (1 + 2.0 ** -10)
        return of

    cases = []
    for kind, (size, splits) in shapes.items():
        version = G.splitk_version(splits)

        def inputs(rng, scale, size=size):
            m, k, n = size[scale]
            return _rand(rng, (m, k)), _rand(rng, (k, n))
        kernels = _kernels_of(version, inputs(np.random.default_rng(0), CPU))
        cases.append(Case(f"gemm/{kernels[0]}", "gemm", kernels, inputs, _version_plan(version), check,
                          atomic_bounds={"out": bound(splits)}))
    return cases


# --- conv ------------------------------------------------------------------------------------------
def _conv_cases():
    from simtlab.gpubench.conv import V5_CONFIGS, layer_shape
    from simtlab.kernels import conv as CV

    def inputs_for(c, m):
        def inputs(rng, scale):
            b, h, w = {CPU: (2, 13, 15), GPU: (3, 39, 35)}[scale]     # v6 C3 holds 40 x 40 rows
            return _rand(rng, (b, c, h, w)), _rand(rng, (m, c, 7, 7)) - np.float32(1)
        return inputs

    def check(outputs, x, w):
        assert np.allclose(outputs["out"], CV.conv2d_cpu(x, w), rtol=1e-5, atol=1e-4)

    def relu_check(outputs, x, w):
        assert np.allclose(outputs["out"], CV.conv2d_cpu(x, w, relu=True), rtol=1e-5, atol=1e-4)

    def seed_check(outputs, x, w):
        # the seed steps by blockDim.x squared: one block of BLOCK threads computes outputs
        # 0 .. BLOCK - 1 (the next would be BLOCK^2, past the end); the rest stay 0
        want = CV.conv2d_cpu(x, w, relu=True).ravel()
        got = outputs["out"].ravel()
        assert np.allclose(got[:CV.BLOCK], want[:CV.BLOCK], rtol=1e-5, atol=1e-4)
        assert not got[CV.BLOCK:].any() and want[CV.BLOCK:].any()

    c1 = inputs_for(1, 4)                                    # LeNet C1: 1 -> 4 maps, 7 x 7
    cases = [Case("conv/conv_v0_seed", "conv", ("conv_v0_seed",), c1,
                  _version_plan(find(CV.VERSIONS, "v0 blog grid-stride"), max_blocks=1), seed_check),
             Case("conv/conv_v1_direct", "conv", ("conv_v1_direct",), c1,
                  _version_plan(find(CV.VERSIONS, "v1 direct"), max_blocks=2), relu_check)]
    for label in ("v2 im2col + GEMM", "v3 implicit GEMM", "v3b implicit GEMM, offset table", "v4 constant weights"):
        v = find(CV.VERSIONS, label)
        kernels = _kernels_of(v, c1(np.random.default_rng(0), CPU))
        cases.append(Case(f"conv/{v.cuda_c}", "conv", kernels, c1, _version_plan(v), check))
    # every instance of the tuned v5 and v6 macros, at the layer shape it is made for
    v5, v6 = find(CV.VERSIONS, "v5 tuned"), find(CV.VERSIONS, "v6 image per block")
    for layer, tiles in V5_CONFIGS.items():                # the tiles the benchmark tunes over
        c, m, k = (layer_shape(layer)[key] for key in ("C", "M", "K"))
        for tile in tiles:
            cases.append(Case(f"conv/{CV.v5_name(c, m, k, tile)}", "conv", (CV.v5_name(c, m, k, tile),),
                              inputs_for(c, m), _version_plan(v5, tile=tile), check))
    for (c, m, k), tiles in CV.V6_TILES.items():
        for tile in tiles:
            cases.append(Case(f"conv/{CV.v6_name(c, m, k, tile)}", "conv", (CV.v6_name(c, m, k, tile),),
                              inputs_for(c, m), _version_plan(v6, tile=tile, max_blocks=2), check))
    return cases


# --- conv, v6h: v6 with 16-bit storage ----------------------------------------------------------------
def _conv_storage_cases():
    """v6h (FP16 and BF16 x and y, FP32 weights and sums) at both layer shapes it is made for:
    its output, decoded, within ``storage_error_bound`` of the float64 convolution of the float32
    inputs (the bound comes from the 16-bit rounding of x and y: 2^-11 FP16, 2^-8 BF16)."""
    from simtlab.kernels import conv as CV

    def inputs_for(c, m):
        def inputs(rng, scale):
            b, h, w = {CPU: (2, 13, 15), GPU: (3, 39, 35)}[scale]     # v6 C3 holds 40 x 40 rows
            return _rand(rng, (b, c, h, w)), _rand(rng, (m, c, 7, 7)) - np.float32(1)
        return inputs

    def check_for(storage):
        def check(outputs, x, w):
            err = np.abs(CV.from_storage(outputs["out"], storage) - CV.conv2d_float64(x, w))
            bound = CV.storage_error_bound(x, w, storage)
            assert (err <= bound).all(), f"{storage}: error {err.max():.3g} above the bound at {np.argmax(err > bound)}"
        return check

    cases = []
    for (c, m, k), tiles in CV.V6_TILES.items():
        for storage in CV.STORAGES:
            v = find(CV.VERSIONS, f"v6h {storage.upper()} storage")
            name = CV.v6h_name(storage, c, m, k, tiles[0])
            cases.append(Case(f"conv/{name}", "conv", (name,), inputs_for(c, m),
                              _version_plan(v, max_blocks=2), check_for(storage)))
    return cases


# --- cnn -------------------------------------------------------------------------------------------
def _cnn_cases():
    from simtlab.kernels import cnn as CN
    from simtlab.kernels.conv import conv2d_cpu

    def conv_inputs(rng, scale):
        b, c, h, w, m = {CPU: (3, 2, 11, 13, 5), GPU: (9, 6, 21, 19, 17)}[scale]
        return _rand(rng, (b, c, h, w)), _signed(rng, (m, c, 5, 5)), _signed(rng, m)

    def conv_plan(path):
        def plan(xp, x, w, bias):
            b, _, h, wd = map(int, x.shape)
            m, _, k, _ = map(int, w.shape)
            ho, wo = h - k + 1, wd - k + 1
            shape = (b, m, ho // 2, wo // 2) if path == "fused" else (b, m, ho, wo)
            y = xp.zeros(shape, xp.float32)
            return CN.conv_launches(xp, "cuda-c", x, w, bias, y, path), {"out": y}
        return plan

    def conv_ref(x, w, bias):
        return np.maximum(conv2d_cpu(x, w) + bias[None, :, None, None], 0).astype(np.float32)

    def conv_check(outputs, x, w, bias):
        assert np.allclose(outputs["out"], conv_ref(x, w, bias), rtol=1e-5, atol=1e-5)

    def fused_check(outputs, x, w, bias):
        assert np.allclose(outputs["out"], CN.maxpool_cpu(conv_ref(x, w, bias)), rtol=1e-5, atol=1e-5)

    def direct_inputs(c, m):
        # the direct kernel is compiled for the network's layers: C = 1 or 6, K = 5, even outputs
        def inputs(rng, scale):
            b, h, w = {CPU: (2, 12, 14), GPU: (9, 28, 24)}[scale]
            return _rand(rng, (b, c, h, w)), _signed(rng, (m, c, 5, 5)), _signed(rng, m)
        return inputs

    def pool_inputs(rng, scale):
        # maxpool2 reads a (2 Ho, 2 Wo) input (the network's are even): odd outputs, 5 x 7 and 11 x 13
        return (_signed(rng, {CPU: (3, 5, 10, 14), GPU: (17, 6, 22, 26)}[scale]),)

    def pool_plan(xp, x):
        b, c, h, w = map(int, x.shape)
        y = xp.zeros((b, c, h // 2, w // 2), xp.float32)
        return [CN.pool_launch(x, y)], {"out": y}

    def pool_check(outputs, x):
        assert np.array_equal(outputs["out"], CN.maxpool_cpu(x))

    def dense_inputs(rng, scale):
        b, k, n = {CPU: (5, 37, 19), GPU: (67, 256, 64)}[scale]
        return _signed(rng, (b, k)), _signed(rng, (n, k)), _signed(rng, n)

    def fc_plan(path, relu):
        def plan(xp, x, w, bias):
            y = xp.zeros((int(x.shape[0]), int(w.shape[0])), xp.float32)
            return CN.fc_launches("cuda-c", x, w, bias, y, relu, path), {"out": y}
        return plan

    def fc_check(relu):
        def check(outputs, x, w, bias):
            assert np.allclose(outputs["out"], CN.dense_cpu(x, w, bias, relu), rtol=1e-5, atol=1e-5)
        return check

    def vecmat_inputs(rng, scale):
        k, n = {CPU: (301, 19), GPU: (4001, 64)}[scale]
        return _signed(rng, (1, k)), _signed(rng, (n, k)), _signed(rng, n)

    def softmax_inputs(rng, scale):
        return (_signed(rng, {CPU: (133, 10), GPU: (4001, 10)}[scale]) * np.float32(8),)

    def softmax_plan(xp, z):
        b = int(z.shape[0])
        probs, labels = xp.zeros(z.shape, xp.float32), xp.zeros(b, xp.int32)
        return [CN.softmax_launch(z, probs, labels)], {"probs": probs, "labels": labels}

    def softmax_check(outputs, z):
        assert np.allclose(outputs["probs"], CN.softmax_cpu(z), rtol=1e-5, atol=1e-7)
        assert np.array_equal(outputs["labels"], z.argmax(axis=1))

    return [Case("cnn/conv_bias_relu", "cnn", ("conv_bias_relu",), conv_inputs, conv_plan("implicit"), conv_check),
            Case("cnn/conv_bias_relu_pool", "cnn", ("conv_bias_relu_pool",), conv_inputs, conv_plan("fused"),
                 fused_check),
            Case("cnn/conv_bias_relu_direct", "cnn", ("conv_bias_relu_direct",), direct_inputs(1, 6),
                 conv_plan("direct"), conv_check),
            Case("cnn/conv_bias_relu_direct/c6", "cnn", ("conv_bias_relu_direct",), direct_inputs(6, 16),
                 conv_plan("direct"), conv_check),
            Case("cnn/maxpool2", "cnn", ("maxpool2",), pool_inputs, pool_plan, pool_check),
            Case("cnn/dense_bias_act", "cnn", ("dense_bias_act",), dense_inputs, fc_plan("gemm", True),
                 fc_check(True)),
            Case("cnn/vecmat_block_reduce", "cnn", ("vecmat_block_reduce",), vecmat_inputs,
                 fc_plan("vecmat", False), fc_check(False)),
            Case("cnn/softmax_argmax", "cnn", ("softmax_argmax",), softmax_inputs, softmax_plan, softmax_check,
                 approx=("probs",))]


# --- cnn: the tensor-core convolution (chapter 8's row against cuDNN in TF32 / BF16) ----------------
def tc_conv_engine_gpu_bound(x, w, bias, precision: str):
    """Per output, the most the engine's and a GPU's tensor-core convolution can differ by: both
    read the same rounded inputs (the kernel's own cvt), then add the exact products differently
    (tensor_core_bound's terms: the GPU's truncating FP32 adder, depth 2^-23 of S; the engine's
    float64 sum rounded once per MMA, at most depth/8 times 2^-24), and each adds the bias to its
    own sum: one more ulp of S + |bias| apart. S: sum |x||w| of the rounded inputs."""
    from simtlab.kernels import cnn as CN
    from simtlab.kernels.tensor_cores import round_to

    depth = int(np.prod(w.shape[1:]))
    s = CN.conv2d_cpu_f64(*(np.abs(round_to(a, precision, tf32="nearest")) for a in (x, w)))
    return (depth * 2.0 ** -23 + depth / 8 * 2.0 ** -24 + depth * 2.0 ** -52) * s + \
        2.0 ** -23 * (s + np.abs(np.asarray(bias, np.float64))[None, :, None, None])


def _cnn_tensor_core_cases():
    """kernels/cnn.cu's tensor-core convolutions (conv_wmma_{tf32,bf16}_bias_relu) on odd sizes:
    output pixels not a multiple of the block's 64, depth C*K*K not a multiple of the 32 staged
    (50: a full stage and a partial one; 150, the network's conv2: 5 stages, the last of 22), and
    17 channels (a second block of 16 along N, 15 of its columns padding). Checked against the
    float64 convolution twice: of the float32 inputs within the precision's bound, and of the
    inputs rounded as the kernel rounds them within the accumulation's alone (which a dropped
    product, an FP32 kernel, or one that truncates instead of rounding misses)."""
    from simtlab.kernels import cnn as CN

    def inputs_for(sizes):
        def inputs(rng, scale):
            b, c, h, w, m = sizes[scale]
            return _rand(rng, (b, c, h, w)), _signed(rng, (m, c, 5, 5)), _signed(rng, m)
        return inputs

    def plan_for(precision):
        def plan(xp, x, w, bias):
            b, _, h, wd = map(int, x.shape)
            m, _, k, _ = map(int, w.shape)
            y = xp.full((b, m, h - k + 1, wd - k + 1), np.nan, xp.float32)    # every output must be written
            return [CN.tc_conv_launch(precision, x, w, bias, y)], {"out": y}
        return plan

    def check_for(precision):
        def check(outputs, x, w, bias):
            got = outputs["out"].astype(np.float64)
            assert np.isfinite(got).all(), "outputs left unwritten"
            for rounded in (False, True):
                want = CN.tc_conv_reference(x, w, bias, precision if rounded else None)
                gap = np.abs(got - want) - CN.tc_conv_bound(x, w, bias, precision, inputs_rounded=rounded)
                assert (gap <= 0).all(), (f"{precision}: {int((gap > 0).sum())} outputs beyond the bound against the "
                                          f"reference of {'rounded' if rounded else 'float32'} inputs")
        return check

    sizes = {"": {CPU: (2, 2, 11, 13, 5), GPU: (9, 2, 21, 19, 5)},
             "/c6m17": {CPU: (1, 6, 9, 10, 17), GPU: (7, 6, 16, 13, 17)}}
    return [Case(f"cnn/{kernel}{suffix}", "cnn", (kernel,), inputs_for(size), plan_for(precision), check_for(precision),
                 tensor_core_bound={"out": lambda x, w, bias, p=precision: tc_conv_engine_gpu_bound(x, w, bias, p)})
            for precision, kernel in CN.TC_CONV_KERNELS.items() for suffix, size in sizes.items()]


# --- cooperation -----------------------------------------------------------------------------------
def _cooperation_cases():
    from simtlab.kernels.reduction import sum_cpu

    block = 256

    def inputs(rng, scale):
        return (_rand(rng, {CPU: 5001, GPU: 200_001}[scale]),)

    def plan(xp, x, blocks=6):
        partial = xp.zeros(blocks // 2, xp.float32)
        return [Launch("reduce_cluster_pairs", blocks, block, (x, partial, np.int64(x.size)))], {"out": partial}

    def check(outputs, x):
        assert np.isclose(outputs["out"].astype(np.float64).sum(), sum_cpu(x), rtol=1e-5)

    return [Case("cooperation/reduce_cluster_pairs", "cooperation", ("reduce_cluster_pairs",), inputs, plan, check)]


# --- tensor cores (chapter 9) ------------------------------------------------------------------------
def tensor_core_bound(a, b, precision: str):
    """Per element of C = A B (K = A's columns), the most the engine's and a GPU's results can
    differ by: |engine - GPU| <= (K 2^-23 + K/8 2^-24 + K 2^-52) * (|A| @ |B|).

    - the GPU (kernels/tensor_cores.py's ``tolerance``, less its input rounding): its tensor
      cores add the exact products with their own alignment and truncation; each of the K
      additions into the FP32 sum loses less than one ulp of a number no larger than
      sum |a||b|: K 2^-23 of it;
    - the engine: exact products summed in float64 (2^-52 relative a term at most) and rounded
      to float32 once per MMA instruction, each at least 8 deep in k: K/8 roundings of half an
      ulp, 2^-24 relative each.
    Both read the same operand values: TF32 truncated from the float bits (the hardware
    behaviour the tensor-cores helper measured; a GPU that rounded them instead would differ
    by up to 2^-10 of a product and fail this bound), FP16/BF16 as stored."""
    from simtlab.kernels import tensor_cores as T

    k = a.shape[1]
    scale = np.abs(T.decode(a, precision)) @ np.abs(T.decode(b, precision))
    return (k * 2.0 ** -23 + k / 8 * 2.0 ** -24 + k * 2.0 ** -52) * scale


def _tensor_core_cases():
    """Every kernel of kernels/tensor_cores.cu at the smallest legal shapes: one block tile (v1,
    v2: one block of 4 warps along N), two k-tiles (v6, v7, v8: one more than their stages, so
    the ring wraps and v8's producer waits for its consumers); on the GPU machine 2 x 2 block
    tiles and more k-tiles. v8's and v6w's A and B reach them as TensorMaps (the engine's description of a
    CUtensorMap), which the GPU test encodes with the driver. The check: the float64
    product of the inputs within the precision's ``tolerance``."""
    from simtlab.kernels import tensor_cores as T

    cases = []
    for v in T.VERSIONS + T.SWEEP:
        bm, bn, bk = v.multiple
        naive = v.kernel.startswith(("tc_v1", "tc_v2"))
        stages = T.stages_of(v)
        if naive:
            shapes = {CPU: (16, 64, 2 * bk), GPU: (48, 192, 8 * bk)}
        else:
            shapes = {CPU: (bm, bn, max(2, stages + 1) * bk), GPU: (2 * bm, 2 * bn, (stages + 3) * bk)}
            if v.persistent:            # 2 tiles for 1 block on the CPU (the ring runs on into the second), 4 for 3 on the GPU
                shapes[CPU] = (2 * bm, bn, shapes[CPU][2])
            if v.stream_k:              # 3 blocks: CPU, 2 tiles of 3 k-tiles, 2 k-tiles a block, each tile summed from 2
                shapes[CPU] = (2 * bm, bn, 3 * bk)     # GPU: 3 whole tiles, then the 4th's 7 k-tiles from all 3 blocks

        def inputs(rng, scale, v=v, shapes=shapes):
            m, n, k = shapes[scale]
            a32 = rng.uniform(-1, 1, (m, k)).astype(np.float32)
            b32 = rng.uniform(-1, 1, (k, n)).astype(np.float32)
            return T.encode(a32, v.precision), T.encode(b32, v.precision)

        def plan(xp, a, b, v=v):
            m, k = map(int, a.shape)
            n = int(b.shape[1])
            c = xp.zeros((m, n), xp.float32)
            sms = 3 if v.stream_k or m * n > 2 * v.tile[0] * v.tile[1] else 1
            grid, block, smem = T.launch_config(v, m, n, k, sms=sms)
            b_arg = xp.ascontiguousarray(b.T) if v.b_transposed else b          # tc_v7_wgmma_tf32_bt reads B^T
            if v.tma:       # v8, v6w take CUtensorMaps: their description (the GPU test encodes them)
                a, b_arg = (TensorMap(x, box, T.V8_SWIZZLE, tf32=v.tma_rounds)
                            for x, box in zip((a, b_arg), v.tma_boxes or T.V8_BOXES))
            args, outputs = (a, b_arg, c, *map(np.int32, (m, n, k))), {"out": c}
            if v.stream_k:  # the workspace, and the counters, which the kernel must leave at zero
                ws_floats, tiles = T.stream_k_buffers(v, m, n, grid[0])
                outputs["counters"] = xp.zeros(tiles, xp.int32)
                args += (xp.zeros(ws_floats, xp.float32), outputs["counters"])
            return [Launch(v.kernel, grid, block, args, shared=smem)], outputs

        def check(outputs, a, b, v=v):
            k = a.shape[1]
            err = T.relative_error(outputs["out"], T.gemm_reference(a, b, v.precision), a, b, v.precision)
            assert err <= T.tolerance(v.precision, k), f"{v.name}: relative error {err:.3g} > {T.tolerance(v.precision, k):.3g}"
            if "counters" in outputs:   # stream-K: every tail tile's counter back at zero for the next launch
                assert not np.any(outputs["counters"]), f"{v.name}: counters left at {outputs['counters']}"

        cases.append(Case(f"tensor_cores/{v.kernel}", "tensor_cores", (v.kernel,), inputs, plan, check,
                          tensor_core_bound={"out": lambda a, b, p=v.precision: tensor_core_bound(a, b, p)}))
    return cases + [_transpose_case()]


def _transpose_case():
    """tc_transpose_f32 (B -> B^T for tc_v7_wgmma_tf32_bt) at sizes that are not multiples of its
    32 x 32 tile: every element moved, bit for bit."""
    def inputs(rng, scale):
        rows, cols = {CPU: (37, 70), GPU: (300, 517)}[scale]
        return (_signed(rng, (rows, cols)),)

    def plan(xp, x):
        rows, cols = map(int, x.shape)
        out = xp.zeros((cols, rows), xp.float32)
        return [Launch("tc_transpose_f32", (cdiv(cols, 32), cdiv(rows, 32)), (32, 8),
                       (x, out, np.int32(rows), np.int32(cols)))], {"out": out}

    def check(outputs, x):
        assert np.array_equal(outputs["out"], x.T)

    return Case("tensor_cores/tc_transpose_f32", "tensor_cores", ("tc_transpose_f32",), inputs, plan, check)


# --- tensor cores: the shared-memory side the PTX engine runs (tensor_cores_smem.cu) ----------------
def _tensor_core_smem_cases():
    from simtlab import tensorcores as TC

    def phase_inputs(rng, scale):
        return ()

    def phase_plan(row_chunks, kind):
        def plan(xp):
            out = xp.zeros(32, xp.float32)
            return [Launch("ldmatrix_rows", 1, 32, (out, np.int32(row_chunks), np.int32(kind), np.int32(1)))], \
                {"out": out}
        return plan

    def phase_check(row_chunks, kind):
        swizzle = TC._swizzle_of(kind)

        def check(outputs):
            # lane l < 8 read the float4 at its row address; the tile holds smem[i] = i
            first = TC.phase_offsets(row_chunks, swizzle, 1) // 4
            want = np.zeros(32, np.float32)
            want[:32] = (first[:, None] + np.arange(4)).ravel()
            assert np.array_equal(outputs["out"], want)
        return check

    cases = [Case(f"tensor_cores_smem/ldmatrix_rows_{name.replace(' ', '_')}_{'swizzled' if s else 'plain'}",
                  "tensor_cores_smem", ("ldmatrix_rows",), phase_inputs,
                  phase_plan(rc, kind if s else 0), phase_check(rc, kind if s else 0))
             for name, (rc, kind, _) in TC.LDMATRIX_CASES.items() for s in (False, True)]

    def ring_inputs(rng, scale):
        tiles = {CPU: 5, GPU: 64}[scale]
        return (rng.random(tiles * TC.TILE_FLOATS, dtype=np.float32),)

    def ring_plan(stages):
        def plan(xp, data):
            out = xp.zeros(32, xp.float32)
            return [Launch(f"pipeline_stages{stages}", 1, 32, (data, out, np.int32(data.size // TC.TILE_FLOATS)))], \
                {"out": out}
        return plan

    def ring_check(outputs, data):
        assert np.array_equal(outputs["out"], TC.pipeline_reference(data, data.size // TC.TILE_FLOATS))

    cases += [Case(f"tensor_cores_smem/pipeline_stages{s}", "tensor_cores_smem", (f"pipeline_stages{s}",),
                   ring_inputs, ring_plan(s), ring_check) for s in (2, 3, 4)]
    return cases


CASES = (_intro_cases() + _divergence_cases() + _pattern_cases() + _reduction_cases() + _scan_cases() + _gemm_cases() + _conv_cases() + _conv_storage_cases() + _cnn_cases()
         + _cnn_tensor_core_cases()
         + _cooperation_cases() + _tensor_core_cases() + _tensor_core_smem_cases())
#: the topics of kernels/*.cu, and the case of each name
TOPICS = sorted({c.topic for c in CASES})
BY_NAME = {c.name: c for c in CASES}


def outputs_of(case: Case, scale: str, rng=None):
    """``(inputs, launches, outputs)`` of one case on NumPy arrays (fresh copies of the inputs)."""
    rng = np.random.default_rng(case.seed()) if rng is None else rng
    inputs = case.inputs(rng, scale)
    launches, outputs = case.plan(np, *[a.copy() for a in inputs])
    return inputs, launches, outputs
