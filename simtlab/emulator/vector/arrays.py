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
                 "storage", "per", "written", "all_written", "readonly", "pending",
                 "atomic_keys", "parent", "prefix", "order")

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
        self.pending = None             # deferred atomics, not applied yet (see atomic)
        self.atomic_keys = None         # per element: order key of the last atomic on it
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
    if arr.pending is not None:
        settle(eng, arr, m)
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
    if arr.pending is not None:
        settle(eng, arr, m)
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


# --- atomics ------------------------------------------------------------------------------------
# The greenlet engine runs a block's threads one after another: warp by warp within a barrier
# epoch, lane by lane between warp collectives, each thread on until it waits. Its atomics
# happen in the order of the key (epoch, warp, collectives passed, lane), each thread's own in
# program order: the order its trace rows are sorted in (engine._memory_records). The vector
# engine runs a statement for all lanes at once, so the atomics of a loop happen iteration by
# iteration instead. Two ways keep the greenlet engine's results, bit for bit:
# - an atomic whose old value is not used (``cuda.atomic.add(hist, b, 1)`` as a statement) and
#   that NumPy can apply in a given order (``_SEQUENTIAL``) is deferred: its key, element and
#   operand are kept, and at the next barrier, at the end of the block, or before any other
#   access to the array, all deferred ones are applied in key order with one ``ufunc.at``
#   (sequential: float adds round in the greenlet engine's order);
# - any other atomic is applied at once, lane by lane in lane order (vectorised over distinct
#   elements), and the key of the last atomic on each element is kept: an atomic whose key is
#   below that (a later iteration of an earlier lane) would see another old value in the
#   greenlet engine, and the launch falls back to it.
_SEQUENTIAL = {"add": np.add, "sub": np.subtract, "and_": np.bitwise_and,
               "or_": np.bitwise_or, "xor": np.bitwise_xor}
_INTEGER_ONLY = frozenset(("and_", "or_", "xor", "inc", "dec"))
_EPOCH_BITS, _PHASE_BITS = 29, 24      # key: epoch | warp (5 bits) | phase | lane (5 bits)


def _sequential_ufunc(kind, dtype):
    """The ufunc that applies ``kind`` exactly as the greenlet engine's Python arithmetic then
    store conversion does (None: no such ufunc). Integer max/min are NumPy's; float max/min
    are not (Python's ``max`` keeps the old value on a tie and on NaN), nor is ``np.fmax``
    on arrays (its SIMD loop picks another zero of +0.0 and -0.0 than the scalar one)."""
    if kind in ("max", "min"):
        if dtype.kind in "iu":
            return np.maximum if kind == "max" else np.minimum
        return None
    return _SEQUENTIAL.get(kind)


def _combine(kind, old, val, expected):
    """What each atomic stores given its element's old value (arrays of the array's dtype)."""
    f = _sequential_ufunc(kind, old.dtype)
    if f is not None:
        return f(old, val)
    if kind == "max":
        return np.where(val > old, val, old)
    if kind == "min":
        return np.where(val < old, val, old)
    if kind == "nanmax":                  # scalar np.fmax: the old value on a tie
        return np.where((val > old) | np.isnan(old), val, old)
    if kind == "nanmin":
        return np.where((val < old) | np.isnan(old), val, old)
    if kind == "exch":
        return val
    if kind == "inc":
        return np.where(old >= val, 0, old + 1).astype(old.dtype)
    if kind == "dec":
        return np.where((old == 0) | (old > val), val, old - 1).astype(old.dtype)
    return np.where(old == expected, val, old)                  # cas


def _segments(pos):
    """``(order, starts)``: ``pos`` sorted stably, and where each run of one element starts."""
    order = np.argsort(pos, kind="stable")
    sp = pos[order]
    new = np.empty(len(pos), bool)
    new[0] = True
    np.not_equal(sp[1:], sp[:-1], out=new[1:])
    return order, np.flatnonzero(new)


def apply_in_order(store, pos, val, kind, expected=None):
    """The atomics ``(pos[i], val[i])`` applied one after another in the given order, as the
    greenlet engine applies them; returns each one's old value."""
    n = len(pos)
    if n == 0:
        return np.zeros(0, store.dtype)
    order, starts = _segments(pos)
    if len(starts) == n:                               # distinct elements: one step
        old = store[pos]
        store[pos] = _combine(kind, old, val, expected)
        return old
    if kind in ("add", "sub") and store.dtype.kind in "iu":
        return _integer_sums(store, pos, val, kind, order, starts)
    ends = np.append(starts[1:], n)
    rounds = int((ends - starts).max())
    f = _sequential_ufunc(kind, store.dtype)
    if f is not None and len(starts) < rounds:
        return _accumulated(store, pos, val, f, order, starts, ends)
    return _in_rounds(store, pos, val, kind, expected, order, starts, ends)


def _integer_sums(store, pos, val, kind, order, starts):
    """Integer add/sub: each old value is the element's value plus the operands of the
    earlier lanes on it (exclusive prefix sums, wrapping as the array's type wraps)."""
    w = val[order].astype(np.int64)               # modular: uint64 bits wrap into int64
    if kind == "sub":
        w = -w
    inclusive = np.cumsum(w)
    seg = np.repeat(np.arange(len(starts)), np.diff(np.append(starts, len(pos))))
    before_segment = (inclusive - w)[starts]
    exclusive = inclusive - w - before_segment[seg]
    sp = pos[order]
    first = store[sp[starts]].astype(np.int64)
    old = np.empty(len(pos), store.dtype)
    old[order] = (first[seg] + exclusive).astype(store.dtype)
    ends = np.append(starts[1:], len(pos)) - 1
    store[sp[starts]] = (first + inclusive[ends] - before_segment).astype(store.dtype)
    return old


def _accumulated(store, pos, val, f, order, starts, ends):
    """Few elements, many lanes each: one ``f.accumulate`` per element (sequential)."""
    old = np.empty(len(pos), store.dtype)
    sp = pos[order]
    for s, e in zip(starts.tolist(), ends.tolist()):
        lanes = order[s:e]
        seq = np.empty(e - s + 1, store.dtype)
        seq[0] = store[sp[s]]
        seq[1:] = val[lanes]
        acc = f.accumulate(seq, dtype=store.dtype)
        old[lanes] = acc[:-1]
        store[sp[s]] = acc[-1]
    return old


def _in_rounds(store, pos, val, kind, expected, order, starts, ends):
    """Round r applies the r-th atomic on every element (distinct elements: vectorised)."""
    rank = np.empty(len(pos), np.int64)
    rank[order] = np.arange(len(pos)) - np.repeat(starts, ends - starts)
    by_rank = np.argsort(rank, kind="stable")
    bounds = np.cumsum(np.bincount(rank))
    old = np.empty(len(pos), store.dtype)
    lo = 0
    for hi in bounds.tolist():
        sel = by_rank[lo:hi]
        p = pos[sel]
        o = store[p]
        old[sel] = o
        exp = expected[sel] if isinstance(expected, np.ndarray) else expected
        store[p] = _combine(kind, o, val[sel], exp)
        lo = hi
    return old


def _order_keys(eng, m):
    """Each active lane's place in the greenlet engine's order (see the comment above)."""
    epoch = eng.epoch if m is eng.ALL else eng.epoch[m]
    phase = eng.phase if m is eng.ALL else eng.phase[m]
    if epoch.size and (epoch.max() >> _EPOCH_BITS or phase.max() >> _PHASE_BITS):
        raise Fallback("too many barriers or warp collectives to order atomics")
    warp = eng.warp if m is eng.ALL else eng.warp[m]
    lane = eng.lane if m is eng.ALL else eng.lane[m]
    return (((epoch << 5 | warp) << _PHASE_BITS | phase) << 5) | lane


def atomic(eng, arr: VArray, idx, m, site, kind, val, expected=None, used=True):
    """One indivisible read-modify-write per active lane, in the greenlet engine's order.
    ``val`` (and ``expected``, for cas): the operands, converted to the array's type, one per
    active lane. Returns the old values (a lane vector), or None when ``used`` is False and the
    atomics were deferred."""
    arr, idx = resolve(arr, idx)
    if arr.readonly:
        locate(eng, arr, idx, m)
        raise Fallback(f"atomic on constant array {arr.name}")
    if arr.dtype.kind not in "iuf" or (kind in _INTEGER_ONLY and arr.dtype.kind == "f"):
        raise Fallback(f"atomic.{kind} on a {arr.dtype} array")
    flat, pa = _located(eng, arr, idx, m, order.ATOMIC)
    if eng.trace:
        eng.record(m, arr.id, flat, ATOMIC, site)
    pa = _active(eng, m, pa) if not isinstance(pa, np.ndarray) else pa
    keys = _order_keys(eng, m)
    if not used and _sequential_ufunc(kind, arr.dtype) is not None:
        if arr.pending is None:
            arr.pending = []
            eng.atomic_arrays.add(arr)
        arr.pending.append((keys, pa, val, kind))
        return None
    if arr.pending is not None:
        settle(eng, arr, m, keys)
    last = _last_keys(eng, arr)
    if (keys < last[pa]).any():
        raise Fallback(f"atomics on {arr.name} in another order than the greenlet engine's "
                       "(a loop's later iteration of an earlier lane)")
    old_active = apply_in_order(arr.storage, pa, val, kind, expected)
    last[pa] = keys                       # keys ascend with the lanes: the last one stays
    if m is eng.ALL:
        return old_active
    old = np.zeros(eng.n, arr.dtype)
    old[m] = old_active
    return old


def _last_keys(eng, arr):
    if arr.atomic_keys is None:
        arr.atomic_keys = np.full(arr.storage.size, -1, np.int64)
        eng.atomic_arrays.add(arr)
    return arr.atomic_keys


def settle(eng, arr: VArray, m, keys=None):
    """Another access to an array with deferred atomics (lanes ``m``): the deferred ones are
    applied first, when each comes before every accessing lane in the greenlet engine's order
    (else that order cannot be kept here: the greenlet engine takes over)."""
    if keys is None:
        keys = _order_keys(eng, m)
    if keys.size and max(int(k.max()) for k, *_ in arr.pending) > int(keys.min()):
        raise Fallback(f"{arr.name} is accessed before all of its atomics have happened in "
                       "the greenlet engine's order")
    _apply_pending(eng, arr)


def _apply_pending(eng, arr: VArray):
    """The deferred atomics, in key order. No key is kept: whatever touches the array next
    comes after all of them (``settle`` checks that, a barrier or a block's end ensures it)."""
    pending, arr.pending = arr.pending, None
    kinds = {kind for *_, kind in pending}
    if len(kinds) == 1:
        kind = kinds.pop()
        if arr.dtype.kind in "iu":            # integer ops of one kind commute: any order
            for _, pos, val, _ in pending:
                _sequential_ufunc(kind, arr.dtype).at(arr.storage, pos, val)
            return
    keys = np.concatenate([k for k, *_ in pending])
    pos = np.concatenate([p for _, p, _, _ in pending])
    val = np.concatenate([np.broadcast_to(v, p.shape) for _, p, v, _ in pending])
    names = sorted({kind for *_, kind in pending})
    codes = np.concatenate([np.full(len(p), names.index(kind), np.int64)
                            for _, p, _, kind in pending])
    order = np.argsort(keys, kind="stable")    # each thread's own atomics stay in time order
    pos, val, codes = pos[order], val[order], codes[order]
    # runs of one kind, applied one after another (usually one run: a loop's one atomic)
    cut = np.flatnonzero(np.diff(codes)) + 1
    for s, e in zip(np.append(0, cut).tolist(), np.append(cut, len(pos)).tolist()):
        ufunc = _sequential_ufunc(names[codes[s]], arr.dtype)
        ufunc.at(arr.storage, pos[s:e], val[s:e])


def settle_all(eng):
    """At a barrier or the end of the block: every deferred atomic happens (a barrier ends
    the epoch, so each comes before anything after it in the greenlet engine's order too)."""
    for arr in eng.atomic_arrays:
        if arr.pending is not None:
            _apply_pending(eng, arr)


def forget_order(eng):
    """The end of a chunk: the next block's atomics come after all of these."""
    settle_all(eng)
    for arr in eng.atomic_arrays:
        arr.atomic_keys = None
    eng.atomic_arrays.clear()


SPACE_OF = {"global": 0, "shared": SHARED, "local": LOCAL, "const": CONST}

__all__ = ["VArray", "read", "write", "atomic", "locate", "view", "resolve", "select_views",
           "Weak", "is_vector"]
