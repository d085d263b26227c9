"""Probe on a GPU how numba-cuda stores values that do not fit an array's type; prints one
line per (value, dtype). The rules in simtlab/emulator/conversions.py follow this output
(benchmarks/results/store_conversions_h100.txt)."""

import numpy as np
from numba import cuda

VALUES = np.array([3.7, -3.7, -1.0, 0.5, 3e9, -3e9, 1e20, -1e20, np.nan, np.inf, -np.inf,
                   255.9, 256.0, -0.9, 4294967296.5], np.float64)
DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


@cuda.jit
def store(values, out):
    i = cuda.grid(1)
    if i < values.size:
        out[i] = values[i]


@cuda.jit
def store32(values, out):
    i = cuda.grid(1)
    if i < values.size:
        out[i] = values[i]


if __name__ == "__main__":
    for src in (np.float64, np.float32):
        vals = VALUES.astype(src)
        for dt in DTYPES:
            out = cuda.to_device(np.zeros(vals.size, dt))
            (store if src is np.float64 else store32)[1, 32](cuda.to_device(vals), out)
            got = out.copy_to_host()
            print(f"{np.dtype(src).name:>7} -> {np.dtype(dt).name:>6}: " +
                  ", ".join(f"{v!r}->{int(g)}" for v, g in zip(vals.tolist(), got.tolist())))
