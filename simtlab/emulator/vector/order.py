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
in lane order, see ``arrays.atomic``).

That catches every race that changes a result (``total[0] = total[0] + x[i]``, a scan in
place without its barrier) and compare-and-swap loops (all lanes read one guess, the CAS
fails for all but one lane: the retries, and the trace, differ from the greenlet engine's),
whether or not the launch is traced: ``trace=False`` never changes a result.

What it costs: per array, the largest key that wrote, read and updated atomically each
element (three int64 shadows, made on first need), and scalars that skip the per-element
check when no earlier access can be later in the greenlet order (a shared tile read after
the barrier that follows its loads costs one comparison). Reads are not checked one by one:
a read appends its positions and keys to the array's log (no copy), which is merged into the
read shadow only when a write or an atomic could conflict with it.
"""

from __future__ import annotations

import numpy as np

from ...simt import SHARED
from .values import Fallback

# bits of the order key, least significant first; a launch past them is not checked here
_LANE, _PHASE, _WARP, _EPOCH, _BLOCK = 5, 16, 5, 14, 23
_LOG_ROWS = 1 << 22           # read positions kept unmerged per array (about 32 MB)


class OrderDependent(Fallback):
    """Two threads touch one element in an order the greenlet engine would not use."""

    def __init__(self, name):
        super().__init__(f"threads of the launch depend on each other's accesses to {name}")
        self.array = name


class Shadow:
    """What the order check remembers of one array (global or shared) in one launch."""

    __slots__ = ("size", "wmax", "rmax", "amax", "wtop", "rtop", "atop", "log", "log_rows",
                 "log_top", "log_owner", "dropped_top", "write_round", "read_round")

    def __init__(self, size):
        self.size = size
        self.wmax = self.rmax = self.amax = None        # per element, made on first need
        self.wtop = self.rtop = self.atop = -1           # the largest key of each kind
        self.log, self.log_rows, self.log_top = [], 0, -1
        self.log_owner = None          # the interpreter (chunk) the log's reads belong to
        self.dropped_top = -1          # reads given up from the log (never written till then)
        self.write_round = self.read_round = -1          # shared: barrier round of the last

    def shadow(self, name):
        s = getattr(self, name)
        if s is None:
            s = np.full(self.size, -1, np.int64)
            setattr(self, name, s)
        return s


def lane_keys(eng, m):
    """``(keys of the active lanes, smallest, largest, ascending in lane order?)``.

    A lane still running has passed every barrier of its chunk (a barrier that not all live
    lanes of a block reach goes to the greenlet engine), so its epoch is ``eng.barriers``:
    the keys of all lanes are (block, warp, collectives passed, lane), remade when a
    collective ran (``eng.syncs`` counts both), plus the epoch, added when a barrier ran."""
    cached = eng.order_cache
    if cached is None or cached[0] != eng.syncs:
        if eng.barriers >= 1 << _EPOCH or eng.b0 + eng.nb >= 1 << _BLOCK:
            raise Fallback("more blocks or barriers than the order check counts")
        base = None if cached is None else cached[5]
        if base is None or cached[6] != eng.syncs - eng.barriers:     # a collective ran
            phase = eng.phase
            if len(phase) and phase.max() >= 1 << _PHASE:
                raise Fallback("more warp collectives than the order check counts")
            base = _static_keys(eng) | (phase << _LANE)
            ascending = bool(len(base) < 2 or (base[1:] >= base[:-1]).all())
        else:
            ascending = cached[2]
        keys = base + (eng.barriers << (_WARP + _PHASE + _LANE))
        cached = eng.order_cache = (eng.syncs, keys, ascending,
                                    int(keys[0]) if len(keys) else 0,
                                    int(keys[-1]) if len(keys) else 0,
                                    base, eng.syncs - eng.barriers)
    _, keys, ascending, first, last = cached[:5]
    if m is eng.ALL:
        if ascending:
            return keys, first, last, True
        return keys, int(keys.min()), int(keys.max()), False
    k = keys[m]
    if not len(k):
        return k, 0, -1, True
    if ascending:
        return k, int(k[0]), int(k[-1]), True
    return k, int(k.min()), int(k.max()), False


def _static_keys(eng):
    """Block, warp and lane of every lane, in their places in the key (made once a chunk)."""
    found = getattr(eng, "_order_static", None)
    if found is None:
        block = eng.lblock + eng.b0
        found = (block << (_EPOCH + _WARP + _PHASE + _LANE)) | (eng.warp << (_PHASE + _LANE)) \
            | eng.lane
        eng._order_static = found
    return found


def _state(arr):
    st = arr.order
    if st is None:
        st = arr.order = Shadow(arr.storage.size)
    return st


def _later_than(shadow, pa, keys):
    """Does an element at ``pa`` hold a larger key than the lane touching it now?"""
    return bool((shadow[pa] > keys).any())


def on_read(eng, arr, pa, m):
    """A plain read by the active lanes of ``m`` at positions ``pa`` (int: all one)."""
    st = _state(arr)
    keys, kmin, kmax, ascending = lane_keys(eng, m)
    if kmax < 0:
        return
    shared = arr.space == SHARED
    if st.log_owner is not eng or (shared and st.read_round != eng.barriers):
        # a new chunk (its keys are larger than any before), or, for shared memory (one
        # block per copy), a new barrier round: every earlier read is ordered before now
        st.log, st.log_rows, st.log_top, st.log_owner = [], 0, -1, eng
        st.read_round = eng.barriers
    written_now = not shared or st.write_round == eng.barriers
    if written_now and ((st.wtop > kmin and _later_than(st.wmax, pa, keys)) or
                        (st.atop > kmin and _later_than(st.amax, pa, keys))):
        raise OrderDependent(arr.name)
    st.log.append((pa, keys, kmax, ascending))
    st.log_rows += len(keys)
    st.log_top = max(st.log_top, kmax)
    if st.log_rows > _LOG_ROWS:
        if st.wtop < 0 and st.atop < 0:      # never written yet (an input): keep only the top
            st.dropped_top = max(st.dropped_top, st.log_top)
            st.log, st.log_rows, st.log_top = [], 0, -1
        else:
            _merge_reads(st)


def _merge_reads(st):
    rmax = st.shadow("rmax")
    for pa, keys, kmax, ascending in st.log:
        if pa.__class__ is not np.ndarray:
            rmax[pa] = max(int(rmax[pa]), kmax)
        elif ascending:
            rmax[pa] = np.maximum(rmax[pa], keys)     # the last of equal positions is largest
        else:
            np.maximum.at(rmax, pa, keys)
    st.rtop = max(st.rtop, st.log_top)
    st.log, st.log_rows, st.log_top = [], 0, -1


def on_update(eng, arr, pa, m, atomic):
    """A plain write (``atomic=False``) or an atomic by the active lanes of ``m`` at ``pa``."""
    st = _state(arr)
    keys, kmin, kmax, ascending = lane_keys(eng, m)
    if kmax < 0:
        return
    shared = arr.space == SHARED
    if st.log_owner is eng and not (shared and st.read_round != eng.barriers) \
            and st.log_top > kmin:
        _merge_reads(st)
    if st.dropped_top > kmin:
        raise Fallback(f"too many reads of {arr.name} to check their order")
    same_round = not shared or st.write_round == eng.barriers
    checks = [(st.rtop, st.rmax)] if (not shared or st.read_round == eng.barriers) else []
    if same_round:
        checks.append((st.atop, st.amax) if not atomic else (-1, None))
        checks.append((st.wtop, st.wmax))
    for top, shadow in checks:
        if top > kmin and _later_than(shadow, pa, keys):
            raise OrderDependent(arr.name)
    if not ascending and pa.__class__ is np.ndarray and len(np.unique(pa)) < len(pa):
        raise OrderDependent(arr.name)      # lanes of one statement out of the greenlet order
    name = "amax" if atomic else "wmax"
    shadow = st.shadow(name)
    if pa.__class__ is np.ndarray:
        if ascending:
            shadow[pa] = np.maximum(shadow[pa], keys)   # the last of equal positions is largest
        else:
            np.maximum.at(shadow, pa, keys)
    else:
        shadow[pa] = max(int(shadow[pa]), kmax)
    if atomic:
        st.atop = max(st.atop, kmax)
    else:
        st.wtop = max(st.wtop, kmax)
    st.write_round = eng.barriers


__all__ = ["OrderDependent", "on_read", "on_update", "lane_keys"]
