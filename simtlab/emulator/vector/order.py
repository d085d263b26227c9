"""Does the lockstep order change what a thread sees? The vector engine's check, traced or not.

The vector engine runs a statement for all lanes before the next statement; the greenlet
engine (the reference) runs block after block, and in a block, between two barriers, warp
after warp, each warp's threads one after another between two warp collectives. Both orders
give the same memory contents as long as no two threads touch one element in opposite
orders. Each access gets the greenlet engine's *order key* of its lane: (block, barrier
epoch, warp, collectives passed, lane), packed into one int64, the order the trace's rows are
sorted in. An access that comes later here, by a lane whose key is *smaller*, ran *earlier*
on the greenlet engine: when one of the two accesses is a plain write, or one a plain access
and the other an atomic, the element's value depends on the order, and the launch is handed
to the greenlet engine (``OrderDependent``). Two atomics are left alone (the engine runs them
in lane order, see ``arrays.atomic``); two reads never conflict.

That catches every race that changes a result (``total[0] = total[0] + x[i]``, a scan in
place without its barrier), whether or not the launch is traced: ``trace=False`` never
changes a result.

What it costs, and why it is cheap on race-free kernels:

- *Regions.* Keys only grow from one chunk of blocks to the next, and, in a block's shared
  memory, from one barrier round to the next: accesses of an earlier region can never
  conflict with later ones. Per array, the accesses of the current region (the chunk; for
  shared memory, the barrier round) are remembered, and forgotten when it ends.
- *Logs, merged on demand.* An access is appended to its kind's log (reads, writes, atomics)
  as the pieces its positions are made of (an index vector the interpreter already keeps,
  plus a constant; the key vector of the chunk and the lane mask): no copy, no new memory.
  Per kind, the region's largest key is kept too. Only when an earlier access of a kind
  that conflicts has a larger key than the smallest key of the access now is the log merged
  into a per-element shadow (the largest key per element, one int64 array per kind, made on
  first need and never cleared: stale keys are smaller than any key of a later region), and
  the access checked element by element. A tile loaded before a barrier and read after it,
  or ``out[i] = ...`` once per thread, never gets there. Shadows go back to a pool when the
  chunk (shared) or launch (global) ends: fresh pages cost more than filling.
- *Lanes in order.* An earlier access whose every lane is at or past its own position now,
  when the access now is strictly ascending in lane order as the keys are (``s[t + step]``
  read, then ``s[t]`` written; ``x[i]`` read, then written), cannot conflict (``_behind``):
  one subtraction per pair of index vectors instead of the element check.
- *Arrays the kernel never writes.* A kernel argument that no statement stores to, updates
  atomically, passes to a function or aliases (``Function.stored_names``) is predicted
  read-only: its reads only raise one scalar, the largest key that read it. If a write the
  guess missed does reach it and that scalar says an earlier read might conflict, the check
  cannot tell: ``UnloggedReads`` makes the launch run again on the vector engine from its
  inputs, logging every array's reads (``launch.py``).
"""

from __future__ import annotations

import numpy as np

from .values import Fallback

# bits of the order key, least significant first; a launch past them is not checked here
_LANE, _PHASE, _WARP, _EPOCH, _BLOCK = 5, 16, 5, 14, 23
_LOG_ROWS = 2 ** 20           # rows kept unmerged per array and kind (beyond: merged)
READ, WRITE, ATOMIC = 0, 1, 2
# the kinds of earlier access an access of each kind conflicts with
_CONFLICTS = {READ: (WRITE, ATOMIC), WRITE: (READ, WRITE, ATOMIC), ATOMIC: (READ, WRITE)}

#: the check runs (benchmarks/order_check_cost.py turns it off to measure what it costs;
#: nothing else should: a racing kernel would then keep the lockstep order's result)
ENABLED = True


class OrderDependent(Fallback):
    """Two threads touch one element in an order the greenlet engine would not use."""

    def __init__(self, name):
        super().__init__(f"threads of the launch depend on each other's accesses to {name}")
        self.array = name


class UnloggedReads(Exception):
    """An array predicted read-only is written, and its reads were not logged: run again
    logging them (not a ``Fallback``: the vector engine can still run the launch)."""

    def __init__(self, name, block):
        super().__init__(f"{name} is written after reads the order check did not keep")
        self.array = name
        self.block = block          # the first block of the chunk it happened in


class Shadow:
    """What the order check remembers of one array (global or shared) in one launch."""

    __slots__ = ("size", "per_chunk", "logged", "unlogged_top", "region", "region_round",
                 "logs", "rows", "top", "shadows")

    def __init__(self, size, per_chunk, logged=True):
        self.size = size
        self.per_chunk = per_chunk     # shared memory: one chunk's (its shadows go back after)
        self.logged = logged           # reads are logged (False: predicted read-only)
        self.unlogged_top = -1         # the largest key of the reads not logged
        self.region = -1               # the chunk (Interpreter.chunk_serial) of the accesses
        #                                kept (a number: a reference would make a cycle) ...
        self.region_round = -1         # ... and, for shared memory, the barrier round
        self.logs = ([], [], [])       # per kind: (vpos, const, m, Keys), not merged yet
        self.rows = [0, 0, 0]          # per kind: rows in the log
        self.top = [-1, -1, -1]        # per kind: the region's largest key (merged or not)
        self.shadows = [None, None, None]   # per kind: the largest key per element

    def shadow(self, kind, eng):
        s = self.shadows[kind]
        if s is None:
            s = self.shadows[kind] = _spare(self.size, eng, self.per_chunk)
        return s


def state(arr, logged=True):
    """The array's ``Shadow`` (made on first need; ``logged``: for a new one)."""
    st = arr.order
    if st is None:
        st = arr.order = Shadow(arr.storage.size, arr.per is not None, logged)
    return st


# --- shadows: memory reused from launch to launch ----------------------------------------------
_SPARES: dict = {}            # size -> shadows a finished launch handed back
_SPARE_BYTES = 1 << 25        # at most this much kept for the next launches


def _spare(size, eng, per_chunk):
    """A shadow of ``size`` elements, all -1: one a finished launch handed back (fresh pages
    cost more than filling), or a new one. ``release`` hands it back at the end of the
    chunk (``per_chunk``) or of the launch."""
    kept = _SPARES.get(size)
    if kept:
        s = kept.pop()
        s.fill(-1)
    else:
        s = np.full(size, -1, np.int64)
    (eng if per_chunk else eng.engine).order_shadows.append(s)
    return s


def release(shadows):
    """The shadows of a finished launch (or chunk), kept for the next ones."""
    total = sum(a.nbytes for kept in _SPARES.values() for a in kept)
    for s in shadows:
        if total + s.nbytes > _SPARE_BYTES:
            break
        _SPARES.setdefault(s.size, []).append(s)
        total += s.nbytes
    shadows.clear()


# --- order keys -----------------------------------------------------------------------------
class Keys:
    """Every lane's order key at one point of a chunk, whichever lanes are active (a lane
    not active has the key it would have): the smallest and largest as ints, the vector
    made only when an access is checked element by element."""

    __slots__ = ("base", "shift", "lo", "hi", "ascending", "_mask", "_active")

    def __init__(self, base, shift, lo, hi, ascending):
        self.base, self.shift = base, shift
        self.lo, self.hi, self.ascending = lo + shift, hi + shift, ascending
        self._mask = self._active = False

    def active(self, m):
        """The keys of the lanes of ``m`` (None: every lane), the last mask's remembered (a
        write and the reads of its statement share one)."""
        if m is self._mask:
            return self._active
        k = self.base if m is None else self.base[m]     # gather first: fewer lanes to add
        if self.shift:
            k = k + self.shift
        self._mask, self._active = m, k
        return k


def chunk_keys(eng) -> Keys:
    """The lanes' keys now. A lane still running has passed every barrier of its chunk (a
    barrier that not all live lanes of a block reach goes to the greenlet engine), so its
    epoch is ``eng.barriers``: the keys of all lanes are (block, warp, collectives passed,
    lane), remade when a collective ran (``eng.syncs`` counts both), plus the epoch, added
    when a barrier ran."""
    cached = eng.order_cache
    if cached is not None and cached[0] == eng.syncs:
        return cached[1]
    if eng.barriers >= 1 << _EPOCH or eng.b0 + eng.nb >= 1 << _BLOCK:
        raise Fallback("more blocks or barriers than the order check counts")
    collectives = eng.syncs - eng.barriers
    if cached is not None and cached[2] == collectives:
        base = cached[3]
    elif collectives == 0:                                   # every lane's phase is 0
        base = _static_keys(eng)
    else:
        phase = eng.phase
        if phase.max() >= 1 << _PHASE:
            raise Fallback("more warp collectives than the order check counts")
        vec = _static_keys(eng)[0] | (phase << _LANE)
        ascending = bool(len(vec) < 2 or (vec[1:] >= vec[:-1]).all())
        lo, hi = (int(vec[0]), int(vec[-1])) if ascending else (int(vec.min()), int(vec.max()))
        base = (vec, lo, hi, ascending)
    keys = Keys(base[0], eng.barriers << (_WARP + _PHASE + _LANE), *base[1:])
    eng.order_cache = (eng.syncs, keys, collectives, base)
    return keys


_STATIC_KEYS: dict = {}       # (griddim, blockdim, b0, b1) -> (keys, lo, hi, True)


def _static_keys(eng):
    """Block, warp and lane of every lane, in their places in the key: ascending in lane
    order, made once per launch shape and chunk (as ``interpreter._lane_constants``)."""
    launch = eng.engine.launch
    key = (launch.griddim, launch.blockdim, eng.b0, eng.b0 + eng.nb)
    found = _STATIC_KEYS.get(key)
    if found is None:
        block = eng.lblock + eng.b0
        vec = (block << (_EPOCH + _WARP + _PHASE + _LANE)) | (eng.warp << (_PHASE + _LANE)) \
            | eng.lane
        vec.flags.writeable = False
        found = (vec, int(vec[0]), int(vec[-1]), True)
        if len(_STATIC_KEYS) >= 4:
            _STATIC_KEYS.clear()
        _STATIC_KEYS[key] = found
    return found


# --- the check ----------------------------------------------------------------------------
def access(eng, arr, kind, pa, vpos, const, m):
    """An access of ``kind`` by the active lanes of ``m``: at storage positions ``pa`` (an
    int: every lane the same), which are ``vpos + const`` (``vpos`` None: ``const``) before
    the mask is applied. Raises ``OrderDependent`` when the greenlet engine's order would
    give another result."""
    if not ENABLED or not eng.n:
        return
    st = arr.order
    if st is None:
        st = state(arr)
    keys = eng.order_cache[1] if eng.order_cache is not None and \
        eng.order_cache[0] == eng.syncs else chunk_keys(eng)
    if kind == READ and not st.logged:
        if keys.hi > st.unlogged_top:
            st.unlogged_top = keys.hi
        return
    if m is eng.ALL:
        m = None                    # in the log and below: every lane
    if st.region != eng.chunk_serial or (st.per_chunk and st.region_round != eng.barriers):
        _new_region(st, eng)
    top = st.top
    lo = keys.lo
    if kind == READ and top[WRITE] <= lo and top[ATOMIC] <= lo:
        _log(st, READ, (vpos, const, m, keys), eng)       # the common read: nothing to check
        return
    k = None
    if kind != READ and st.unlogged_top > lo:
        k, lo = _exact(keys, m)
        if st.unlogged_top > lo:
            raise UnloggedReads(arr.name, eng.b0)
    for other in _CONFLICTS[kind]:
        if top[other] > lo:
            # the earlier accesses that may conflict into the shadow, then element by element
            ordered = _ascending(eng, vpos) if keys.ascending and vpos is not None else False
            if _merge(st, other, eng, vpos if ordered else None, const):
                if k is None:
                    k, lo = _exact(keys, m)
                if top[other] > lo and _later_than(st.shadows[other], pa, k, lo):
                    raise OrderDependent(arr.name)
    if kind == WRITE and not keys.ascending:
        _check_one_statement(arr, pa, keys.active(m) if k is None else k)
    if kind != READ:
        st.logged = True            # its reads from now on can conflict with its writes
    _log(st, kind, (vpos, const, m, keys), eng)


def _log(st, kind, entry, eng):
    st.logs[kind].append(entry)
    rows = st.rows[kind] = st.rows[kind] + eng.n
    hi = entry[3].hi
    if hi > st.top[kind]:
        st.top[kind] = hi
    if rows > _LOG_ROWS:
        _merge(st, kind, eng)


def _new_region(st, eng):
    """Earlier accesses all come before any access from now on, on both engines."""
    st.region, st.region_round = eng.chunk_serial, eng.barriers
    for kind in (READ, WRITE, ATOMIC):
        st.logs[kind].clear()
        st.rows[kind] = 0
        st.top[kind] = -1


def _exact(keys, m):
    """The keys of the active lanes (``m`` None: all) and the smallest of them."""
    k = keys.active(m)
    if not len(k):
        return k, 1 << 62
    return k, int(k[0]) if keys.ascending else int(k.min())


def _later_than(shadow, pa, k, kmin):
    """Does an element at ``pa`` hold a larger key than the lane touching it now?"""
    if pa.__class__ is np.ndarray:
        return bool((shadow[pa] > k).any())
    return int(shadow[pa]) > kmin


def _check_one_statement(arr, pa, k):
    """Lanes out of the greenlet order (a collective passed by some lanes of a warp) storing
    to one element in one statement: the last lane here is not the last one there."""
    if pa.__class__ is np.ndarray:
        if len(np.unique(pa)) < len(pa):
            raise OrderDependent(arr.name)
    elif len(k) > 1:
        raise OrderDependent(arr.name)


def _merge(st, kind, eng, vpos=None, const=0):
    """The log of ``kind`` into its per-element shadow (largest key per element); whether
    anything was merged, now or before. ``vpos``: the access now is at ``vpos + const``, and
    ``vpos`` is strictly ascending in lane order, as the keys are: entries that cannot
    conflict with it (``_behind``) stay in the log, unmerged."""
    log = st.logs[kind]
    keep = [e for e in log if _behind(eng, e, vpos, const)] if vpos is not None else ()
    if keep:
        if len(keep) == len(log):
            return st.shadows[kind] is not None
        log[:] = [e for e in log if not any(e is x for x in keep)]
    if log:
        shadow = st.shadow(kind, eng)
        for pos, c, m, keys in log:
            k = keys.active(m)
            if not len(k):
                continue
            if pos is None:
                shadow[c] = max(int(shadow[c]), int(k.max()))
                continue
            if m is not None:
                pos = pos[m]
            if c:
                pos = pos + c
            if keys.ascending:
                shadow[pos] = np.maximum(shadow[pos], k)  # the last of equal positions is largest
            else:
                np.maximum.at(shadow, pos, k)
    log[:] = keep
    st.rows[kind] = len(keep) * eng.n
    return st.shadows[kind] is not None


def _behind(eng, entry, vpos, const):
    """Can an earlier access (a log entry) not conflict with the access now at ``vpos +
    const``, ``vpos`` strictly ascending in lane order, and the keys now too? It cannot when
    every lane's earlier position is at or past its position now (``s[t + step]`` read, then
    ``s[t]`` written; ``x[i]`` read, then written): an element that lane ``a`` touched then
    and lane ``b`` touches now has ``b >= a``, and ``b``'s key now is at least ``a``'s now,
    which is at least ``a``'s then (a lane's key never decreases in a chunk)."""
    epos, econst = entry[0], entry[1]
    if epos is None:
        return False
    if epos is vpos:
        return econst >= const
    return _least_difference(eng, epos, vpos) >= const - econst


def _least_difference(eng, a, b):
    """``min(a - b)`` over the lanes, remembered per pair of vectors (each entry keeps its
    vectors alive, so their ids stay theirs: few are kept)."""
    cache = eng.order_pairs
    key = (id(a), id(b))
    hit = cache.get(key)
    if hit is None or hit[0] is not a or hit[1] is not b:
        if len(cache) >= 4:
            cache.clear()
        hit = cache[key] = (a, b, int((a - b).min()) if len(a) else 0)
    return hit[2]


def _ascending(eng, vpos):
    """Is ``vpos`` strictly ascending in lane order (``s[t]``, ``x[i]``, ``m[row, col]`` of
    a row of lanes): every lane its own element, in the keys' order? Remembered per vector
    (each entry keeps its vector alive, so its id stays its own: few are kept)."""
    cache = eng.order_ascending
    hit = cache.get(id(vpos))
    if hit is None or hit[0] is not vpos:
        ok = bool((vpos[1:] > vpos[:-1]).all())
        if len(cache) >= 4:
            cache.clear()
        hit = cache[id(vpos)] = (vpos, ok)
    return hit[1]


__all__ = ["OrderDependent", "UnloggedReads", "access", "state", "chunk_keys", "release",
           "ENABLED"]
