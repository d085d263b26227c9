"""Readable cards for what went wrong in a run (an emulator error, the races), and two runs
compared metric by metric. HTML strings: the playground shows them in ``ipywidgets.HTML``.
"""

from __future__ import annotations

import html

from ..html_theme import CODE_WRAP, ERROR, NO_WRAP, SUCCESS, WARN, coloured, error_card_style
from .source_profile import source_view_html

#: metrics compared between two runs: (key, label, True when larger is better)
COMPARED = (("threads", "threads", None), ("blocks", "blocks", None), ("warps", "warps", None),
            ("global_requests", "global warp requests", False),
            ("global_sectors_per_request", "sectors per global request", False),
            ("shared_requests", "shared warp requests", False),
            ("shared_wavefronts_per_request", "wavefronts per shared request", False),
            ("shared_bank_conflicts", "bank conflicts", False),
            ("simt_efficiency", "SIMT efficiency", True), ("races", "races", False))


def _esc(value) -> str:
    return html.escape(str(value))


def error_card_html(error) -> str:
    """An ``EmulationError`` (or any exception) as a card: what, where (block, thread, line,
    source) and the fix; never a traceback."""
    title = getattr(error, "title", type(error).__name__)
    problem = getattr(error, "problem", str(error))
    rows = []
    for key in ("block", "thread"):
        value = getattr(error, key, None)
        if value is not None:
            rows.append((key, tuple(value)))
    if getattr(error, "line", None) is not None:
        fn = f" in {error.function}()" if getattr(error, "function", None) else ""
        rows.append(("line", f"{error.line}{fn}"))
    if getattr(error, "source", None):
        rows.append(("source", error.source.strip()))
    fix = getattr(error, "fix", None)
    body = "".join(f"<tr><td style='padding-right:10px;vertical-align:top;{NO_WRAP}'><b>{k}</b></td>"
                   f"<td style='font-family:monospace;{CODE_WRAP}'>{_esc(v)}</td></tr>" for k, v in rows)
    fix_html = f"<p><b>fix:</b> {_esc(fix)}</p>" if fix else ""
    return (f"<div class='simtlab-error-card' style='{error_card_style()}'>"
            f"<div style='font-size:14px;color:{ERROR}'><b>{_esc(title)}</b></div>"
            f"<p>{_esc(problem)}</p><table>{body}</table>{fix_html}</div>")


def races_html(run) -> str:
    """Each race with both threads and both lines, then the source with those lines marked."""
    if run is None or not run.traced:
        return "<p>races are found in a traced run only</p>"
    races = run.races
    total = run.metrics["races"] or 0
    if not races:
        return f"<p style='color:{SUCCESS}'><b>no race</b>: no two threads touched one address " \
               "with a write and nothing ordering them</p>"
    parts = [f"<p style='color:{ERROR}'><b>{total} race{'s' * (total != 1)}</b> (addresses where two threads "
             "conflict with no barrier between them; the first of each is listed)</p>"
             "<ol style='overflow-wrap:anywhere'>"]
    marks: dict = {}
    for race in races[:20]:
        (b1, t1), (b2, t2) = race.threads
        idx = ", ".join(str(i) for i in race.index)
        parts.append(f"<li><code>{_esc(race.array)}[{idx}]</code> ({race.space}): block {b1} thread {t1} "
                     f"<b>{race.kinds[0]}s</b> it on line {race.lines[0]}; block {b2} thread {t2} "
                     f"<b>{race.kinds[1]}s</b> it on line {race.lines[1]}</li>")
        for line, kind in zip(race.lines, race.kinds):
            marks.setdefault(line, f"races on {race.array} ({kind})")
    if len(races) > 20:
        parts.append(f"<li>... {len(races) - 20} more</li>")
    parts.append("</ol><p><b>fix</b>: separate the conflicting accesses with <code>cuda.syncthreads()</code> "
                 "(threads of one block), give each thread its own element, or use <code>cuda.atomic</code> "
                 "for a shared counter; blocks cannot wait for each other inside one launch.</p>")
    parts.append(source_view_html(run, marks=marks))
    return "".join(parts)


def compare_metrics(before, after) -> list[dict]:
    """Metric by metric: ``{"metric", "before", "after", "delta", "better"}`` for two runs
    (``better``: True / False / None when the change is neutral or not comparable)."""
    a, b = before.metrics, after.metrics
    out = []
    for key, name, larger_better in COMPARED:
        x, y = a.get(key), b.get(key)
        delta = y - x if isinstance(x, (int, float)) and isinstance(y, (int, float)) else None
        better = None
        if delta and larger_better is not None:
            better = (delta > 0) == larger_better
        out.append({"metric": name, "key": key, "before": x, "after": y, "delta": delta, "better": better})
    return out


def _fmt(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}"
    return f"{value:,}"


def compare_html(before, after, names=("previous run", "this run")) -> str:
    """Two runs side by side: launch, then every compared metric with its change."""
    head = (f"<tr><th style='text-align:left'>metric</th><th>{_esc(names[0])}</th><th>{_esc(names[1])}</th>"
            "<th>change</th></tr>")
    rows = [f"<tr><td>launch</td><td>grid {before.griddim} block {before.blockdim}</td>"
            f"<td>grid {after.griddim} block {after.blockdim}</td><td></td></tr>"]
    for r in compare_metrics(before, after):
        colour = {True: SUCCESS, False: WARN, None: "inherit"}[r["better"]]
        delta = "" if not r["delta"] else ("+" if r["delta"] > 0 else "") + _fmt(r["delta"])
        rows.append(f"<tr><td>{r['metric']}</td><td style='text-align:right'>{_fmt(r['before'])}</td>"
                    f"<td style='text-align:right'>{_fmt(r['after'])}</td>"
                    f"<td style='text-align:right;color:{colour}'>{delta}</td></tr>")
    return ("<table style='font-size:12px;border-collapse:collapse'>" + head + "".join(rows) + "</table>")


def gpu_report_html(result: dict | None, reason: str = "") -> str:
    """The GPU tab: outputs compared with the emulator's, and the timing (``gpu_check``'s dict),
    or why there is none (``reason``)."""
    if result is None:
        return (f"<p><b>no GPU run</b>: {_esc(reason)}</p><p>Without a GPU the emulator's outputs are the "
                "results; on a machine with one, this tab runs the kernel there, compares the outputs and "
                "times it.</p>")
    rows = []
    for name, c in result["outputs"].items():
        verdict = (coloured("same as the emulator", SUCCESS) if c["match"] else
                   coloured(f"DIFFERS (max |diff| {c['max_abs_diff']:.3g})", ERROR))
        rows.append(f"<tr><td><code>{_esc(name)}</code></td><td>{verdict}</td></tr>")
    timing = f"median of {result['repeat']} launches: <b>{result['median_ms']:.4f} ms</b>"
    if result.get("gbps") is not None:
        timing += f", <b>{result['gbps']:.1f} GB/s</b> achieved"
    if result.get("gflops") is not None:
        timing += f", <b>{result['gflops']:.1f} GFLOP/s</b>"
    head = (f"<p style='color:{SUCCESS}'><b>GPU and emulator agree</b></p>" if result["all_match"] else
            f"<p style='color:{ERROR}'><b>the GPU's output differs from the emulator's</b>: a race or an "
            "uninitialised read gives different answers on different hardware</p>")
    return head + "<table>" + "".join(rows) + f"</table><p>{timing}</p>"


__all__ = ["gpu_report_html", "error_card_html", "races_html", "compare_metrics", "compare_html", "COMPARED"]
