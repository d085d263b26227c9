"""What a check cell shows: a card, not a traceback, and no stop of Run All.

Every public check of the chapters (``check_*``, ``hidden_check_*``) is wrapped by
:func:`student_check`, which names its exercise. How a failure comes out depends on who runs it:

- **a student's notebook** (an IPython kernel): the check *reports* and returns. A failed check
  shows one card (HTML in Jupyter, plain text elsewhere): what is wrong, where (the launch, the
  thread or element the message names), and the fix; the student's own traceback, when their
  code raised, only inside a "details" fold. No frame, line or value of the checker's source
  is ever shown (it holds the answer). The cell ends without an error, so Run All goes on to
  the end of the chapter.
- **anywhere else** (pytest, the grader's sandbox, a script), and in a kernel whose environment
  sets ``SIMTLAB_CHECK_FAILURES=raise`` (the grader's nbval run of the feedback notebook): the
  check raises :class:`~.report.CheckFailed` as before, so grading and tests see the failure.

Either way the check's output carries, in its display metadata, ``{"simtlab_check":
{"exercise": ..., "passed": ..., "status": ...}}``: the test harness counts failures from it,
and ``simtlab progress`` reads it back from the saved notebooks. :data:`SESSION` holds this
kernel's latest status per exercise (the end-of-chapter progress cell reads it).
"""

from __future__ import annotations

import functools
import html
import os
import sys
import traceback
from pathlib import Path

from ..html_theme import ERROR, error_card_style
from .report import CheckFailed, ExerciseNotWritten, _in_ipython

__all__ = ["student_check", "reports_in_notebook", "failure_card", "SESSION", "OUTPUT_KEY", "MODE_ENV", "PASSED", "FAILED",
           "NOT_WRITTEN"]

#: display metadata key of a check's output: {"exercise": id, "passed": bool, "status": one of STATUSES}
OUTPUT_KEY = "simtlab_check"
#: what a check found: its exercise passed, failed, or is still the stub
PASSED, FAILED, NOT_WRITTEN = "passed", "failed", "not written"
#: environment variable: "raise" makes checks raise in a notebook too (the grader's nbval run)
MODE_ENV = "SIMTLAB_CHECK_FAILURES"
#: this kernel's latest status per exercise id (PASSED, FAILED or NOT_WRITTEN)
SESSION: dict[str, str] = {}

_PACKAGE = str(Path(__file__).resolve().parent.parent)   # simtlab/: the checker and the emulator
_running: list[str] = []                                  # exercises of the checks now running, outermost first


def reports_in_notebook() -> bool:
    """True when a failed check shows its card and returns (a student's notebook: a Jupyter
    kernel), False when it raises (tests, grading, scripts, a terminal IPython, or
    ``SIMTLAB_CHECK_FAILURES=raise``). A test process may hold an IPython shell of its own
    (the %%simt tests make one): only a kernel's shell counts."""
    return _in_kernel() and os.environ.get(MODE_ENV, "report").strip().lower() != "raise"


def _in_kernel() -> bool:
    if not _in_ipython():
        return False
    shell = sys.modules["IPython"].get_ipython()
    return getattr(shell, "kernel", None) is not None


def current_exercise() -> str | None:
    """The exercise whose check is running (the outermost one), or None."""
    return _running[0] if _running else None


def student_check(exercise: str):
    """Decorator for a chapter's check of ``exercise``: records the result, and in a student's
    notebook turns a failure into a card instead of an exception (see the module's docstring).

    A check called by another check (a hidden check reusing the visible one) raises to its
    caller: only the outermost check reports.
    """
    def wrap(check):
        @functools.wraps(check)
        def run(*args, **kwargs):
            outermost = not _running
            _running.append(exercise)
            try:
                result = check(*args, **kwargs)
            except Exception as failure:  # noqa: BLE001 - whatever the student's code raised fails the check
                if not outermost:
                    raise
                SESSION[exercise] = NOT_WRITTEN if isinstance(failure, ExerciseNotWritten) else FAILED
                if not reports_in_notebook():
                    raise
                _show(failure_card(exercise, failure))
                return None
            finally:
                _running.pop()
            if outermost:
                SESSION[exercise] = PASSED
            return result

        run.exercise = exercise
        return run

    return wrap


# ---------------------------------------------------------------------------
# the card


class Card:
    """A failed check as a student reads it; ``text`` and ``html`` are the two forms."""

    def __init__(self, exercise: str, title: str, rows: list[tuple[str, str]], details: str | None,
                 not_written: bool = False):
        self.exercise, self.title, self.rows, self.details = exercise, title, rows, details
        self.not_written = not_written

    @property
    def text(self) -> str:
        lines = [f"\u2718 {self.title}"]
        lines += [f"{label}: {value}" for label, value in self.rows]
        if self.details:
            lines.append("(the traceback of your code is in the card's details, in Jupyter)")
        return "\n".join(lines)

    @property
    def html(self) -> str:
        rows = "".join(
            f"<div style='margin:4px 0'><b>{html.escape(label)}:</b> "
            f"<span style='white-space:pre-wrap'>{html.escape(value)}</span></div>" for label, value in self.rows)
        details = ""
        if self.details:
            details = ("<details style='margin-top:6px'><summary>details: the traceback of your code</summary>"
                       f"<pre style='white-space:pre-wrap;font-size:12px'>{html.escape(self.details)}</pre>"
                       "</details>")
        return (f"<div class='simtlab-check-card' style='{error_card_style()}'>"
                f"<div style='font-size:14px;color:{ERROR}'><b>\u2718 "
                f"{html.escape(self.title)}</b></div>{rows}{details}</div>")

    def bundle(self) -> tuple[dict, dict]:
        status = NOT_WRITTEN if self.not_written else FAILED
        return ({"text/plain": self.text, "text/html": self.html},
                {OUTPUT_KEY: {"exercise": self.exercise, "passed": False, "status": status}})


def _hint_line(exercise: str) -> str:
    return f'hint("{exercise}") gives a first hint, hint("{exercise}", 2) a stronger one.'


def failure_card(exercise: str, failure: BaseException) -> Card:
    """The card for ``failure`` raised by the check of ``exercise``."""
    if isinstance(failure, ExerciseNotWritten):
        return Card(exercise, f"Exercise {exercise} is not written yet", [
            ("what to do", "replace the line `raise NotWrittenYet(...)` in the answer cell above with your code, "
                           "run that cell, then this one."),
            ("stuck?", _hint_line(exercise)),
        ], None, not_written=True)
    if isinstance(failure, CheckFailed):
        rows = [("what is wrong", failure.problem.strip())]
        if failure.context:
            rows.append(("where", failure.context.strip()))
        if failure.fix:
            rows.append(("fix", failure.fix.strip()))
        rows.append(("stuck?", _hint_line(exercise)))
        return Card(exercise, f"Exercise {exercise}: not right yet", rows,
                    student_traceback(getattr(failure, "original", None)))
    # the student's code raised something the check did not expect
    return Card(exercise, f"Exercise {exercise}: your code raised {type(failure).__name__}", [
        ("what is wrong", f"{type(failure).__name__}: {failure}".strip()),
        ("fix", "the details below show the line of your code that raised it."),
        ("stuck?", _hint_line(exercise)),
    ], student_traceback(failure) or None)


def student_traceback(error: BaseException | None) -> str | None:
    """The traceback of ``error`` through the student's code only (frames outside simtlab),
    or None when it has none: the checker's and the emulator's frames are left out."""
    if error is None or error.__traceback__ is None:
        return None
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not _course_file(f.filename)]
    if not frames:
        return None
    listed = "".join(traceback.format_list(frames))
    return f"Traceback (your code only):\n{listed}{type(error).__name__}: {error}"


def _course_file(filename: str) -> bool:
    try:
        return str(Path(filename).resolve()).startswith(_PACKAGE)
    except (OSError, ValueError):
        return False


def _show(card: Card) -> None:
    from IPython.display import display

    data, metadata = card.bundle()
    display(data, metadata=metadata, raw=True)
