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
- ``.f16``/``.bf16`` (``half_to_f64``, ``f64_to_half``): exact operands, one rounding to nearest
  even of the exact result (through rounding to odd), NaN results the canonical 0x7FFF.

The ``.approx`` functions (``approx_f32``) are not the GPU's bits: the GPU's MUFU unit computes
its own approximations, which PTX does not specify beyond an error bound. The engine computes
each with NumPy in float64 (``np.exp2``, ``np.log2``, ``np.sin``, ``np.cos``, ``np.tanh``,
``1/np.sqrt``, ``1/x``, ``np.sqrt``: within 1 float64 ulp of the exact value) and rounds that
to float32 once (to nearest even), after flushing subnormal inputs with ``.ftz`` and before
flushing a subnormal result. Its error is thus at most 0.5 float32 ulp plus 2^-29 ulp (the
float64 error): correctly rounded except where the exact value lies within 2^-29 ulp of a
halfway point. The PTX ISA's bounds (9.7.3, "Floating Point Instructions"), all of which
this meets, and which ``tests/test_ptx_features.py`` checks on many inputs against references
computed with Python's ``decimal`` to 60 digits (``tests/test_ptx_engine_gpu.py`` checks the
GPU's own results against the same bounds):

=====================  =====================================================================
``ex2.approx.f32``     2 ulp over the full range (2^x; ``.ftz`` forms likewise)
``lg2.approx.f32``     absolute error 2^-22 for x in [0.5, 2], else relative 2^-22 (ISA:
                       "2^-22.6 for mantissa")
``rsqrt.approx.f32``   relative error 2^-22.9 over the full range
``sqrt.approx.f32``    relative error 2^-23 over the full range
``rcp.approx.f32``     1 ulp over the full range
``sin/cos.approx``     absolute error 2^-20.9 over [-pi, pi]; outside it the GPU's error grows
                       with |x| (the H100 gave 4.7e-6 = 2^-17.7 at x = 88.8 and 3.4e-5 at
                       x = -281, tests/test_ptx_engine_gpu.py), while the engine stays exact
``tanh.approx.f32``    relative error 2^-11 (about; ISA: "2^-10.987")
``div.full.f32``       2 ulp over the full range
``div.approx.f32``     2 ulp for |b| in [2^-126, 2^126]; for |b| above 2^126 the ISA defines
                       the result as 0 (NaN when a is infinite), which the engine gives too
=====================  =====================================================================

``rcp.rn``/``sqrt.rn``/``div.rn`` (float32 and float64) are IEEE operations, correctly rounded
in NumPy as on the GPU: these are bit-exact.
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


# the .approx functions: float64 NumPy, rounded once to float32 (see the module's docstring)
APPROX = {"ex2": np.exp2, "lg2": np.log2, "rsqrt": lambda x: 1.0 / np.sqrt(x),
          "sin": np.sin, "cos": np.cos, "rcp": lambda x: 1.0 / x, "sqrt": np.sqrt,
          "tanh": np.tanh}


def approx_f32(kind: str, x, ftz: bool = False):
    """``kind.approx.f32`` (``.ftz``: subnormal input and result flushed): float64 value
    rounded to float32."""
    x = np.asarray(x, np.float32)
    if ftz:
        x = ftz32(x)
    r = APPROX[kind](x.astype(np.float64)).astype(np.float32)
    return ftz32(r) if ftz else r


def div_approx_f32(a, b, kind: str = "approx", ftz: bool = False):
    """``div.approx.f32`` / ``div.full.f32``: the quotient rounded once to float32 (IEEE's
    division in float32); ``div.approx`` gives 0 (NaN for an infinite ``a``) when |b| is above
    2^126, as the ISA defines it."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    if ftz:
        a, b = ftz32(a), ftz32(b)
    q = np.divide(a, b, dtype=np.float32)
    if kind == "approx":
        huge = np.abs(b) > np.float32(2.0 ** 126)
        q = np.where(huge & np.isfinite(b), np.where(np.isinf(a), np.float32(np.nan),
                                                     np.float32(0)), q).astype(np.float32)
    return ftz32(q) if ftz else q
