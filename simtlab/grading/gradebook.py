"""Grade a folder of submissions against the masters: ``simtlab grade`` does this.

Layout of ``SUBMISSIONS``: one notebook per student (``alice.ipynb``: the
student is ``alice``) or one folder per student (``alice/…/*.ipynb``, any
number of chapters).  Other files at the top are ignored.  Nothing in
``SUBMISSIONS`` is ever written.

Layout of ``--out``::

    gradebook.csv            student, one column per exercise, total, max, flags
    feedback/<student>.md    the student's feedback
    results/<student>.json   everything known about the student's grading (a re-run
                             skips students that have one, unless regrade=True)

Every file is written to a temporary name and then renamed, so an interrupted
run leaves no half-written file.
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import io
import json
import os
import re
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from .feedback import feedback_markdown
from .rebuild import Master, NotANotebook, load_master, match_master, parse_submission, rebuild
from .run import DEFAULT_MEMORY_LIMIT, RunResult, run_notebook

__all__ = ["GradeOptions", "Submission", "discover", "grade_folder", "load_masters", "write_gradebook"]

RESULT_VERSION = 1


@dataclass
class GradeOptions:
    kernel: str = "python3"
    cell_timeout: float = 60.0
    notebook_timeout: float | None = None  # None: 10 x cell_timeout
    memory_limit: int = DEFAULT_MEMORY_LIMIT
    jobs: int = 0  # 0: one per CPU core
    regrade: bool = False

    @property
    def whole_timeout(self) -> float:
        return self.notebook_timeout if self.notebook_timeout else 10 * self.cell_timeout


@dataclass
class Submission:
    student: str
    path: Path
    notebooks: list[Path] = field(default_factory=list)


# ---------------------------------------------------------------------------
# finding things


def load_masters(solutions: str | Path) -> list[Master]:
    """Every master notebook of the ``solutions`` folder (validated)."""
    solutions = Path(solutions)
    if not solutions.is_dir():
        raise FileNotFoundError(f"solutions folder not found: {solutions} (pass --solutions DIR)")
    paths = sorted(p for p in solutions.glob("*.ipynb") if not p.name.startswith("."))
    if not paths:
        raise FileNotFoundError(f"no master notebooks (*.ipynb) in {solutions}")
    return [load_master(p) for p in paths]


def _hidden(path: Path, root: Path) -> bool:
    return any(part.startswith(".") or part in ("__pycache__", "__MACOSX")
               for part in path.relative_to(root).parts)


def discover(submissions: str | Path) -> tuple[list[Submission], list[Path]]:
    """The submissions in a folder, and the top-level files ignored (not notebooks)."""
    root = Path(submissions)
    if not root.is_dir():
        raise FileNotFoundError(f"submissions folder not found: {root}")
    subs: dict[str, Submission] = {}
    ignored: list[Path] = []
    for entry in sorted(root.iterdir()):
        if _hidden(entry, root):
            continue
        if entry.is_dir():
            notebooks = sorted(p for p in entry.rglob("*.ipynb") if p.is_file() and not _hidden(p, root))
            name, sub = entry.name, Submission(entry.name, entry, notebooks)
        elif entry.is_file() and entry.suffix == ".ipynb":
            name, sub = entry.stem, Submission(entry.stem, entry, [entry])
        else:
            ignored.append(entry)
            continue
        if name in subs:  # alice.ipynb and alice/: keep both, apart
            name = f"{name} ({entry.name})"
            sub.student = name
        subs[name] = sub
    return list(subs.values()), ignored


def _safe(student: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", student).strip(".") or "student"
    if safe != student:
        safe = f"{safe[:60]}-{hashlib.sha1(student.encode()).hexdigest()[:8]}"
    return safe


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ---------------------------------------------------------------------------
# scoring one run


def _label(rec: dict) -> str:
    return rec.get("id") or f"cell {rec.get('index')}"


def _is_memory_error(name) -> bool:
    return isinstance(name, str) and "MemoryError" in name


def _check_outcome(rec: dict | None, run: RunResult, opts: GradeOptions, died_at: str | None) -> tuple[bool, str]:
    if rec is None:
        if run.killed:
            return False, f"not run: the notebook hit its time limit ({opts.whole_timeout:g} s) before this check"
        if died_at:
            return False, f"not run: the kernel died in {died_at}"
        return False, "not run"
    if rec.get("setup_failed"):
        return False, f"not run: {rec.get('message')}"
    if rec.get("skipped"):
        return False, "not run (skipped)"
    if rec.get("kernel_dead_before"):
        return False, f"not run: the kernel died earlier, in {died_at or 'an earlier cell'}"
    if rec.get("kernel_died"):
        return False, "the kernel died while running this check"
    if rec.get("timed_out"):
        return False, f"timed out after {opts.cell_timeout:g} s"
    if rec.get("nbval_ok") and rec.get("reply") == "ok":
        return True, ""
    ename, evalue = rec.get("ename"), rec.get("evalue")
    if ename:
        return False, f"{ename}: {evalue}" if evalue else str(ename)
    return False, rec.get("message") or f"failed (kernel reply: {rec.get('reply')})"


def score_chapter(master: Master, rebuilt, run: RunResult, opts: GradeOptions) -> dict:
    """Points per exercise, per check, and the flags of one graded notebook."""
    flags = list(rebuilt.flags)
    notes = list(rebuilt.notes)
    by_id = {}
    for rec in run.cells:
        if rec.get("id") and rec["id"] not in by_id:
            by_id[rec["id"]] = rec
    died = [r for r in run.cells if r.get("kernel_died")]
    died_at = _label(died[0]) if died else None
    grader_error = None

    if not run.started:
        grader_error = f"pytest did not start (exit code {run.returncode}): {run.log.strip()[-500:]}"
    elif run.kernel_never_started:
        grader_error = f"the kernel {opts.kernel!r} did not start: {run.cells[0].get('message')}"
    if run.bad_lines:
        flags.append("results tampered")
        notes.append("Something other than the grader wrote to the grading results; those lines were ignored.")
    if run.killed:
        flags.append(f"notebook timeout ({opts.whole_timeout:g} s)")
        notes.append(f"Your notebook did not finish within {opts.whole_timeout:g} s and was stopped; "
                     "checks that had not run score zero.")
    elif run.started and not run.ended and grader_error is None:
        flags.append("grading process died")
        notes.append("The grading process was killed while running your notebook; checks that had not run "
                     "score zero.")
    timeouts = [_label(r) for r in run.cells if r.get("timed_out")]
    if timeouts:
        flags.append("cell timeout: " + ", ".join(timeouts))
        notes.append(f"These cells ran longer than {opts.cell_timeout:g} s and were interrupted: "
                     + ", ".join(timeouts) + ".")
    if died:
        code = died[0].get("exit_code")
        why = f"exit code {code}" if code is not None and code >= 0 else (
            f"killed by signal {-code}" if code is not None else "exit code unknown")
        flags.append(f"kernel died ({why})")
        notes.append(f"The Python kernel stopped in {died_at} ({why}); the cells after it did not run.")
    if any(_is_memory_error(r.get("ename")) for r in run.cells) or any(r.get("exit_code") == -9 for r in died):
        flags.append("out of memory")
        notes.append(f"Your code ran out of memory (each notebook may use {opts.memory_limit / 2**30:g} GiB).")
    hidden_tb = [_label(r) for r in run.cells
                 if r.get("reply") == "error" and not r.get("error_output") and r.get("nbval_ok")]
    if hidden_tb:
        flags.append("traceback hidden: " + ", ".join(hidden_tb))
        notes.append("Errors were raised without showing a traceback; they still count as errors.")

    exercises = {}
    for exercise, checks in master.exercises.items():
        info = {"points": 0, "max": 0, "checks": []}
        for check in checks:
            passed, message = _check_outcome(by_id.get(check["id"]), run, opts, died_at)
            if grader_error:
                passed, message = False, "not graded: " + grader_error
            info["max"] += check["points"]
            info["points"] += check["points"] if passed else 0
            info["checks"].append({
                "id": check["id"], "hidden": check["role"] == "hidden-check", "max": check["points"],
                "points": check["points"] if passed else 0, "passed": passed, "message": message,
            })
        exercises[exercise] = info
    if grader_error:
        flags.append("grader error")
    return {"master": master.name, "flags": flags, "notes": notes, "exercises": exercises,
            "answers": rebuilt.answers, "seconds": round(run.seconds, 2), "grader_error": grader_error,
            "log": run.log[-2000:] if (grader_error or run.killed) else ""}


def _zero_chapter(master: Master) -> dict:
    return {
        e: {"points": 0, "max": sum(c["points"] for c in checks),
            "checks": [{"id": c["id"], "hidden": c["role"] == "hidden-check", "max": c["points"], "points": 0,
                        "passed": False, "message": "not run"} for c in checks]}
        for e, checks in master.exercises.items()
    }


# ---------------------------------------------------------------------------
# grading a student


def _prepare(sub: Submission, masters: list[Master]):
    """Read a student's notebooks: ``(plan, problems)``, plan = [(master, nb, path, flags)]."""
    problems: list[tuple[str, str]] = []  # (flag, sentence)
    found: dict[str, list] = {}
    if not sub.notebooks:
        problems.append(("no notebook", f"No notebook (.ipynb) was found in {sub.path.name}."))
    for path in sub.notebooks:
        rel = path.relative_to(sub.path.parent).as_posix()
        try:
            nb = parse_submission(path.read_bytes())
        except NotANotebook as e:
            flag = "empty file" if "empty" in str(e) else "not a notebook"
            problems.append((flag, f"{rel}: {e}."))
            continue
        except OSError as e:
            problems.append(("unreadable", f"{rel}: cannot be read ({e.strerror})."))
            continue
        if not nb.cells:
            problems.append(("empty notebook", f"{rel}: the notebook has no cells."))
            continue
        master = match_master(nb, masters, path.name)
        if master is None:
            problems.append(("unknown chapter", f"{rel}: it does not match any chapter of the course."))
            continue
        found.setdefault(master.name, []).append((path, rel, nb, master))
    plan = []
    for name, items in found.items():
        items.sort(key=lambda it: (it[0].name != name, it[1]))  # the exact file name first
        path, rel, nb, master = items[0]
        if len(items) > 1:
            others = ", ".join(it[1] for it in items[1:])
            problems.append((f"several notebooks for {name}",
                             f"Several notebooks answer {name}: {rel} was graded, not {others}."))
        plan.append((master, nb, rel))
    return plan, problems


#: how many times a notebook's kernel is started before its failure to start is a grader error
KERNEL_START_TRIES = 3


def grade_student(sub: Submission, masters: list[Master], opts: GradeOptions) -> dict:
    """Grade one student's submission; the result as stored in ``results/<student>.json``."""
    plan, problems = _prepare(sub, masters)
    chapters = []
    for master, nb, rel in plan:
        rebuilt = rebuild(master, nb)
        for attempt in range(1, KERNEL_START_TRIES + 1):
            with tempfile.TemporaryDirectory(prefix="simtlab-grade-") as tmp:
                run = run_notebook(
                    rebuilt.nb, tmp, name=master.name, kernel=opts.kernel, cell_timeout=opts.cell_timeout,
                    notebook_timeout=opts.whole_timeout, memory_limit=opts.memory_limit,
                )
            # No student code runs before the kernel answers, so a kernel that died on start
            # (a TCP port another process took between jupyter_client picking it and the
            # kernel binding it, a machine short of memory) is the grader's problem: try again.
            if not run.kernel_never_started:
                break
        chapter = score_chapter(master, rebuilt, run, opts)
        chapter["kernel_starts"] = attempt
        chapter["notebook"] = rel
        chapters.append(chapter)
    files = [sub.path] if sub.path.is_file() else sub.notebooks
    result = {
        "version": RESULT_VERSION,
        "student": sub.student,
        "submission": str(sub.path),
        "sha256": {p.relative_to(sub.path.parent).as_posix(): _sha256(p) for p in files},
        "graded_at": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "options": {"kernel": opts.kernel, "cell_timeout": opts.cell_timeout,
                    "notebook_timeout": opts.whole_timeout, "memory_limit": opts.memory_limit},
        "flags": [f for f, _ in problems],
        "problems": [s for _, s in problems],
        "chapters": chapters,
        "grader_error": any(c["grader_error"] for c in chapters),
    }
    return result


# ---------------------------------------------------------------------------
# the gradebook


def _columns(masters: list[Master], names: list[str]) -> list[tuple[str, str, int]]:
    """(master name, exercise, max points) for the masters named, in course order."""
    cols = []
    for m in masters:
        if m.name in names:
            for e, top in m.max_points().items():
                cols.append((m.name, e, top))
    return cols


def _exercise_header(cols) -> list[str]:
    seen, header = {}, []
    for name, e, _ in cols:
        seen[e] = seen.get(e, 0) + 1
    for name, e, _ in cols:
        header.append(e if seen[e] == 1 else f"{Path(name).stem}:{e}")
    return header


def student_row(result: dict, cols) -> dict:
    """The gradebook numbers of one result: points per column, total, max, flags."""
    by_master = {c["master"]: c for c in result.get("chapters", [])}
    points, flags = [], list(result.get("flags", []))
    for c in result.get("chapters", []):
        flags.extend(f"{Path(c['master']).stem}: {f}" if len(by_master) > 1 else f for f in c["flags"])
    missing = []
    for name, e, top in cols:
        chapter = by_master.get(name)
        if chapter is None:
            if name not in missing:
                missing.append(name)
            points.append(0)
        else:
            points.append(chapter["exercises"].get(e, {}).get("points", 0))
    if result.get("chapters") or not result.get("flags"):  # else the flags already say why
        flags.extend(f"missing chapter: {name}" for name in missing)
    top = sum(t for _, _, t in cols)
    return {"points": points, "total": sum(points), "max": top, "flags": flags}


def write_gradebook(out: Path, masters: list[Master], results: list[dict], names: list[str]) -> Path:
    """Write ``out/gradebook.csv`` (atomically) for ``results`` over the masters named."""
    cols = _columns(masters, names)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student", *_exercise_header(cols), "total", "max", "flags"])
    for result in sorted(results, key=lambda r: r["student"].lower()):
        row = student_row(result, cols)
        w.writerow([result["student"], *(f"{p:g}" for p in row["points"]), f"{row['total']:g}",
                    f"{row['max']:g}", "; ".join(row["flags"])])
    path = out / "gradebook.csv"
    _write_atomic(path, buf.getvalue())
    return path


def _load_result(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != RESULT_VERSION or "student" not in data:
        return None
    return data


def grade_folder(
    submissions: str | Path,
    out: str | Path,
    solutions: str | Path,
    opts: GradeOptions | None = None,
    progress=None,
) -> dict:
    """Grade every submission in ``submissions`` against the masters in ``solutions``.

    Returns ``{"results": [...], "graded": [...], "skipped": [...], "ignored": [...],
    "gradebook": Path, "masters": [...], "changed": [...]}``.  ``progress(student,
    result, skipped)`` is called as each student is done.  Students with a result
    in ``out/results/`` are skipped unless ``opts.regrade`` (or their last grading
    hit a grader error); ``changed`` lists skipped students whose files changed
    since.  Raises FileNotFoundError / MasterNotebookError for a bad setup, never
    for a bad submission.
    """
    opts = opts or GradeOptions()
    out = Path(out)
    masters = load_masters(solutions)
    subs, ignored = discover(submissions)
    out_res = Path(submissions).resolve()
    if out.resolve() == out_res or out_res in out.resolve().parents:
        raise ValueError(f"--out {out} is inside the submissions folder {submissions}: choose another folder")
    (out / "results").mkdir(parents=True, exist_ok=True)
    (out / "feedback").mkdir(parents=True, exist_ok=True)

    todo, results, skipped, changed = [], {}, [], []
    for sub in subs:
        previous = _load_result(out / "results" / f"{_safe(sub.student)}.json")
        if previous is not None and previous["student"] == sub.student and not opts.regrade \
                and not previous.get("grader_error"):
            results[sub.student] = previous
            skipped.append(sub.student)
            files = [sub.path] if sub.path.is_file() else sub.notebooks
            now = {p.relative_to(sub.path.parent).as_posix(): _sha256(p) for p in files}
            if now != previous.get("sha256"):
                changed.append(sub.student)
            if progress:
                progress(sub.student, previous, True)
        else:
            todo.append(sub)

    lock = threading.Lock()

    def work(sub: Submission) -> dict:
        try:
            result = grade_student(sub, masters, opts)
        except Exception as e:  # noqa: BLE001 - a bug of ours must not stop the others
            result = {"version": RESULT_VERSION, "student": sub.student, "submission": str(sub.path),
                      "sha256": {}, "flags": ["grader error"], "problems": [f"grader error: {type(e).__name__}: {e}"],
                      "chapters": [], "grader_error": True}
        _finish(out, result)
        with lock:
            if progress:
                progress(sub.student, result, False)
        return result

    jobs = opts.jobs or os.cpu_count() or 1
    graded = []
    if todo:
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(todo)))) as pool:
            for fut in as_completed([pool.submit(work, s) for s in todo]):
                r = fut.result()
                results[r["student"]] = r
                graded.append(r["student"])

    used = {c["master"] for r in results.values() for c in r.get("chapters", [])}
    names = [m.name for m in masters if m.name in used] or [m.name for m in masters]
    all_results = [results[s.student] for s in subs if s.student in results]
    path = write_gradebook(out, masters, all_results, names)
    return {"results": all_results, "graded": graded, "skipped": skipped, "ignored": ignored,
            "gradebook": path, "masters": names, "changed": changed,
            "columns": _columns(masters, names)}


def _finish(out: Path, result: dict) -> None:
    """Write a student's result and feedback (atomically)."""
    total = sum(e["points"] for c in result.get("chapters", []) for e in c["exercises"].values())
    top = sum(e["max"] for c in result.get("chapters", []) for e in c["exercises"].values())
    result["total"], result["max"] = total, top
    safe = _safe(result["student"])
    _write_atomic(out / "feedback" / f"{safe}.md", feedback_markdown(result))
    _write_atomic(out / "results" / f"{safe}.json", json.dumps(result, indent=1, sort_keys=True) + "\n")
