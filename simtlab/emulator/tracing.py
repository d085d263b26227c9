"""Turn what an engine recorded while the kernel ran into the trace's columns.

During a greenlet run each access is one tuple ``(gtid, array, flat index, kind, site, epoch,
wsync)`` and each executed line one site in its thread's list: appending to a list is the
cheapest thing Python can do per access. The vector engine hands over the same fields as
NumPy columns. The columns the analyses and plots use (block, warp, lane, byte address...) are
derived here, once, with vectorised NumPy, and kept as one array per field (``Columns``): the
metrics and the race check read those directly; ``run.memory``/``run.lines`` turn them into
record arrays only when a caller asks for one (that copy costs more than all the metrics).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from ..keys import occurrence
from ..simt import SPACE_CODES, WARP_SIZE, site_line

MEMORY_FIELDS = ("block", "thread", "warp", "lane", "gwarp", "epoch", "wepoch", "space",
                 "array", "index", "address", "width", "kind", "line", "site", "seq")
LINE_FIELDS = ("block", "thread", "warp", "lane", "gwarp", "line", "site", "seq", "step", "epoch")
_WARP_SHIFT = WARP_SIZE.bit_length() - 1
_RECORD_BLOCK = 8192       # rows per block when records() lays the columns out as rows
RAW_MEMORY_FIELDS = ("gtid", "array", "index", "kind", "site", "epoch", "wepoch")


class Columns:
    """Trace rows held as one NumPy array per field, read as a record array is read:
    ``c.block`` or ``c["block"]`` is a column, ``c[mask]`` / ``c[rows]`` the selected rows
    (another ``Columns``), ``len(c)`` the number of rows, ``c.names`` the fields.
    ``records()`` builds the record array ``run.memory`` / ``run.lines`` show.

    A field can be ``derived``: a function of the ``Columns`` that computes it on first read
    (``block`` from the thread id, ``seq`` by a sort...), so the metrics pay only for the
    fields they read. ``columns`` may hold helper columns that are not among ``names``."""

    __slots__ = ("_cols", "_derive", "_names", "_n")

    def __init__(self, columns: dict, derived: dict | None = None, names=None):
        self._cols = dict(columns)
        self._derive = dict(derived or {})
        self._names = tuple(names) if names is not None else tuple(self._cols) + \
            tuple(self._derive)
        self._n = len(next(iter(self._cols.values()))) if self._cols else 0

    @property
    def names(self) -> tuple:
        return self._names

    def __len__(self):
        return self._n

    def __getattr__(self, name):
        if name.startswith("__") or name in Columns.__slots__:
            raise AttributeError(name)          # copy/pickle probing a half-built object
        try:
            return self._cols[name]
        except KeyError:
            pass
        derive = self._derive.get(name)
        if derive is None:
            raise AttributeError(f"trace rows have no field {name!r}; fields: "
                                 f"{', '.join(self._names)}")
        # kept in _derive: a second thread reading the field meanwhile derives it too (the
        # same values) instead of finding it nowhere (the playground prefetches in a thread)
        column = self._cols[name] = derive(self)
        return column

    def __getitem__(self, key):
        if isinstance(key, str):
            if key not in self._names:
                raise KeyError(f"trace rows have no field {key!r}; fields: "
                               f"{', '.join(self._names)}")
            return getattr(self, key)
        # the selected rows of each field, taken when that field is first read
        return Columns({"_rows": np.arange(self._n)[key]},
                       {name: (lambda sub, name=name: getattr(self, name)[sub._rows])
                        for name in self._names}, self._names)

    def __repr__(self):
        return f"<Columns {len(self)} rows: {', '.join(self._names)}>"

    def records(self) -> np.recarray:
        cols = [getattr(self, name) for name in self._names]
        dtype = np.dtype([(name, c.dtype) for name, c in zip(self._names, cols)])
        if len({c.dtype for c in cols}) != 1:
            out = np.recarray(self._n, dtype=dtype)
            for name, c in zip(self._names, cols):
                out[name] = c
            return out
        # One dtype (the trace's int64): a (rows x fields) matrix filled a block of rows at a
        # time, which stays in cache; field by field, each field's write would stride over
        # the whole table (2-3x slower).
        table = np.empty((self._n, len(cols)), cols[0].dtype)
        for start in range(0, self._n, _RECORD_BLOCK):
            stop = start + _RECORD_BLOCK
            table[start:stop] = np.stack([c[start:stop] for c in cols], axis=1)
        return table.view(dtype).reshape(-1).view(np.recarray)


def _thread_fields(tpb, wpb) -> dict:
    """Derived fields from the helper column ``gtid`` (linear thread id in the launch), and
    the helper ``warp_slot`` (``gwarp * 32 + lane``, which is ``gtid`` itself when a block is
    whole warps: the divergence count reads it instead of deriving five columns)."""
    fields = {"warp_slot": lambda c: c.block * (wpb * WARP_SIZE) + c.thread,
              "block": lambda c: c.gtid // tpb,
              "thread": lambda c: c.gtid - c.block * tpb,
              "warp": lambda c: c.thread // WARP_SIZE,
              "lane": lambda c: c.thread - c.warp * WARP_SIZE,
              "gwarp": lambda c: c.block * wpb + c.warp,
              "line": lambda c: site_line(c.site),
              "seq": lambda c: occurrence(c.gtid, c.site)}
    if tpb % WARP_SIZE == 0:        # whole warps: a thread's warp slot is its gtid (one pass
        fields.update(warp_slot=lambda c: c.gtid,         # each, not a chain of divisions)
                      lane=lambda c: c.gtid & (WARP_SIZE - 1),
                      gwarp=lambda c: c.gtid >> _WARP_SHIFT)
    return fields


def raw_memory_columns(records) -> tuple:
    """The 7 recorded fields as columns, from a list of 7-tuples or an (n, 7) array."""
    raw = np.array(records, dtype=np.int64).reshape(-1, 7)
    return tuple(np.ascontiguousarray(c) for c in raw.T)


def build_memory(raw, arrays, tpb, wpb, exact=None) -> Columns:
    """``raw``: the columns ``RAW_MEMORY_FIELDS``, rows in the greenlet engine's order.
    ``exact``: ``{"address", "width"}`` columns of an engine that knows each access's own byte
    address and width (the PTX engine: a ``ld.v4.f32`` is one 16-byte access at the address
    of its first element); otherwise both follow from the array's element. It may also hold
    ``seq``, counted by the engine as it ran (otherwise derived by a sort)."""
    gtid, aid, flat, kind, site, epoch, wsync = (np.asarray(c, np.int64) for c in raw)
    space_of = np.array([SPACE_CODES[a.space] for a in arrays] or [0], np.int64)
    item_of = np.array([a.itemsize for a in arrays] or [1], np.int64)
    base_of = np.array([a.base for a in arrays] or [0], np.int64)
    derived = _thread_fields(tpb, wpb)
    derived.update(space=lambda c: space_of[c.array], width=lambda c: item_of[c.array],
                   address=lambda c: base_of[c.array] + c.index * c.width)
    columns = {"gtid": gtid, "epoch": epoch, "wepoch": wsync, "array": aid, "index": flat,
               "kind": kind, "site": site}
    if exact is not None:
        columns.update({name: np.asarray(column, np.int64) for name, column in exact.items()})
    return Columns(columns, derived, MEMORY_FIELDS)




def _line_table(gtid, site, epoch, tpb, wpb, step=None) -> Columns:
    """``step`` (position in the thread's own lines) is derived when not given: the rows are
    grouped by thread, each thread's rows in execution order."""
    derived = _thread_fields(tpb, wpb)
    columns = {"gtid": gtid, "site": site, "epoch": epoch}
    if step is None:
        derived["step"] = lambda c: _steps(c.gtid)
    else:
        columns["step"] = step
    return Columns(columns, derived, LINE_FIELDS)


def _steps(gtid):
    n = len(gtid)
    if n == 0:
        return np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, gtid[1:] != gtid[:-1]])
    return np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))


def build_lines(finished_threads, tpb, wpb) -> Columns:
    """``finished_threads``: (gtid, [site, ...], [barrier position, ...]) per thread, the sites in
    execution order; a barrier position is how many lines the thread had run when a block
    barrier released it, so a line's ``epoch`` is the number of positions at or before it."""
    finished_threads = sorted(finished_threads, key=lambda t: t[0])
    lengths = np.array([len(sites) for _, sites, _ in finished_threads], np.int64)
    gtid = np.repeat(np.array([g for g, _, _ in finished_threads], np.int64), lengths)
    site = np.array(list(chain.from_iterable(sites for _, sites, _ in finished_threads)),
                    np.int64).reshape(-1)
    step = np.arange(len(site)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    epoch = np.zeros(len(site), np.int64)
    start = 0
    for (_, sites, barriers), n in zip(finished_threads, lengths):
        if barriers:
            epoch[start:start + n] = np.searchsorted(np.asarray(barriers), np.arange(n), side="right")
        start += n
    return _line_table(gtid, site, epoch, tpb, wpb, step=step)


def build_lines_from_columns(gtid, site, epoch, tpb, wpb, step=None) -> Columns:
    """The same table from columns already grouped by thread (the vector engine's form;
    ``step`` derived from ``gtid`` unless the engine gives it, as the PTX engine does)."""
    return _line_table(gtid, site, epoch, tpb, wpb, step)


@dataclass
class Trace:
    """What an engine hands back after a launch: the launch, its arrays and code objects (a
    site's code index points into ``codes``), the raw trace (None when not traced) and the
    wall time. ``Run`` builds every column it shows from this, and nothing else."""

    launch: object                 # the Launch that ran
    arrays: list                   # ArrayInfo of every array the launch touched
    codes: list                    # code objects: the kernel first, then its device functions
    memory_records: object         # list of 7-tuples or an (n, 7) int64 array, or
                                   # ("columns", (7, n) int64 array[, {"address",
                                   # "width"} columns]); the 7 fields are
                                   # RAW_MEMORY_FIELDS, rows in the greenlet engine's order;
                                   # None: not traced
    line_records: object           # [(gtid, [site...], [barrier position...])], or
                                   # ("columns", gtid, site, epoch[, step]) sorted by
                                   # thread, each thread's rows in execution order;
                                   # None: not traced
    elapsed_s: float
    engine: str = "greenlet"
    engine_reason: str = ""
    memory_table: object = None    # the memory Columns, when already built
    races: object = None           # (count, [Race...]), when already found
    cas_sites: frozenset = frozenset()   # sites where a compare-and-swap ran (traced rows)

    def memory(self) -> Columns:
        if self.memory_table is not None:
            return self.memory_table
        records = self.memory_records
        exact = None
        if isinstance(records, tuple) and records[0] == "columns":
            raw = records[1]
            exact = records[2] if len(records) > 2 else None
        else:
            raw = raw_memory_columns(records)
        return build_memory(raw, self.arrays, self.launch.threads_per_block,
                            self.launch.warps_per_block, exact)

    def lines(self) -> Columns:
        if isinstance(self.line_records, tuple) and self.line_records[0] == "columns":
            _, gtid, site, epoch, *step = self.line_records
            return build_lines_from_columns(gtid, site, epoch, self.launch.threads_per_block,
                                            self.launch.warps_per_block, *step)
        return build_lines(self.line_records, self.launch.threads_per_block,
                           self.launch.warps_per_block)
