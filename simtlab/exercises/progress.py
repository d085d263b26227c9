"""Which exercises a student has done: ``simtlab progress`` (every chapter of the work folder) and
``simtlab.progress("ch01")`` (the cell at the end of a chapter).

An exercise's status comes from its check cells' outputs, which every check marks with its
exercise and result (:mod:`.card`): the saved notebook holds them, and in a running kernel
:data:`.card.SESSION` holds the latest ones. With no check output the answer cell tells
"not written" (still the stub) from "not checked" (changed since).
"""

from __future__ import annotations

import html
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..html_theme import ERROR, MUTED, SUCCESS
from .card import FAILED, NOT_WRITTEN, OUTPUT_KEY, PASSED, SESSION

__all__ = ["ExerciseStatus", "notebook_progress", "progress", "progress_text", "find_template", "NOT_CHECKED"]

#: an answer that differs from the stub, with no check output yet
NOT_CHECKED = "not checked"
_MARK = {PASSED: "\u2714", FAILED: "\u2718", NOT_WRITTEN: "\u00b7", NOT_CHECKED: "?"}


@dataclass(frozen=True)
class ExerciseStatus:
    exercise: str
    status: str          # PASSED, FAILED, NOT_WRITTEN or NOT_CHECKED

    @property
    def done(self) -> bool:
        return self.status == PASSED


def _meta(cell) -> dict:
    meta = cell.get("metadata", {}).get("simtlab")
    return meta if isinstance(meta, dict) else {}


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _read(path: Path) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _check_marks(cell) -> list[dict]:
    return [out["metadata"][OUTPUT_KEY] for out in cell.get("outputs", [])
            if isinstance(out.get("metadata"), dict) and isinstance(out["metadata"].get(OUTPUT_KEY), dict)]


def notebook_progress(nb: dict, template: dict, session: dict | None = None) -> list[ExerciseStatus]:
    """The status of each exercise of ``template`` (the chapter as built) in the student's ``nb``
    (both notebooks as dicts); ``session`` (exercise -> status), when given, wins over the saved
    outputs: it is what the running kernel found last."""
    from ..notebooks.build import _without_hints, exercise_checks

    exercises = list(exercise_checks(template))
    stubs = {_meta(c).get("id"): _without_hints(_source(c)) for c in template.get("cells", [])
             if _meta(c).get("role") == "answer"}
    saved: dict[str, list[str]] = {}
    answers: dict[str, str] = {}
    for cell in nb.get("cells", []):
        meta = _meta(cell)
        if meta.get("role") == "answer":
            answers[meta.get("id")] = _without_hints(_source(cell))
        for mark in _check_marks(cell):
            saved.setdefault(mark.get("exercise"), []).append(mark.get("status") or (PASSED if mark.get("passed")
                                                                                      else FAILED))
    result = []
    for exercise in exercises:
        if session and exercise in session:
            status = session[exercise]
        elif exercise in saved:
            found = saved[exercise]
            status = PASSED if all(s == PASSED for s in found) else (
                NOT_WRITTEN if NOT_WRITTEN in found else FAILED)
        elif exercise in stubs and answers.get(exercise, stubs[exercise]) == stubs[exercise]:
            status = NOT_WRITTEN
        else:
            status = NOT_CHECKED
        result.append(ExerciseStatus(exercise, status))
    return result


def progress_text(chapter: str, statuses: list[ExerciseStatus]) -> str:
    """One chapter's line and one line per exercise, for a terminal."""
    done = sum(s.done for s in statuses)
    lines = [f"{chapter}: {done} of {len(statuses)} exercises done"]
    lines += [f"  {_MARK[s.status]} {s.exercise}: {s.status}" for s in statuses]
    return "\n".join(lines)


def find_template(chapter, chapters: str | Path | None = None) -> Path:
    """The course's chapter ``chapter``: a number (1), its two digits ("01"), its exercise prefix
    ("ch01") or its file name; raises ``LookupError`` naming the chapters there are."""
    from ..paths import chapters_dir

    folder = Path(chapters) if chapters is not None else chapters_dir()
    if folder is None:
        raise LookupError("cannot find the course's chapters (neither a checkout's chapters/ nor a wheel's)")
    templates = sorted(p for p in folder.glob("[0-9][0-9]_*.ipynb") if ".new" not in p.name)
    key = str(chapter).strip()
    m = re.fullmatch(r"(?:ch)?(\d{1,2})", key)
    for path in templates:
        if path.name == key or path.stem == key or (m and path.name[:2] == f"{int(m.group(1)):02d}"):
            return path
    raise LookupError(f"no chapter {chapter!r}; the chapters are " + ", ".join(p.stem for p in templates))


class _Progress:
    """What ``simtlab.progress()`` returns: shown as a table in Jupyter, as text elsewhere."""

    def __init__(self, chapter: str, statuses: list[ExerciseStatus], source: str):
        self.chapter, self.statuses, self.source = chapter, statuses, source

    def __repr__(self) -> str:
        return progress_text(self.chapter, self.statuses) + f"\n({self.source})"

    def _repr_html_(self) -> str:
        colour = {PASSED: SUCCESS, FAILED: ERROR}
        rows = "".join(
            f"<tr><td style='padding-right:10px'><code>{html.escape(s.exercise)}</code></td>"
            f"<td style='color:{colour.get(s.status, 'inherit')}'>{_MARK[s.status]} {html.escape(s.status)}</td></tr>"
            for s in self.statuses)
        done = sum(s.done for s in self.statuses)
        return (f"<div style='font-family:var(--jp-ui-font-family,sans-serif)'><b>{html.escape(self.chapter)}: "
                f"{done} of {len(self.statuses)} exercises done</b><table>{rows}</table>"
                f"<div style='color:{MUTED}'>{html.escape(self.source)}</div></div>")


def progress(chapter, chapters: str | Path | None = None, work: str | Path = ".") -> _Progress:
    """This chapter's exercises and which of them are done, for the cell at the end of a chapter.

    The checks run in this kernel count first, then the check outputs saved in your copy of the
    chapter (``work``, the notebook's folder); ``simtlab progress`` in a terminal lists every
    chapter.
    """
    template = find_template(chapter, chapters)
    copy = Path(work) / template.name
    nb = _read(copy) if copy.is_file() else {"cells": []}
    statuses = notebook_progress(nb, _read(template), session=SESSION)
    source = ("checks run in this kernel, then those saved in " + copy.name if copy.is_file()
              else "checks run in this kernel")
    return _Progress(template.stem, statuses, source + "; `simtlab progress` in a terminal lists every chapter")
