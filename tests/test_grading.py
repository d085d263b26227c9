"""`simtlab grade` end to end, on adversarial submissions the tests make themselves.

One run grades every kind of submission (tests/test_grading_support.py) through the command
line, with a 5 s cell timeout and 2 jobs; the tests below read its gradebook, feedback and
results.  Each submission must get the grade it deserves and the right flag; a submission
that loops is stopped by its timeouts (flagged, not waited for).  How long grading takes is
measured by benchmarks/grading_throughput.py, not asserted here: on a busy machine the
wall-clock time measures the machine as much as the grader.
"""

from __future__ import annotations

import contextlib
import os
import copy
import csv
import hashlib
import io
import json
import time
from pathlib import Path

import nbformat
import psutil
import pytest

from simtlab.cli import main as simtlab_main
from simtlab.grading import GradeOptions, contain, load_master, rebuild, run_notebook
from simtlab.grading.gradebook import score_chapter
from test_grading_support import EXPECTED, GOOD_MEAN, GOOD_SQUARE, HIDDEN_SOURCE, MAX, answered, submissions, tiny_master
from load_support import generous

CELL_TIMEOUT = 5
MASTER_NAME = "01_tiny.ipynb"
REPO = Path(__file__).resolve().parent.parent


def _snapshot(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _cli(*args, feedback=False) -> tuple[int, str, str]:
    """``simtlab grade ARGS``, without nbval's feedback run unless ``feedback`` (points never come
    from it; it needs root with a Python nobody can read)."""
    out, err = io.StringIO(), io.StringIO()
    extra = [] if feedback else ["--no-feedback-run"]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = simtlab_main(["grade", *map(str, args), *extra])
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    solutions = root / "solutions"
    solutions.mkdir()
    nbformat.write(tiny_master(), str(solutions / MASTER_NAME))
    return root


@pytest.fixture(scope="module")
def graded(course):
    subs = course / "submissions"
    subs.mkdir()
    for name, nb in submissions().items():
        path = subs / f"{name}.ipynb"
        if isinstance(nb, bytes):
            path.write_bytes(nb)
        else:
            nbformat.write(nb, str(path))
    frank = subs / "frank"
    (frank / "work").mkdir(parents=True)
    nbformat.write(answered(GOOD_SQUARE, GOOD_MEAN), str(frank / "work" / MASTER_NAME))
    (frank / "conftest.py").write_text("raise SystemExit('a student conftest.py was loaded')\n")
    (frank / "work" / ".ipynb_checkpoints").mkdir()
    (frank / "work" / ".ipynb_checkpoints" / "01_tiny-checkpoint.ipynb").write_text("not graded")
    (subs / "README.txt").write_text("a file that is not a submission")
    before = _snapshot(subs)

    out = course / "grades"
    rc, stdout, stderr = _cli(subs, "--out", out, "--solutions", course / "solutions", "--jobs", 2,
                              "--cell-timeout", CELL_TIMEOUT, "--notebook-timeout", 60, "--memory-limit", 2)
    with open(out / "gradebook.csv", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    return {"rc": rc, "stdout": stdout, "stderr": stderr, "rows": rows, "out": out,
            "subs": subs, "before": before, "course": course}


def test_run_completes_and_grades_every_submission(graded):
    assert graded["rc"] == 0, graded["stdout"] + graded["stderr"]
    assert set(graded["rows"]) == set(EXPECTED), graded["stdout"]


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_each_submission_gets_its_grade_and_flags(graded, student):
    row = graded["rows"][student]
    points, flags = EXPECTED[student]
    got = {e: float(row[e]) for e in MAX}
    assert got == points, f"{student}: {row}"
    assert float(row["total"]) == sum(points.values())
    assert float(row["max"]) == sum(MAX.values())
    for flag in flags:
        assert flag in row["flags"], f"{student}: flag {flag!r} missing from {row['flags']!r}"
    if not flags:
        assert row["flags"] == "", f"{student}: unexpected flags {row['flags']!r}"


def test_gradebook_columns(graded):
    with open(graded["out"] / "gradebook.csv", newline="") as f:
        header = next(csv.reader(f))
    assert header == ["student", "t.square", "t.mean", "total", "max", "flags"]


def test_submissions_are_never_modified(graded):
    assert _snapshot(graded["subs"]) == graded["before"]


def test_summary_table_and_ignored_files(graded):
    out = graded["stdout"]
    assert "correct" in out and "6/6" in out
    assert "ignored" in out and "README.txt" in out
    assert "gradebook:" in out


def test_feedback_per_student_without_hidden_source(graded):
    feedback = graded["out"] / "feedback"
    files = sorted(p.stem for p in feedback.glob("*.md"))
    assert files == sorted(EXPECTED)
    for path in feedback.glob("*.md"):
        text = path.read_text()
        assert HIDDEN_SOURCE not in text and "square(12)" not in text and "square(0.5)" not in text, path.name
    partial = (feedback / "partial.md").read_text()
    assert "passed: check `t.square.check`" in partial
    assert "FAILED: check `t.square.negative` (1 point): AssertionError: square(-2) gave -4, expected 4" in partial
    assert "passed: hidden check `t.square.hidden` (2 points)" in partial
    assert "Total: 3 / 6 points" in partial
    blank = (feedback / "blank.md").read_text()
    assert "FAILED: hidden check `t.square.hidden` (2 points): a hidden check failed" in blank
    loop = (feedback / "infinite_loop.md").read_text()
    assert "FAILED: check `t.square.check` (1 point): not run: your answer t.square was rejected" in loop
    assert "line 1: `while` statement outside a function" in loop
    slow = (feedback / "slow_square.md").read_text()
    assert "FAILED: check `t.square.check` (1 point): HostError: more than 200,000 steps" in slow  # the interpreter's budget
    died = (feedback / "os_exit.md").read_text()
    assert "FAILED: check `t.mean.check` (2 points): not run: your answer t.mean was rejected" in died
    junk = (feedback / "not_json.md").read_text()
    assert "not JSON" in junk
    # the showtraceback trick imports IPython: the answer is rejected, never run
    trick = (feedback / "showtraceback.md").read_text()
    assert "not run: your answer t.square was rejected" in trick and "import from `IPython" in trick


def test_results_json_details(graded):
    result = json.loads((graded["out"] / "results" / "reordered.json").read_text())
    assert result["student"] == "reordered" and not result["grader_error"]
    chapter = result["chapters"][0]
    assert chapter["master"] == MASTER_NAME and chapter["answers"] == {"t.square": "id", "t.mean": "id"}
    frank = json.loads((graded["out"] / "results" / "frank.json").read_text())
    assert frank["chapters"][0]["notebook"] == "frank/work/01_tiny.ipynb"


def test_rerun_skips_graded_students(graded):
    results = graded["out"] / "results"
    before = {p.name: p.read_bytes() for p in results.glob("*.json")}
    rc, stdout, _ = _cli(graded["subs"], "--out", graded["out"], "--solutions", graded["course"] / "solutions",
                         "--cell-timeout", CELL_TIMEOUT)
    assert rc == 0
    # nothing was run again: every student skipped, no result rewritten
    assert stdout.count("skipped") == len(EXPECTED) and "graded  " not in stdout
    assert {p.name: p.read_bytes() for p in results.glob("*.json")} == before
    assert not list(graded["out"].rglob("*.tmp"))  # atomic writes leave no temporary files


def test_regrade(course, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(answered(GOOD_SQUARE, None), str(subs / "solo.ipynb"))
    out = tmp_path / "out"
    args = ["--out", out, "--solutions", course / "solutions", "--cell-timeout", CELL_TIMEOUT]
    rc, stdout, _ = _cli(subs, *args)
    assert rc == 0 and "graded  solo: 4 points" in stdout
    first = (out / "results" / "solo.json").read_text()
    rc, stdout, _ = _cli(subs, *args)
    assert "skipped solo" in stdout
    assert (out / "results" / "solo.json").read_text() == first

    # a changed submission is reported, and --regrade grades it again
    nbformat.write(answered(GOOD_SQUARE, GOOD_MEAN), str(subs / "solo.ipynb"))
    rc, stdout, _ = _cli(subs, *args)
    assert "solo's files changed" in stdout
    rc, stdout, _ = _cli(subs, *args, "--regrade")
    assert rc == 0 and "graded  solo: 6 points" in stdout
    with open(out / "gradebook.csv", newline="") as f:
        assert next(csv.DictReader(f))["total"] == "6"


@pytest.mark.skipif(os.geteuid() != 0 or contain.can_drop_privileges(nested=True),
                    reason="needs root with a Python that nobody cannot start")
def test_root_without_a_sandbox_user_stops_with_the_fix(course, tmp_path):
    """As root, nbval's feedback run (it executes students' code) runs as nobody or not at all:
    where nobody cannot start this Python, grading stops before anything runs and says how to fix it."""
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(answered(GOOD_SQUARE, GOOD_MEAN), str(subs / "solo.ipynb"))
    rc, stdout, stderr = _cli(subs, "--out", tmp_path / "out", "--solutions", course / "solutions", feedback=True)
    assert rc == 2 and "nobody" in stderr and "--no-feedback-run" in stderr, stderr
    assert not (tmp_path / "out" / "results" / "solo.json").exists()


def test_out_inside_submissions_is_refused(course, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    rc, _, stderr = _cli(subs, "--out", subs / "grades", "--solutions", course / "solutions")
    assert rc == 2 and "inside the submissions folder" in stderr
    assert not (subs / "grades").exists()


def test_missing_solutions_is_a_clear_error(tmp_path):
    rc, _, stderr = _cli(tmp_path, "--out", tmp_path / "out", "--solutions", tmp_path / "nowhere")
    assert rc == 2 and "solutions folder not found" in stderr


def test_notebook_timeout_kills_pytest_and_kernel(course, tmp_path):
    """A loop that swallows the interrupt is stopped by the whole-notebook limit, kernel included."""
    master = load_master(course / "solutions" / MASTER_NAME)
    stubborn = (
        "import time\n"
        "while True:\n"
        "    try:\n"
        "        time.sleep(100)\n"
        "    except KeyboardInterrupt:\n"
        "        pass"
    )
    rebuilt = rebuild(master, answered(stubborn, GOOD_MEAN))
    run = run_notebook(rebuilt.nb, tmp_path / "work", cell_timeout=60, notebook_timeout=20)
    # stopped by the notebook limit (20 s), not by the cell's (60 s): killed, never ended
    assert run.killed and not run.ended
    kernel_pid = None
    for line in (tmp_path / "work" / "private" / "results.jsonl").read_text().splitlines():
        body = json.loads(json.loads(line)["body"])
        if body.get("type") == "kernel":
            kernel_pid = body["pid"]
    assert kernel_pid is not None
    deadline = time.monotonic() + generous(5)
    while psutil.pid_exists(kernel_pid) and time.monotonic() < deadline:
        try:
            if psutil.Process(kernel_pid).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    alive = psutil.pid_exists(kernel_pid) and psutil.Process(kernel_pid).status() != psutil.STATUS_ZOMBIE
    assert not alive, "the kernel outlived the notebook timeout"
    scored = score_chapter(master, rebuilt, run, GradeOptions(cell_timeout=60, notebook_timeout=20))
    assert any(f.startswith("notebook timeout") for f in scored["flags"])
    assert scored["exercises"]["t.square"]["points"] == 0
    assert scored["exercises"]["t.mean"]["points"] == 0  # it never ran
    assert "time limit" in scored["exercises"]["t.mean"]["checks"][0]["message"]


def test_grades_a_real_chapter(tmp_path):
    """The course's chapter 1, its master handed in as a student's notebook: full marks, no flags;
    the blank student chapter handed in: zero, although its checks report instead of raising in a
    notebook, and the feedback says the exercises are not written."""
    master = REPO / "solutions" / "01_gpu_architecture.ipynb"
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(_with_master_answers(load_master(master)), str(subs / "star.ipynb"))
    (subs / "blank.ipynb").write_bytes((REPO / "chapters" / master.name).read_bytes())
    rc, stdout, stderr = _cli(subs, "--out", tmp_path / "out", "--solutions", REPO / "solutions", "--jobs", 1)
    assert rc == 0, stdout + stderr
    with open(tmp_path / "out" / "gradebook.csv", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    top = sum(sum(c["points"] for c in checks) for checks in load_master(master).exercises.values())
    assert rows["star"]["flags"] == "", rows["star"]
    assert float(rows["star"]["total"]) == float(rows["star"]["max"]) == top > 0
    assert float(rows["blank"]["total"]) == 0 and float(rows["blank"]["max"]) == top, rows["blank"]
    feedback = (tmp_path / "out" / "feedback" / "blank.md").read_text()
    assert "Exercise ch01.first_kernel is not written yet" in feedback


def _with_master_answers(master):
    nb = copy.deepcopy(master.student)
    answers = {(c.metadata.get("simtlab") or {}).get("id"): c.source for c in master.nb.cells
               if (c.metadata.get("simtlab") or {}).get("role") == "answer"}
    for cell in nb.cells:
        sid = (cell.get("metadata", {}).get("simtlab") or {}).get("id")
        if sid in answers:
            cell.source = answers[sid]
    return nb


_FLAKY_KERNEL = """import sys
from pathlib import Path

starts = Path(sys.argv[1])
count = int(starts.read_text()) if starts.exists() else 0
starts.write_text(str(count + 1))
if count < {fail}:
    sys.exit(1)                      # dies before answering, like a kernel whose port was taken
from ipykernel import kernelapp
kernelapp.launch_new_instance(argv=sys.argv[2:])
"""


def _flaky_kernelspec(tmp_path, monkeypatch, fail: int) -> Path:
    """A Jupyter kernel 'flaky' that dies on its first ``fail`` starts, then runs; its starts
    are counted in the file returned."""
    import sys

    starts = tmp_path / "starts.txt"
    script = tmp_path / "flaky_kernel.py"
    script.write_text(_FLAKY_KERNEL.format(fail=fail))
    spec = tmp_path / "jupyter" / "kernels" / "flaky"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, str(script), str(starts), "-f", "{connection_file}"],
        "display_name": "flaky", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return starts


@pytest.mark.parametrize("fail, graded_ok", [(1, True), (3, False)])
def test_a_kernel_that_dies_on_start_is_started_again(course, tmp_path, monkeypatch, fail, graded_ok):
    """No student code runs before the kernel answers, so a kernel that dies on start is the
    grader's problem (in CI: a port taken by another process): it is started again, up to
    KERNEL_START_TRIES times, and only then reported as a grader error."""
    from simtlab.grading.gradebook import KERNEL_START_TRIES, Submission, grade_student, load_masters

    starts = _flaky_kernelspec(tmp_path, monkeypatch, fail)
    path = tmp_path / "alice.ipynb"
    nbformat.write(answered(GOOD_SQUARE, GOOD_MEAN), str(path))
    # the kernelspec and its counter live in pytest's private folder: run as the test's user
    opts = GradeOptions(kernel="flaky", cell_timeout=30, unsafe_feedback_as_grader=True)
    result = grade_student(Submission("alice", path, [path]), load_masters(course / "solutions"), opts)
    (chapter,) = result["chapters"]
    if graded_ok:
        assert int(starts.read_text()) == 2 and chapter["kernel_starts"] == 2
        assert not result["grader_error"] and chapter["flags"] == [], chapter["flags"]
        assert {e: x["points"] for e, x in chapter["exercises"].items()} == MAX
    else:
        assert int(starts.read_text()) == KERNEL_START_TRIES == chapter["kernel_starts"]
        assert result["grader_error"] and "grader error" in chapter["flags"]
        assert "did not start" in chapter["grader_error"]
