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
RAW_MEMORY_FIELDS = ("gtid", "array", "index", "kind", "site", "epoch", "wepoch")


class Columns:
    """Trace rows held as one NumPy array per field, read as a record array is read:
    ``c.block`` or ``c["block"]`` is a column, ``c[mask]`` / ``c[rows]`` the selected rows
    (another ``Columns``), ``len(c)`` the number of rows. ``records()`` builds the record
    array ``run.memory`` / ``run.lines`` show."""

    __slots__ = ("_cols", "_n")

    def __init__(self, columns: dict):
        self._cols = dict(columns)
        self._n = len(next(iter(self._cols.values()))) if self._cols else 0

    @property
    def names(self) -> tuple:
        return tuple(self._cols)

    def __len__(self):
        return self._n

    def __getattr__(self, name):
        try:
            return self._cols[name]
        except KeyError:
            raise AttributeError(f"trace rows have no field {name!r}; fields: "
                                 f"{', '.join(self._cols)}") from None

    def __getitem__(self, key):
        if isinstance(key, str):
            return self._cols[key]
        return Columns({name: col[key] for name, col in self._cols.items()})

    def __repr__(self):
        return f"<Columns {len(self)} rows: {', '.join(self._cols)}>"

    def records(self) -> np.recarray:
        out = np.recarray(self._n, dtype=[(name, col.dtype) for name, col in self._cols.items()])
        for name, col in self._cols.items():
            out[name] = col
        return out


def _thread_columns(gtid, tpb, wpb) -> dict:
    block = gtid // tpb
    thread = gtid - block * tpb
    warp = thread // WARP_SIZE
    return {"block": block, "thread": thread, "warp": warp, "lane": thread - warp * WARP_SIZE,
            "gwarp": block * wpb + warp}


def raw_memory_columns(records) -> tuple:
    """The 7 recorded fields as columns, from a list of 7-tuples or an (n, 7) array."""
    raw = np.array(records, dtype=np.int64).reshape(-1, 7)
    return tuple(np.ascontiguousarray(c) for c in raw.T)


def build_memory(raw, arrays, tpb, wpb) -> Columns:
    """``raw``: the columns ``RAW_MEMORY_FIELDS``, rows in the greenlet engine's order."""
    gtid, aid, flat, kind, site, epoch, wsync = (np.asarray(c, np.int64) for c in raw)
    space_of = np.array([SPACE_CODES[a.space] for a in arrays] or [0], np.int64)
    item_of = np.array([a.itemsize for a in arrays] or [1], np.int64)
    base_of = np.array([a.base for a in arrays] or [0], np.int64)
    width = item_of[aid]
    cols = _thread_columns(gtid, tpb, wpb)
    cols.update(epoch=epoch, wepoch=wsync, space=space_of[aid], array=aid, index=flat,
                address=base_of[aid] + flat * width, width=width, kind=kind,
                line=site_line(site), site=site, seq=occurrence(gtid, site))
    return Columns({name: cols[name] for name in MEMORY_FIELDS})


def _line_table(gtid, site, step, epoch, tpb, wpb) -> Columns:
    cols = _thread_columns(gtid, tpb, wpb)
    cols.update(line=site_line(site), site=site, seq=occurrence(gtid, site), step=step,
                epoch=epoch)
    return Columns({name: cols[name] for name in LINE_FIELDS})


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
    return _line_table(gtid, site, step, epoch, tpb, wpb)


def build_lines_from_columns(gtid, site, epoch, tpb, wpb) -> Columns:
    """The same table from columns already grouped by thread (the vector engine's form)."""
    n = len(gtid)
    new_thread = np.r_[True, gtid[1:] != gtid[:-1]] if n else np.zeros(0, bool)
    start = np.maximum.accumulate(np.where(new_thread, np.arange(n), 0)) if n else \
        np.zeros(0, np.int64)
    return _line_table(gtid, site, np.arange(n) - start, epoch, tpb, wpb)


@dataclass
class Trace:
    """What an engine hands back after a launch: the launch, its arrays and code objects (a
    site's code index points into ``codes``), the raw trace (None when not traced) and the
    wall time. ``Run`` builds every column it shows from this, and nothing else."""

    launch: object                 # the Launch that ran
    arrays: list                   # ArrayInfo of every array the launch touched
    codes: list                    # code objects: the kernel first, then its device functions
    memory_records: object         # list of 7-tuples or an (n, 7) int64 array, or
                                   # ("columns", (7, n) int64 array); the 7 fields are
                                   # RAW_MEMORY_FIELDS, rows in the greenlet engine's order;
                                   # None: not traced
    line_records: object           # [(gtid, [site...], [barrier position...])], or
                                   # ("columns", gtid, site, epoch) sorted by thread, each
                                   # thread's rows in execution order; None: not traced
    elapsed_s: float
    engine: str = "greenlet"
    engine_reason: str = ""
    memory_table: object = None    # the memory Columns, when already built
    races: object = None           # (count, [Race...]), when already found

    def memory(self) -> Columns:
        if self.memory_table is not None:
            return self.memory_table
        records = self.memory_records
        if isinstance(records, tuple) and records[0] == "columns":
            raw = records[1]
        else:
            raw = raw_memory_columns(records)
        return build_memory(raw, self.arrays, self.launch.threads_per_block,
                            self.launch.warps_per_block)

    def lines(self) -> Columns:
        if isinstance(self.line_records, tuple) and self.line_records[0] == "columns":
            _, gtid, site, epoch = self.line_records
            return build_lines_from_columns(gtid, site, epoch, self.launch.threads_per_block,
                                            self.launch.warps_per_block)
        return build_lines(self.line_records, self.launch.threads_per_block,
                           self.launch.warps_per_block)
