"""Data races: two threads touch one address, at least one writes, and nothing orders them.

Ordering that the emulator knows about:
- shared memory: accesses of one block on either side of a ``syncthreads`` (different barrier
  epochs) are ordered; inside one warp, a ``syncwarp`` between them orders them too;
- global memory: the same inside a block; two different blocks of one launch are never
  ordered (there is no barrier between blocks), so any write/access pair between blocks races.

Atomics (the rule the course teaches):
- two atomics never race with each other: each read-modify-write is one indivisible step;
- a plain write and an atomic race (the write can land between another thread's atomics, or
  wipe out their updates), and so do a plain read and a plain write;
- a plain read and another thread's atomic race (the value read depends on how many updates
  came first: reading a counter others ``atomic.add`` to), with one exception: the read is
  the first guess of a compare-and-swap loop. ``old = acc[i]`` followed, in the same thread,
  by a ``cuda.atomic.cas``/``compare_and_swap`` on that element is validated by the CAS:
  the swap happens only if the element still holds what was read, and the loop retries
  otherwise, so whichever order the threads run in, each update is applied once. The
  trace does not follow data flow: a read counts as a CAS guess when its thread later runs
  a CAS on the same element (a line that holds a CAS counts all its atomics as CAS: the
  trace's ``cas_sites``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..keys import maybe_shared, pack, sorted_groups
from ..keys import element_rows
from ..simt import ATOMIC, KINDS, READ, WRITE

MAX_REPORTED = 1000


@dataclass(frozen=True)
class Race:
    array: str
    space: str
    index: tuple
    threads: tuple        # ((block xyz, thread xyz), (block xyz, thread xyz))
    lines: tuple          # (line of first access, line of second access)
    kinds: tuple          # ('write', 'read') ...

    def __str__(self):
        (b1, t1), (b2, t2) = self.threads
        idx = ", ".join(str(i) for i in self.index)
        return (f"race on {self.space} {self.array}[{idx}]: block {b1} thread {t1} "
                f"{self.kinds[0]}s it at line {self.lines[0]}, block {b2} thread {t2} "
                f"{self.kinds[1]}s it at line {self.lines[1]}, with no barrier between them")


def _ordered(col, i, j):
    """Vectorised: is access ``i`` ordered with each access in ``j`` (barrier rules)?"""
    same_block = col["block"][j] == col["block"][i]
    other_epoch = col["epoch"][j] != col["epoch"][i]
    same_warp = same_block & (col["warp"][j] == col["warp"][i])
    other_wsync = col["wepoch"][j] != col["wepoch"][i]
    return same_block & (other_epoch | (same_warp & other_wsync))


def _element_rows(col, width, arrays):
    """One row per element an access touches: a CUDA C ``float4`` access (one 16-byte trace
    row, its index the first element's) races with a scalar write to any of its 4 floats."""
    if not len(width):
        return col
    item = np.array([a.itemsize for a in arrays] or [1], np.int64)[col["array"]]
    rows, index = element_rows(col["index"], width, item)
    if len(rows) == len(width):
        return col
    out = {f: c[rows] for f, c in col.items()}
    out["index"] = index
    return out


def find_races(mem, arrays, unravel, limit=MAX_REPORTED, cas_sites=frozenset()):
    """Return (races found, list of up to ``limit`` Race records), one per racy address.
    ``mem``: the trace's rows (``run.memory`` or ``run.memory_columns``); ``cas_sites``: the
    sites of the trace's compare-and-swaps (``Trace.cas_sites``: see the module's rule)."""
    space = np.asarray(mem["space"])
    sel = (space == 0) | (space == 1)
    keep_all = bool(sel.all())
    names = ("block", "thread", "warp", "epoch", "wepoch", "space", "array", "index", "kind",
             "line") + (("site",) if cas_sites else ())
    col = {f: np.asarray(mem[f]) if keep_all else np.asarray(mem[f])[sel] for f in names}
    fields = mem.dtype.names if isinstance(mem, np.ndarray) else mem.names
    if "width" in fields:             # rows made by hand (tests) may leave it out: one element
        width = np.asarray(mem["width"])
        col = _element_rows(col, width if keep_all else width[sel], arrays)
    n = len(col["block"])
    if n == 0:
        return 0, []
    shared = col["space"] == 1
    gtid = col["block"] * (int(col["thread"].max()) + 1) + col["thread"]
    # Candidate addresses first, vectorised; the exact pair check below runs only on them.
    # Shared memory: only accesses of one block in one barrier epoch can race.
    # Global memory: any two blocks can race; inside a block, only within one epoch.
    # An address that nothing writes cannot race: most rows (reads of inputs, of a tile
    # loaded in an earlier epoch) drop out before the sort.
    address = (col["array"], np.where(shared, col["block"], -1), col["index"],
               np.where(shared, col["epoch"], -1))
    kept = np.flatnonzero(maybe_shared(address, col["kind"] != READ))
    n = len(kept)
    if n == 0:
        return 0, []
    order, starts = sorted_groups(*(c[kept] for c in address))
    order = kept[order]
    kinds = np.bitwise_or.reduceat(np.left_shift(1, col["kind"][order]), starts)
    plain_write = (kinds & (1 << WRITE)) != 0
    atomic = (kinds & (1 << ATOMIC)) != 0
    read = (kinds & (1 << READ)) != 0
    g = gtid[order]
    multi_thread = np.maximum.reduceat(g, starts) != np.minimum.reduceat(g, starts)
    b = col["block"][order]
    multi_block = np.maximum.reduceat(b, starts) != np.minimum.reduceat(b, starts)
    # inside one block and epoch, do several threads share the address? Sort the values
    # (address group, block, epoch, thread): a sub-group shares when its first and last
    # thread differ.
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, n]))
    # Sorting keeps every group in its own positions, so ``group`` still names them.
    sub, widths = pack(group, b, col["epoch"][order], col["thread"][order])
    sub.sort()
    who = sub >> widths[-1]                         # (group, block, epoch) of each sorted row
    sub_starts = np.flatnonzero(np.r_[True, who[1:] != who[:-1]])
    sub_multi = sub[sub_starts] != sub[np.r_[sub_starts[1:], n] - 1]
    unordered_sharing = np.zeros(len(starts), bool)
    unordered_sharing[group[sub_starts[sub_multi]]] = True
    candidate = (plain_write | (atomic & read)) & multi_thread & (multi_block | unordered_sharing)

    ends = np.r_[starts[1:], n]
    cas_sites = np.fromiter(cas_sites, np.int64, len(cas_sites))
    count, found = 0, []
    for s, e in zip(starts[candidate], ends[candidate]):
        idx = np.sort(order[s:e])                 # rows of this address, in time order
        guesses = _cas_guesses(col, gtid, idx, cas_sites)
        for p in idx[col["kind"][idx] != READ][:8]:
            others = idx[gtid[idx] != gtid[p]]
            if col["kind"][p] == ATOMIC:          # atomics race with plain accesses only,
                others = others[(col["kind"][others] != ATOMIC) & ~guesses[others]]
            others = others[~_ordered(col, p, others)]
            if len(others):
                a, b2 = sorted((int(p), int(others[0])))
                count += 1
                if len(found) < limit:
                    found.append(_record(col, a, b2, arrays, unravel))
                break
    return count, found


def _cas_guesses(col, gtid, idx, cas_sites):
    """Over all rows: True for the reads among ``idx`` (one address, time order) whose thread
    later runs a compare-and-swap on that address (the first guess of a CAS loop)."""
    guess = np.zeros(len(gtid), bool)
    if not len(cas_sites):
        return guess
    kind = col["kind"][idx]
    cas = idx[(kind == ATOMIC) & np.isin(col["site"][idx], cas_sites)]
    if not len(cas):
        return guess
    # the last CAS row of each thread; a read before it (a smaller row) is its guess
    threads, last = _last_per_thread(gtid[cas], cas)
    reads = idx[kind == READ]
    at = np.searchsorted(threads, gtid[reads])
    has = at < len(threads)
    has[has] = threads[at[has]] == gtid[reads[has]]
    guess[reads[has]] = reads[has] < last[at[has]]
    return guess


def _last_per_thread(thread, rows):
    """(sorted distinct threads, the largest row of each) for rows given in ascending order."""
    order = np.argsort(thread, kind="stable")
    t = thread[order]
    ends = np.r_[np.flatnonzero(t[1:] != t[:-1]), len(t) - 1]
    return t[ends], rows[order][ends]


def _record(col, a, b, arrays, unravel):
    info = arrays[int(col["array"][a])]
    return Race(array=info.name, space=info.space,
                index=tuple(int(v) for v in np.unravel_index(int(col["index"][a]), info.shape)),
                threads=tuple((unravel("block", int(col["block"][r])),
                               unravel("thread", int(col["thread"][r]))) for r in (a, b)),
                lines=(int(col["line"][a]), int(col["line"][b])),
                kinds=(KINDS[int(col["kind"][a])], KINDS[int(col["kind"][b])]))
