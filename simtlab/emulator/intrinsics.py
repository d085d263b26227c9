"""numba-cuda's bit intrinsics and fused multiply-add, for one value (greenlet engine) and for
lane vectors (vector engine): the same results, in the types numba-cuda gives them.

Bit intrinsics work at the argument's width, as numba-cuda types it (a Python int is int64, a
bool counts as numba's 8-bit popc/clz argument); probed on an H100 in
benchmarks/results/numerics_h100.json:

- ``popc(x)``, ``clz(x)``: the argument's type (``popc(int32 -1)`` is 32, ``clz(int64 1)`` 63);
  numba types ``popc``/``clz`` of a bool as int8;
- ``ffs(x)``: uint32 for every width, 1 + the index of the lowest set bit, 0 for 0
  (``ffs(int64 2**40)`` is 41); numba-cuda does not compile it for 8- or 16-bit integers;
- ``brev(x)``: a uint64 argument is reversed in 64 bits (uint64 result); every other integer
  is converted to uint32 first (its low 32 bits) and reversed in 32 bits (uint32 result), so
  ``brev(int64 1)`` is 2**31.

``fma(a, b, c)``: ``a * b + c`` with one rounding, in float32 when all three are float32, else
float64 (numba's types). Python 3.11 has no ``math.fma``; both widths are computed exactly:

- float32: the float64 product of two float32 values is exact; the float64 sum is rounded to
  odd (its last bit set when the sum was inexact), then to float32, which rounds correctly
  because float64 carries more than 2 * 24 + 2 bits (Boldo and Melquiond, "Emulation of FMA and
  correctly rounded sums: proved algorithms using rounding to odd", IEEE TC 2008);
- float64: the product split exactly into a sum of two float64 (Dekker's product), the sum
  of its low part and ``c``'s error rounded to odd, the last addition rounded to nearest (the
  same paper's algorithm). Where that algorithm's conditions fail (a product near overflow or
  below 2**-969, non-finite values), the value comes from exact rational arithmetic.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

_INT_DTYPES = {np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                                     np.uint8, np.uint16, np.uint32, np.uint64)}
INT64, UINT64, UINT32, INT8 = (np.dtype(t) for t in (np.int64, np.uint64, np.uint32, np.int8))
BIT_INTRINSICS = ("popc", "clz", "ffs", "brev")


class IntrinsicTypeError(TypeError):
    """numba-cuda does not compile this intrinsic for the argument's type."""


def argument_dtype(value) -> np.dtype:
    """The integer type numba-cuda gives a bit intrinsic's argument."""
    cls = value.__class__
    if cls is bool or cls is np.bool_:
        return np.dtype(np.bool_)
    if cls is int:              # a Python int is int64; a literal past int64 is uint64
        return UINT64 if value > 0x7FFFFFFFFFFFFFFF else INT64
    dtype = getattr(value, "dtype", None)
    if dtype is not None and (dtype in _INT_DTYPES or dtype.kind == "b"):
        return dtype
    raise IntrinsicTypeError(f"an integer argument (numba-cuda does not compile it for "
                             f"{type(value).__name__})")


def result_dtype(name: str, dtype: np.dtype) -> np.dtype:
    """numba-cuda's result type of ``cuda.<name>`` for an argument of ``dtype``."""
    if name in ("popc", "clz"):
        return INT8 if dtype.kind == "b" else dtype
    if name == "ffs":
        if dtype.kind == "b" or dtype.itemsize < 4:
            raise IntrinsicTypeError("a 32- or 64-bit integer (numba-cuda does not compile "
                                     f"cuda.ffs of {dtype.name})")
        return UINT32
    return UINT64 if dtype == UINT64 else UINT32          # brev


def _width(name, dtype):
    """The bits the intrinsic looks at."""
    if name == "brev":
        return 64 if dtype == UINT64 else 32
    return 8 if dtype.kind == "b" else dtype.itemsize * 8


def bit_intrinsic(name: str, value):
    """``cuda.popc/clz/ffs/brev(value)`` for one value, typed as numba-cuda types it."""
    dtype = argument_dtype(value)
    out = result_dtype(name, dtype)
    bits = _width(name, dtype)
    u = int(value) & ((1 << bits) - 1)         # the argument's bit pattern at that width
    if name == "popc":
        r = u.bit_count()
    elif name == "clz":
        r = bits - u.bit_length()
    elif name == "ffs":
        r = (u & -u).bit_length()
    else:
        r = int(f"{u:0{bits}b}"[::-1], 2)
    return out.type(r)


# --- lane vectors -----------------------------------------------------------------------------
_REVERSED_BYTES = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], np.uint8)


def _bit_length(u: np.ndarray) -> np.ndarray:
    """Bits needed for each uint64 (0 for 0): set every bit below the highest, count them."""
    u = u.copy()
    for shift in (1, 2, 4, 8, 16, 32):
        u |= u >> np.uint64(shift)
    return np.bitwise_count(u).astype(np.int64)


def bit_intrinsic_lanes(name: str, values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``cuda.<name>`` of every lane's value (``values`` holds them as ``dtype``)."""
    out = result_dtype(name, dtype)
    bits = _width(name, dtype)
    u = values.astype(np.int64 if dtype.kind != "u" else np.uint64).view(np.uint64)
    if bits < 64:
        u = u & np.uint64((1 << bits) - 1)
    if name == "popc":
        r = np.bitwise_count(u)
    elif name == "clz":
        r = bits - _bit_length(u)
    elif name == "ffs":
        lowest = u & (~u + np.uint64(1))
        r = np.where(u == 0, 0, _bit_length(lowest))
    else:
        nbytes = bits // 8
        as_bytes = u.astype(f"<u{nbytes}").view(np.uint8).reshape(-1, nbytes)
        r = _REVERSED_BYTES[as_bytes[:, ::-1]].reshape(-1).view(f"<u{nbytes}")
    return r.astype(out)


# --- fused multiply-add -------------------------------------------------------------------------
FLOAT32, FLOAT64 = np.dtype(np.float32), np.dtype(np.float64)
_SPLIT = 134217729.0                  # 2**27 + 1: Veltkamp's split of a float64 into 26 + 27 bits


def fma_dtype(dtypes) -> np.dtype:
    """numba-cuda's type of ``cuda.fma`` (and of a contracted ``a * b + c``)."""
    return FLOAT32 if all(d == FLOAT32 for d in dtypes) else FLOAT64


def _round_to_odd_sum(x: float, y: float) -> float:
    """``x + y`` rounded to odd: the nearest float64 when exact, else the neighbour of the
    truncated sum whose last bit is 1 (for sums below 2**1020)."""
    s = x + y
    bb = s - x
    err = (x - (s - bb)) + (y - bb)       # TwoSum: x + y == s + err exactly
    if err == 0.0 or s - s != 0.0:        # exact, or not finite
        return s
    t = s * 3.0                           # Veltkamp's split at 52 bits: s - hi is its last bit
    if t - (t - s) != s:
        return s                          # already odd
    return math.nextafter(s, math.inf if err > 0 else -math.inf)


# a float32 -0.0 plus a Python float is that float rounded to float32 (NumPy's weak scalars,
# NEP 50), four times faster than np.float32(x); -0.0 keeps the sign of a zero
_NEG_ZERO32 = np.float32(-0.0)


def fma32(a: float, b: float, c: float):
    """float32 ``a * b + c`` with one rounding (a, b, c: float32 values as Python floats)."""
    return _NEG_ZERO32 + _round_to_odd_sum(a * b, c)     # the float64 product is exact


def _fma64_exact(a: float, b: float, c: float) -> float:
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return a * b + c                  # inf and nan: the same as one rounding
    return float(Fraction(a) * Fraction(b) + Fraction(c))


_TINY, _HUGE = 2.0 ** -969, 2.0 ** 995
_NEG_ZERO64 = np.float64(-0.0)        # plus a Python float: that float as a NumPy float64


def fma64(a: float, b: float, c: float):
    """float64 ``a * b + c`` with one rounding. Exact where no factor is near overflow and
    neither the product nor ``c`` is below 2**-969 (else from rationals): no split
    overflows, no error term underflows."""
    ph = a * b
    aph, ac = abs(ph), abs(c)
    if not (abs(a) < _HUGE and abs(b) < _HUGE and (_TINY < aph < _HUGE or ph == 0.0)
            and (_TINY < ac < _HUGE or c == 0.0)):
        return _NEG_ZERO64 + _fma64_exact(a, b, c)
    t = _SPLIT * a                        # Dekker's product: a * b == ph + pl exactly
    ah = t - (t - a)
    al = a - ah
    t = _SPLIT * b
    bh = t - (t - b)
    bl = b - bh
    pl = ((ah * bh - ph) + ah * bl + al * bh) + al * bl
    sh = c + ph
    bb = sh - c
    sl = (c - (sh - bb)) + (ph - bb)      # c + ph == sh + sl exactly
    return _NEG_ZERO64 + (sh + _round_to_odd_sum(sl, pl))


def fma_scalar(a, b, c):
    """``cuda.fma(a, b, c)`` for one value of each, typed as numba-cuda types it."""
    if fma_dtype((_dtype(a), _dtype(b), _dtype(c))) is FLOAT32:
        return fma32(float(a), float(b), float(c))
    return fma64(float(a), float(b), float(c))


def _dtype(v):
    return getattr(v, "dtype", None)


def _round_to_odd_sum_lanes(x, y):
    s = x + y
    bb = s - x
    err = (x - (s - bb)) + (y - bb)
    even = (s.view(np.int64) & 1) == 0
    nudge = (err != 0) & even & np.isfinite(s)
    if nudge.any():
        s[nudge] = np.nextafter(s[nudge], np.where(err[nudge] > 0, np.inf, -np.inf))
    return s


# A float64 holds 29 more mantissa bits than a float32: a float64 whose dropped bits are exactly
# 1 then 28 zeros lies halfway between two float32s
_F32_DROPPED, _F32_HALFWAY = (1 << 29) - 1, 1 << 28
_F32_BELOW_NORMAL = 2.0 ** -125          # float32 subnormals drop more bits than 29


def _sum_to_float32_lanes(x, y):
    """``x + y`` rounded once to float32, for float64 ``x`` (an exact product of two float32)
    and ``y``. Rounding to float64 first, then to float32, is wrong only when the float64 sum
    lands exactly halfway between two float32s (the exact sum lies between the two roundings
    otherwise, and a float64 sits on any boundary between them); those lanes, and float32's
    subnormal range, are rounded to odd first. One NumPy pass for nearly every lane: the
    tiled GEMM's fused `acc += a*b` spent half its untraced time in the full round to odd."""
    s = x + y
    # (a sum of 0 is exact: a float32 product and a float32 never underflow in float64)
    risky = ((s.view(np.int64) & _F32_DROPPED) == _F32_HALFWAY) | \
        ((np.abs(s) < _F32_BELOW_NORMAL) & (s != 0))
    if risky.any():
        lanes = np.flatnonzero(risky)
        s[lanes] = _round_to_odd_sum_lanes(x[lanes], y[lanes])
    return s.astype(np.float32)


def fma_lanes(a: np.ndarray, b: np.ndarray, c: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``a * b + c`` with one rounding on every lane, in ``dtype`` (float32 or float64)."""
    a, b, c = (np.asarray(v, np.float64) for v in np.broadcast_arrays(a, b, c))
    if dtype == FLOAT32:
        return _sum_to_float32_lanes(a * b, c)
    ph = a * b
    aph, ac = np.abs(ph), np.abs(c)
    unsafe = ~((np.abs(a) < _HUGE) & (np.abs(b) < _HUGE)
               & ((ph == 0) | ((aph > _TINY) & (aph < _HUGE)))
               & ((c == 0) | ((ac > _TINY) & (ac < _HUGE))))
    exact = [(k, _fma64_exact(float(a[k]), float(b[k]), float(c[k])))
             for k in np.flatnonzero(unsafe)]       # rare: near overflow, tiny or not finite
    if exact:
        a, b, c = (np.where(unsafe, 0.0, v) for v in (a, b, c))
        ph = a * b
    t = _SPLIT * a
    ah = t - (t - a)
    al = a - ah
    t = _SPLIT * b
    bh = t - (t - b)
    bl = b - bh
    pl = ((ah * bh - ph) + ah * bl + al * bh) + al * bl
    sh = c + ph
    bb = sh - c
    sl = (c - (sh - bb)) + (ph - bb)
    r = sh + _round_to_odd_sum_lanes(sl, pl)
    for k, value in exact:
        r[k] = value
    return r
