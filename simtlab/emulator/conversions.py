"""A value stored into a typed array, converted as numba-cuda converts it on the GPU.

NumPy and numba disagree on stores that do not fit the array's type. NumPy refuses a Python
int outside the range (``OverflowError``) and a NaN into an integer array (``ValueError``);
numba-cuda compiles the store to an LLVM integer truncation or a PTX ``cvt.rzi``:

- an integer into a narrower or differently signed integer keeps the low bits (wraps), so the
  negative int32 that ``cuda.ballot_sync`` returns lands in a uint32 array as its bit pattern;
- a float into an integer rounds toward zero and saturates at the type's limits (NaN gives 0,
  a negative float in an unsigned array gives 0): PTX's float-to-integer ``cvt`` clamps;
- a float64 into a float32 array rounds to nearest (NumPy does the same, so no work here).

``store_converter(dtype)`` gives the function a traced array applies before each store, or
None when NumPy already stores as numba does.
"""

from __future__ import annotations

import functools
import math

import numpy as np


@functools.lru_cache(maxsize=None)
def store_converter(dtype: np.dtype):
    dtype = np.dtype(dtype)          # (cached: dtypes and NumPy types are hashable)
    if dtype.kind not in "iu":
        return None
    bits = dtype.itemsize * 8
    mask = (1 << bits) - 1
    signed = dtype.kind == "i"
    lo = -(1 << (bits - 1)) if signed else 0
    hi = (1 << (bits - 1)) - 1 if signed else mask
    half = 1 << (bits - 1)

    def convert(value):
        cls = value.__class__
        if cls is int or cls is bool or isinstance(value, (np.integer, np.bool_)):
            v = int(value) & mask
            if signed and v >= half:
                v -= 1 << bits
            return v
        if cls is float or isinstance(value, np.floating):
            f = float(value)
            if math.isnan(f):
                return 0
            if f >= hi:
                return hi
            if f <= lo:
                return lo
            return int(f)            # toward zero
        return value                 # anything else: NumPy decides (and explains)

    return convert
