"""PTX's floating-point arithmetic, exactly, on NumPy vectors.

- ``.rn`` add/sub/mul/div/sqrt of float32 and float64: NumPy's own operations in the
  operands' type (IEEE 754 round-to-nearest-even, like the GPU).
- ``fma``/``mad`` of float32, any rounding mode: the product of two float32 is exact in
  float64; the sum with ``c`` is made exact as a float64 pair (TwoSum) and rounded to odd
  (the last bit set when anything was dropped), which rounds correctly to float32 afterwards
  in any mode (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved
  algorithms using rounding to odd", IEEE TC 2008). ``.rn`` takes the vector engine's faster
  ``fma_lanes``: the float64 sum rounded straight to float32, rounded to odd first only on
  the lanes where that could round twice (halfway cases, subnormals): the same bits.
- float32 add/sub/mul with ``.rz``/``.rm``/``.rp``: the same exact pair, rounded by the mode.
- ``fma`` of float64: the emulator's one exact float64 fma for lane vectors
  (``simtlab/emulator/intrinsics.py``: Dekker's product and a sum rounded to odd), which
  ``cuda.fma`` and numba's contracted sums use too.
- ``.ftz``: subnormal inputs and results become zeros of the same sign; ``.sat``: clamped to
  [0, 1], NaN to 0.
"""

from __future__ import annotations

import numpy as np

from ..intrinsics import fma_lanes

FLOAT32 = np.dtype(np.float32)

F32_TINY = np.float32(np.finfo(np.float32).tiny)


def two_sum(a, b):
    """``(s, e)`` with ``s = fl(a + b)`` and ``a + b = s + e`` exactly (float64, no overflow)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def round_to_odd(s, e):
    """The float64 nearest ``s + e`` toward zero, its last bit set when ``e != 0``."""
    s = np.asarray(s, np.float64)
    e = np.asarray(e, np.float64)
    inexact = (e != 0) & np.isfinite(s)
    # |s| rounded up past the exact value: step one ulp back toward zero first
    overshoot = inexact & ((s > 0) & (e < 0) | (s < 0) & (e > 0))
    rz = np.where(overshoot, np.nextafter(s, 0.0), s)
    bits = rz.view(np.int64) | np.where(inexact, 1, 0).astype(np.int64)
    return bits.view(np.float64)


def to_f32(x, mode: str = "rn"):
    """float64 -> float32 rounded by ``mode`` ("rn", "rz", "rm", "rp")."""
    x = np.asarray(x, np.float64)
    y = x.astype(np.float32)
    if mode == "rn":
        return y
    back = y.astype(np.float64)
    finite = np.isfinite(x)
    if mode == "rz":
        fix = finite & (np.abs(back) > np.abs(x))
        target = np.float32(0)
        y = np.where(fix, np.nextafter(y, target * np.ones_like(y)), y)
        return y.astype(np.float32)
    if mode == "rm":
        fix = finite & (back > x)
        return np.where(fix, np.nextafter(y, np.float32(-np.inf)), y).astype(np.float32)
    if mode == "rp":
        fix = finite & (back < x)
        return np.where(fix, np.nextafter(y, np.float32(np.inf)), y).astype(np.float32)
    raise ValueError(mode)


def ftz32(x):
    """Subnormal float32 values to zero of the same sign."""
    x = np.asarray(x, np.float32)
    return np.where(np.abs(x) < F32_TINY, np.copysign(np.float32(0), x), x).astype(np.float32)


def saturate(x):
    """Clamp to [0, 1]; NaN gives 0 (PTX ``.sat``)."""
    return np.where(np.isnan(x), 0, np.clip(x, 0, 1)).astype(x.dtype)


def fma_f32(a, b, c, mode: str = "rn"):
    if mode == "rn":                        # the vector engine's one-pass rounding (same bits)
        return fma_lanes(*(np.asarray(v, np.float32) for v in (a, b, c)), FLOAT32)
    a, b, c = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b, c))
    p = a * b                               # exact: 24 x 24 bits fit in 53
    s, e = two_sum(p, c)
    special = ~np.isfinite(s)
    r = to_f32(round_to_odd(s, e), mode)
    if special.any():                       # inf/nan: IEEE's own rules
        r = np.where(special, (a * b + c).astype(np.float32), r)
    return r.astype(np.float32)


def add_f32(a, b, mode: str = "rn"):
    if mode == "rn":                        # IEEE float32 addition: one rounding, as the GPU's
        return np.add(a, b, dtype=np.float32)
    a, b = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b))
    s, e = two_sum(a, b)
    return to_f32(round_to_odd(s, e), mode)


def mul_f32(a, b, mode: str = "rn"):
    if mode == "rn":
        return np.multiply(a, b, dtype=np.float32)
    a, b = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b))
    return to_f32(a * b, mode)               # exact product: one rounding


def fma_f64(a, b, c):
    """Exact fused multiply-add of float64, rounded once to nearest even."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, c)))
    return fma_lanes(a, b, c, np.dtype(np.float64))
