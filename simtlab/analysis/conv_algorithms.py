"""Chapter 7's napkin math for the algorithms a library may pick instead of a direct or GEMM
convolution, and for 16-bit storage.

- **Winograd** F(m x m, r x r) (Lavin and Gray, 2016): an m x m tile of outputs of an r x r filter
  from an (m + r - 1)^2 tile of inputs, with (m + r - 1)^2 multiplies per tile and channel instead of
  m^2 r^2. :func:`winograd_matrices` builds the transforms exactly (Cook-Toom: evaluation at
  m + r - 2 points and infinity, ``fractions.Fraction``), :func:`winograd_correlate` applies them in
  any float type, :func:`winograd_multiplies` counts the products, :func:`winograd_layer_flops` the
  whole layer with the transforms (their additions and multiplies counted from the matrices), and
  :func:`winograd_error` measures in float32 how the rounding error grows with the tile.
- **FFT**: :func:`fft_layer_flops`, the textbook cost model (a real 2-D FFT of n x n points
  ~ 2.5 n^2 log2(n^2) FLOPs, the pointwise complex products, the inverse FFTs).
- **Storage**: :func:`storage_floors`, a layer's memory and FP32-compute floors with 4- or 2-byte
  storage (FP16/BF16 storage, FP32 accumulation).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = ["winograd_points", "winograd_matrices", "winograd_correlate", "winograd_multiplies",
           "transform_flops", "winograd_layer_flops", "winograd_error", "fft_layer_flops",
           "direct_layer_flops", "storage_floors", "H100_FP32_FLOPS", "H100_HBM_BYTES_PER_S"]

#: the H100 SXM's FP32 peak (132 SMs x 128 lanes x 2 FLOPs x 1.98 GHz) and HBM3 bandwidth
H100_FP32_FLOPS = 66.9e12
H100_HBM_BYTES_PER_S = 3.35e12


# ------------------------------------------------------------------------------------------
# Winograd's minimal filtering
# ------------------------------------------------------------------------------------------
def winograd_points(count: int) -> list[Fraction]:
    """The first ``count`` finite interpolation points in the usual order: 0, 1, -1, 2, -2, 1/2,
    -1/2, 3, -3, 1/3, -1/3, ... (small numbers and their inverses keep the transforms small)."""
    points = [Fraction(0)]
    n = 1
    while len(points) < count:
        candidates = [Fraction(n), Fraction(-n)] + ([Fraction(1, n), Fraction(-1, n)] if n > 1 else [])
        points += [p for p in candidates if p not in points]
        n += 1
    return points[:count]


def _inverse(matrix: list[list[Fraction]]) -> list[list[Fraction]]:
    """Gauss-Jordan inverse in exact arithmetic."""
    n = len(matrix)
    aug = [list(row) + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = next(r for r in range(col, n) if aug[r][col] != 0)
        aug[col], aug[pivot] = aug[pivot], aug[col]
        scale = aug[col][col]
        aug[col] = [v / scale for v in aug[col]]
        for r in range(n):
            if r != col and aug[r][col] != 0:
                factor = aug[r][col]
                aug[r] = [a - factor * b for a, b in zip(aug[r], aug[col])]
    return [row[n:] for row in aug]


def _evaluation(points, degree: int) -> list[list[Fraction]]:
    """Rows [1, p, ..., p^(degree-1)] for each finite point, then [0, ..., 0, 1] for infinity
    (the leading coefficient)."""
    rows = [[p ** j for j in range(degree)] for p in points]
    rows.append([Fraction(0)] * (degree - 1) + [Fraction(1)])
    return rows


def winograd_matrices(m: int, r: int, points=None):
    """``(AT, G, BT)`` of F(m, r), exact (lists of Fraction rows): for inputs d (m + r - 1) and a
    filter g (r), the m outputs y_i = sum_k d[i + k] g[k] are ``AT @ ((G @ g) * (BT @ d))``; in 2-D,
    ``AT @ ((G @ g @ G.T) * (BT @ d @ BT.T)) @ AT.T``.

    Cook-Toom: the linear convolution of polynomials of m and r coefficients is fixed by its
    values at alpha = m + r - 1 points (alpha - 1 finite ones and infinity); the correlation is its
    transpose. BT's rows are scaled to integers and G's by the inverse scale."""
    if m < 1 or r < 1:
        raise ValueError(f"F(m, r) needs m, r >= 1, got m={m}, r={r}")
    alpha = m + r - 1
    pts = list(points) if points is not None else winograd_points(alpha - 1)
    if len(pts) != alpha - 1 or len(set(pts)) != len(pts):
        raise ValueError(f"F({m}, {r}) needs {alpha - 1} distinct finite points, got {pts}")
    e_m = _evaluation(pts, m)                         # alpha x m
    e_r = _evaluation(pts, r)                         # alpha x r
    vand = _evaluation(pts, alpha)                    # alpha x alpha
    vinv = _inverse(vand)
    bt = [[vinv[j][i] for j in range(alpha)] for i in range(alpha)]     # V^-T
    at = [[e_m[j][i] for j in range(alpha)] for i in range(m)]          # E_m^T
    g = [list(row) for row in e_r]
    for i, row in enumerate(bt):                      # move each row's denominators into G
        scale = math.lcm(*(v.denominator for v in row))
        bt[i] = [v * scale for v in row]
        g[i] = [v / scale for v in g[i]]
    return at, g, bt


def _as(matrix, dtype) -> np.ndarray:
    return np.array([[float(v) for v in row] for row in matrix], dtype=dtype)


def winograd_correlate(d, g, m: int, points=None, dtype=np.float32) -> np.ndarray:
    """One 2-D tile: the m x m outputs of the (m + r - 1)^2 input tile ``d`` correlated with the
    r x r filter ``g``, computed with F(m x m, r x r) in ``dtype`` (every operand and product
    rounded to it)."""
    g = np.asarray(g)
    r = g.shape[0]
    at, gm, bt = (_as(x, dtype) for x in winograd_matrices(m, r, points))
    u = gm @ g.astype(dtype) @ gm.T                   # the filter's transform (once per filter)
    v = bt @ np.asarray(d, dtype) @ bt.T              # the input tile's transform
    return at @ (u * v) @ at.T


def winograd_multiplies(m: int, r: int) -> dict:
    """Multiplies per output of F(m x m, r x r) against the direct r^2, and the ratio."""
    alpha = m + r - 1
    per_output = Fraction(alpha * alpha, m * m)
    return {"m": m, "r": r, "alpha": alpha, "tile_products": alpha * alpha, "per_output": float(per_output),
            "direct_per_output": r * r, "saving": float(Fraction(r * r) / per_output)}


def _product_flops(matrix, columns: int) -> int:
    """FLOPs of ``matrix @ X`` for X with ``columns`` columns, from the matrix's entries: per
    column, a row of n nonzeros costs n - 1 additions, plus a multiply per entry other than +-1."""
    adds = sum(max(sum(v != 0 for v in row) - 1, 0) for row in matrix)
    muls = sum(sum(v not in (0, 1, -1) for v in row) for row in matrix)
    return columns * (adds + muls)


def transform_flops(m: int, r: int, points=None) -> dict:
    """FLOPs of F(m x m, r x r)'s three transforms for one tile, counted from the matrices:
    ``input`` (BT d BT^T, per tile and channel), ``output`` (AT M AT^T, per tile and filter),
    ``filter`` (G g G^T, per filter and channel, once per layer)."""
    at, g, bt = winograd_matrices(m, r, points)
    alpha = m + r - 1
    return {"input": 2 * _product_flops(bt, alpha),
            "output": _product_flops(at, alpha) + _product_flops(at, m),
            "filter": _product_flops(g, r) + _product_flops(g, alpha)}


def direct_layer_flops(b: int, c: int, m: int, ho: int, wo: int, k: int) -> int:
    """A direct (or GEMM) convolution: a multiply and an add per weight per output."""
    return 2 * b * m * ho * wo * c * k * k


def winograd_layer_flops(b: int, c: int, m: int, ho: int, wo: int, r: int, tile: int, points=None) -> dict:
    """A 'valid' layer (``b`` images, ``c`` -> ``m`` maps, ``ho`` x ``wo`` outputs, r x r filters)
    with F(tile x tile, r x r): FLOPs of the input transforms (per tile and channel), the products
    (a multiply-add per transformed element, channel and filter), the output transforms (per tile
    and filter) and the filter transforms (once), against the direct convolution."""
    alpha = tile + r - 1
    tiles = b * math.ceil(ho / tile) * math.ceil(wo / tile)
    t = transform_flops(tile, r, points)
    parts = {"input transform": tiles * c * t["input"],
             "products": 2 * tiles * c * m * alpha * alpha,
             "output transform": tiles * m * t["output"],
             "filter transform": m * c * t["filter"]}
    total = sum(parts.values())
    direct = direct_layer_flops(b, c, m, ho, wo, r)
    return {"tile": tile, "r": r, "alpha": alpha, "tiles": tiles, "parts": parts, "total": total,
            "direct": direct, "saving": direct / total}


def winograd_error(m: int, r: int, trials: int = 200, dtype=np.float32, seed: int = 0) -> float:
    """The largest error of F(m x m, r x r) in ``dtype`` over ``trials`` random tiles (inputs and
    weights uniform in [-1, 1)), relative to the largest output, against the float64 correlation:
    how the rounding error grows with the tile."""
    rng = np.random.default_rng(seed)
    alpha = m + r - 1
    worst = 0.0
    for _ in range(trials):
        d = rng.uniform(-1, 1, (alpha, alpha)).astype(dtype)
        g = rng.uniform(-1, 1, (r, r)).astype(dtype)
        want = np.array([[np.sum(d[i:i + r, j:j + r].astype(np.float64) * g.astype(np.float64))
                          for j in range(m)] for i in range(m)])
        got = winograd_correlate(d, g, m, dtype=dtype).astype(np.float64)
        worst = max(worst, float(np.abs(got - want).max() / np.abs(want).max()))
    return worst


# ------------------------------------------------------------------------------------------
# FFT
# ------------------------------------------------------------------------------------------
def fft_layer_flops(b: int, c: int, m: int, h: int, w: int, k: int, n: int | None = None) -> dict:
    """The textbook cost of a 'valid' convolution by FFT: every image channel and every filter
    transformed on an n x n grid (n: the next power of two >= max(H, W), so that the circular
    correlation leaves the valid outputs intact), a complex multiply-add per frequency of the
    half spectrum (n (n/2 + 1) of them) per channel and filter, and an inverse FFT per output map.
    A real 2-D FFT of n x n points counts 2.5 n^2 log2(n^2) FLOPs (half the complex 5 N log2 N).
    ``spectrum_bytes``: the complex64 spectra of one batch's inputs and outputs (what an FFT
    convolution writes and reads besides x and y, unless it keeps them on chip)."""
    n = n or 1 << (max(h, w) - 1).bit_length()
    if n < max(h, w):
        raise ValueError(f"an FFT of {n} points cannot hold a {h}x{w} input")
    real_fft = 2.5 * n * n * math.log2(n * n)
    freqs = n * (n // 2 + 1)
    ho, wo = h - k + 1, w - k + 1
    parts = {"input FFTs": b * c * real_fft, "products": b * c * m * freqs * 8,
             "inverse FFTs": b * m * real_fft, "filter FFTs": m * c * real_fft}
    total = sum(parts.values())
    direct = direct_layer_flops(b, c, m, ho, wo, k)
    return {"n": n, "parts": parts, "total": total, "direct": direct, "saving": direct / total,
            "spectrum_bytes": b * (c + m) * freqs * 8}


# ------------------------------------------------------------------------------------------
# 16-bit storage, 32-bit arithmetic
# ------------------------------------------------------------------------------------------
def storage_floors(b: int, c: int, h: int, w: int, m: int, k: int, itemsize: int = 4,
                   flops_per_s: float = H100_FP32_FLOPS, bytes_per_s: float = H100_HBM_BYTES_PER_S) -> dict:
    """A 'valid' stride-1 layer whose input, weights and output cross DRAM once in ``itemsize``
    bytes (4: FP32, 2: FP16/BF16 storage) while the arithmetic stays FP32: ``bytes``, ``flops``,
    the memory floor and the compute floor in seconds, and the larger (the roofline's time)."""
    ho, wo = h - k + 1, w - k + 1
    nbytes = (b * c * h * w + m * c * k * k + b * m * ho * wo) * itemsize
    flops = direct_layer_flops(b, c, m, ho, wo, k)
    memory_s, compute_s = nbytes / bytes_per_s, flops / flops_per_s
    return {"itemsize": itemsize, "bytes": nbytes, "flops": flops, "memory_s": memory_s,
            "compute_s": compute_s, "floor_s": max(memory_s, compute_s),
            "bound": "memory" if memory_s > compute_s else "compute"}
