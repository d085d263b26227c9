"""Stores that do not fit the array's type convert as numba-cuda converts them on a GPU
(integers wrap, floats truncate toward zero and saturate), where NumPy would refuse them.
tests/test_emulator_gpu.py::test_store_conversions_match_numba_cuda runs the same kernels
on a GPU."""

import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda, int32

import simtlab
from simtlab.emulator.conversions import store_converter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import probe_store_conversions as probe  # noqa: E402


@cuda.jit
def ballot_into_uint32(out):
    lane = cuda.threadIdx.x
    out[lane] = cuda.ballot_sync(0xFFFFFFFF, lane >= 1)     # a negative int32: bit 31 set


@cuda.jit
def store_values(values, as_int32, as_uint32, as_uint8, as_float32):
    i = cuda.grid(1)
    if i < values.size:
        v = values[i]
        as_int32[i] = v
        as_uint32[i] = v
        as_uint8[i] = v
        as_float32[i] = v


@cuda.jit
def store_wide_integers(values, as_int32, as_uint16):
    i = cuda.grid(1)
    if i < values.size:
        as_int32[i] = values[i]
        as_uint16[i] = values[i]


@cuda.jit
def atomic_wraps(counter):
    cuda.atomic.add(counter, 0, int32(1))


FLOATS = np.array([3.7, -3.7, -1.0, 0.5, 3e9, -3e9, 1e20, np.nan, 255.9, 256.0],
                  np.float64)
WIDE = np.array([2**31, 2**32 + 5, -1, 2**40 + 2**15 + 7, -(2**31) - 1], np.int64)


def expected_float_stores(x, dtype):
    """Truncate toward zero and saturate (the values in FLOATS that are not NaN)."""
    info = np.iinfo(dtype)
    return np.clip(np.trunc(x), info.min, info.max).astype(dtype)


H100 = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "store_conversions_h100.txt"


def _h100_table():
    """{(source dtype, target dtype): [stored ints]} from tools/probe_store_conversions.py."""
    table = {}
    for line in H100.read_text().splitlines():
        head, values = line.split(":", 1)
        src, dst = (s.strip() for s in head.split("->"))
        table[src, dst] = [int(pair.rsplit("->", 1)[1]) for pair in values.split(", ")]
    return table


@pytest.mark.parametrize("engine", ["greenlet", "vector"])
def test_float_stores_match_what_an_h100_stored(engine):
    table = _h100_table()
    assert len(table) == 2 * len(probe.DTYPES)
    for src in (np.float64, np.float32):
        values = probe.VALUES.astype(src)
        for dt in probe.DTYPES:
            out = np.zeros(values.size, dt)
            kernel = probe.store if src is np.float64 else probe.store32
            simtlab.emulate(kernel, 1, 32, values, out, engine=engine, trace=False)
            expected = table[np.dtype(src).name, np.dtype(dt).name]
            assert out.tolist() == expected, (np.dtype(src).name, np.dtype(dt).name)


def test_a_negative_ballot_stored_into_uint32_wraps():
    out = np.zeros(32, np.uint32)
    simtlab.emulate(ballot_into_uint32, 1, 32, out)
    assert (out == 0xFFFFFFFE).all()


def test_floats_stored_into_integer_arrays_truncate_and_saturate():
    outs = [np.zeros(FLOATS.size, t) for t in (np.int32, np.uint32, np.uint8, np.float32)]
    simtlab.emulate(store_values, 1, 32, FLOATS, *outs)
    finite = ~np.isnan(FLOATS)
    for out, t in zip(outs[:2], (np.int32, np.uint32)):
        np.testing.assert_array_equal(out[finite], expected_float_stores(FLOATS[finite], t))
    assert list(outs[0][:3]) == [3, -3, -1] and outs[0][4] == 2**31 - 1
    assert outs[0][7] == -(2**31) and outs[1][7] == 2**31          # NaN from a float64
    assert outs[1][2] == 0 and outs[2][8] == 255 and outs[2][9] == 0   # 256.0 -> uint8: 0
    np.testing.assert_array_equal(outs[3], FLOATS.astype(np.float32))   # rounded to nearest


def test_wide_integers_stored_into_narrow_arrays_keep_the_low_bits():
    a, b = np.zeros(WIDE.size, np.int32), np.zeros(WIDE.size, np.uint16)
    simtlab.emulate(store_wide_integers, 1, 32, WIDE, a, b)
    np.testing.assert_array_equal(a, WIDE.astype(np.int32))      # NumPy's astype wraps too
    np.testing.assert_array_equal(b, WIDE.astype(np.uint16))
    assert a[0] == -(2**31) and a[1] == 5 and b[2] == 0xFFFF


def test_an_atomic_add_past_int32_max_wraps():
    counter = np.array([2**31 - 1], np.int32)
    simtlab.emulate(atomic_wraps, 1, 2, counter)
    assert counter[0] == -(2**31) + 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.bool_])
def test_float_and_other_arrays_store_as_numpy_does(dtype):
    assert store_converter(np.dtype(dtype)) is None


def test_store_values_is_also_a_plain_float_kernel():
    """The conversions only touch integer arrays: a float32 result is unchanged."""
    x = np.linspace(-2, 2, 7).astype(np.float32)
    outs = [np.zeros(7, t) for t in (np.int32, np.uint32, np.uint8, np.float32)]
    simtlab.emulate(store_values, 1, 8, x, *outs)
    np.testing.assert_array_equal(outs[3], x)
    np.testing.assert_array_equal(outs[0], np.trunc(x).astype(np.int32))
    assert outs[2].tolist() == [0, 0, 0, 0, 0, 1, 2]      # negatives into uint8: 0
