"""Small HTML tables of recorded GPU figures (chapters 6-8): a title that names the card and the
date, a header row with units, one row per measurement, a note on where the figures come from."""

from __future__ import annotations

import html

from ..html_theme import MUTED, RAISED, TEXT

__all__ = ["html_table", "RecordedTable"]

_CELL = "padding:2px 10px;text-align:left;border-bottom:1px solid " + RAISED


class RecordedTable:
    """A table that Jupyter shows as HTML (``_repr_html_``) and ``str()`` as plain text (tests,
    terminals). ``columns``: header texts (units in them); ``rows``: tuples of cell texts;
    ``bold``: indices of rows to emphasise (the course's own kernels)."""

    def __init__(self, title: str, columns, rows, note: str = "", bold=()):
        self.title, self.columns, self.note = title, tuple(columns), note
        self.rows = [tuple(str(v) for v in r) for r in rows]
        self.bold = set(bold)
        for r in self.rows:
            if len(r) != len(self.columns):
                raise ValueError(f"row {r} has {len(r)} cells for {len(self.columns)} columns")

    def _repr_html_(self) -> str:
        return html_table(self.title, self.columns, self.rows, self.note, self.bold)

    def __str__(self) -> str:
        widths = [max(len(c), *(len(r[i]) for r in self.rows)) for i, c in enumerate(self.columns)]
        line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
        out = [self.title, line(self.columns)] + [line(r) for r in self.rows]
        return "\n".join(out + ([self.note] if self.note else []))

    __repr__ = __str__


def html_table(title: str, columns, rows, note: str = "", bold=()) -> str:
    esc = html.escape
    head = "".join(f"<th style='{_CELL};background:{RAISED}'>{esc(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td style='{_CELL}{';font-weight:bold' if i in bold else ''}'>{esc(str(v))}</td>"
                         for v in r) + "</tr>"
        for i, r in enumerate(rows))
    foot = f"<div style='color:{MUTED};font-size:12px'>{esc(note)}</div>" if note else ""
    return (f"<div style='color:{TEXT};overflow-x:auto'><b>{esc(title)}</b>"
            f"<table style='border-collapse:collapse;font-size:13px'><tr>{head}</tr>{body}</table>{foot}</div>")
