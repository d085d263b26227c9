"""The vector engine's atomics on many lanes at once give what the greenlet engine's atomics
give one after another: the same old values and the same array, bit for bit (duplicate
elements, integer wrap-around, float rounding order, NaN and signed zeros, cas, inc/dec)."""

import numpy as np
import pytest

from simtlab.emulator.cuda_api import _Atomic
from simtlab.emulator.vector.arrays import apply_in_order

rng = np.random.default_rng(4)
class _NoScheduler:
    """On plain NumPy arrays the greenlet engine's atomics need no scheduler, only somewhere
    to note where a compare-and-swap ran (the race rule's CAS sites)."""

    def note_cas(self, frame):
        pass


GREENLET = _Atomic(_NoScheduler())


def _greenlet(kind, store, pos, val, expected):
    """The greenlet engine's atomics, lane after lane."""
    olds = []
    for i, (p, v) in enumerate(zip(pos.tolist(), val)):
        if kind == "cas":
            olds.append(GREENLET.cas(store, p, expected[i], v))
        else:
            olds.append(getattr(GREENLET, kind)(store, p, v))
    return np.array(olds, store.dtype)


def _operands(dtype, n):
    if dtype.kind == "f":
        v = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 30, n)).astype(dtype)
        v[rng.random(n) < 0.05] = np.nan
        v[rng.random(n) < 0.05] = -0.0
        v[rng.random(n) < 0.05] = 0.0
        return v
    info = np.iinfo(dtype)
    v = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    small = rng.integers(0, 5, n).astype(dtype)
    return np.where(rng.random(n) < 0.5, v, small)


KINDS = {"f": ["add", "sub", "max", "min", "nanmax", "nanmin", "exch", "cas"],
         "i": ["add", "sub", "max", "min", "and_", "or_", "xor", "exch", "cas"],
         "u": ["add", "sub", "max", "min", "and_", "or_", "xor", "exch", "inc", "dec", "cas"]}
CASES = [(dt, kind) for dt in ("float32", "float64", "int32", "int64", "uint32", "uint64")
         for kind in KINDS[np.dtype(dt).kind]]


@pytest.mark.parametrize("elements", [1, 3, 40, 10_000])      # few and many lanes per element
@pytest.mark.parametrize("dtype, kind", CASES)
def test_atomics_on_many_lanes_match_the_greenlet_engine_lane_by_lane(dtype, kind, elements):
    dtype = np.dtype(dtype)
    n = 300
    pos = rng.integers(0, min(elements, 50), n)
    if elements == 10_000:
        pos = rng.permutation(50)[:n] if n <= 50 else rng.choice(10_000, n, replace=False)
    store = _operands(dtype, 50 if elements != 10_000 else 10_000)
    val = _operands(dtype, n)
    expected = None
    if kind == "cas":              # some lanes expect the current value, some do not
        expected = np.where(rng.random(n) < 0.5, store[pos % store.size], val)
    if kind in ("inc", "dec"):
        val = rng.integers(0, 6, n).astype(dtype)
        store = rng.integers(0, 7, store.size).astype(dtype)
    reference = store.copy()
    want = _greenlet(kind, reference, pos, val, expected)
    got = apply_in_order(store, pos, val, kind, expected)
    np.testing.assert_array_equal(got.view(f"u{dtype.itemsize}"),
                                  want.view(f"u{dtype.itemsize}"))       # bits: -0.0, NaN
    np.testing.assert_array_equal(store.view(f"u{dtype.itemsize}"),
                                  reference.view(f"u{dtype.itemsize}"))
