"""What a master lets an answer do, and what of a master must never reach a student.

- :func:`vet_answers`: each answer of a rebuilt notebook vetted (:mod:`.vet`) against its
  master's names; the sources to run (a rejected answer is replaced by the stub);
- :func:`feedback_notebook`: the notebook nbval runs for the student's feedback and flags:
  no hidden check, and a rejected answer replaced by an error saying why;
- :func:`safe_message`: a failure message fit for the feedback file: one line, at most
  300 characters (cut after a whole sentence, :func:`capped`), and withheld when it quotes a
  solution or a hidden check.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

from .vet import course_names, top_level_bindings, vet_answer

__all__ = ["MasterRules", "master_rules", "vet_answers", "feedback_notebook", "safe_message", "capped", "hidden_message"]

MESSAGE_LIMIT = 300
WITHHELD = ("the error message quoted the course's solution or a hidden check, so it is not shown; "
            "run the check in your notebook to see what went wrong")
HIDDEN_DEFAULT = "a hidden check failed: it tests your answer on inputs the visible checks do not use"


def _meta(cell) -> dict:
    meta = cell.get("metadata", {}).get("simtlab")
    return meta if isinstance(meta, dict) else {}


def _role(cell):
    return _meta(cell).get("role")


@dataclass
class MasterRules:
    protected: set
    imports: dict
    own: dict  # answer id -> names the master's answer binds
    stubs: dict  # answer id -> the student version's source
    secret_lines: list  # normalised lines of solutions and hidden checks (long enough to be telling)
    secret_windows: set  # 40-character windows of the same text


def _text(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


_RULES_CACHE: dict = {}


def master_rules(master) -> MasterRules:
    key = (str(master.path), id(master.nb))
    if key in _RULES_CACHE:
        return _RULES_CACHE[key]
    course = [c.source for c in master.nb.cells if c.get("cell_type") == "code"
              and _role(c) in ("setup", "check", "hidden-check")]
    protected, imports = course_names(course)
    own, stubs = {}, {}
    for c in master.nb.cells:
        if _role(c) == "answer":
            own[_meta(c)["id"]] = top_level_bindings(c.source)
    for c in master.student.cells:
        if _role(c) == "answer":
            stubs[_meta(c)["id"]] = c.source
    student_lines = {_norm(line) for c in master.student.cells for line in _text(c).split("\n")}
    secret_text = []
    for c in master.nb.cells:
        # what students never see: hidden checks and solutions, less the lines their notebook shows
        if _role(c) in ("hidden-check", "answer"):
            secret_text.append("\n".join(line for line in _text(c).split("\n")
                                         if _norm(line) not in student_lines and "###" not in line))
    # long enough to be telling: a short line (`i = cuda.grid(1)`) also appears in hints and errors
    lines = sorted({_norm(line) for t in secret_text for line in t.split("\n") if len(_norm(line)) >= 24})
    windows = set()
    for t in secret_text:
        flat = _norm(t)
        windows.update(flat[i:i + 40] for i in range(0, max(0, len(flat) - 39)))
    rules = MasterRules(protected, imports, own, stubs, lines, windows)
    _RULES_CACHE[key] = rules
    return rules


def vet_answers(master, rebuilt) -> tuple[dict, dict]:
    """``(to_run, rejected)``: answer id -> source to run; answer id -> list of :class:`Rejection`."""
    rules = master_rules(master)
    to_run, rejected = {}, {}
    for cell in rebuilt.nb.cells:
        if _role(cell) != "answer":
            continue
        sid = _meta(cell)["id"]
        problems = vet_answer(cell.source, chapter=master.name, protected=rules.protected,
                              course_imports=rules.imports, own=rules.own.get(sid, set()))
        if problems:
            rejected[sid] = problems
            to_run[sid] = rules.stubs.get(sid, "")
        else:
            to_run[sid] = cell.source
    return to_run, rejected


def feedback_notebook(rebuilt_nb, rejected: dict):
    """The rebuilt notebook without hidden checks, rejected answers replaced by an error."""
    nb = copy.deepcopy(rebuilt_nb)
    cells = []
    for cell in nb.cells:
        role = _role(cell)
        if role == "hidden-check":
            continue
        if role == "answer" and _meta(cell)["id"] in rejected:
            sid = _meta(cell)["id"]
            first = rejected[sid][0]
            text = f"Your answer {sid} was not run: line {first.line}: {first.construct}"
            cell.source = f"raise RuntimeError({text!r})"
        cells.append(cell)
    nb.cells = cells
    return nb


def safe_message(message: str, master) -> str:
    """One line, capped, withheld when it quotes the master's solutions or hidden checks."""
    rules = master_rules(master)
    flat = _norm(message or "")
    if any(line in flat for line in rules.secret_lines) or any(
            flat[i:i + 40] in rules.secret_windows for i in range(0, max(0, len(flat) - 39))):
        return WITHHELD
    return capped(flat)


#: what ends a message cut at the cap
CUT_NOTE = " (cut: the check in your notebook shows the whole message)"


def capped(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` within ``limit`` characters, cut after its last whole sentence that fits (the
    checks write the fix first, so what a cut drops is the end of the description); a text
    with no sentence end before the cap is cut at a word."""
    if len(text) <= limit:
        return text
    room = limit - len(CUT_NOTE)
    head = text[:room]
    ends = [m.end() for m in re.finditer(r"[.!?:;](?=\s)", head + " ")]
    if ends and ends[-1] > room // 3:
        head = head[:ends[-1]]
    else:
        head = head[:head.rfind(" ")] if " " in head[room // 2:] else head
    return head.rstrip() + CUT_NOTE


def hidden_message(master, check_id: str) -> str:
    """The instructor's message for a failed hidden check (``feedback`` in its metadata)."""
    for cell in master.nb.cells:
        meta = _meta(cell)
        if meta.get("id") == check_id:
            text = meta.get("feedback")
            if isinstance(text, str) and text.strip():
                return capped(_norm(text))
    return HIDDEN_DEFAULT
