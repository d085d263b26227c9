"""Rebuild a submitted notebook from its master, so that only the student's answers are graded.

The rebuilt notebook has every cell of the master, in the master's order, with
the master's source, except the answer cells, whose source comes from the
submission.  So a check cell the student edited, deleted or moved is graded as
the master wrote it, and hidden checks are back where they belong.  What the
student changed outside the answer cells is reported as flags.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from ..notebooks.build import (
    CHECK_ROLES,
    _without_hints,
    build_student_notebook,
    exercise_checks,
    read_notebook,
)

__all__ = [
    "Master",
    "NotANotebook",
    "Rebuilt",
    "load_master",
    "parse_submission",
    "rebuild",
    "match_master",
    "strip_nbval_markers",
    "suspicious_code",
]


class NotANotebook(ValueError):
    """A submission that cannot be read as a notebook; the message says why."""


@dataclass
class Master:
    """A master notebook, its student version and its exercises."""

    path: Path
    nb: nbformat.NotebookNode
    student: nbformat.NotebookNode
    exercises: dict[str, list[dict]]  # exercise id -> checks (see exercise_checks)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def ids(self) -> set[str]:
        return {m["id"] for m in _metas(self.nb)}

    def max_points(self) -> dict[str, int]:
        return {e: sum(c["points"] for c in checks) for e, checks in self.exercises.items()}


def load_master(path: str | Path) -> Master:
    """Read and validate a master (raises MasterNotebookError when it breaks the conventions)."""
    path = Path(path)
    nb = read_notebook(path)
    student = build_student_notebook(nb, name=str(path))  # validates
    return Master(path=path, nb=nb, student=student, exercises=exercise_checks(nb))


def _metas(nb):
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {}).get("simtlab")
        if isinstance(meta, dict) and isinstance(meta.get("id"), str):
            yield meta


def _meta(cell) -> dict:
    """A cell's ``simtlab`` metadata; an ``id`` or ``role`` that is not a string (a list, a
    dict: unhashable) is dropped, so a malformed notebook is graded, never a grader error."""
    meta = cell.get("metadata", {}).get("simtlab") if isinstance(cell, dict) else None
    if not isinstance(meta, dict):
        return {}
    if any(k in meta and not isinstance(meta[k], str) for k in ("id", "role")):
        meta = {k: v for k, v in meta.items() if k not in ("id", "role") or isinstance(v, str)}
    return meta


def _source(cell) -> str:
    src = cell.get("source", "")
    if isinstance(src, list):
        src = "".join(str(s) for s in src)
    return src if isinstance(src, str) else ""


# ---------------------------------------------------------------------------
# reading a submission


def parse_submission(data: bytes) -> nbformat.NotebookNode:
    """A submission's bytes as a notebook; raises :class:`NotANotebook` saying why not.

    A notebook of format 3 is converted to format 4; a file nested too deeply to read, or in
    another encoding than UTF-8, is not a notebook.
    """
    if not data.strip():
        raise NotANotebook("the file is empty")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise NotANotebook(f"the file is not UTF-8 text ({e.reason} at byte {e.start})") from None
    try:
        raw = json.loads(text)
    except RecursionError:
        raise NotANotebook("the file is JSON nested too deeply to be a notebook") from None
    except ValueError as e:
        raise NotANotebook(f"the file is not JSON ({e})") from None
    if isinstance(raw, dict) and raw.get("nbformat") == 3 and isinstance(raw.get("worksheets"), list):
        pass  # nbformat converts it below
    elif not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise NotANotebook("the file is JSON but not a notebook (no list of cells)")
    try:
        nb = nbformat.reads(text, as_version=4)
    except RecursionError:
        raise NotANotebook("the notebook is nested too deeply to read") from None
    except Exception as e:  # noqa: BLE001 - nbformat raises many kinds
        raise NotANotebook(f"the file is not a valid notebook ({type(e).__name__}: {str(e)[:200]})") from None
    cells = [c for c in nb.get("cells", []) if isinstance(c, dict)]
    if len(cells) != len(nb.get("cells", [])):
        raise NotANotebook("the notebook has cells that are not JSON objects")
    for cell in cells:
        if not isinstance(cell.get("source", ""), (str, list)) or not isinstance(cell.get("metadata", {}), dict):
            raise NotANotebook("the notebook has cells whose source or metadata is malformed")
    return nb


def match_master(nb, masters: list[Master], filename: str) -> Master | None:
    """Which master a submission answers.

    In order: the template name ``simtlab open`` records in the notebook's
    metadata; the master sharing the most exercise ids with it; the master whose
    file name starts the submission's file name (``02_x-Copy1.ipynb``); the only
    master.  None when none of these decides.
    """
    by_name = {m.name: m for m in masters}
    stamp = nb.get("metadata", {}).get("simtlab_template")
    if isinstance(stamp, dict) and isinstance(stamp.get("name"), str) and stamp["name"] in by_name:
        return by_name[stamp["name"]]
    ids = {m["id"] for m in _metas(nb)}
    if ids:
        scores = sorted(((len(ids & m.ids), i) for i, m in enumerate(masters)), reverse=True)
        if scores and scores[0][0] > 0 and (len(scores) == 1 or scores[1][0] < scores[0][0]):
            return masters[scores[0][1]]
    stems = [m for m in masters if filename.startswith(m.path.stem)]
    if len(stems) == 1:
        return stems[0]
    if len(masters) == 1:
        return masters[0]
    return None


# ---------------------------------------------------------------------------
# nbval markers and suspicious code

_NBVAL_COMMENTS = (
    "PYTEST_VALIDATE_IGNORE_OUTPUT",
    "NBVAL_IGNORE_OUTPUT",
    "NBVAL_CHECK_OUTPUT",
    "NBVAL_RAISES_EXCEPTION",
    "NBVAL_SKIP",
)


def strip_nbval_markers(source: str) -> tuple[str, bool]:
    """``source`` without nbval's comment markers (``# NBVAL_SKIP`` ...); and whether any was there."""
    out, found = [], False
    for line in source.split("\n"):
        stripped = line.strip()
        if stripped.startswith("#") and stripped.lstrip("#").strip() in _NBVAL_COMMENTS:
            found = True
            continue
        out.append(line)
    return "\n".join(out), found


def _strip_nbval_tags(metadata: dict) -> dict:
    tags = metadata.get("tags")
    if isinstance(tags, list):
        kept = [t for t in tags if not (isinstance(t, str) and (t.startswith("nbval") or t == "raises-exception"))]
        if kept:
            metadata["tags"] = kept
        else:
            metadata.pop("tags", None)
    return metadata


# Names that answer code has no reason to touch in this course, and that code
# reaching into the kernel, the checks or the grader does touch.  A heuristic for
# the instructor's eye, not a defence: it is easy to hide from.
_SUSPICIOUS = [
    ("showtraceback", r"showtraceback"),
    ("custom exception handler", r"set_custom_exc|excepthook"),
    ("IPython internals", r"get_ipython|InteractiveShell|ipykernel|run_cell|run_code"),
    ("builtins", r"__builtins__|\bbuiltins\b"),
    ("sys.modules", r"sys\.modules"),
    ("os._exit", r"os\._exit"),
    ("signals", r"\bsignal\b"),
    ("ctypes", r"\bctypes\b"),
    ("dynamic code", r"\bexec\s*\(|\beval\s*\(|__import__|compile\s*\("),
    ("frame inspection", r"sys\._getframe|\binspect\b|gc\.get_referrers|gc\.get_objects"),
    ("check functions", r"simtlab\.exercises|\bcheck_[A-Za-z_0-9]*\s*="),
    ("grader's processes or files", r"results\.jsonl|/proc/|getppid|os\.kill|killpg|\bpsutil\b"),
]


def suspicious_code(sources: list[str]) -> list[str]:
    """The kinds of suspicious code (see ``_SUSPICIOUS``) found in the answer sources."""
    text = "\n".join(sources)
    return [label for label, pattern in _SUSPICIOUS if re.search(pattern, text)]


# ---------------------------------------------------------------------------
# rebuilding


@dataclass
class Rebuilt:
    """A rebuilt notebook and what was found on the way.

    ``flags`` are short words for the gradebook; ``notes`` longer sentences for
    the feedback; ``answers`` maps each answer id to where its source came from
    (``"id"``, ``"cell id"``, ``"position"`` or ``"missing"``).
    """

    nb: nbformat.NotebookNode
    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    answers: dict[str, str] = field(default_factory=dict)
    blank: bool = False
    used: set[int] = field(default_factory=set)  # positions of the submission's cells taken as answers


def _norm(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().split("\n"))


def rebuild(master: Master, submission: nbformat.NotebookNode) -> Rebuilt:
    """The notebook to grade: the master's cells, the submission's answers.

    Answer cells are matched by ``metadata.simtlab.id``, then by the notebook
    cell id, then by position in the student version.  Students' nbval markers
    and tags are removed from the answers; check cells lose theirs too, so every
    check runs.  Outputs are cleared.  Nothing in ``submission`` is changed.
    """
    sub_cells = list(submission.get("cells", []))
    template = master.student.cells

    by_sid: dict[str, list[int]] = {}
    by_cid: dict[str, int] = {}
    for i, cell in enumerate(sub_cells):
        sid = _meta(cell).get("id")
        if isinstance(sid, str):
            by_sid.setdefault(sid, []).append(i)
        cid = cell.get("id")
        if isinstance(cid, str) and cid not in by_cid:
            by_cid[cid] = i
    template_pos = {}
    for i, cell in enumerate(template):
        sid = _meta(cell).get("id")
        if sid is not None:
            template_pos[sid] = i

    out = Rebuilt(nb=nbformat.v4.new_notebook())
    used = out.used
    answer_sources: list[str] = []
    duplicates = sorted(sid for sid, idx in by_sid.items() if len(idx) > 1 and sid in template_pos)
    if duplicates:
        out.flags.append("duplicate cells: " + ", ".join(duplicates))
        out.notes.append(
            "Some cells appear more than once in your notebook (" + ", ".join(duplicates) + "); "
            "the first copy of each was graded."
        )

    def find(sid: str, cell_id: str | None) -> tuple[int | None, str]:
        for i in by_sid.get(sid, []):
            if i not in used:
                return i, "id"
        if cell_id and cell_id in by_cid:
            i = by_cid[cell_id]
            if i not in used and not _meta(sub_cells[i]).get("id"):
                return i, "cell id"
        pos = template_pos.get(sid)
        if pos is not None and pos < len(sub_cells):
            i = pos
            if i not in used and sub_cells[i].get("cell_type") == "code" and not _meta(sub_cells[i]).get("id"):
                return i, "position"
        return None, "missing"

    stripped_markers = False
    cells = []
    blank = True
    missing_answers = []
    for index, mcell in enumerate(master.nb.cells):
        meta = _meta(mcell)
        role = meta.get("role")
        cell = copy.deepcopy(mcell)
        cell.metadata = nbformat.from_dict(
            {k: copy.deepcopy(v) for k, v in mcell.get("metadata", {}).items() if k not in ("execution", "ExecuteTime")}
        )
        if cell.get("cell_type") == "code":
            cell.outputs = []
            cell.execution_count = None
        if role == "answer":
            sid = meta["id"]
            tcell = template[template_pos[sid]]
            i, how = find(sid, tcell.get("id"))
            out.answers[sid] = how
            if i is None:
                missing_answers.append(sid)
                source = _source(tcell)  # the stub: the checks fail, as for a blank answer
            else:
                used.add(i)
                source = _source(sub_cells[i])
                if _without_hints(source) != _without_hints(_source(tcell)):
                    blank = False
            source, found = strip_nbval_markers(source)
            stripped_markers |= found
            if i is not None and any(
                isinstance(t, str) and (t.startswith("nbval") or t == "raises-exception")
                for t in (sub_cells[i].get("metadata", {}).get("tags") or [])
            ):
                stripped_markers = True
            cell.source = source
            answer_sources.append(source)
            _strip_nbval_tags(cell.metadata)
        elif role in CHECK_ROLES:
            cell.source, _ = strip_nbval_markers(_source(mcell))
            _strip_nbval_tags(cell.metadata)
        cells.append(cell)
    out.nb.cells = cells
    out.nb.metadata = nbformat.from_dict(copy.deepcopy(dict(master.student.metadata)))
    out.blank = blank

    if missing_answers:
        out.flags.append("answer missing: " + ", ".join(missing_answers))
        out.notes.append(
            "These answer cells were not found in your notebook, so they were graded as not written: "
            + ", ".join(missing_answers) + "."
        )
    if stripped_markers:
        out.flags.append("nbval markers removed")
        out.notes.append("nbval markers (NBVAL_... comments or tags) in your answers were removed before grading.")
    out.flags.extend(_tampering(master, sub_cells, by_sid, out))
    suspicious = suspicious_code(answer_sources)
    if suspicious:
        out.flags.append("suspicious code: " + ", ".join(suspicious))
    if blank and not missing_answers:
        out.flags.append("blank")
    return out


def _hashable_id(value):
    return value if isinstance(value, str) else None


def _tampering(master: Master, sub_cells, by_sid, out: Rebuilt) -> list[str]:
    """Flags for the changes a student made outside the answer cells (they are all undone)."""
    flags = []
    edited, deleted, other_edited, other_deleted = [], [], [], []
    for tcell in master.student.cells:
        meta = _meta(tcell)
        sid, role = meta.get("id"), meta.get("role")
        if sid is None or role == "answer":
            continue
        found = by_sid.get(sid, [])
        if not found:
            (deleted if role in CHECK_ROLES else other_deleted).append(sid)
            continue
        scell = sub_cells[found[0]]
        if _norm(_source(scell)) != _norm(_source(tcell)) or _meta(scell).get("role") != role:
            (edited if role in CHECK_ROLES else other_edited).append(sid)
        elif role in CHECK_ROLES and _meta(scell).get("points") != meta.get("points"):
            edited.append(sid)
    # the order of every cell of the template found in the submission
    positions = []
    for tcell in master.student.cells:
        sid = _meta(tcell).get("id")
        if sid in by_sid:
            positions.append((by_sid[sid][0], sid))
    reordered = [sid for (p, sid), (q, _) in zip(positions[1:], positions[:-1]) if p < q]
    if edited:
        flags.append("check edited: " + ", ".join(edited))
    if deleted:
        flags.append("check deleted: " + ", ".join(deleted))
    if reordered:
        flags.append("cells reordered")
    if other_edited:
        flags.append("read-only cell edited: " + ", ".join(other_edited))
    if other_deleted:
        flags.append("read-only cell deleted: " + ", ".join(other_deleted))
    if edited or deleted or reordered or other_edited or other_deleted:
        out.notes.append(
            "You changed, deleted or moved cells outside the answer cells. Grading uses the course's own "
            "version of every such cell, in the course's order: only your answer cells count."
        )
    # a code cell is the student's own when nothing ties it to the course's notebook:
    # no exercise id of the course, no cell id of the course, no source of the course
    # (the master's own cells too: a master handed in holds its hidden checks)
    known_ids = {m["id"] for m in _metas(master.student)} | master.ids
    known_cells = {c.get("id") for nb in (master.student, master.nb) for c in nb.cells if c.get("id")}
    known_sources = {_norm(_source(c)) for nb in (master.student, master.nb) for c in nb.cells}
    extra = [
        i for i, c in enumerate(sub_cells)
        if c.get("cell_type") == "code" and _source(c).strip() and i not in out.used
        and _meta(c).get("id") not in known_ids and _hashable_id(c.get("id")) not in known_cells
        and _norm(_source(c)) not in known_sources
    ]
    if extra:
        flags.append(f"extra cells ignored: {len(extra)}")
        out.notes.append(
            f"{len(extra)} code cell(s) you added were not run: grading runs only the course's cells and your "
            "answer cells. Code an answer needs must be inside its answer cell."
        )
    return flags
