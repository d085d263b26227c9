"""Arrays as the vector engine sees them: a gather or scatter for all active lanes at once,
bounds-checked and recorded in the trace with the columns the greenlet engine records."""

from __future__ import annotations

import numpy as np

from ...simt import ATOMIC, CONST, LOCAL, READ, SHARED, WRITE
from .values import Fallback, Weak, convert_for_store, is_vector, raw


class VArray:
    """One array of the launch. ``storage`` is flat; ``per`` says how a lane finds its copy:
    None (one copy: global, const), "block" (shared: one copy per block of the chunk) or
    "lane" (local: one copy per thread)."""

    __slots__ = ("id", "name", "space", "shape", "strides", "size", "ndim", "dtype",
                 "storage", "per", "written", "readonly")

    def __init__(self, aid, name, space, shape, storage, per=None, written=None,
                 readonly=False):
        self.id = aid
        self.name = name
        self.space = space
        self.shape = tuple(int(s) for s in shape) or (1,)
        st, acc = [], 1
        for s in reversed(self.shape):
            st.append(acc)
            acc *= s
        self.strides = tuple(reversed(st))
        self.size = acc
        self.ndim = len(self.shape)
        self.storage = storage
        self.dtype = storage.dtype
        self.per = per
        self.written = written
        self.readonly = readonly

    def __len__(self):
        return self.shape[0]


def flat_index(eng, arr: VArray, idx, m):
    """The flat element index per lane, or Fallback when an active lane is out of bounds (the
    greenlet engine then reports it with its own message)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    if len(idx) != arr.ndim:
        raise Fallback(f"{arr.name} indexed with {len(idx)} indices")
    flat = 0
    for v, n, s in zip(idx, arr.shape, arr.strides):
        a = raw(v)
        if isinstance(a, np.ndarray):
            if a.dtype.kind not in "iub":
                raise Fallback(f"{arr.name} indexed with non-integers")
            am = a[m] if m is not eng.ALL else a
            if am.size and (am.min() < 0 or am.max() >= n):
                raise Fallback(f"out-of-bounds index into {arr.name}")
            a = a.astype(np.int64, copy=False)
        else:
            if isinstance(a, (float, np.floating)) or not isinstance(a, (int, np.integer)):
                raise Fallback(f"{arr.name} indexed with {type(a).__name__}")
            if not 0 <= a < n:
                raise Fallback(f"out-of-bounds index into {arr.name}")
            a = int(a)
        flat = flat + (a * s if s != 1 else a)
    return flat


def _positions(eng, arr: VArray, flat):
    """Where each lane's element lives in ``storage``."""
    if arr.per is None:
        return flat
    if arr.per == "block":
        return eng.lblock * arr.size + flat
    return eng.lanes * arr.size + flat


def _active(eng, m, v):
    a = v if isinstance(v, np.ndarray) else np.full(eng.n, v, np.int64)
    return a if m is eng.ALL else a[m]


def read(eng, arr: VArray, idx, m, site):
    flat = flat_index(eng, arr, idx, m)
    pos = _positions(eng, arr, flat)
    pa = _active(eng, m, pos)
    if arr.written is not None and not arr.written[pa].all():
        raise Fallback(f"read of unwritten shared memory in {arr.name}")
    eng.record(m, arr.id, _active(eng, m, flat), READ, site)
    if m is eng.ALL:
        return arr.storage[pa]
    out = np.zeros(eng.n, arr.dtype)
    out[m] = arr.storage[pa]
    return out


def write(eng, arr: VArray, idx, value, m, site):
    flat = flat_index(eng, arr, idx, m)
    if arr.readonly:
        raise Fallback(f"write to constant array {arr.name}")
    pos = _positions(eng, arr, flat)
    pa = _active(eng, m, pos)
    eng.record(m, arr.id, _active(eng, m, flat), WRITE, site)
    vals = convert_for_store(value, arr.dtype)
    if isinstance(vals, np.ndarray):
        vals = vals if m is eng.ALL else vals[m]
    arr.storage[pa] = vals
    if arr.written is not None:
        arr.written[pa] = True


def atomic(eng, arr: VArray, idx, m, site, update):
    """One indivisible read-modify-write per active lane, in lane order; the old values."""
    flat = flat_index(eng, arr, idx, m)
    if arr.readonly:
        raise Fallback(f"atomic on constant array {arr.name}")
    pos = _positions(eng, arr, flat)
    pa = _active(eng, m, pos)
    if arr.written is not None and not arr.written[pa].all():
        raise Fallback(f"atomic on unwritten shared memory in {arr.name}")
    eng.record(m, arr.id, _active(eng, m, flat), ATOMIC, site)
    lanes = eng.lanes if m is eng.ALL else np.flatnonzero(m)
    old = np.zeros(eng.n, arr.dtype)
    store = arr.storage
    for lane, p in zip(lanes.tolist(), pa.tolist()):
        o = store[p]
        old[lane] = o
        store[p] = update(o.item(), lane)
    return old


SPACE_OF = {"global": 0, "shared": SHARED, "local": LOCAL, "const": CONST}

__all__ = ["VArray", "read", "write", "atomic", "flat_index", "Weak", "is_vector"]
