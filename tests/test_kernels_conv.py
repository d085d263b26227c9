"""Chapter 7's kernels on the emulator: every version against the CPU reference on odd shapes
(batch, channels, every padding, stride 1 and 2); the reference itself against a plain loop;
im2col's matrix against its definition; the seed's grid-stride bug; the napkin math."""

from __future__ import annotations

import numpy as np
import pytest

import simtlab
from simtlab.kernels import conv as K

SHAPES = [
    (2, 2, 7, 9, 3, 3, 1, "valid"),
    (1, 3, 9, 9, 5, 3, 2, "same"),
    (2, 1, 9, 9, 2, 4, 1, "same"),
    (1, 2, 6, 7, 17, 3, 2, 1),
]


def _emulate(kernel, grid, block, *args, **options):
    simtlab.emulate(kernel, grid, block, *args, trace=False, **options)


def _inputs(shape, seed=0):
    b, c, h, w, m, k = shape[:6]
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((b, c, h, w)).astype(np.float32),
            rng.standard_normal((m, c, k, k)).astype(np.float32))


def _loop_reference(x, w, stride, pad, ho, wo):
    b, c, h, wd = x.shape
    m, _, k, _ = w.shape
    y = np.zeros((b, m, ho, wo))
    for bi in range(b):
        for mi in range(m):
            for oy in range(ho):
                for ox in range(wo):
                    for ci in range(c):
                        for p in range(k):
                            for q in range(k):
                                iy, ix = oy * stride + p - pad, ox * stride + q - pad
                                if 0 <= iy < h and 0 <= ix < wd:
                                    y[bi, mi, oy, ox] += x[bi, ci, iy, ix] * w[mi, ci, p, q]
    return y


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_reference_matches_the_seven_loops(shape):
    x, w = _inputs(shape)
    stride, padding = shape[6], shape[7]
    ho, wo, pad = K.conv_geometry(x.shape[2], x.shape[3], w.shape[2], stride, padding)
    want = _loop_reference(x, w, stride, pad, ho, wo)
    np.testing.assert_allclose(K.conv2d_cpu(x, w, stride, padding), want, rtol=1e-5, atol=1e-5)


def test_geometry_of_the_seed_layers():
    assert K.conv_geometry(86, 86, 7) == (80, 80, 0)                     # ECE408 C1
    assert K.conv_geometry(40, 40, 7) == (34, 34, 0)                     # ECE408 C3
    assert K.conv_geometry(100, 100, 5, stride=5) == (20, 20, 0)         # the lab report's layer
    assert K.conv_geometry(56, 100, 8, padding="same") == (56, 100, 3)   # electrode CNN, 8x8 'same'
    assert K.conv_geometry(9, 9, 3, stride=2, padding="same") == (5, 5, 1)


@pytest.mark.parametrize("bad, match", [
    (dict(h=5, w=5, k=7), "does not fit"),
    (dict(h=9, w=9, k=3, stride=0), "stride"),
    (dict(h=9, w=9, k=3, padding="full"), "padding must be"),
    (dict(h=8, w=9, k=3, stride=2, padding="same"), "same padding|rows but"),
])
def test_geometry_errors_name_the_problem(bad, match):
    with pytest.raises(ValueError, match=match):
        K.conv_geometry(**bad)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_im2col_matrix_times_weights_is_the_convolution(shape):
    x, w = _inputs(shape)
    stride, padding = shape[6], shape[7]
    cols = K.im2col_cpu(x, w.shape[2], stride, padding)
    ho, wo, _ = K.conv_geometry(x.shape[2], x.shape[3], w.shape[2], stride, padding)
    y = (w.reshape(w.shape[0], -1).astype(np.float64) @ cols).reshape(w.shape[0], x.shape[0], ho, wo)
    np.testing.assert_allclose(y.transpose(1, 0, 2, 3), K.conv2d_cpu(x, w, stride, padding), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("version", [v for v in K.EMULATED if not v.startswith("v0")])
def test_every_version_matches_the_reference_on_the_emulator(version, shape):
    x, w = _inputs(shape)
    stride, padding = shape[6], shape[7]
    if version.startswith("v6") and stride != 1:
        with pytest.raises(ValueError, match="stride 1"):          # v6 is written for stride 1
            K.conv_with(version, x, w, _emulate, stride, padding)
        return
    want = K.conv2d_cpu(x, w, stride, padding, relu=version.startswith("v1"))
    got = K.conv_with(version, x, w, _emulate, stride, padding, max_blocks=3)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_the_unroll_kernel_writes_the_cpu_unrolled_matrix():
    shape = SHAPES[1]
    x, w = _inputs(shape)
    cols = np.full((x.shape[1] * 9, 25), np.nan, np.float32)
    K.conv_with("v2 im2col + GEMM", x, w, _emulate, 2, "same", cols=cols)
    np.testing.assert_array_equal(cols, K.im2col_cpu(x, 3, 2, "same"))


def test_seed_grid_stride_leaves_outputs_unwritten_and_v1_does_not():
    x, w = _inputs((2, 2, 12, 12, 3, 3, 1, "valid"), seed=3)
    x, w = np.abs(x), np.abs(w)                            # every true output > 0
    want = K.conv2d_cpu(x, w, relu=True)
    seed = K.conv_with("v0 blog grid-stride", x, w, _emulate, max_blocks=2)
    fixed = K.conv_with("v1 direct", x, w, _emulate, max_blocks=2)
    written = (seed != 0).ravel()
    assert written[:2 * K.BLOCK].all() and not written[2 * K.BLOCK:].any()
    np.testing.assert_allclose(fixed, want, rtol=1e-5)
    # with one thread per output the bug hides: the seed's own launch had more threads than outputs
    np.testing.assert_allclose(K.conv_with("v0 blog grid-stride", x, w, _emulate), want, rtol=1e-5)


def test_const_weights_refuse_a_filter_larger_than_constant_memory():
    with pytest.raises(ValueError, match="constant memory"):
        K.make_conv_v4_const_weights(np.zeros((64, 64, 3, 3), np.float32))


def test_napkin_math_of_lenet_c1():
    n = K.layer_numbers(10_000, 1, 86, 86, 4, 7)
    assert n["flops"] == 2 * 10_000 * 4 * 80 * 80 * 49
    assert n["bytes"] == (10_000 * 86 * 86 + 4 * 49 + 10_000 * 4 * 80 * 80) * 4
    assert n["unrolled_bytes"] == 49 * 10_000 * 80 * 80 * 4
    assert n["duplication"] == pytest.approx(49 * 80 * 80 / (86 * 86))


def test_unknown_version_is_named():
    with pytest.raises(ValueError, match="the versions are"):
        K.conv_with("v9", np.zeros((1, 1, 3, 3), np.float32), np.zeros((1, 1, 3, 3), np.float32), _emulate)


def _cu_signatures():
    """name -> list of parameter types of every extern "C" kernel in kernels/conv.cu (macros expanded
    for the v5 instantiations)."""
    import re

    from simtlab.cuda_source import cu_path

    src = cu_path("conv").read_text()
    sigs = {}
    for name, params in re.findall(r'extern "C" __global__ void\s+(\w+)\(([^)]*)\)', src):
        sigs[name] = [" ".join(p.split()[:-1]) for p in params.replace("\n", " ").split(",")]
    for c, m, k, tx, th, tw in re.findall(r"^CONV_V5\((\d+), (\d+), (\d+), (\d+), (\d+), (\d+)\)", src, re.M):
        sigs[K.v5_name(int(c), int(m), int(k), (int(tx), int(th), int(tw)))] = \
            ["const float* __restrict__", "float* __restrict__"] + ["int"] * 5
    for c, m, k, tw, nt, ih, iwp in re.findall(r"^CONV_V6\((\d+), (\d+), (\d+), (\d+), (\d+), (\d+), (\d+)\)",
                                               src, re.M):
        sigs[K.v6_name(int(c), int(m), int(k), (int(tw), int(nt), int(ih), int(iwp)))] = \
            ["const float* __restrict__"] * 2 + ["float* __restrict__"] + ["int"] * 6
    for storage, c, m, k, tw, nt, ih, iwp in re.findall(
            r"^CONV_V6_16BIT\(\w+, conv_v6(\w+), (\d+), (\d+), (\d+), (\d+), (\d+), (\d+), (\d+)\)", src, re.M):
        sigs[K.v6h_name(storage, int(c), int(m), int(k), (int(tw), int(nt), int(ih), int(iwp)))] = \
            ["const unsigned short* __restrict__", "const float* __restrict__", "unsigned short* __restrict__"] + ["int"] * 6
    return sigs


def test_every_tile_of_the_tables_is_instantiated_in_conv_cu():
    sigs = _cu_signatures()
    for (c, m, k), tile in K.V5_TILES.items():
        assert K.v5_name(c, m, k, tile) in sigs
    for (c, m, k), tiles in K.V6_TILES.items():
        for tile in tiles:
            assert K.v6_name(c, m, k, tile) in sigs
        for storage in K.STORAGES:                           # v6h: each shape's default tile
            assert K.v6h_name(storage, c, m, k, tiles[0]) in sigs
    from simtlab.gpubench.conv import V5_CONFIGS, layer_shape

    for layer, tiles in V5_CONFIGS.items():                  # the tiles the benchmark tunes over
        s = layer_shape(layer)
        for tile in tiles:
            assert K.v5_name(s["C"], s["M"], s["K"], tile) in sigs


@pytest.mark.parametrize("version", [v.label for v in K.VERSIONS if v.cuda_c])
@pytest.mark.parametrize("layer", [K.LENET_C1, K.LENET_C3])
def test_cuda_c_launches_match_the_kernels_signatures(version, layer):
    """Without a GPU: every CUDA C launch of a plan names a kernel of conv.cu and passes arrays for
    its pointers, np.int32 for its ints and np.int64 for its long longs, in order."""
    from simtlab.versions import find

    sigs = _cu_signatures()
    x = np.zeros((3, layer["C"], layer["H"], layer["W"]), np.float32)
    w = np.zeros((layer["M"], layer["C"], layer["K"], layer["K"]), np.float32)
    launches, y = find(K.VERSIONS, version).launches("cuda-c", np, x, w)
    for step in launches:
        assert step.kernel in sigs, f"{step.kernel} is not a kernel of conv.cu"
        params = sigs[step.kernel]
        assert len(step.args) == len(params), f"{step.kernel}: {len(step.args)} arguments for {params}"
        for arg, param in zip(step.args, params):
            if "*" in param:
                dtype = {"int": np.int32, "short": np.uint16}.get(param.split("*")[0].split()[-1], np.float32)
                assert isinstance(arg, np.ndarray) and arg.dtype == dtype, (step.kernel, param, arg)
            elif param.endswith("long long"):
                assert isinstance(arg, np.int64), (step.kernel, param, type(arg))
            else:
                assert param.endswith("int") and isinstance(arg, np.int32), (step.kernel, param, type(arg))


def test_numba_launches_pass_no_numpy_sizes():
    """numba kernels read sizes from shapes: a plan's numba launches carry no NumPy integers
    (those would be dropped on the GPU and leave a kernel one argument short)."""
    x = np.zeros((2, 2, 9, 9), np.float32)
    w = np.zeros((3, 2, 3, 3), np.float32)
    for v in K.VERSIONS:
        if v.numba:
            stride = 1 if v.label.startswith("v6") else 2                 # v6: stride 1 only
            launches, _ = v.launches("numba", np, x, w, stride=stride, padding="same")
            for step in launches:
                assert not any(isinstance(a, np.integer) for a in step.args), (v.label, step.kernel)


# --- v6h: v6 with 16-bit storage ------------------------------------------------------------------
@pytest.mark.parametrize("storage", K.STORAGES)
def test_v6h_stores_v6s_sum_rounded_to_16_bits(storage):
    """On the PTX engine (NVRTC's PTX of conv.cu): v6h's y is v6 FP32's y on the same 16-bit
    inputs, rounded to nearest even in 16 bits, bit for bit; the storage changes nothing else."""
    from simtlab import cuda_c_kernels as CC
    from simtlab.versions import find

    try:
        CC.nvrtc_version()
    except CC.CompilerMissing as why:
        pytest.skip(f"NVRTC is not installed ({why})")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 1, 13, 15)).astype(np.float32)
    w = rng.standard_normal((4, 1, 7, 7)).astype(np.float32)
    x16 = K.from_storage(K.to_storage(x, storage), storage).astype(np.float32)      # exact in float32
    y32, _ = CC.emulate_version("conv", find(K.VERSIONS, "v6 image per block"), x16, w, trace=False, max_blocks=2)
    y16, _ = CC.emulate_version("conv", find(K.VERSIONS, f"v6h {storage.upper()} storage"), x, w,
                                trace=False, max_blocks=2)
    assert y16.dtype == np.uint16
    np.testing.assert_array_equal(y16, K.to_storage(y32, storage))


@pytest.mark.parametrize("storage", K.STORAGES)
def test_storage_error_bound_covers_the_rounding_and_catches_a_missing_tap(storage):
    """The bound holds for the exact worst ingredients (x rounded to 16 bits, the float64 sum
    rounded to 16 bits) and is smaller than leaving out one tap of the window (inputs in [1, 1.5):
    each tap is at least 1/2.25 of the mean tap; BF16's bound is about 2^-7 of the 49 taps' sum)."""
    rng = np.random.default_rng(6)
    x = rng.random((2, 1, 12, 12), dtype=np.float32) * np.float32(0.5) + np.float32(1)
    w = rng.random((4, 1, 7, 7), dtype=np.float32) * np.float32(0.5) + np.float32(1)
    exact = K.conv2d_float64(x, w)
    x16 = K.from_storage(K.to_storage(x, storage), storage)
    y16 = K.from_storage(K.to_storage(K.conv2d_float64(x16, w).astype(np.float32), storage), storage)
    bound = K.storage_error_bound(x, w, storage)
    assert (np.abs(y16 - exact) <= bound).all()
    w_missing = w.copy()
    w_missing[:, :, 3, 3] = 0                                   # one tap of 49 skipped
    assert (np.abs(K.conv2d_float64(x, w_missing) - exact) > bound).all()


def test_v6h_refuses_a_tile_it_is_not_instantiated_for():
    from simtlab.versions import find

    x = np.zeros((1, 1, 86, 86), np.float32)
    w = np.zeros((4, 1, 7, 7), np.float32)
    v = find(K.VERSIONS, "v6h FP16 storage")
    with pytest.raises(ValueError, match="default tile"):
        v.launches("cuda-c", np, x, w, tile=K.V6_TILES[(1, 4, 7)][1])
    with pytest.raises(ValueError, match="CUDA C"):
        v.launches("numba", np, x, w)
