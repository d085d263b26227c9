"""Chapter 7's napkin math for Winograd, FFT and 16-bit storage, against exact arithmetic and
counts derived by hand (Lavin and Gray 2016 give the F(2x2, 3x3) figures)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from simtlab.analysis import conv_algorithms as A


def _exact_correlation(d, g, m):
    r = len(g)
    return [sum(d[i + k] * g[k] for k in range(r)) for i in range(m)]


def _apply(matrix, vector):
    return [sum(a * b for a, b in zip(row, vector)) for row in matrix]


@pytest.mark.parametrize("m, r", [(2, 3), (4, 3), (6, 3), (2, 5), (2, 7), (4, 7), (1, 1), (3, 2)])
def test_winograd_transforms_compute_the_correlation_exactly(m, r):
    """AT ((G g) * (BT d)) is the correlation y_i = sum_k d[i+k] g[k], in exact arithmetic."""
    at, g_mat, bt = A.winograd_matrices(m, r)
    rng = np.random.default_rng(m * 10 + r)
    for _ in range(3):
        d = [Fraction(int(v)) for v in rng.integers(-9, 10, m + r - 1)]
        g = [Fraction(int(v)) for v in rng.integers(-9, 10, r)]
        products = [a * b for a, b in zip(_apply(g_mat, g), _apply(bt, d))]
        assert _apply(at, products) == _exact_correlation(d, g, m)


def test_f2x3_has_the_published_transforms():
    """Lavin and Gray's F(2, 3): BT = [[1,0,-1,0],[0,1,1,0],[0,-1,1,0],[0,1,0,-1]], G's middle rows
    halves, AT = [[1,1,1,0],[0,1,-1,-1]] (here the point at infinity has the opposite sign: the
    last row of BT and the last column of AT are negated, which leaves every output unchanged)."""
    at, g, bt = A.winograd_matrices(2, 3)
    assert bt == [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, -1, 0, 1]]
    assert at == [[1, 1, 1, 0], [0, 1, -1, 1]]
    half = Fraction(1, 2)
    assert g == [[1, 0, 0], [half, half, half], [half, -half, half], [0, 0, 1]]


def test_2d_winograd_tile_matches_the_direct_correlation_in_float64():
    rng = np.random.default_rng(1)
    d, g = rng.standard_normal((6, 6)), rng.standard_normal((3, 3))
    want = np.array([[np.sum(d[i:i + 3, j:j + 3] * g) for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(A.winograd_correlate(d, g, 4, dtype=np.float64), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("m, r, tile_products, saving", [
    (2, 3, 16, 36 / 16),            # 4 outputs: 16 products instead of 4 * 9 = 36: 2.25x
    (4, 3, 36, 144 / 36),           # 16 outputs: 36 instead of 144: 4x
    (2, 7, 64, 196 / 64),           # 4 outputs of a 7x7 filter: 64 instead of 196
    (6, 3, 64, 324 / 64),
])
def test_winograd_multiplies_per_output(m, r, tile_products, saving):
    got = A.winograd_multiplies(m, r)
    assert got["tile_products"] == tile_products
    assert got["direct_per_output"] == r * r
    assert got["saving"] == pytest.approx(saving)


def test_f2x3_transform_costs_are_lavin_and_grays():
    """32 additions for the data transform, 24 for the inverse (Lavin and Gray, section 4.1)."""
    t = A.transform_flops(2, 3)
    assert t["input"] == 32 and t["output"] == 24


def test_winograd_on_lenet_c1_does_more_work_than_the_direct_convolution():
    """C1 with F(2x2, 7x7): 1000 * 40 * 40 tiles; products 2 * tiles * C * M * 8^2 = 819.2 M FLOPs;
    direct 2 * 1000 * 4 * 80 * 80 * 49 = 2508.8 M; one channel and four filters cannot amortise the
    transforms, which cost more than the products saved."""
    got = A.winograd_layer_flops(1000, 1, 4, 80, 80, 7, 2)
    assert got["tiles"] == 1_600_000
    assert got["parts"]["products"] == 819_200_000
    assert got["direct"] == 2_508_800_000
    assert got["saving"] < 1
    wide = A.winograd_layer_flops(1000, 64, 64, 56, 56, 3, 4)     # a 3x3 layer with 64 channels
    assert wide["saving"] > 3


def test_winograd_error_grows_with_the_tile():
    errors = {mr: A.winograd_error(*mr, trials=40) for mr in [(2, 3), (4, 3), (6, 3), (4, 7)]}
    assert errors[(2, 3)] < 1e-6                    # a few float32 ulps (2^-23 = 1.2e-7) on 9 products
    assert errors[(2, 3)] < errors[(4, 3)] < errors[(6, 3)] < errors[(4, 7)]
    assert errors[(4, 7)] > 30 * errors[(2, 3)]


def test_fft_model_of_lenet_c1():
    """86 x 86 inputs on a 128 x 128 grid; 4 filters x 128 * 65 half-spectrum frequencies x 8 FLOPs
    per complex multiply-add x 1000 images = 266,240,000 FLOPs of products; a real 128 x 128 FFT
    2.5 * 16384 * 14 = 573,440 FLOPs."""
    got = A.fft_layer_flops(1000, 1, 4, 86, 86, 7)
    assert got["n"] == 128
    assert got["parts"]["products"] == 266_240_000
    assert got["parts"]["input FFTs"] == 1000 * 573_440
    assert got["parts"]["inverse FFTs"] == 4000 * 573_440


def test_storage_floors_of_lenet_c1_at_batch_1000():
    """FP32: 1000*86*86 + 4*49 + 1000*4*80*80 floats = 131,984,784 bytes, 39.4 us at 3.35 TB/s, against
    2,508,800,000 FLOPs in 37.5 us at 66.9 TFLOP/s: memory-bound by 5 %. FP16 storage halves the bytes
    (19.7 us) and the FP32 arithmetic becomes the floor."""
    fp32, fp16 = A.storage_floors(1000, 1, 86, 86, 4, 7), A.storage_floors(1000, 1, 86, 86, 4, 7, itemsize=2)
    assert fp32["bytes"] == 131_984_784 and fp16["bytes"] == 131_984_784 // 2
    assert fp32["memory_s"] == pytest.approx(131_984_784 / 3.35e12)
    assert fp32["compute_s"] == pytest.approx(2_508_800_000 / 66.9e12)
    assert fp32["bound"] == "memory" and fp16["bound"] == "compute"
    assert fp16["floor_s"] == fp32["compute_s"]
