"""Build the student notebooks in ``chapters/`` from the master notebooks in ``solutions/``.

A master notebook is an ordinary notebook whose exercise cells carry

.. code-block:: python

    cell.metadata["simtlab"] = {
        "id": "2.3",            # stable, unique in the notebook; grading keys on it
        "role": "answer",       # setup | answer | check | hidden-check | readonly
        "points": 2,            # check and hidden-check cells only (int >= 0)
        "exercise": "2.3",      # check and hidden-check cells only, optional: see below
    }

and whose answer cells hold the solution between two marker lines::

    def square(x):
        ### BEGIN SOLUTION
        ### HINT 1: what does squaring mean?        (optional; one line per level and cell)
        ### HINT 2: multiply x by itself            (a stronger hint; "### HINT:" is level 1)
        return x * x
        ### END SOLUTION

In the student notebook the region becomes ``raise NotWrittenYet("2.3")`` at the
indentation of the region's code, and the cell gets the line
``from simtlab.student import NotWrittenYet, hint`` at its top. The stub gives
nothing away: the hints go to the answer cell's metadata (``simtlab_hints``, weakest
first), where ``hint("2.3")`` and ``hint("2.3", 2)`` find them.  Inside CUDA C source
(a string literal), the markers are written as C comments, ``// ### BEGIN SOLUTION``
... ``// ### END SOLUTION`` (hints: ``// ### HINT 1: ...``), and the region becomes
``/* YOUR CODE HERE */``.

Hidden-check cells are dropped, outputs and execution counts are cleared, and the
``simtlab`` metadata is kept so that grading can find the cells again. Only what must stay
as written is locked (:func:`_locks`): the text (markdown), and the setup, check and
readonly cells, are read-only and cannot be deleted; answer cells are editable and cannot be
deleted; every other code cell (the chapter's demos, which the text invites students to
change) is editable and deletable, so a copy of it is the student's own too. A note at the end
of the chapter's introduction (:data:`HOW_IT_WORKS`, added to its first markdown cell) says so.

The output is deterministic: the same master gives the same bytes, so
``build_all(..., check=True)`` compares files byte for byte.

Each check and hidden-check cell counts towards one exercise (a column of the
gradebook of ``simtlab grade``; see :func:`exercise_checks`): the answer cell
named by its ``exercise`` key; without one, the answer cell whose id followed by
a dot starts the check's id (``"ch02.occupancy.check"`` counts towards
``"ch02.occupancy"``; the longest such id wins); failing that, the nearest
answer cell above it; failing that, the check is an exercise of its own.
Several checks may count towards one exercise, each with its own points
(partial credit).
"""

from __future__ import annotations

import copy
import datetime
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat

from ..exercises.hints import HINTS_KEY  # a student answer cell's hints, weakest first (read by hint())

__all__ = [
    "ROLES",
    "MasterNotebookError",
    "StudentWorkError",
    "SyncProblem",
    "student_work",
    "build_student_notebook",
    "build_all",
    "notebook_bytes",
    "read_notebook",
    "validate_master",
    "exercise_checks",
]

#: roles a cell's ``metadata["simtlab"]["role"]`` may take
ROLES = ("setup", "answer", "check", "hidden-check", "readonly")
#: roles whose cells need ``points``
CHECK_ROLES = ("check", "hidden-check")

C_STUB = "/* YOUR CODE HERE */"
#: the first line of a student answer cell holding a Python stub
STUB_IMPORT = "from simtlab.student import NotWrittenYet, hint"

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}

# A marker line: optional indentation, optional "//" (C), then "### BEGIN SOLUTION" etc.
_MARKER = re.compile(r"^(?P<indent>[ \t]*)(?P<c>//[ \t]*)?###[ \t]*(?P<kind>BEGIN SOLUTION|END SOLUTION)[ \t]*$")
_HINT = re.compile(r"^[ \t]*(?://[ \t]*)?###[ \t]*HINT(?:[ \t]+(?P<level>[1-9]))?:(?P<text>.*)$")
# Anything that looks like a marker but is not exactly one (caught by validation).
_NEAR_MARKER = re.compile(r"#+[ \t]*(BEGIN|END)[ _]*SOLUTION", re.IGNORECASE)
_NEAR_HINT = re.compile(r"###[ \t]*HINT\b", re.IGNORECASE)

#: roles of the code cells a student may not change: grading and the cells after them rely on them
LOCKED_ROLES = ("setup", "check", "hidden-check", "readonly")

#: what the builder adds to each student notebook's introduction (its first markdown cell): how to
#: run the chapter, what is locked, where progress and hints are
HOW_IT_WORKS = (
    "**How this notebook works.** Run the cells from top to bottom (*Run ▸ Run All Cells* runs the whole "
    "chapter: an exercise you have not written yet does not stop it). ✏️ marks an exercise: replace "
    "`raise NotWrittenYet(...)` in its cell with your answer; the cell after it checks the answer and says "
    "what is wrong, and `hint(\"<exercise>\")` gives a hint.\n\n"
    "**Locked cells:** the text, the check cells and the setup cells are read-only. Every other code cell "
    "is yours to change and run again, and so is a copy of it (*Edit ▸ Copy Cell*, then *Paste Cell*). "
    "`simtlab progress` in a terminal (or the cell at the end of a chapter) shows which exercises are "
    "done; `simtlab reset NN` starts chapter NN again, keeping your copy in a backup."
)


def _add_how_it_works(cells) -> None:
    """:data:`HOW_IT_WORKS` at the end of the first markdown cell (the chapter's introduction)."""
    for cell in cells:
        if cell.cell_type == "markdown":
            cell.source = cell.source.rstrip("\n") + "\n\n" + HOW_IT_WORKS
            return


def _locks(cell_type: str, role: str | None) -> dict:
    """``editable`` and ``deletable`` of a student notebook's cell (see the module's docstring)."""
    if role == "answer":
        return {"editable": True, "deletable": False}
    if cell_type != "code" or role in LOCKED_ROLES:
        return {"editable": False, "deletable": False}
    return {"editable": True, "deletable": True}


# cell metadata that only describes one execution of the master
_VOLATILE_CELL_METADATA = ("execution", "ExecuteTime", "collapsed", "scrolled")


class MasterNotebookError(ValueError):
    """A master notebook breaks the exercise conventions.

    ``problems`` lists every problem found, each as a readable line naming
    the notebook, the cell index and what is wrong.
    """

    def __init__(self, notebook: str, problems: list[str]):
        self.notebook = notebook
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{notebook}: {len(self.problems)} problem(s) in the master notebook:\n{lines}")


class StudentWorkError(RuntimeError):
    """A notebook in ``chapters/`` holds work (outputs, edited answers) that a rebuild would lose.

    ``files`` maps each such path to the reasons found.  Nothing was written.
    """

    def __init__(self, files: dict):
        self.files = dict(files)
        lines = []
        for path, reasons in self.files.items():
            lines.append(f"  - {path}: " + "; ".join(reasons))
        super().__init__(
            f"refusing to overwrite {len(self.files)} notebook(s) in chapters/ that hold work a rebuild would lose:\n"
            + "\n".join(lines)
            + "\nchapters/ holds templates only (students work in their own copies, see `simtlab open`). "
            "Move the work elsewhere, or rebuild with --force, which first saves a timestamped backup in "
            f"{BACKUP_DIR}/."
        )


#: sub-folder of chapters/ where ``build_all(force=True)`` keeps what it overwrote
BACKUP_DIR = ".backup"


@dataclass(frozen=True)
class SyncProblem:
    """One student notebook out of sync with its master.

    ``kind`` is ``"missing"`` (no student notebook yet), ``"stale"`` (it differs
    from what the master builds) or ``"extra"`` (a student notebook without a
    master).  ``fixed`` is True when ``build_all`` wrote the file (never for
    ``check=True``, never for ``"extra"``: files without a master are left alone).
    """

    kind: str
    path: Path
    master: Path | None = None
    fixed: bool = False

    def __str__(self) -> str:
        if self.kind == "missing":
            what = f"missing (build it from {self.master})"
        elif self.kind == "stale":
            what = f"out of date with {self.master}"
        else:
            what = "has no master notebook in the solutions folder (delete it or add its master)"
        done = " -> rebuilt" if self.fixed else ""
        return f"{self.path}: {what}{done}"


# ---------------------------------------------------------------------------
# reading and writing


def read_notebook(path: str | Path) -> nbformat.NotebookNode:
    """Read a notebook as nbformat v4."""
    with open(path, encoding="utf-8") as f:
        return nbformat.read(f, as_version=4)


def notebook_bytes(nb: nbformat.NotebookNode) -> bytes:
    """The exact bytes ``build_all`` writes for ``nb`` (sorted keys, indent 1, trailing newline)."""
    text = nbformat.writes(nb, version=4, ensure_ascii=False)  # nbformat fixes indent=1, sorted keys
    if not text.endswith("\n"):
        text += "\n"
    return text.encode("utf-8")


def _source(cell) -> str:
    src = cell.get("source", "")
    if isinstance(src, list):  # raw JSON form
        src = "".join(src)
    return src


# ---------------------------------------------------------------------------
# validation


def _cell_label(index: int, cell) -> str:
    meta = cell.get("metadata", {}).get("simtlab")
    if isinstance(meta, dict) and meta.get("id") is not None:
        return f"cell {index} (id {meta.get('id')!r})"
    return f"cell {index}"


def _scan_regions(source: str):
    """Split ``source`` into marker regions.

    Returns ``(regions, problems)`` where each region is a dict with the line
    numbers (0-based) of its BEGIN and END lines, whether it is C, and its hints.
    """
    lines = source.split("\n")
    regions: list[dict] = []
    problems: list[str] = []
    current: dict | None = None
    for n, line in enumerate(lines):
        m = _MARKER.match(line)
        if m:
            if m.group("kind") == "BEGIN SOLUTION":
                if current is not None:
                    problems.append(
                        f"line {n + 1}: BEGIN SOLUTION inside the region opened on line {current['begin'] + 1} "
                        "(regions cannot nest; is an END SOLUTION missing?)"
                    )
                    continue
                current = {"begin": n, "c": bool(m.group("c")), "indent": m.group("indent"), "hints": []}
            else:
                if current is None:
                    problems.append(f"line {n + 1}: END SOLUTION without a BEGIN SOLUTION before it")
                    continue
                if bool(m.group("c")) != current["c"]:
                    want = "// ### END SOLUTION" if current["c"] else "### END SOLUTION"
                    problems.append(
                        f"line {n + 1}: the region opened on line {current['begin'] + 1} must be closed by {want!r}"
                    )
                current["end"] = n
                regions.append(current)
                current = None
            continue
        h = _HINT.match(line)
        if h:
            if current is None:
                problems.append(f"line {n + 1}: '### HINT:' outside a BEGIN/END SOLUTION region")
            else:
                current["hints"].append((int(h.group("level") or 1), h.group("text").strip()))
            continue
        if _NEAR_MARKER.search(line) or _NEAR_HINT.search(line):
            problems.append(
                f"line {n + 1}: {line.strip()!r} looks like a marker but is not one "
                "(write '### BEGIN SOLUTION', '### END SOLUTION', '### HINT: ...' or '### HINT 2: ...' alone "
                "on the line, "
                "or with a leading '// ' inside C source)"
            )
    if current is not None:
        problems.append(f"line {current['begin'] + 1}: BEGIN SOLUTION has no END SOLUTION")
    return regions, problems


def validate_master(master: nbformat.NotebookNode, name: str = "<notebook>") -> None:
    """Raise :class:`MasterNotebookError` listing every convention the master breaks."""
    problems: list[str] = []
    seen_ids: dict[str, int] = {}
    exercise_refs: list[tuple[str, object]] = []
    for index, cell in enumerate(master.get("cells", [])):
        label = _cell_label(index, cell)
        meta = cell.get("metadata", {}).get("simtlab")
        is_code = cell.get("cell_type") == "code"
        regions, region_problems = _scan_regions(_source(cell)) if is_code else ([], [])
        problems.extend(f"{label}: {p}" for p in region_problems)

        if meta is None:
            if regions:
                problems.append(
                    f"{label}: has a solution region but no metadata['simtlab'] "
                    "(give it {'id': ..., 'role': 'answer'})"
                )
            continue
        if not isinstance(meta, dict):
            problems.append(f"{label}: metadata['simtlab'] must be a dict, not {type(meta).__name__}")
            continue

        cid = meta.get("id")
        if not isinstance(cid, str) or not cid.strip():
            problems.append(f"{label}: metadata['simtlab']['id'] must be a non-empty string, got {cid!r}")
        elif cid in seen_ids:
            problems.append(f"{label}: id {cid!r} is already used by cell {seen_ids[cid]}; ids must be unique")
        else:
            seen_ids[cid] = index

        role = meta.get("role")
        if role not in ROLES:
            problems.append(f"{label}: role {role!r} is not one of {', '.join(ROLES)}")
            continue
        if role in ("answer", "check", "hidden-check") and not is_code:
            problems.append(f"{label}: a {role} cell must be a code cell, not {cell.get('cell_type')}")

        if role == "answer":
            if is_code and not regions and not region_problems:
                problems.append(f"{label}: answer cell has no '### BEGIN SOLUTION' ... '### END SOLUTION' region")
            problems.extend(f"{label}: {p}" for p in _repeated_hint_levels(regions))
        elif regions:
            problems.append(f"{label}: a {role} cell must not contain a solution region (only answer cells may)")

        points = meta.get("points")
        if role in CHECK_ROLES:
            if isinstance(points, bool) or not isinstance(points, int) or points < 0:
                problems.append(
                    f"{label}: a {role} cell needs metadata['simtlab']['points'] as an int >= 0, got {points!r}"
                )
        elif "points" in meta:
            problems.append(f"{label}: only check and hidden-check cells carry points (this is a {role} cell)")

        if "exercise" in meta:
            if role not in CHECK_ROLES:
                problems.append(f"{label}: only check and hidden-check cells name an exercise (this is a {role} cell)")
            else:
                exercise_refs.append((label, meta.get("exercise")))

        if "feedback" in meta and (role != "hidden-check" or not isinstance(meta["feedback"], str)):
            problems.append(f"{label}: only hidden-check cells carry 'feedback' (the message a student reads "
                            "when the check fails), as a string")

        unknown = set(meta) - {"id", "role", "points", "exercise", "feedback"}
        if unknown:
            problems.append(f"{label}: unknown metadata['simtlab'] keys: {', '.join(sorted(unknown))}")
    answer_ids = _answer_ids(master)
    for label, ref in exercise_refs:
        if ref not in answer_ids:
            problems.append(
                f"{label}: metadata['simtlab']['exercise'] is {ref!r}, which is not the id of an answer cell "
                f"(answer cells: {', '.join(sorted(answer_ids)) or 'none'})"
            )
    if problems:
        raise MasterNotebookError(name, problems)


def _answer_ids(nb) -> list[str]:
    ids = []
    for cell in nb.get("cells", []):
        meta = cell.get("metadata", {}).get("simtlab")
        if isinstance(meta, dict) and meta.get("role") == "answer" and isinstance(meta.get("id"), str):
            ids.append(meta["id"])
    return ids


def exercise_checks(master: nbformat.NotebookNode) -> dict[str, list[dict]]:
    """The exercises of a (valid) master and the checks that score each one.

    Returns ``{exercise id: [{"id", "role", "points", "index"}, ...]}`` in the
    order the exercises appear (an exercise appears at its answer cell, or at
    its first check when it has no answer cell), each check list in notebook
    order; ``index`` is the check cell's position in ``master.cells``.  The rule
    mapping a check to its exercise is in this module's docstring.  Answer cells
    without any check are left out (they score nothing).
    """
    answers = _answer_ids(master)
    order: list[str] = []
    checks: dict[str, list[dict]] = {}
    last_answer = None
    for index, cell in enumerate(master.get("cells", [])):
        meta = cell.get("metadata", {}).get("simtlab")
        if not isinstance(meta, dict):
            continue
        role = meta.get("role")
        if role == "answer":
            last_answer = meta.get("id")
            if last_answer not in order:
                order.append(last_answer)
            continue
        if role not in CHECK_ROLES:
            continue
        cid = meta.get("id")
        exercise = meta.get("exercise")
        if exercise is None:
            prefixes = [a for a in answers if isinstance(cid, str) and cid.startswith(a + ".")]
            exercise = max(prefixes, key=len) if prefixes else (last_answer or cid)
        if exercise not in order:
            order.append(exercise)
        checks.setdefault(exercise, []).append(
            {"id": cid, "role": role, "points": meta.get("points", 0), "index": index}
        )
    return {e: checks[e] for e in order if e in checks}


# ---------------------------------------------------------------------------
# building


def _stub_region(lines: list[str], region: dict, exercise_id: str) -> list[str]:
    """The lines replacing ``lines[begin:end + 1]``: a stub that gives nothing of the answer away."""
    body = lines[region["begin"] + 1 : region["end"]]
    indent = region["indent"]
    for line in body:
        if line.strip() and not _HINT.match(line):
            indent = line[: len(line) - len(line.lstrip(" \t"))]
            break
    if region["c"]:
        return [f"{indent}{C_STUB}"]
    # json.dumps gives a double-quoted literal whose escapes are valid Python
    return [f"{indent}raise NotWrittenYet({json.dumps(exercise_id, ensure_ascii=False)})"]


def _repeated_hint_levels(regions: list[dict]) -> list[str]:
    """A hint level given more than once in one answer cell: its texts would be shown as one hint,
    glued together (``hint(id, 2)`` gives one text per level for the whole exercise)."""
    counts: dict[int, int] = {}
    for region in regions:
        for level, _ in region["hints"]:
            counts[level] = counts.get(level, 0) + 1
    return [f"HINT {level} is given {n} times in one answer cell: write one '### HINT {level}:' line for the "
            "whole exercise (naming each function it covers), so that two hints are never shown glued as one"
            for level, n in sorted(counts.items()) if n > 1]


def _cell_hints(regions: list[dict]) -> list[str]:
    """The answer cell's hints, weakest first: the text of its ``### HINT N:`` line for N = 1, 2, ...
    (``### HINT:`` is level 1; validation allows one line per level and cell)."""
    levels = {level: text for region in regions for level, text in region["hints"] if text}
    return [levels[level] for level in sorted(levels)]


def _strip_regions(source: str, exercise_id: str) -> str:
    regions, problems = _scan_regions(source)
    if problems:  # validate_master has already reported these
        raise MasterNotebookError("<notebook>", problems)
    lines = source.split("\n")
    out: list[str] = []
    pos = 0
    for region in regions:
        out.extend(lines[pos : region["begin"]])
        out.extend(_stub_region(lines, region, exercise_id))
        pos = region["end"] + 1
    out.extend(lines[pos:])
    if any(not region["c"] for region in regions):
        # the stub's exception (and hint(), which its message names) come with the cell
        at = 1 if out and out[0].startswith("%%") else 0   # after a cell magic, which must stay first
        out.insert(at, STUB_IMPORT)
    return "\n".join(out)


def build_student_notebook(master: nbformat.NotebookNode, name: str = "<notebook>") -> nbformat.NotebookNode:
    """Return the student version of ``master`` (which is not modified).

    ``name`` only appears in error messages.  Raises :class:`MasterNotebookError`
    when the master breaks the conventions described in this module's docstring.
    """
    validate_master(master, name)

    nb = nbformat.v4.new_notebook()
    nb.nbformat, nb.nbformat_minor = 4, 5
    metadata = copy.deepcopy(dict(master.get("metadata", {})))
    for key in ("widgets", "language_info", "kernelspec"):
        metadata.pop(key, None)
    metadata["kernelspec"] = dict(KERNELSPEC)
    metadata["language_info"] = {"name": "python"}
    nb.metadata = nbformat.from_dict(metadata)

    used_ids: set[str] = set()
    cells = []
    for index, mcell in enumerate(master.get("cells", [])):
        meta = mcell.get("metadata", {}).get("simtlab")
        role = meta.get("role") if isinstance(meta, dict) else None
        if role == "hidden-check":
            continue

        cell_metadata = copy.deepcopy(dict(mcell.get("metadata", {})))
        for key in _VOLATILE_CELL_METADATA:
            cell_metadata.pop(key, None)
        jupyter_meta = cell_metadata.get("jupyter")
        if isinstance(jupyter_meta, dict):
            jupyter_meta.pop("outputs_hidden", None)
            if not jupyter_meta:
                del cell_metadata["jupyter"]

        source = _source(mcell)
        if role == "answer":
            hints = _cell_hints(_scan_regions(source)[0])
            source = _strip_regions(source, meta["id"])
            if hints:
                cell_metadata[HINTS_KEY] = hints
        ctype = mcell.get("cell_type")
        cell_metadata.update(_locks(ctype, role))

        if ctype == "code":
            cell = nbformat.v4.new_code_cell(source=source)
            cell.outputs = []
            cell.execution_count = None
        elif ctype == "markdown":
            cell = nbformat.v4.new_markdown_cell(source=source)
            if mcell.get("attachments"):
                cell.attachments = copy.deepcopy(mcell["attachments"])
        else:
            cell = nbformat.v4.new_raw_cell(source=source)
            if mcell.get("attachments"):
                cell.attachments = copy.deepcopy(mcell["attachments"])
        cell.metadata = nbformat.from_dict(cell_metadata)

        # deterministic cell ids: the master's when it has one, else from the position
        cell_id = mcell.get("id") or f"cell-{index}"
        while cell_id in used_ids:
            cell_id = f"{cell_id}-{index}"
        used_ids.add(cell_id)
        cell.id = cell_id
        cells.append(cell)
    _add_how_it_works(cells)
    nb.cells = cells
    return nb


def student_work(path: str | Path, generated: nbformat.NotebookNode) -> list[str]:
    """Why overwriting ``path`` with ``generated`` would lose work: outputs, or edited answer cells.

    An empty list means the file holds nothing but a (possibly older) template.
    """
    try:
        existing = read_notebook(path)
    except Exception as e:  # unreadable: it is not ours to throw away
        return [f"cannot be read as a notebook ({type(e).__name__})"]
    reasons = []
    with_outputs = [i for i, c in enumerate(existing.get("cells", []))
                    if c.get("cell_type") == "code" and c.get("outputs")]
    if with_outputs:
        reasons.append(f"{len(with_outputs)} cell(s) have outputs (first: cell {with_outputs[0]})")
    stubs = {}
    for cell in generated.cells:
        meta = cell.get("metadata", {}).get("simtlab")
        if isinstance(meta, dict) and meta.get("role") == "answer":
            stubs[meta.get("id")] = _without_hints(_source(cell))
    edited = []
    for cell in existing.get("cells", []):
        meta = cell.get("metadata", {}).get("simtlab")
        if isinstance(meta, dict) and meta.get("role") == "answer":
            if stubs.get(meta.get("id")) != _without_hints(_source(cell)):
                edited.append(str(meta.get("id")))
    if edited:
        reasons.append("answer cell(s) differ from the generated stub: " + ", ".join(edited))
    return reasons


# A stub line as _stub_region writes it, or as it wrote it before stubs raised NotWrittenYet
# (with the hint in the message), so that a template from an older build is no edit.
_PY_STUB_LINE = re.compile(r'^([ \t]*)raise (NotWrittenYet\(".*"\)|NotImplementedError\("Exercise .*"\))[ \t]*$')
_C_STUB_LINE = re.compile(r"^([ \t]*)/\* YOUR CODE HERE(: .*)? \*/[ \t]*$")
_STUB_IMPORT_LINE = re.compile(r"^from simtlab(\.exercises|\.student)? import NotWrittenYet, hint[ \t]*$")


def _without_hints(source: str) -> str:
    """``source`` with every stub line reduced to its indentation and without the stub's import
    line, so that a changed hint or stub format is no edit."""
    lines = []
    for line in source.split("\n"):
        if _STUB_IMPORT_LINE.match(line):
            continue
        m = _PY_STUB_LINE.match(line) or _C_STUB_LINE.match(line)
        lines.append(f"{m.group(1)}<stub>" if m else line)
    return "\n".join(lines)


def _backup(target: Path) -> Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    folder = target.parent / BACKUP_DIR
    folder.mkdir(parents=True, exist_ok=True)
    backup = folder / f"{target.stem}.{stamp}{target.suffix}"
    n = 1
    while backup.exists():
        n += 1
        backup = folder / f"{target.stem}.{stamp}-{n}{target.suffix}"
    shutil.copy2(target, backup)
    return backup


def _masters(solutions_dir: Path) -> list[Path]:
    return sorted(p for p in solutions_dir.glob("*.ipynb") if p.is_file() and not p.name.startswith("."))


def build_all(
    solutions_dir: str | Path, chapters_dir: str | Path, check: bool = False, force: bool = False
) -> list[SyncProblem]:
    """Build ``chapters_dir/X.ipynb`` from every ``solutions_dir/X.ipynb``.

    Returns the notebooks that were out of sync (:class:`SyncProblem`).  With
    ``check=True`` nothing is written.  Otherwise missing and stale notebooks are
    (re)written (``fixed=True``) and notebooks without a master are reported but
    never deleted.  Every master is validated before anything is written, so a
    broken master raises :class:`MasterNotebookError` and leaves ``chapters_dir``
    untouched.

    A stale notebook holding work (outputs, or answer cells that differ from the
    generated stub, see :func:`student_work`) is not overwritten: ``build_all``
    raises :class:`StudentWorkError` before writing anything.  With ``force=True``
    each such file is first copied to ``chapters_dir/.backup/X.<timestamp>.ipynb``.
    """
    solutions_dir = Path(solutions_dir)
    chapters_dir = Path(chapters_dir)
    if not solutions_dir.is_dir():
        raise FileNotFoundError(f"solutions folder not found: {solutions_dir}")

    built: list[tuple[Path, Path, bytes]] = []
    at_risk: dict[Path, list[str]] = {}
    for master_path in _masters(solutions_dir):
        master = read_notebook(master_path)
        student = build_student_notebook(master, name=str(master_path))
        target = chapters_dir / master_path.name
        data = notebook_bytes(student)
        built.append((master_path, target, data))
        if not check and target.exists() and target.read_bytes() != data:
            reasons = student_work(target, student)
            if reasons:
                at_risk[target] = reasons
    if at_risk and not force:
        raise StudentWorkError(at_risk)

    problems: list[SyncProblem] = []
    for master_path, target, data in built:
        if not target.exists():
            kind = "missing"
        elif target.read_bytes() != data:
            kind = "stale"
        else:
            continue
        if not check:
            if target in at_risk:
                _backup(target)
            chapters_dir.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.tmp")
            tmp.write_bytes(data)
            tmp.replace(target)
        problems.append(SyncProblem(kind, target, master_path, fixed=not check))

    master_names = {m.name for m, _, _ in built}
    if chapters_dir.is_dir():
        for extra in _masters(chapters_dir):
            if extra.name not in master_names:
                problems.append(SyncProblem("extra", extra))
    return problems
