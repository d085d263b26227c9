"""A value stored into a typed array, converted as numba-cuda converts it on the GPU.

NumPy and numba disagree on stores that do not fit the array's type. NumPy refuses a Python
int outside the range (``OverflowError``) and a NaN into an integer array (``ValueError``);
numba-cuda compiles the store to an LLVM integer truncation or a float-to-integer ``cvt``.
What an H100 does, probed with tools/probe_store_conversions.py
(benchmarks/results/store_conversions_h100.txt):

- an integer into a narrower or differently signed integer keeps the low bits (wraps), so the
  negative int32 that ``cuda.ballot_sync`` returns lands in a uint32 array as its bit pattern;
- a float into a 16-, 32- or 64-bit integer rounds toward zero and saturates at the type's
  limits (a negative float in an unsigned array gives 0, +-inf the limits);
- a float into an 8-bit integer goes through the 16-bit integer of the same signedness, then
  keeps the low 8 bits: 256.0 gives 0 and 3e9 gives 255 in a uint8 array;
- NaN gives the smallest value of a signed type (2**(bits-1) of an unsigned one), except
  from a float32 into a 16- or 32-bit integer, where it gives 0;
- a float64 into a float32 array rounds to nearest (NumPy does the same, so no work here).

``store_converter(dtype)`` gives the function a traced array applies before each store, or
None when NumPy already stores as numba does; ``float_to_int`` converts a NumPy array.
"""

from __future__ import annotations

import functools

import numpy as np


@functools.lru_cache(maxsize=None)
def store_converter(dtype: np.dtype):
    dtype = np.dtype(dtype)          # (cached: dtypes and NumPy types are hashable)
    if dtype.kind not in "iu":
        return None
    bits = dtype.itemsize * 8
    mask = (1 << bits) - 1
    signed = dtype.kind == "i"
    half = 1 << (bits - 1)

    def convert(value):
        cls = value.__class__
        if cls is int or cls is bool or isinstance(value, (np.integer, np.bool_)):
            v = int(value) & mask
            if signed and v >= half:
                v -= 1 << bits
            return v
        if cls is float or isinstance(value, np.floating):
            src = np.float32 if value.__class__ is np.float32 else np.float64
            return int(float_to_int(np.array([value], src), dtype)[0])
        return value                 # anything else: NumPy decides (and explains)

    return convert


def float_to_int(values: np.ndarray, dtype) -> np.ndarray:
    """Floats (float32 or float64 array) stored into an integer ``dtype``, as on the GPU."""
    dtype = np.dtype(dtype)
    bits = dtype.itemsize * 8
    signed = dtype.kind == "i"
    if bits == 8:                      # through the 16-bit type, then the low 8 bits
        wide = float_to_int(values, np.int16 if signed else np.uint16)
        return wide.astype(dtype)
    info = np.iinfo(dtype)
    if values.dtype == np.float32 and bits < 64:
        nan_value = 0
    else:
        nan_value = info.min if signed else 1 << (bits - 1)
    with np.errstate(invalid="ignore"):
        f = np.trunc(values.astype(np.float64))
        nan = np.isnan(f)
        f = np.where(nan, 0.0, f)
        out = np.empty(values.shape, dtype)
        high = f >= float(info.max)      # float(max) may round up: compare, then assign exactly
        low = f <= float(info.min)
        mid = ~(high | low)
        out[mid] = f[mid].astype(dtype)
        out[high] = info.max
        out[low] = info.min
        out[nan] = nan_value
    return out
