"""The playground's tabs: each one is an ipywidgets box whose content comes from a function
in ``simtlab.plots`` that takes the run. A tab is drawn when it is shown (the first tab at
once), so a re-run costs one emulation and one tab, not eight.
"""

from __future__ import annotations

import threading

import ipywidgets as widgets
import numpy as np

from ..plots.barrier_timeline import plot_barrier_timeline
from ..plots.divergence import DivergenceFigure, plot_lane_activity
from ..plots.mapping import COLOR_BY, plot_run_mapping
from ..plots.memory_access import plot_warp_access, request_addresses_from_run
from ..plots.memory_requests import (plot_bank_access, plot_request_costs, request_table, request_table_html,
                                     worst_request)
from ..plots.run_report import compare_html, error_card_html, gpu_report_html, races_html
from ..plots.ptx_source import ptx_source_html
from ..plots.source_profile import source_view_html
from ..html_theme import MUTED
from ..simt import percent
from ..widgets.figure_image import FigureImage
from ..widgets.png import figure_png

#: every playground drawing holds this lock: the playground's prefetch draws in a thread of its
#: own, and one matplotlib figure at a time is drawn by the playground, whichever thread asks
DRAW_LOCK = threading.RLock()

TITLES = ("mapping", "memory", "divergence", "races & errors", "barriers", "source", "GPU", "compare")
# a playground figure is looked at on screen, not printed: 80 dpi keeps a redraw quick
DPI = 80


def _png(fig, kind: str) -> bytes:
    """``fig`` as PNG; ``kind`` names the plot, so that a figure of the same kind drawn before
    lends its layout (``png.figure_png``)."""
    return figure_png(fig, DPI, layout_key=kind)


#: rows of the divergence plot labelled with their source line (every k-th beyond this): the
#: source tab lists every line, and each label is text to draw (24 instead of 60 halved the
#: plot's time for the 49 instructions of a block-sum warp, benchmarks/playground_latency.py)
LANE_LABELS = 24

KIND_NAMES = {0: "read", 1: "write", 2: "atomic"}


def _note_html(text: str) -> str:
    return f"<p style='color:{MUTED}'>{text}</p>"


def _note(text: str) -> widgets.HTML:
    return widgets.HTML(_note_html(text))


def _has_trace(run) -> bool:
    return run is not None and run.traced and run.traced_blocks > 0


def _has_lines(run) -> bool:
    # no line trace when the kernel's source cannot be read (a function made by exec())
    return _has_trace(run) and run.lines_traced and len(run.line_columns) > 0


NO_LINES = ("no line trace: the launch did not start, or the kernel's source could not be read "
            "(define it in a cell or a file, not with exec())")


class Tab:
    """One tab: ``box`` (what the Tab shows) and ``draw(pg)`` (fill it from the playground)."""

    title = ""

    def __init__(self):
        self.box = widgets.VBox()
        # what was drawn, by (run, settings): the playground keeps the runs of settings seen
        # before, so going back to one redraws nothing
        self._memo: dict = {}

    def memo(self, run, key, make):
        full = (id(run),) + tuple(key)
        found = self._memo.get(full)
        if found is None:
            with DRAW_LOCK:
                found = self._memo.get(full)
                if found is None:
                    if len(self._memo) > 256:
                        self._memo.clear()
                    found = self._memo[full] = make()
        return found

    def draw(self, pg) -> None:
        raise NotImplementedError

    def prepare(self, run) -> None:
        """Draw what ``draw`` would show for ``run`` into the memo, without touching a widget
        (the prefetch thread calls it; widgets are only made and changed by the kernel's thread)."""


class MappingTab(Tab):
    title = "mapping"

    def __init__(self):
        super().__init__()
        narrow = dict(layout=widgets.Layout(width="210px"), style={"description_width": "60px"})
        self.array = widgets.Dropdown(description="array", **narrow)
        self.kind = widgets.Dropdown(options=["write", "read", "atomic", "any"], value="write",
                                     description="access", **narrow)
        self.color_by = widgets.Dropdown(options=list(COLOR_BY), value="block", description="colour", **narrow)
        self.figure = FigureImage()
        self.summary = widgets.HTML()
        self.pg = None
        for c in (self.array, self.kind, self.color_by):
            c.observe(self._redraw, names="value")
        self.box.children = [widgets.HBox([self.array, self.kind, self.color_by]), self.summary, self.figure]

    def draw(self, pg):
        self.pg = pg
        run = pg.run
        if not _has_trace(run):
            self.box.children = [_note("no trace to map: the launch did not start")]
            return
        names = [a.name for a in run.arrays if a.space == "global"] or [a.name for a in run.arrays]
        current = self.array.value
        self.array.unobserve(self._redraw, names="value")
        self.array.options = names
        self.array.value = current if current in names else names[0]
        self.array.observe(self._redraw, names="value")
        # a fresh kind: the first one this array was accessed with, writes first
        self._redraw()
        self.box.children = [widgets.HBox([self.array, self.kind, self.color_by]), self.summary, self.figure]

    def settings(self, run) -> tuple:
        """(array, kind, colour) this tab shows for ``run``: the array picked (or the first), and
        the access kind picked when the array has such accesses (else writes, else the first)."""
        names = [a.name for a in run.arrays if a.space == "global"] or [a.name for a in run.arrays]
        array = self.array.value if self.array.value in names else names[0]
        kind = self.kind.value
        present = [KIND_NAMES[int(k)] for k in np.unique(run.accesses(array).kind)]
        if kind != "any" and kind not in present and present:
            kind = "write" if "write" in present else present[0]
        return array, kind, self.color_by.value

    def picture(self, run, settings) -> bytes:
        array, kind, color_by = settings
        return self.memo(run, settings,
                         lambda: _png(plot_run_mapping(run, array, kind=kind, color_by=color_by), "mapping"))

    def prepare(self, run):
        if _has_trace(run):
            self.picture(run, self.settings(run))

    def _redraw(self, *_):
        run = self.pg.run if self.pg else None
        if not _has_trace(run) or self.array.value is None:
            return
        settings = self.settings(run)
        if self.kind.value != settings[1]:
            self.kind.unobserve(self._redraw, names="value")
            self.kind.value = settings[1]
            self.kind.observe(self._redraw, names="value")
        rows = run.accesses(self.array.value)
        self.summary.value = (f"{self.array.value}: {len(rows):,} accesses traced "
                              f"({', '.join(f'{int((rows.kind == k).sum()):,} {v}s' for k, v in KIND_NAMES.items())})")
        self.figure.value = self.picture(run, settings)


class MemoryTab(Tab):
    """The request table and each line's cost per request; below, one request lane by lane:
    the costliest global one or the most conflicted shared one, as the dropdown says (one
    detail figure at a time, like the other tabs' warp and block choosers: each figure is
    most of a redraw's time)."""

    title = "memory"

    def __init__(self):
        super().__init__()
        self.request = widgets.Dropdown(description="request", layout=widgets.Layout(width="560px"),
                                        style={"description_width": "60px"})
        self.detail = FigureImage()
        self.pg = None
        self.request.observe(self._redraw, names="value")

    def draw(self, pg):
        self.pg = pg
        run = pg.run
        if not _has_trace(run):
            self.box.children = [_note("no memory trace: the launch did not start")]
            return
        table, costs, choices = self.memo(run, (), lambda: self._overview(run))
        children = [widgets.HTML(table), FigureImage(value=costs)]
        if choices:
            self.request.unobserve(self._redraw, names="value")
            self.request.options = choices
            self.request.value = self._pick(choices)
            self.request.observe(self._redraw, names="value")
            self._redraw()
            children += [self.request, self.detail]
        self.box.children = children

    def _pick(self, choices):
        """The request of the same space as the one shown before (global first)."""
        space = self.request.value[0] if self.request.value else "global"
        return next((value for _, value in choices if value[0] == space), choices[0][1])

    def _overview(self, run) -> tuple:
        """``(table HTML, cost chart PNG, [(label, (space, array, line, gwarp, seq))])``."""
        rows = request_table(run)                    # one table for the HTML and the chart
        choices = []
        for space, what in (("global", "the costliest global request"),
                            ("shared", "the most conflicted shared request")):
            worst = worst_request(run, space)
            if worst is not None:
                name, line, gwarp, seq = worst
                choices.append((f"{what}: warp {gwarp}, line {line}, array {name}", (space,) + worst))
        return request_table_html(run, rows), _png(plot_request_costs(run, rows), "request costs"), choices

    def picture(self, run, choice) -> bytes:
        space, name, line, gwarp, seq = choice
        if space == "global":
            return self.memo(run, choice, lambda: _png(plot_warp_access(
                request_addresses_from_run(run, name, line=line, gwarp=gwarp, seq=seq),
                size=run.array(name).itemsize, title=f"{name}, line {line}, global warp {gwarp}"), "warp access"))
        return self.memo(run, choice, lambda: _png(plot_bank_access(run, name, line=line, gwarp=gwarp, seq=seq),
                                                   "bank access"))

    def prepare(self, run):
        if _has_trace(run):
            _, _, choices = self.memo(run, (), lambda: self._overview(run))
            if choices:
                self.picture(run, self._pick(choices))

    def _redraw(self, *_):
        if self.pg is not None and _has_trace(self.pg.run) and self.request.value is not None:
            self.detail.value = self.picture(self.pg.run, self.request.value)


class DivergenceTab(Tab):
    title = "divergence"

    def __init__(self):
        super().__init__()
        self.warp = widgets.Dropdown(description="warp", layout=widgets.Layout(width="320px"))
        self.view = None
        self.figure = FigureImage()
        self.summary = widgets.HTML()
        self.pg = None
        self.warp.observe(self._redraw, names="value")

    def draw(self, pg):
        self.pg = pg
        run = pg.run
        if not _has_lines(run):
            self.box.children = [_note(NO_LINES)]
            return
        order, lanes = self.memo(run, ("order",), lambda: _warps_by_efficiency(run))
        wpb = run.warps_per_block
        self.warp.unobserve(self._redraw, names="value")
        self.warp.options = [(f"block {g // wpb}, warp {g % wpb}: {percent(lanes[g])}", g) for g in order]
        self.warp.value = order[0]
        self.warp.observe(self._redraw, names="value")
        eff = run.metrics["simt_efficiency"]
        self.summary.value = (f"SIMT efficiency of the whole run: <b>{percent(eff, 1)}</b> (lanes busy per warp "
                              "instruction / 32); warps listed least efficient first")
        self._redraw()
        self.box.children = [self.summary, self.warp, self.figure]

    def picture(self, run, warp) -> bytes:
        return self.memo(run, (warp,), lambda: _png(plot_lane_activity(run, warp, figure=self._figure()),
                                                    "lane activity"))

    def _figure(self) -> DivergenceFigure:
        # one figure for every warp and run this tab shows: its axes, ticks and legends are
        # made once (drawn under DRAW_LOCK, as every playground figure)
        if self.view is None:
            self.view = DivergenceFigure(LANE_LABELS)
        return self.view

    def prepare(self, run):
        if _has_lines(run):
            order, _ = self.memo(run, ("order",), lambda: _warps_by_efficiency(run))
            self.picture(run, order[0])

    def _redraw(self, *_):
        if self.pg is None or self.warp.value is None:
            return
        self.figure.value = self.picture(self.pg.run, self.warp.value)


def _warps_by_efficiency(run):
    """``(global warps, least efficient first (64 at most), {warp: SIMT efficiency})``."""
    from ..analysis.divergence import instructions
    ins = instructions(run.line_columns)
    # per warp at once (bincount), not a mask over all instructions per warp: a 4096-thread
    # launch has 128 warps
    warps, which = np.unique(ins.gwarp, return_inverse=True)
    busy = np.bincount(which, weights=ins.lanes) / (32 * np.bincount(which))
    lanes = {int(g): float(b) for g, b in zip(warps, busy)}
    return sorted(lanes, key=lambda g: (lanes[g], g))[:64], lanes


class RacesTab(Tab):
    title = "races & errors"

    def draw(self, pg):
        children = []
        if pg.error is not None:
            children.append(widgets.HTML(error_card_html(pg.error)))
            if _has_trace(pg.run):
                children.append(widgets.HTML(source_view_html(pg.run, error=pg.error,
                                                              title="the trace up to the fault")))
        if _has_trace(pg.run):
            children.append(widgets.HTML(races_html(pg.run)))
        self.box.children = children or [_note("nothing to report")]


class BarriersTab(Tab):
    title = "barriers"

    def __init__(self):
        super().__init__()
        self.block = widgets.Dropdown(description="block", layout=widgets.Layout(width="200px"))
        self.figure = FigureImage()
        self.pg = None
        self.block.observe(self._redraw, names="value")

    def draw(self, pg):
        self.pg = pg
        run = pg.run
        if not _has_lines(run):
            self.box.children = [_note(NO_LINES)]
            return
        blocks = np.unique(run.line_columns.block)[:64].tolist()
        self.block.unobserve(self._redraw, names="value")
        self.block.options = blocks
        self.block.value = blocks[0]
        self.block.observe(self._redraw, names="value")
        self._redraw()
        self.box.children = [self.block, self.figure]

    def picture(self, run, block) -> bytes:
        return self.memo(run, (block,), lambda: _png(plot_barrier_timeline(run, block), "barrier timeline"))

    def prepare(self, run):
        if _has_lines(run):
            self.picture(run, int(run.line_columns.block.min()))

    def _redraw(self, *_):
        if self.pg is not None and self.block.value is not None:
            self.figure.value = self.picture(self.pg.run, self.block.value)


class SourceTab(Tab):
    title = "source"

    def draw(self, pg):
        if not _has_trace(pg.run):
            self.box.children = [_note("no trace: the launch did not start")]
            return
        run, error = pg.run, pg.error
        self.box.children = [widgets.HTML(self.memo(run, (id(error),), lambda: source_view_html(run, error=error)))]

    def prepare(self, run):
        if _has_trace(run):
            self.memo(run, (id(None),), lambda: source_view_html(run))


class GpuTab(Tab):
    title = "GPU"

    def draw(self, pg):
        result, reason = pg.gpu_result()
        self.box.children = [widgets.HTML(gpu_report_html(result, reason))]


class CompareTab(Tab):
    title = "compare"

    def draw(self, pg):
        if pg.previous is None or pg.run is None:
            self.box.children = [_note("change the launch or the input size above: the previous run stays "
                                       "here, side by side with the new one")]
            return
        self.box.children = [widgets.HTML(compare_html(pg.previous, pg.run))]


class PtxTab(Tab):
    """A CUDA C kernel only: its source beside NVRTC's PTX, per-instruction counts and lanes."""

    title = "PTX"

    def draw(self, pg):
        run = pg.run
        if not _has_trace(run) or getattr(run, "ptx_profile", None) is None:
            self.box.children = [_note("no trace: the launch did not start")]
            return
        self.box.children = [widgets.HTML(self.memo(run, (), lambda: ptx_source_html(run)))]

    def prepare(self, run):
        if _has_trace(run) and getattr(run, "ptx_profile", None) is not None:
            self.memo(run, (), lambda: ptx_source_html(run))


def make_tabs(cuda_c: bool = False) -> list[Tab]:
    """The tabs, in ``TITLES``'s order; a CUDA C kernel gets the PTX tab last."""
    tabs = [MappingTab(), MemoryTab(), DivergenceTab(), RacesTab(), BarriersTab(), SourceTab(), GpuTab(),
            CompareTab()]
    return tabs + [PtxTab()] if cuda_c else tabs


__all__ = ["TITLES", "make_tabs"]
