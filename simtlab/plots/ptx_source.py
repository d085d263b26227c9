"""The view only the PTX engine can give: a CUDA C kernel's source beside the PTX NVRTC made
of it, with per-instruction execution counts and active lanes (as Nsight Compute's source view
shows SASS beside CUDA C).

``ptx_instruction_rows(run)`` and ``ptx_line_rows(run)`` are the numbers; ``ptx_source_html``
draws them: on the left the kernel's CUDA C lines with the warp instructions each one cost and
its lanes active per warp instruction, on the right the PTX in program order with its labels,
each instruction's CUDA C line, warps and active lanes. Rows where warps ran with idle lanes
are coloured (divergence, or a partial last warp).
"""

from __future__ import annotations

import html

import numpy as np

from ..html_theme import MUTED, SUCCESS, WARN
from ..simt import WARP_SIZE

FULL, PARTIAL, IDLE = SUCCESS, WARN, MUTED       # JupyterLab theme colours (html_theme)


def _profile(run):
    profile = getattr(run, "ptx_profile", None)
    if profile is None:
        raise ValueError("no PTX profile: the PTX view needs a traced run of a CUDA C kernel "
                         "(simtlab.cuda_c(...) emulated with trace=True)")
    return profile


def ptx_instruction_rows(run) -> list[dict]:
    """One dict per PTX instruction, in program order: ``index``, ``line`` (CUDA C), ``ptx``
    (its text), ``labels`` (the branch targets just before it), ``warps`` (warp-level
    executions), ``lanes`` (thread-level executions), ``lanes_per_warp`` (None if not run)."""
    profile = _profile(run)
    entry = profile.kernel.entry
    labels_at: dict = {}
    for label, index in entry.labels.items():
        labels_at.setdefault(index, []).append(label)
    rows = []
    for i, ins in enumerate(entry.instructions):
        warps, lanes = int(profile.warps[i]), int(profile.lanes[i])
        rows.append({"index": i, "line": int(ins.line), "ptx": str(ins),
                     "labels": sorted(labels_at.get(i, [])), "warps": warps, "lanes": lanes,
                     "lanes_per_warp": lanes / warps if warps else None})
    return rows


def ptx_line_rows(run) -> list[dict]:
    """One dict per CUDA C line of the kernel (its definition, top to bottom): ``line``,
    ``source``, ``instructions`` (PTX instructions NVRTC made of it), ``warps``, ``lanes``,
    ``lanes_per_warp`` (None where nothing of the line ran)."""
    profile = _profile(run)
    rows = ptx_instruction_rows(run)
    lines, first = profile.kernel.code.source_lines()
    out = []
    for number, text in enumerate(lines, start=first):
        mine = [r for r in rows if r["line"] == number]
        warps = sum(r["warps"] for r in mine)
        lanes = sum(r["lanes"] for r in mine)
        out.append({"line": number, "source": text.rstrip("\n"), "instructions": len(mine),
                    "warps": warps, "lanes": lanes, "lanes_per_warp": lanes / warps if warps else None})
    return out


def _colour(lanes_per_warp) -> str:
    if lanes_per_warp is None:
        return IDLE
    return FULL if lanes_per_warp >= WARP_SIZE else PARTIAL


def _count_cells(row) -> str:
    if not row["warps"]:
        return "<td></td><td></td>"
    per = row["lanes_per_warp"]
    return (f"<td style='text-align:right;padding:0 6px'>{row['warps']:,}</td>"
            f"<td style='text-align:right;padding:0 6px;color:{_colour(per)}'>{per:.1f}</td>")


TABLE = "font-family:monospace;font-size:12px;border-collapse:collapse"
HEAD = ("<tr><th style='padding:0 6px'>line</th><th style='padding:0 6px' title='warp instructions "
        "executed'>warps</th><th style='padding:0 6px' title='active lanes per warp instruction'>"
        "lanes</th><th style='text-align:left'>{what}</th></tr>")


def _source_table(line_rows) -> str:
    parts = [f"<table style='{TABLE}'>", HEAD.format(what="CUDA C")]
    for r in line_rows:
        dim = "" if r["warps"] else f"color:{IDLE};"
        parts.append(f"<tr style='{dim}'><td style='text-align:right;padding:0 6px'>{r['line']}</td>"
                     f"{_count_cells(r)}<td style='white-space:pre'>{html.escape(r['source'])}</td></tr>")
    parts.append("</table>")
    return "".join(parts)


def _ptx_table(rows, max_instructions) -> str:
    parts = [f"<table style='{TABLE}'>", HEAD.format(what="PTX")]
    shown = rows if max_instructions is None else rows[:max_instructions]
    for r in shown:
        for label in r["labels"]:
            parts.append(f"<tr><td></td><td></td><td></td><td style='color:{MUTED}'>"
                         f"{html.escape(label)}:</td></tr>")
        dim = "" if r["warps"] else f"color:{IDLE};"
        line = r["line"] or ""
        parts.append(f"<tr style='{dim}'><td style='text-align:right;padding:0 6px'>{line}</td>"
                     f"{_count_cells(r)}<td style='white-space:pre'>    {html.escape(r['ptx'])};</td></tr>")
    if len(shown) < len(rows):
        parts.append(f"<tr><td colspan='4'><i>... {len(rows) - len(shown):,} more instructions</i></td></tr>")
    parts.append("</table>")
    return "".join(parts)


def ptx_source_html(run, *, max_instructions: int | None = 2000) -> str:
    """The kernel's CUDA C (left) beside its PTX (right), each with warp instructions executed
    and active lanes per warp instruction (of 32), as an HTML block."""
    rows = ptx_instruction_rows(run)
    line_rows = ptx_line_rows(run)
    warps = sum(r["warps"] for r in rows)
    lanes = sum(r["lanes"] for r in rows)
    summary = (f"<p><b>{html.escape(run.kernel_name)}</b>: {len(rows):,} PTX instructions, "
               f"{warps:,} warp instructions executed, {lanes:,} thread instructions "
               f"({lanes / warps if warps else 0:.1f} active lanes per warp instruction; "
               f"<span style='color:{PARTIAL}'>orange</span>: fewer than {WARP_SIZE})</p>")
    if run.traced_blocks < run.num_blocks:
        summary += (f"<p><i>counts of the traced blocks 0-{run.traced_blocks - 1} only "
                    f"(of {run.num_blocks})</i></p>")
    box = "flex:1 1 0;min-width:320px;overflow:auto;max-height:640px"
    return (summary + "<div style='display:flex;gap:16px;align-items:flex-start'>"
            f"<div style='{box}'>{_source_table(line_rows)}</div>"
            f"<div style='{box}'>{_ptx_table(rows, max_instructions)}</div></div>")


def instruction_totals(run) -> tuple[int, int]:
    """``(warp instructions, thread instructions)`` of the whole traced run."""
    profile = _profile(run)
    return int(np.sum(profile.warps)), int(np.sum(profile.lanes))


__all__ = ["ptx_instruction_rows", "ptx_line_rows", "ptx_source_html", "instruction_totals"]
