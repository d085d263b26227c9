"""Turn the tuples recorded while the kernel ran into NumPy record arrays.

During the run each access is one tuple ``(gtid, array, flat index, kind, site, seq, epoch,
wsync)`` and each executed line one tuple ``(gtid, site, seq)``: appending a tuple is the
cheapest thing Python can do per access. The columns the analyses and plots use (block,
warp, lane, byte address...) are derived here, once, with vectorised NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from ..simt import SPACE_CODES, WARP_SIZE, site_line

MEMORY_FIELDS = ("block", "thread", "warp", "lane", "gwarp", "epoch", "wepoch", "space",
                 "array", "index", "address", "width", "kind", "line", "site", "seq")
LINE_FIELDS = ("block", "thread", "warp", "lane", "gwarp", "line", "site", "seq", "step", "epoch")


def _thread_columns(gtid, tpb, wpb):
    block = gtid // tpb
    thread = gtid % tpb
    warp = thread // WARP_SIZE
    return block, thread, warp, thread % WARP_SIZE, block * wpb + warp


def occurrence(*keys) -> np.ndarray:
    """For rows in time order: how many earlier rows share the same keys (0, 1, 2, ...)."""
    n = len(keys[0])
    if n == 0:
        return np.zeros(0, np.int64)
    order = np.lexsort((np.arange(n),) + tuple(reversed(keys)))
    sorted_keys = np.stack([k[order] for k in keys])
    new_group = np.r_[True, np.any(sorted_keys[:, 1:] != sorted_keys[:, :-1], axis=0)]
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(n), 0))
    seq = np.empty(n, np.int64)
    seq[order] = np.arange(n) - group_start
    return seq


def build_memory(records, arrays, tpb, wpb) -> np.recarray:
    raw = np.array(records, dtype=np.int64).reshape(-1, 7)
    gtid, aid, flat, kind, site, epoch, wsync = raw.T
    block, thread, warp, lane, gwarp = _thread_columns(gtid, tpb, wpb)
    space_of = np.array([SPACE_CODES[a.space] for a in arrays] or [0], np.int64)
    item_of = np.array([a.itemsize for a in arrays] or [1], np.int64)
    base_of = np.array([a.base for a in arrays] or [0], np.int64)
    cols = [block, thread, warp, lane, gwarp, epoch, wsync, space_of[aid], aid, flat,
            base_of[aid] + flat * item_of[aid], item_of[aid], kind, site_line(site), site,
            occurrence(gtid, site)]
    return np.rec.fromarrays(cols, names=MEMORY_FIELDS)


def build_lines(finished_threads, tpb, wpb) -> np.recarray:
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
    block, thread, warp, lane, gwarp = _thread_columns(gtid, tpb, wpb)
    return np.rec.fromarrays([block, thread, warp, lane, gwarp, site_line(site), site,
                              occurrence(gtid, site), step, epoch], names=LINE_FIELDS)


def build_lines_from_columns(gtid, site, epoch, tpb, wpb) -> np.recarray:
    """The same table from columns already grouped by thread (the vector engine's form)."""
    n = len(gtid)
    new_thread = np.r_[True, gtid[1:] != gtid[:-1]] if n else np.zeros(0, bool)
    start = np.maximum.accumulate(np.where(new_thread, np.arange(n), 0)) if n else \
        np.zeros(0, np.int64)
    step = np.arange(n) - start
    block, thread, warp, lane, gwarp = _thread_columns(gtid, tpb, wpb)
    return np.rec.fromarrays([block, thread, warp, lane, gwarp, site_line(site), site,
                              occurrence(gtid, site), step, epoch], names=LINE_FIELDS)


@dataclass
class Trace:
    """What an engine hands back after a launch: the launch, its arrays and code objects (a
    site's code index points into ``codes``), the raw trace (None when not traced) and the
    wall time. ``Run`` builds every column it shows from this, and nothing else."""

    launch: object                 # the Launch that ran
    arrays: list                   # ArrayInfo of every array the launch touched
    codes: list                    # code objects: the kernel first, then its device functions
    memory_records: object         # list of 7-tuples or an (n, 7) int64 array; None: not traced
    line_records: object           # [(gtid, [site...], [barrier position...])], or
                                   # ("columns", gtid, site, epoch) sorted by thread, each
                                   # thread's rows in execution order; None: not traced
    elapsed_s: float
    engine: str = "greenlet"
    engine_reason: str = ""
    memory_table: object = None    # run.memory, when already built
    races: object = None           # (count, [Race...]), when already found

    def memory(self) -> np.recarray:
        if self.memory_table is not None:
            return self.memory_table
        return build_memory(self.memory_records, self.arrays, self.launch.threads_per_block,
                            self.launch.warps_per_block)

    def lines(self) -> np.recarray:
        if isinstance(self.line_records, tuple) and self.line_records[0] == "columns":
            _, gtid, site, epoch = self.line_records
            return build_lines_from_columns(gtid, site, epoch, self.launch.threads_per_block,
                                            self.launch.warps_per_block)
        return build_lines(self.line_records, self.launch.threads_per_block,
                           self.launch.warps_per_block)
