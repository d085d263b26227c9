"""PTX's floating-point arithmetic, exactly, on NumPy vectors.

- ``.rn`` add/sub/mul/div/sqrt of float32 and float64: NumPy's own operations (IEEE 754
  round-to-nearest-even, like the GPU).
- ``fma``/``mad`` of float32, any rounding mode: the product of two float32 is exact in
  float64; the sum with ``c`` is made exact as a float64 pair (TwoSum) and rounded to odd
  (the last bit set when anything was dropped), which rounds correctly to float32 afterwards
  in any mode (Boldo and Melquiond, "Emulation of FMA and correctly rounded sums: proved
  algorithms using rounding to odd", IEEE TC 2008).
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
    a, b, c = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b, c))
    p = a * b                               # exact: 24 x 24 bits fit in 53
    s, e = two_sum(p, c)
    special = ~np.isfinite(s)
    r = to_f32(round_to_odd(s, e), mode)
    if special.any():                       # inf/nan: IEEE's own rules
        r = np.where(special, (a * b + c).astype(np.float32), r)
    return r.astype(np.float32)


def add_f32(a, b, mode: str = "rn"):
    a, b = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b))
    if mode == "rn":
        return (a + b).astype(np.float32)
    s, e = two_sum(a, b)
    return to_f32(round_to_odd(s, e), mode)


def mul_f32(a, b, mode: str = "rn"):
    a, b = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b))
    return to_f32(a * b, mode)               # exact product: one rounding


def fma_f64(a, b, c):
    """Exact fused multiply-add of float64, rounded once to nearest even."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, c)))
    return fma_lanes(a, b, c, np.dtype(np.float64))


# --- half precision (.f16, .bf16): values travel as their 16 bits in .b16 registers ----------------
F16_NAN = np.uint16(0x7FFF)          # the canonical NaN PTX gives for .f16 and .bf16 results
F16_TINY = 2.0 ** -14                # smallest normal .f16


def half_to_f64(bits, t: str):
    """The exact float64 value of ``.f16``/``.bf16`` bits."""
    bits = np.asarray(bits).astype(np.uint16)
    if t == "f16":
        return bits.view(np.float16).astype(np.float64)
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)


def f64_to_half(s, t: str, e=None):
    """``s + e`` (an exact float64 pair; ``e`` None: 0) rounded once to nearest even as
    ``.f16``/``.bf16`` bits; a NaN is the canonical 0x7FFF. Correct rounding from rounding to
    odd: the pair rounded to odd in float64 (53 bits) and, for bf16, to odd in float32 (24
    bits) keeps a sticky bit below the 11 or 8 bits kept (Boldo and Melquiond), so the final
    round to nearest even is the one rounding of the exact value."""
    s = np.asarray(s, np.float64)
    x = s if e is None else round_to_odd(s, e)
    if t == "f16":
        out = x.astype(np.float16).view(np.uint16)
    else:
        y = to_f32(x, "rz")
        inexact = np.isfinite(x) & (y.astype(np.float64) != x)
        bits = y.view(np.uint32) | inexact.astype(np.uint32)
        bits = bits.astype(np.uint64)
        rounded = (bits + np.uint64(0x7FFF) + ((bits >> np.uint64(16)) & np.uint64(1))) \
            >> np.uint64(16)
        out = rounded.astype(np.uint16)
    return np.where(np.isnan(x), F16_NAN, out).astype(np.uint16)


def ftz_half(x, t: str):
    """``.ftz`` for ``.f16`` values (float64): subnormals to zeros of the same sign."""
    if t != "f16":
        return x
    return np.where(np.abs(x) < F16_TINY, np.copysign(0.0, x), x)
