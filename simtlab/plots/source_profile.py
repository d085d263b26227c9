"""A profiler's source view of an emulator run: each kernel line with its counts and metrics.

``line_profile(run)`` measures every executed source line (of the kernel and of the device
functions it calls): lane-executions, warp instructions, SIMT efficiency, global requests and
32-byte sectors per request, shared requests and wavefronts, races. ``source_view_html``
lays the kernel's source out with those numbers in columns beside each line, the way Nsight
Compute's source page does, and marks lines (a race, the line that failed) in colour.
"""

from __future__ import annotations

import html
from collections import defaultdict

import numpy as np

from ..analysis import bank_conflicts, coalescing
from ..analysis.divergence import instructions
from ..emulator.function_ast import source_lines
from ..html_theme import CODE_WRAP, ERROR, ERROR_MARK, MUTED, NO_WRAP, RAISED, TEXT, WARN
from ..simt import WARP_SIZE, make_site, percent, site_code, site_line

#: columns of the source view: (key in a profile row, header, format string or function)
COLUMNS = (("lane_executions", "thread-lines", "{:,}"),
           ("warp_instructions", "warp instr.", "{:,}"),
           ("simt_efficiency", "SIMT eff.", percent),      # 99.7 % never shows as 100 %
           ("global_requests", "global req.", "{:,}"),
           ("sectors_per_request", "sectors/req", "{:.1f}"),
           ("shared_requests", "shared req.", "{:,}"),
           ("wavefronts_per_request", "wavefronts/req", "{:.1f}"),
           ("races", "races", "{:,}"))


def _empty_row(site: int) -> dict:
    return {"site": site, "line": int(site_line(site)), "lane_executions": 0, "warp_instructions": 0,
            "simt_efficiency": None, "global_requests": 0, "sectors_per_request": None,
            "shared_requests": 0, "wavefronts_per_request": None, "bank_conflicts": 0,
            "races": 0}


def line_profile(run) -> dict:
    """Per source site (``run.lines.site``: function and line), a dict of what ran there.

    Keys: ``line``, ``lane_executions`` (threads x times the line ran), ``warp_instructions``
    (times a warp issued it), ``simt_efficiency`` (lanes per instruction / 32),
    ``global_requests``, ``sectors_per_request``, ``shared_requests``,
    ``wavefronts_per_request``, ``bank_conflicts`` (wavefronts beyond the conflict-free
    number) and ``races`` (races with an access on this line). An untraced run gives {}.
    """
    rows: dict = {}
    if not run.traced:
        return rows

    def row(site):
        site = int(site)
        if site not in rows:
            rows[site] = _empty_row(site)
        return rows[site]

    if run.lines_traced and len(run.line_columns):
        ins = instructions(run.line_columns)
        for site in np.unique(ins.site):
            pick = ins.site == site
            r = row(site)
            r["warp_instructions"] = int(pick.sum())
            r["lane_executions"] = int(ins.lanes[pick].sum())
            r["simt_efficiency"] = r["lane_executions"] / (WARP_SIZE * r["warp_instructions"])
    mem = run.memory_columns
    glob = coalescing.requests(mem, 0)
    for site in np.unique(glob.site):
        pick = glob.site == site
        r = row(site)
        r["global_requests"] = int(pick.sum())
        r["sectors_per_request"] = float(glob.sectors[pick].mean())
    shared = bank_conflicts.requests(mem)
    for site in np.unique(shared.site):
        pick = shared.site == site
        r = row(site)
        r["shared_requests"] = int(pick.sum())
        r["wavefronts_per_request"] = float(shared.wavefronts[pick].mean())
        r["bank_conflicts"] = int((shared.wavefronts[pick] - shared.ideal[pick]).sum())
    # a Race names line numbers only: count it on every site of the line it names
    by_line = defaultdict(list)
    for site in rows:
        by_line[int(site_line(site))].append(site)
    for race in run.races:
        for line in set(race.lines):
            for site in by_line.get(line, []):
                rows[site]["races"] += 1
    return rows


def _function_sources(run, sites) -> list:
    """[(function name, first line, [source lines])] for each function with a traced site,
    the kernel first; a function whose source cannot be read shows its executed lines only."""
    codes = run._codes
    out = []
    indices = sorted({int(site_code(s)) for s in sites} | {0}, key=lambda i: (i != 0, i))
    for index in indices:
        code = codes[index] if index < len(codes) else None
        if code is None:
            continue
        try:
            lines, first = source_lines(code)
        except (OSError, TypeError):
            executed = sorted(int(site_line(s)) for s in sites if site_code(s) == index)
            lines, first = None, None
            out.append((code.co_name, executed, [run.source(line, site=make_site(index, line))
                                                 for line in executed], index))
            continue
        out.append((code.co_name, list(range(first, first + len(lines))),
                    [text.rstrip("\n") for text in lines], index))
    return out


def source_view_html(run, *, marks: dict | None = None, error=None, title: str | None = None) -> str:
    """The kernel's source with per-line counts and metrics, as an HTML table.

    ``marks``: line number -> note; those lines are highlighted (red) with the note shown
    beside them (the races tab marks both lines of each race). ``error``: an
    ``EmulationError``; its line is highlighted and its problem shown there.
    """
    profile = line_profile(run) if run is not None else {}
    marks = dict(marks or {})
    if error is not None and getattr(error, "line", None) is not None:
        marks[int(error.line)] = f"{error.title}: {error.problem}"
    if run is None:
        return "<p>no run to show</p>"
    # a header may break after its slash ("sectors/ req"): the source column gets that width
    head = "".join(f"<th style='padding:0 6px'>{h.replace('/', '/<wbr>')}</th>" for _, h, _ in COLUMNS)
    # numbers stay on one line, the source column takes the rest of the width and wraps there
    # (one unbreakable line of source would widen the whole widget and cut its other text)
    parts = [f"<b>{html.escape(title)}</b>" if title else "",
             f"<table class='simtlab-source-view' style='font-family:monospace;font-size:12px;line-height:1.5;"
             f"border-collapse:collapse;color:{TEXT}'>",
             f"<tr><th>line</th>{head}<th style='text-align:left'>source</th></tr>"]
    for name, numbers, texts, index in _function_sources(run, profile.keys()):
        parts.append(f"<tr><td colspan='{len(COLUMNS) + 2}' style='background:{RAISED};color:{TEXT}'>"
                     f"<i>{html.escape(name)}()</i></td></tr>")
        for number, text in zip(numbers, texts):
            r = profile.get(make_site(index, number))
            cells = []
            for key, _, fmt in COLUMNS:
                value = r.get(key) if r else None
                blank = value is None or (value == 0 and key != "simt_efficiency")
                shown = "" if blank else fmt(value) if callable(fmt) else fmt.format(value)
                style = ""
                if key == "simt_efficiency" and value is not None and value < 1:
                    style = f"color:{WARN}"
                if key == "sectors_per_request" and value is not None and value > 4:
                    style = f"color:{WARN}"
                if key == "wavefronts_per_request" and value is not None and value > 1:
                    style = f"color:{WARN}"
                if key == "races" and value:
                    style = f"color:{WARN};font-weight:bold"
                cells.append(f"<td style='text-align:right;padding:0 6px;{NO_WRAP};{style}'>{shown}</td>")
            mark = marks.get(number) if index == 0 or r is not None else None
            bg = f"background:{ERROR_MARK};" if mark else ("" if r else f"color:{MUTED};")
            # a margin, not spaces: preserved spaces at the end of a wrapped line would hang past the cell
            note = (f"<span style='color:{ERROR};margin-left:2ch'>&larr; {html.escape(mark)}</span>" if mark else "")
            parts.append(f"<tr style='{bg}'><td style='text-align:right;padding:0 6px;{NO_WRAP}'>{number}</td>"
                         f"{''.join(cells)}<td style='{CODE_WRAP}'>{html.escape(text)}{note}</td></tr>")
    parts.append("</table>")
    if run.traced_blocks < run.num_blocks:
        parts.append(f"<p><i>counts of the traced blocks 0-{run.traced_blocks - 1} only "
                     f"(of {run.num_blocks})</i></p>")
    return "".join(parts)


__all__ = ["line_profile", "source_view_html", "COLUMNS"]
