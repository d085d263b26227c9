"""Divergence: which lanes of a warp executed each warp instruction.

A warp instruction is one source line executed by a warp for the n-th time: the line-trace
rows with the same ``(gwarp, site, seq)``. Lanes that took the other side of a branch, or that
left a loop early, are missing from it. SIMT efficiency is the fraction of lane slots used:
lane-executions / (32 x warp instructions issued).
"""

from __future__ import annotations

import numpy as np

from ..keys import count_distinct, group_ids
from ..simt import WARP_SIZE, site_code, site_line


def instructions(lines) -> np.recarray:
    """One row per warp instruction, in program order within each warp, with its lane mask."""
    names = ("gwarp", "block", "warp", "line", "site", "seq", "mask", "lanes", "step")
    if len(lines) == 0:
        return np.rec.fromarrays([np.zeros(0, np.int64)] * len(names), names=names)
    ins, n = group_ids(lines.gwarp, lines.site, lines.seq)
    mask = np.zeros(n, np.int64)
    np.bitwise_or.at(mask, ins, np.left_shift(1, lines.lane.astype(np.int64)))
    # issue order of a warp instruction: the latest step at which one of its lanes ran it. A
    # warp runs the lanes that wait for the slowest one, so a line after a loop comes after
    # the loop's last iteration (the lanes reconverge there), as on the hardware.
    step = np.full(n, -1, np.int64)
    np.maximum.at(step, ins, lines.step)
    first = np.zeros(n, np.int64)
    first[ins] = np.arange(len(lines))
    f = lines[first]
    rec = np.rec.fromarrays([f.gwarp, f.block, f.warp, f.line, f.site, f.seq, mask,
                             np.bincount(ins, minlength=n), step], names=names)
    return rec[np.lexsort((rec.seq, rec.step, rec.gwarp))]


def instruction_count(lines) -> int:
    """Warp instructions issued: distinct ``(gwarp, site, seq)`` of the line trace. A thread's
    runs of one site are numbered 0, 1, 2..., so a warp issues a site as often as its busiest
    lane ran it: the sum over (warp, site) of the most rows one lane has. Counted with one
    ``bincount`` (no sort, and no ``seq`` needed) when the (warp, lane, site) table is small.
    A lane's cell is found from its warp slot (``gwarp * 32 + lane``: the trace's own thread
    id when blocks are whole warps) and the site, with a few in-place passes over the rows: a
    traced launch has millions of line rows, and each derived column is a pass over them."""
    if len(lines) == 0:
        return 0
    slot = _warp_slots(lines)
    site, sites = _site_index(lines.site)
    slot_low = int(slot.min()) // WARP_SIZE * WARP_SIZE
    slots = -(-(int(slot.max()) + 1 - slot_low) // WARP_SIZE) * WARP_SIZE
    cells = slots * sites
    if cells > 4 * len(lines) + (1 << 16):
        return count_distinct(lines.gwarp, lines.site, lines.seq)
    cell = np.subtract(slot, slot_low, dtype=np.int64)
    cell *= sites
    cell += site
    runs = np.bincount(cell, minlength=cells).reshape(-1, WARP_SIZE, sites)
    return int(runs.max(axis=1).sum())


def _warp_slots(lines) -> np.ndarray:
    """``gwarp * 32 + lane`` per row: the trace's ``warp_slot`` helper column where it has
    one (``tracing.Columns``), else from the record array's fields."""
    slot = getattr(lines, "warp_slot", None)
    if slot is not None:
        return slot
    return np.asarray(lines.gwarp, np.int64) * WARP_SIZE + lines.lane


def _site_index(site) -> tuple[np.ndarray, int]:
    """``(0 .. k-1 per row, k)``: a dense-enough number for each site. The site itself less
    the lowest when the launch's sites span few values (one function), else its function and
    line numbered separately (a device function's sites lie 2^20 apart from the kernel's)."""
    site = np.asarray(site, np.int64)
    low, high = int(site.min()), int(site.max())
    if high - low < (1 << 12):
        return site - low, high - low + 1
    code, line = site_code(site), site_line(site)
    line_low, code_low = int(line.min()), int(code.min())
    lines_per_code = int(line.max()) - line_low + 1
    return ((code - code_low) * lines_per_code + (line - line_low),
            (int(code.max()) - code_low + 1) * lines_per_code)


def simt_efficiency(lines) -> float | None:
    if len(lines) == 0:
        return None
    return float(len(lines) / (WARP_SIZE * instruction_count(lines)))


def lane_masks(lines, gwarp: int):
    """(instructions x 32) bool matrix of one warp, and the source line of each instruction."""
    ins = instructions(lines)
    ins = ins[ins.gwarp == gwarp]
    bits = ((ins.mask[:, None] >> np.arange(WARP_SIZE)) & 1).astype(bool)
    return bits, ins.line


def divergent_lines(lines) -> dict:
    """Source line -> mean active lanes per warp instruction, for lines that ran with < 32."""
    ins = instructions(lines)
    out = {}
    for line in np.unique(ins.line):
        lanes = ins.lanes[ins.line == line]
        if lanes.mean() < WARP_SIZE:
            out[int(line)] = float(lanes.mean())
    return out
