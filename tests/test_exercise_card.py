"""A failed check as a student meets it: one card in the notebook, no traceback, no checker
source, and the chapter goes on (simtlab/exercises/card.py); tests and grading still see a raise."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from notebook_runner import (check_outcomes, error_name, execute_notebook, leaked_checker_lines, output_text)
from simtlab.exercises import ch01
from simtlab.exercises.card import MODE_ENV, failure_card, student_traceback
from simtlab.exercises.report import CheckFailed, ExerciseNotWritten, failing_in

REPO = Path(__file__).resolve().parent.parent
CHAPTER1 = REPO / "chapters" / "01_gpu_architecture.ipynb"
MASTER1 = REPO / "solutions" / "01_gpu_architecture.ipynb"

#: a wrong scale_add: every block writes the first block's elements
THREADIDX_ONLY = """@cuda.jit
def scale_add(a, b, out, alpha):
    i = cuda.threadIdx.x
    if i < out.size:
        out[i] = alpha * a[i] + b[i]
"""
#: a linear id that crashes in the student's own code
CRASHING_IDS = """def linear_thread_id(tx, ty, tz, bdx, bdy):
    return tx + ty * bdx + tz * undefined_name

def global_thread_id(thread_idx, block_idx, block_dim, grid_dim):
    return 0
"""


def _cells(nb, *ids):
    by_id = {(c.metadata.get("simtlab") or {}).get("id"): c for c in nb.cells}
    return [nbformat.from_dict(dict(by_id[i])) for i in ids]


def _answer_lines(master_path: Path, exercise: str) -> list[str]:
    """The master's answer lines of ``exercise`` (inside its solution region, markers left out)."""
    for cell in nbformat.read(master_path, as_version=4).cells:
        if (cell.metadata.get("simtlab") or {}).get("id") == exercise:
            inside, lines = False, []
            for line in cell.source.split("\n"):
                if "### BEGIN SOLUTION" in line or "### END SOLUTION" in line:
                    inside = "BEGIN" in line
                elif inside and "###" not in line and line.strip():
                    lines.append(line.strip())
            return lines
    raise KeyError(exercise)


@pytest.fixture(scope="module")
def student_run():
    """Chapter 1's first two exercises as a student meets them: blank, then wrong, then crashing."""
    chapter = nbformat.read(CHAPTER1, as_version=4)
    imports, lin, lin_check, first, first_check = _cells(
        chapter, "ch01.imports", "ch01.linear_id", "ch01.linear_id.check", "ch01.first_kernel",
        "ch01.first_kernel.check")
    nb = nbformat.v4.new_notebook()
    nb.cells = [imports, lin, lin_check, first, first_check,
                nbformat.v4.new_code_cell(THREADIDX_ONLY), nbformat.from_dict(dict(first_check)),
                nbformat.v4.new_code_cell(CRASHING_IDS), nbformat.from_dict(dict(lin_check)),
                nbformat.v4.new_code_cell("print('the cell after the checks ran')")]
    return execute_notebook(nb, cwd=CHAPTER1.parent)


def test_no_check_cell_raises_and_the_last_cell_runs(student_run):
    errors = [(i, error_name(c)) for i, c in enumerate(student_run.cells) if error_name(c)]
    assert errors == []
    assert "the cell after the checks ran" in output_text(student_run.cells[-1])


def test_each_check_output_is_marked_failed(student_run):
    marks = [check_outcomes(student_run.cells[i]) for i in (2, 4, 6, 8)]
    assert marks == [[{"exercise": "ch01.linear_id", "passed": False, "status": "not written"}],
                     [{"exercise": "ch01.first_kernel", "passed": False, "status": "not written"}],
                     [{"exercise": "ch01.first_kernel", "passed": False, "status": "failed"}],
                     [{"exercise": "ch01.linear_id", "passed": False, "status": "failed"}]]


def test_a_stub_shows_a_card_without_the_answer(student_run):
    shown = output_text(student_run.cells[2])
    assert "Exercise ch01.linear_id is not written yet" in shown
    assert "Traceback" not in shown
    answer = _answer_lines(MASTER1, "ch01.linear_id")
    assert "return tx + ty * bdx + tz * bdx * bdy" in answer     # what the old traceback printed
    for cell in student_run.cells:
        for line in answer:
            if len(line) > 12:
                assert line not in output_text(cell), f"the master's answer line {line!r} reached the output"


def test_no_line_of_the_checker_reaches_the_output(student_run):
    assert leaked_checker_lines(student_run) == []


def test_a_wrong_answer_card_says_what_where_and_the_fix(student_run):
    cell = student_run.cells[6]
    html = next(o for o in cell.outputs if o.output_type == "display_data")["data"]["text/html"]
    text = output_text(cell)
    assert "simtlab-check-card" in html and "<details" not in html     # nothing of the student's to trace
    assert "Exercise ch01.first_kernel: not right yet" in text
    what, where, fix = (text.index(label) for label in ("what is wrong:", "where:", "fix:"))
    assert what < where < fix
    assert "elements were never written" in text and "(i=256)" in text        # which elements
    assert re.search(r"\d+ blocks of 256 threads", text)                       # which launch (n is drawn)
    assert "cuda.threadIdx.x alone repeats in every block" in text              # the fix


def test_the_students_own_traceback_is_in_the_details_only(student_run):
    cell = student_run.cells[8]
    html = next(o for o in cell.outputs if o.output_type == "display_data")["data"]["text/html"]
    details = html[html.index("<details"):]
    assert "NameError" in html and "undefined_name" in details
    assert "tz * undefined_name" in details            # the student's line, in the fold
    assert "Traceback" not in html[:html.index("<details")]


def test_checks_raise_when_the_kernel_is_told_to(monkeypatch):
    """The grader's nbval run sets SIMTLAB_CHECK_FAILURES=raise: the check cell errors there."""
    monkeypatch.setenv(MODE_ENV, "raise")
    chapter = nbformat.read(CHAPTER1, as_version=4)
    nb = nbformat.v4.new_notebook()
    nb.cells = _cells(chapter, "ch01.imports", "ch01.linear_id", "ch01.linear_id.check")
    out = execute_notebook(nb, cwd=CHAPTER1.parent)
    assert error_name(out.cells[2]) == "ExerciseNotWritten"


def test_checks_raise_outside_a_notebook():
    def stub(*args):
        from simtlab.student import NotWrittenYet
        raise NotWrittenYet("ch01.linear_id")

    with pytest.raises(ExerciseNotWritten):
        ch01.check_linear_id(stub, stub)


def test_an_ipython_shell_in_a_test_process_is_not_a_notebook():
    """The %%simt tests start an IPython shell in the test process: the checks of the tests that
    run after them in that process must still raise (CI's workers mix test files)."""
    from IPython.testing.globalipapp import get_ipython

    def stub(*args):
        from simtlab.student import NotWrittenYet
        raise NotWrittenYet("ch01.linear_id")

    assert get_ipython() is not None   # the one shell of the test session, as the %%simt tests make it
    with pytest.raises(ExerciseNotWritten):
        ch01.check_linear_id(stub, stub)


def test_card_rows_come_from_the_failure_parts():
    with pytest.raises(CheckFailed) as info:
        with failing_in("Launch: 2 blocks of 32 threads.", hint="Guard the index."):
            raise CheckFailed("out: element (i=40) was never written")
    card = failure_card("ch09.demo", info.value)
    assert card.rows[:3] == [("what is wrong", "out: element (i=40) was never written"),
                             ("where", "Launch: 2 blocks of 32 threads."), ("fix", "Guard the index.")]
    assert card.details is None


def test_student_traceback_leaves_the_course_frames_out():
    def students_helper():
        return 1 / 0

    try:
        ch01._call(students_helper, "students_helper")
    except CheckFailed as e:
        tb = student_traceback(e.original)
    assert "students_helper" in tb and "1 / 0" in tb
    assert "exercises" not in tb and "_call" not in tb


def test_every_check_cell_calls_a_check_of_its_own_exercise():
    """Each check and hidden-check cell of the masters calls a check wrapped by student_check with
    the exercise the builder counts the cell towards (what a card and `simtlab progress` name)."""
    import importlib
    import re

    from simtlab.notebooks.build import exercise_checks

    seen = 0
    for path in sorted((REPO / "solutions").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for exercise, checks in exercise_checks(nb).items():
            for check in checks:
                calls = re.findall(r"\b(ch\d\d)\.(\w+)\(", nb.cells[check["index"]].source)
                assert calls, f"{path.name}: check {check['id']} calls no chapter check"
                for module, name in calls:
                    fn = getattr(importlib.import_module(f"simtlab.exercises.{module}"), name)
                    assert getattr(fn, "exercise", None) == exercise, (path.name, check["id"], name)
                    seen += 1
    assert seen >= 30
