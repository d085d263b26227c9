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
import hmac
import io
import json
import os
import re
import secrets
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from . import contain
from .feedback import feedback_markdown
from .isolated import IsolatedResult, plan_job, run_isolated
from .rebuild import Master, NotANotebook, load_master, match_master, parse_submission, rebuild
from .run import DEFAULT_MEMORY_LIMIT, RunResult, run_notebook
from .interpret import static_problems
from .secure import feedback_notebook, hidden_message, master_rules, safe_message, vet_answers

__all__ = ["GradeOptions", "GradingSetupError", "Submission", "discover", "grade_folder", "load_masters", "write_gradebook"]

RESULT_VERSION = 1


@dataclass
class GradeOptions:
    kernel: str = "python3"
    cell_timeout: float = 60.0
    notebook_timeout: float | None = None  # None: 10 x cell_timeout
    memory_limit: int = DEFAULT_MEMORY_LIMIT
    jobs: int = 0  # 0: one per CPU core
    regrade: bool = False
    # run student code as nobody without network: None decides (root, with unshare and setpriv)
    drop_privileges: bool | None = None
    # nbval's feedback run (flags and messages only, never points): None runs it where it can
    # run as nobody (root with a Python nobody can read) and stops with GradingSetupError where
    # root cannot; False skips it. It never runs as root or as the grader's user, except with
    # unsafe_feedback_as_grader (tests of the run itself: they run trusted notebooks)
    feedback_run: bool | None = None
    unsafe_feedback_as_grader: bool = False
    # the uids runs are given, one per run at a time (None: contain.DEFAULT_UIDS or SIMTLAB_GRADE_UIDS)
    uids: tuple[int, int] | None = None

    @property
    def whole_timeout(self) -> float:
        return self.notebook_timeout if self.notebook_timeout else 10 * self.cell_timeout


class GradingSetupError(RuntimeError):
    """The grader cannot grade safely as set up; the message says why and how to fix it."""


FEEDBACK_FIX = (
    "nbval's feedback run executes the students' code, so it runs only as the user nobody, and "
    "nobody cannot start this Python with simtlab ({python}). Fix: install the grader where nobody "
    "can read it (the guide's container does: `pip install` into /usr/local, or a virtual environment "
    "under /opt with `chmod -R o+rX`), or grade without the feedback run: --no-feedback-run (the points "
    "do not depend on it; the feedback files then lack its flags).")


def feedback_plan(opts: GradeOptions) -> tuple[bool, bool, str]:
    """``(run it, as nobody, why not)`` for nbval's feedback run; raises :class:`GradingSetupError`
    where it should run and cannot run safely."""
    import sys

    from . import contain

    if opts.unsafe_feedback_as_grader:
        return True, False, ""
    if opts.feedback_run is False:
        return False, False, "the feedback run is off (--no-feedback-run)"
    drop = contain.can_drop_privileges(nested=True) if opts.drop_privileges is None else opts.drop_privileges
    if drop:
        return True, True, ""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        raise GradingSetupError(FEEDBACK_FIX.format(python=sys.executable))
    if opts.feedback_run:
        raise GradingSetupError("the feedback run needs root (to run students' code as nobody, without "
                                "network); run the grader as root in the guide's container, or pass "
                                "--no-feedback-run")
    return False, False, ("the feedback run was skipped: it runs students' code, which only a grader "
                          "running as root can run as another user (nobody)")


@dataclass
class Submission:
    student: str
    path: Path
    notebooks: list[Path] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # links and paths out of the folder: never read


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


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve(strict=True).relative_to(root.resolve())
        return True
    except (OSError, ValueError, RuntimeError):
        return False


def discover(submissions: str | Path) -> tuple[list[Submission], list[Path]]:
    """The submissions in a folder, and the top-level files ignored (not notebooks).

    A symbolic link (to a master, to another student's work, anywhere) is never followed: it
    is listed in the student's ``refused`` and flagged.
    """
    root = Path(submissions)
    if not root.is_dir():
        raise FileNotFoundError(f"submissions folder not found: {root}")
    subs: dict[str, Submission] = {}
    ignored: list[Path] = []
    for entry in sorted(root.iterdir()):
        if _hidden(entry, root):
            continue
        if entry.is_symlink():
            if entry.suffix != ".ipynb" and not entry.is_dir():
                ignored.append(entry)
                continue
            name = entry.stem if entry.suffix == ".ipynb" else entry.name
            sub = Submission(name, entry, [], [entry.name])
        elif entry.is_dir():
            notebooks, refused = [], []
            for p in sorted(entry.rglob("*.ipynb")):
                if _hidden(p, root):
                    continue
                if any(q.is_symlink() for q in [p, *p.parents] if root in q.parents) or not _inside(p, entry):
                    refused.append(p.relative_to(root).as_posix())
                elif p.is_file():
                    notebooks.append(p)
            name, sub = entry.name, Submission(entry.name, entry, notebooks, refused)
        elif entry.is_file() and entry.suffix == ".ipynb":
            name, sub = entry.stem, Submission(entry.stem, entry, [entry])
        else:
            ignored.append(entry)
            continue
        name = _unique(name, entry.name, subs)
        sub.student = name
        subs[name] = sub
    return list(subs.values()), ignored


def _unique(name: str, entry: str, taken) -> str:
    """``name``, or ``name (entry)``, ``name (entry) 2``...: the first not taken (``alice.ipynb`` and
    ``alice/``; a folder named like such a rename, ``p (p.ipynb)/``, keeps a row of its own)."""
    if name not in taken:
        return name
    candidate, n = f"{name} ({entry})", 2
    while candidate in taken:
        candidate, n = f"{name} ({entry}) {n}", n + 1
    return candidate


def _safe(student: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", student).strip(".") or "student"
    if safe != student:
        safe = f"{safe[:60]}-{hashlib.sha1(student.encode()).hexdigest()[:8]}"
    return safe


def file_names(students: list[str]) -> dict[str, str]:
    """A file name for each student, distinct even where the file system ignores case."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for student in sorted(students):
        safe = _safe(student)
        if safe.lower() in taken:
            safe = f"{safe[:60]}-{hashlib.sha256(student.encode()).hexdigest()[:12]}"
        n = 2
        base = safe
        while safe.lower() in taken:
            safe, n = f"{base}-{n}", n + 1
        taken.add(safe.lower())
        names[student] = safe
    return names


def _read_nofollow(path: Path) -> bytes:
    """A file's bytes, refusing a symbolic link (swapped in after ``discover`` looked)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        return f.read()


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


def _isolated_outcome(check: dict, iso: IsolatedResult, opts: GradeOptions, master: Master,
                      rejected_answer: str | None, manual_answer: str | None = None) -> tuple[bool, str]:
    if rejected_answer:
        return False, f"not run: your answer {rejected_answer} was rejected (see the note above)"
    if manual_answer:
        return False, (f"not graded: your answer {manual_answer} is outside what the grader interprets; "
                       "it needs manual grading (see the note above)")
    rec = iso.checks.get(check["id"])
    if rec is None:
        if iso.killed:
            return False, f"not run: the checks hit their time limit ({opts.whole_timeout:g} s)"
        return False, "not run: the process running the checks ended before this check reported"
    if rec["passed"]:
        return True, ""
    if check["role"] == "hidden-check":
        return False, hidden_message(master, check["id"])
    if rec.get("timed_out"):
        return False, f"timed out after {opts.cell_timeout:g} s"
    return False, safe_message(rec["message"], master) or "failed"


def score_chapter(master: Master, rebuilt, run: RunResult | None, opts: GradeOptions,
                  iso: IsolatedResult | None = None, rejected: dict | None = None,
                  manual: dict | None = None) -> dict:
    """Points per exercise, per check, and the flags of one graded notebook.

    With ``iso`` (the isolated run of the checks), the points and messages come from it and
    ``run`` (nbval's run of the feedback notebook) only adds flags; ``rejected``: answer id ->
    rejections (those exercises score zero).
    """
    flags = list(rebuilt.flags)
    notes = list(rebuilt.notes)
    rejected = rejected or {}
    manual = dict(manual or {})
    if run is None:  # no feedback run: the points come from the checks alone
        run = RunResult(started=True, ended=True)
    for sid, problems in rejected.items():
        flags.append(f"answer rejected: {sid} ({problems[0]})")
        notes.append(f"Your answer cell {sid} was not run, and its exercise scores zero: "
                     + "; ".join(str(p) for p in problems[:5])
                     + ". Answers may hold function definitions, constants and imports of numpy, math, "
                       "numba and simtlab.kernels (docs/INSTRUCTORS.md lists the rules).")
    by_id = {}
    for rec in run.cells:
        if rec.get("id") and rec["id"] not in by_id:
            by_id[rec["id"]] = rec
    died = [r for r in run.cells if r.get("kernel_died")]
    died_at = _label(died[0]) if died else None
    grader_error = None

    if not run.started and not (iso is not None and iso.complete):
        grader_error = f"pytest did not start (exit code {run.returncode}): {run.log.strip()[-500:]}"
    elif not run.started:
        flags.append("feedback run lost")
        notes.append("The run of your notebook that gives feedback left no results (something deleted "
                     "them); your points come from the separate run of the checks.")
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

    if iso is not None and not iso.complete:
        flags.append("check run incomplete" + (" (time limit)" if iso.killed else ""))
        notes.append("The separate run of the checks did not report every check; those that did not "
                     "report score zero.")
    if iso is not None:
        slow = [cid for cid, rec in iso.checks.items() if rec.get("timed_out")]
        if slow and not timeouts:
            flags.append("check timeout: " + ", ".join(slow))
    for sid, problem in manual.items():
        flags.append(f"needs manual grading: {sid} ({problem})")
        notes.append(f"Your answer cell {sid} is outside what the grader interprets ({problem}): the grader "
                     "never runs an answer's Python, it reads kernels and formulas as data. That exercise scores "
                     "zero until your instructor grades it by hand.")
    if iso is not None:  # what the checks met at run time: an answer or a kernel the interpreter refused
        seen = []
        for rec in iso.checks.values():
            seen += [m for m in rec.get("manual") or [] if m not in seen]
        if seen:
            flags.append("needs manual grading: " + "; ".join(seen[:3]))
            notes.append("The grader could not interpret part of your answers (" + "; ".join(seen[:3])
                         + "); the checks that needed it failed. Your instructor may grade them by hand.")
    answer_of = _answers_of_checks(master)
    exercises = {}
    for exercise, checks in master.exercises.items():
        info = {"points": 0, "max": 0, "checks": []}
        for check in checks:
            if iso is not None:
                bad = next((a for a in answer_of.get(check["id"], []) if a in rejected), None)
                by_hand = next((a for a in answer_of.get(check["id"], []) if a in manual), None)
                passed, message = _isolated_outcome(check, iso, opts, master, bad, by_hand)
            else:
                passed, message = _check_outcome(by_id.get(check["id"]), run, opts, died_at)
                if check["role"] == "hidden-check" and not passed:
                    message = hidden_message(master, check["id"])
                elif not passed:
                    message = safe_message(message, master)
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
            "answers": rebuilt.answers, "seconds": round(run.seconds + (iso.seconds if iso else 0), 2),
            "grader_error": grader_error,
            "log": run.log[-2000:] if (grader_error or run.killed) else ""}


def _answers_of_checks(master: Master) -> dict:
    """check id -> the answers it depends on: its exercise's answer (a rejected one scores zero)."""
    answers = {m.get("id") for m in (c.get("metadata", {}).get("simtlab") or {} for c in master.nb.cells)
               if isinstance(m, dict) and m.get("role") == "answer"}
    out = {}
    for exercise, checks in master.exercises.items():
        for check in checks:
            out[check["id"]] = [exercise] if exercise in answers else []
    return out


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
    for rel in sub.refused:
        problems.append(("symlink refused", f"{rel} is a symbolic link (or reaches out of the submissions folder): "
                                            "it was not read. Hand in the notebook file itself."))
    if not sub.notebooks and not sub.refused:
        problems.append(("no notebook", f"No notebook (.ipynb) was found in {sub.path.name}."))
    for path in sub.notebooks:
        rel = path.relative_to(sub.path.parent).as_posix()
        try:
            data = _read_nofollow(path)
            copied = _copy_of_master(path, data, masters)
            if copied is not None:
                problems.append(("copy of the master", f"{rel} is {copied}: it was not graded."))
                continue
            nb = parse_submission(data)
        except NotANotebook as e:
            flag = "empty file" if "empty" in str(e) else "not a notebook"
            problems.append((flag, f"{rel}: {e}."))
            continue
        except OSError as e:
            flag = "symlink refused" if path.is_symlink() else "unreadable"
            problems.append((flag, f"{rel}: cannot be read ({e.strerror})."))
            continue
        except Exception as e:  # noqa: BLE001 - any other malformed file is the student's zero, not ours
            problems.append(("not a notebook", f"{rel}: the file cannot be read as a notebook ({type(e).__name__})."))
            continue
        if not nb.cells:
            problems.append(("empty notebook", f"{rel}: the notebook has no cells."))
            continue
        try:
            master = match_master(nb, masters, path.name)
        except Exception as e:  # noqa: BLE001 - malformed metadata: the student's zero, never ours
            problems.append(("malformed notebook", f"{rel}: its metadata cannot be read ({type(e).__name__})."))
            continue
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


def _copy_of_master(path: Path, data: bytes, masters: list[Master]) -> str | None:
    """Whether a submission is a master: a hard link to one, or the same bytes (its hidden checks
    and solutions included). What it is, or None."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    digest = hashlib.sha256(data).hexdigest()
    for m in masters:
        try:
            ms = os.stat(m.path)
            if (ms.st_dev, ms.st_ino) == (st.st_dev, st.st_ino):
                return f"a hard link to the master {m.name}"
            if ms.st_size == len(data) and hashlib.sha256(m.path.read_bytes()).hexdigest() == digest:
                return f"a copy of the master {m.name}"
        except OSError:
            continue
    return None


#: how many times a notebook's kernel is started before its failure to start is a grader error
KERNEL_START_TRIES = 3


def interpretable_answers(master: Master, to_run: dict, rejected: dict) -> dict:
    """answer id -> the first construct outside what :mod:`.interpret` reads (those answers
    are replaced by their stubs in ``to_run``: they need manual grading)."""
    stubs = master_rules(master).stubs
    manual = {}
    for sid, source in to_run.items():
        if sid in rejected or source == stubs.get(sid):
            continue
        problem = static_problems(source)
        if problem is not None:
            manual[sid] = str(problem)
            to_run[sid] = stubs.get(sid, "")
    return manual


def grade_student(sub: Submission, masters: list[Master], opts: GradeOptions) -> dict:
    """Grade one student's submission; the result as stored in ``results/<student>.json``."""
    plan, problems = _prepare(sub, masters)
    feedback, as_nobody, no_feedback = feedback_plan(opts)
    chapters = []
    for master, nb, rel in plan:
        try:
            rebuilt = rebuild(master, nb)
        except Exception as e:  # noqa: BLE001 - a notebook we cannot take apart is the student's zero
            problems.append(("malformed notebook", f"{rel}: it cannot be rebuilt from the course's notebook "
                                                   f"({type(e).__name__})."))
            continue
        to_run, rejected = vet_answers(master, rebuilt)
        manual = interpretable_answers(master, to_run, rejected)
        # the points: the master's checks, in a process that interprets the answers and never runs them
        iso = run_isolated(plan_job(master, to_run, master_rules(master).stubs), cell_timeout=opts.cell_timeout,
                           total_timeout=opts.whole_timeout, memory_limit=opts.memory_limit,
                           drop_privileges=opts.drop_privileges)
        run, attempt = None, 0
        if feedback:
            run, attempt = _feedback_run(feedback_notebook(rebuilt.nb, rejected), opts, as_nobody)
        chapter = score_chapter(master, rebuilt, run, opts, iso=iso, rejected=rejected, manual=manual)
        if not feedback:
            chapter["notes"].append(f"No feedback run: {no_feedback}.")
        chapter["checks_run_as"] = iso.as_user
        chapter["isolation"] = contain.isolation(opts.memory_limit)
        chapter["feedback_run"] = ("as a uid of its own, no network" if as_nobody else "as the grader's user (tests)") \
            if feedback else "skipped"
        chapter["kernel_starts"] = attempt
        chapter["notebook"] = rel
        chapters.append(chapter)
    return _result(sub, opts, problems, chapters)


def _feedback_run(feedback_nb, opts: GradeOptions, as_nobody: bool):
    """nbval's run of the feedback notebook (flags and messages only), and the kernel starts it took."""
    for attempt in range(1, KERNEL_START_TRIES + 1):
        with tempfile.TemporaryDirectory(prefix="simtlab-grade-") as tmp:
            run = run_notebook(
                feedback_nb, tmp, name="notebook.ipynb", kernel=opts.kernel, cell_timeout=opts.cell_timeout,
                notebook_timeout=opts.whole_timeout, memory_limit=opts.memory_limit,
                drop_privileges=as_nobody,
            )
        # No student code runs before the kernel answers, so a kernel that died on start
        # (a TCP port another process took between jupyter_client picking it and the
        # kernel binding it, a machine short of memory) is the grader's problem: try again.
        if not run.kernel_never_started:
            break
    return run, attempt


def _result(sub: Submission, opts: GradeOptions, problems, chapters) -> dict:
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


def csv_cell(value) -> str:
    """A text cell a spreadsheet shows as text: no formula (``= + - @``, tab, carriage return)."""
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def write_gradebook(out: Path, masters: list[Master], results: list[dict], names: list[str]) -> Path:
    """Write ``out/gradebook.csv`` (atomically) for ``results`` over the masters named."""
    cols = _columns(masters, names)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student", *(csv_cell(h) for h in _exercise_header(cols)), "total", "max", "flags"])
    for result in sorted(results, key=lambda r: r["student"].lower()):
        row = student_row(result, cols)
        w.writerow([csv_cell(result["student"]), *(f"{p:g}" for p in row["points"]), f"{row['total']:g}",
                    f"{row['max']:g}", csv_cell("; ".join(row["flags"]))])
    path = out / "gradebook.csv"
    _write_atomic(path, buf.getvalue())
    return path


KEY_FILE = ".simtlab-grader-key"


def _grader_key(out: Path) -> bytes:
    """The key that signs ``results/*.json`` (``OUT/.simtlab-grader-key``, readable by the grader only)."""
    path = out / KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        key = _read_nofollow(path).strip()
        if len(key) >= 32:
            return key
        os.unlink(path)  # emptied or truncated: a new key; every result is graded again
        return _grader_key(out)
    key = secrets.token_hex(32).encode()
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    return key


def _mac(key: bytes, result: dict) -> str:
    body = json.dumps({k: v for k, v in result.items() if k != "mac"}, sort_keys=True)
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def _load_result(path: Path, key: bytes | None = None) -> dict | None:
    """A student's stored result, or None: missing, unreadable, or not signed by this grader."""
    try:
        data = json.loads(_read_nofollow(path).decode("utf-8"))
    except (OSError, ValueError, RecursionError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or data.get("version") != RESULT_VERSION or "student" not in data:
        return None
    if key is not None and not (isinstance(data.get("mac"), str)
                                and hmac.compare_digest(data["mac"], _mac(key, data))):
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
    feedback_plan(opts)  # raises GradingSetupError before anything is graded
    if opts.uids:
        contain.use_uids(*opts.uids)
    # no run sees another student's notebook or feedback, nor the masters (where mounts can be made)
    contain.hide_from_runs([submissions, out, solutions])
    subs, ignored = discover(submissions)
    out_res = Path(submissions).resolve()
    if out.resolve() == out_res or out_res in out.resolve().parents:
        raise ValueError(f"--out {out} is inside the submissions folder {submissions}: choose another folder")
    (out / "results").mkdir(parents=True, exist_ok=True)
    (out / "feedback").mkdir(parents=True, exist_ok=True)

    key = _grader_key(out)
    stems = file_names([sub.student for sub in subs])
    todo, results, skipped, changed, unverified = [], {}, [], [], []
    for sub in subs:
        stored = out / "results" / f"{stems[sub.student]}.json"
        previous = _load_result(stored, key)
        if previous is None and (stored.exists() or stored.is_symlink()) and not opts.regrade:
            unverified.append(sub.student)  # changed by someone else than the grader: grade again
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
        _finish(out, result, stems[sub.student], key)
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
            "gradebook": path, "masters": names, "changed": changed, "unverified": unverified,
            "columns": _columns(masters, names)}


def _finish(out: Path, result: dict, stem: str | None = None, key: bytes | None = None) -> None:
    """Write a student's result (signed with the grader's key) and feedback (atomically)."""
    total = sum(e["points"] for c in result.get("chapters", []) for e in c["exercises"].values())
    top = sum(e["max"] for c in result.get("chapters", []) for e in c["exercises"].values())
    result["total"], result["max"] = total, top
    safe = stem or _safe(result["student"])
    result["file"] = safe
    if key is not None:
        result["mac"] = _mac(key, result)
    _write_atomic(out / "feedback" / f"{safe}.md", feedback_markdown(result))
    _write_atomic(out / "results" / f"{safe}.json", json.dumps(result, indent=1, sort_keys=True) + "\n")
