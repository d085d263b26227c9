"""Arrays as the vector engine sees them: a gather or scatter for all active lanes at once,
bounds-checked and recorded in the trace with the columns the greenlet engine records."""

from __future__ import annotations

import numpy as np

from ...simt import ATOMIC, CONST, LOCAL, READ, SHARED, WRITE
from . import order
from .values import Fallback, Weak, convert_for_store, is_vector, raw, select


class VArray:
    """One array of the launch. ``storage`` is flat; ``per`` says how a lane finds its copy:
    None (one copy: global, const), "block" (shared: one copy per block of the chunk) or
    "lane" (local: one copy per thread)."""

    __slots__ = ("id", "name", "space", "shape", "strides", "size", "ndim", "dtype",
                 "storage", "per", "written", "all_written", "readonly", "parent", "prefix",
                 "order")

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
        self.written = written          # shared: which elements were written (None: unchecked)
        self.all_written = False
        self.readonly = readonly
        self.parent = None              # a row view (``m[i]``): the array it is a view of
        self.prefix = ()                # ... and the leading indices that chose the row
        self.order = None               # what the order check remembers (order.Shadow)

    def __len__(self):
        return self.shape[0]


def view(eng, arr: VArray, idx: tuple, m) -> VArray:
    """``m[i]`` of a 2-D array (``m[i]`` or ``m[i, j]`` of a 3-D one): numba's view of the
    remaining dimensions, each lane's own row when ``i`` differs between lanes. Accesses
    through it are accesses of the parent with the leading indices put back (``resolve``),
    so they are traced and checked as the greenlet engine traces its views. An index out of
    the array, on an active lane, is left to the greenlet engine to report."""
    if arr.parent is not None:
        idx = arr.prefix + idx
        arr = arr.parent
    for v, n in zip(idx, arr.shape):
        a = raw(v)
        if a.__class__ is np.ndarray:
            if a.dtype.kind not in "iub":
                raise Fallback(f"{arr.name} indexed with non-integers")
            am = a if m is eng.ALL else a[m]
            if am.size and (am.min() < 0 or am.max() >= n):
                raise Fallback(f"out-of-bounds row of {arr.name}")
        elif isinstance(a, (float, np.floating)) or not isinstance(a, (int, np.integer)):
            raise Fallback(f"{arr.name} indexed with {type(a).__name__}")
        elif not 0 <= a < n:
            raise Fallback(f"out-of-bounds row of {arr.name}")
    row = VArray.__new__(VArray)
    for name in VArray.__slots__:
        setattr(row, name, getattr(arr, name))
    row.shape = arr.shape[len(idx):]
    row.strides = arr.strides[len(idx):]
    row.ndim = len(row.shape)
    row.size = int(np.prod(row.shape))
    row.parent, row.prefix = arr, idx
    return row


def select_views(mask, new, old, n):
    """One variable holding views on some lanes and other views on the rest (``row = m[a]``
    then ``if c: row = m[b]``): one view whose leading indices are chosen per lane. Only
    views of one array with the same number of leading indices are merged."""
    if new is old:
        return new
    if new.__class__ is not VArray or old.__class__ is not VArray or new.parent is None \
            or new.parent is not old.parent or len(new.prefix) != len(old.prefix):
        raise Fallback("a variable that holds different arrays on different lanes")
    merged = VArray.__new__(VArray)
    for name in VArray.__slots__:
        setattr(merged, name, getattr(new, name))
    merged.prefix = tuple(select(mask, a, b, n) for a, b in zip(new.prefix, old.prefix))
    return merged


def resolve(arr: VArray, idx):
    """The array and index an access through a view (``row[j]``) reaches: ``m[i, j]``."""
    if arr.parent is None:
        return arr, idx
    return arr.parent, arr.prefix + (idx if idx.__class__ is tuple else (idx,))


def locate(eng, arr: VArray, idx, m):
    """``(const, vflat, vpos)``: lane ``l``'s flat element index is ``vflat[l] + const`` and
    its position in ``storage`` ``vpos[l] + const`` (``vflat`` None: the same element for
    every lane, and ``vpos`` then None too when the array has one copy).

    The lane-vector part is remembered per interpreter, keyed by the identity of the index
    vectors (values are never changed in place once made): ``sa[ty, j]`` in a loop over ``j``
    costs one bounds check and one multiply-add for ``ty`` in all, then one add per access."""
    arr, idx = resolve(arr, idx)
    if idx.__class__ is not tuple:
        idx = (idx,)
    if len(idx) != arr.ndim:
        raise Fallback(f"{arr.name} indexed with {len(idx)} indices")
    const, vecs = 0, None
    for v, n, s in zip(idx, arr.shape, arr.strides):
        a = v.a if v.__class__ is Weak else v
        if a.__class__ is np.ndarray:
            if vecs is None:
                vecs = []
            vecs.append((a, n, s))
        else:
            if isinstance(a, (float, np.floating)) or not isinstance(a, (int, np.integer)):
                raise Fallback(f"{arr.name} indexed with {type(a).__name__}")
            if not 0 <= a < n:
                raise Fallback(f"out-of-bounds index into {arr.name}")
            const += int(a) * s
    if vecs is None:
        return const, None, _offsets(eng, arr)
    if len(vecs) == 1:                  # sa[ty, j]: the positions of ty, remembered
        a, n, s = vecs[0]
        key = (arr.per, arr.size, id(a), n, s)
        hit = eng.index_cache.get(key)
        if hit is None:
            vflat, inside = _term(eng, arr, a, n, s)
            off = _offsets(eng, arr)
            hit = (a, vflat, vflat if off is None else vflat + off, inside)
            _remember(eng, key, hit)
        _, vflat, vpos, inside = hit
    else:                               # patch[ty + u, tx + v]: each pair met once, not kept
        vflat, inside = None, True
        for a, n, s in vecs:
            term, term_inside = _term(eng, arr, a, n, s)
            inside = inside and term_inside
            vflat = term if vflat is None else vflat + term
        off = _offsets(eng, arr)
        vpos = vflat if off is None else vflat + off
    if not inside:
        if m is eng.ALL:
            raise Fallback(f"out-of-bounds index into {arr.name}")
        for a, n, _ in vecs:
            am = a[m]
            if am.size and (am.min() < 0 or am.max() >= n):
                raise Fallback(f"out-of-bounds index into {arr.name}")
    return const, vflat, vpos


def _term(eng, arr, a, n, s):
    """``(a * s, every lane inside [0, n))`` for one index vector, remembered by identity
    (``patch[ty + u, tx + v]`` in a loop nest: each ``ty + u`` is checked once)."""
    key = (id(a), n, s)
    hit = eng.index_cache.get(key)
    if hit is None:
        if a.dtype.kind not in "iub":
            raise Fallback(f"{arr.name} indexed with non-integers")
        inside = not a.size or (a.min() >= 0 and a.max() < n)
        a64 = a.astype(np.int64, copy=False)
        hit = (a, a64 * s if s != 1 else a64, inside)
        _remember(eng, key, hit)
    return hit[1], hit[2]


def _remember(eng, key, value):
    if len(eng.index_cache) >= eng.cache_entries:
        eng.index_cache.clear()
    eng.index_cache[key] = value


def _offsets(eng, arr: VArray):
    """Where each lane's copy of the array starts in ``storage`` (None: one copy)."""
    if arr.per is None:
        return None
    key = (arr.per, arr.size)
    off = eng.index_cache.get(key)
    if off is None:
        off = eng.index_cache[key] = (eng.lblock if arr.per == "block" else eng.lanes) * arr.size
    return off


def _located(eng, arr, idx, m, kind):
    """``(flat, pa)``: flat indices (for the trace; None when not traced) and storage
    positions of the active lanes (an int when every lane has the same). An access that
    other threads can see (global, shared) goes through the order check (``kind``)."""
    const, vflat, vpos = locate(eng, arr, idx, m)
    flat = None
    if eng.trace:
        flat = const if vflat is None else (vflat + const if const else vflat)
        flat = _active(eng, m, flat)
    if vpos is None:
        pa = const
    else:
        pos = vpos + const if const else vpos
        pa = pos if m is eng.ALL else pos[m]
    if kind != order.WRITE:
        _check_written(arr, pa, "read of" if kind == order.READ else "atomic on")
    if arr.space <= SHARED:
        # the check logs the pieces (vpos is kept by locate's cache, mostly), not a copy
        order.access(eng, arr, kind, pa, vpos, const, m)
    return flat, pa


def _active(eng, m, v):
    a = v if isinstance(v, np.ndarray) else np.full(eng.n, v, np.int64)
    return a if m is eng.ALL else a[m]


def _check_written(arr: VArray, pa, what):
    if arr.written is not None and not arr.all_written and not arr.written[pa].all():
        raise Fallback(f"{what} unwritten shared memory in {arr.name}")


def _mark_written(arr: VArray, pa):
    if arr.written is not None and not arr.all_written:
        arr.written[pa] = True
        # once every element is written, reads need no check (the common case: a tile
        # loaded in full before the barrier)
        arr.all_written = bool(arr.written.all())


def read(eng, arr: VArray, idx, m, site):
    arr, idx = resolve(arr, idx)
    flat, pa = _located(eng, arr, idx, m, order.READ)
    if eng.trace:
        eng.record(m, arr.id, flat, READ, site)
    if m is eng.ALL:
        if pa.__class__ is np.ndarray:
            return arr.storage[pa]
        return np.full(eng.n, arr.storage[pa])
    out = np.zeros(eng.n, arr.dtype)
    out[m] = arr.storage[pa]
    return out


def write(eng, arr: VArray, idx, value, m, site):
    arr, idx = resolve(arr, idx)
    if arr.readonly:
        locate(eng, arr, idx, m)             # an out-of-bounds index is reported first
        raise Fallback(f"write to constant array {arr.name}")
    flat, pa = _located(eng, arr, idx, m, order.WRITE)
    if eng.trace:
        eng.record(m, arr.id, flat, WRITE, site)
    vals = convert_for_store(value, arr.dtype)
    if isinstance(vals, np.ndarray):
        vals = vals if m is eng.ALL else vals[m]
        if pa.__class__ is not np.ndarray:
            vals = vals[-1]              # every lane stores to one element: the last one's stays
    arr.storage[pa] = vals
    _mark_written(arr, pa)


def atomic(eng, arr: VArray, idx, m, site, update):
    """One indivisible read-modify-write per active lane, in lane order; the old values."""
    arr, idx = resolve(arr, idx)
    if arr.readonly:
        locate(eng, arr, idx, m)
        raise Fallback(f"atomic on constant array {arr.name}")
    flat, pa = _located(eng, arr, idx, m, order.ATOMIC)
    if eng.trace:
        eng.record(m, arr.id, flat, ATOMIC, site)
    lanes = eng.lanes if m is eng.ALL else np.flatnonzero(m)
    pa = _active(eng, m, pa) if not isinstance(pa, np.ndarray) else pa
    old = np.zeros(eng.n, arr.dtype)
    store = arr.storage
    for lane, p in zip(lanes.tolist(), pa.tolist()):
        o = store[p]
        old[lane] = o
        store[p] = update(o.item(), lane)
    return old


SPACE_OF = {"global": 0, "shared": SHARED, "local": LOCAL, "const": CONST}

__all__ = ["VArray", "read", "write", "atomic", "locate", "view", "resolve", "select_views",
           "Weak", "is_vector"]
