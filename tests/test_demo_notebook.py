"""End to end on a tiny demo master: build, run the master (passes), run the student (checks fail).

The demo master is made by ``make_demo_master`` below; ``tests/data/demo_master.ipynb``
is its saved copy (regenerate with ``python tests/test_demo_notebook.py``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

from notebook_runner import (check_cell_results, check_outcomes, execute_notebook, master_failures, output_text,
                             student_failures)
from simtlab.cli import main as simtlab_main
from simtlab.notebooks import build_all, notebook_bytes, read_notebook

DATA = Path(__file__).resolve().parent / "data"
DEMO = DATA / "demo_master.ipynb"

SETUP = '''\
import numpy as np
from simtlab.exercises.card import student_check
from simtlab.exercises.report import CheckFailed, compare_arrays, passed, poison


@student_check("demo.square")
def check_square(square, values=(0, 1, 2, -3, 1.5)):
    for x in values:
        try:
            got = square(x)
        except NotImplementedError as e:
            raise CheckFailed(f"You have not written this exercise yet: {e}") from None
        if got != x * x:
            raise CheckFailed(f"square({x!r}) returned {got!r}, expected {x * x!r}")
    passed(f"square is right for all {len(values)} values")


@student_check("demo.double_all")
def check_double_all(double_all, n=16):
    x = np.arange(n, dtype=np.float64)
    out = poison(n, np.float64)
    try:
        double_all(x, out)
    except NotImplementedError as e:
        raise CheckFailed(f"You have not written this exercise yet: {e}") from None
    compare_arrays(out, 2 * x, "out", index_names=("i",))
    passed("double_all doubles every element")
'''

SQUARE = '''\
def square(x):
    ### BEGIN SOLUTION
    ### HINT: multiply x by itself
    return x * x
    ### END SOLUTION
'''

DOUBLE_ALL = '''\
def double_all(x, out):
    for i in range(x.size):
        ### BEGIN SOLUTION
        out[i] = 2 * x[i]
        ### END SOLUTION
'''


def _cell(kind: str, source: str, cell_id: str, simtlab: dict | None = None):
    cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
    cell.id = cell_id
    if simtlab is not None:
        cell.metadata["simtlab"] = simtlab
    return cell


def make_demo_master() -> nbformat.NotebookNode:
    """A master with two plain-Python exercises, their checks and one hidden check."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.cells = [
        _cell("markdown", "# Demo chapter\n\nThis notebook only tests the notebook machinery.", "intro"),
        _cell("code", SETUP, "setup", {"id": "demo.setup", "role": "setup"}),
        _cell("code", 'print("a read-only cell")', "readonly", {"id": "demo.readonly", "role": "readonly"}),
        _cell("markdown", "## Exercise 1\n\nWrite `square(x)`.", "ex1-text"),
        _cell("code", SQUARE, "ex1-answer", {"id": "demo.square", "role": "answer"}),
        _cell("code", "check_square(square)", "ex1-check", {"id": "demo.square.check", "role": "check", "points": 1}),
        _cell(
            "code",
            "check_square(square, values=range(-50, 50))",
            "ex1-hidden",
            {"id": "demo.square.hidden", "role": "hidden-check", "points": 2},
        ),
        _cell("markdown", "## Exercise 2\n\nFill `out` with twice `x`.", "ex2-text"),
        _cell("code", DOUBLE_ALL, "ex2-answer", {"id": "demo.double_all", "role": "answer"}),
        _cell(
            "code",
            "check_double_all(double_all)",
            "ex2-check",
            {"id": "demo.double_all.check", "role": "check", "points": 1},
        ),
        _cell("code", "x_plain = 3  # a cell with no simtlab metadata", "plain"),
    ]
    return nb


def write_demo_master(path: Path = DEMO) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(notebook_bytes(make_demo_master()))


@pytest.fixture
def demo_repo(tmp_path):
    solutions, chapters = tmp_path / "solutions", tmp_path / "chapters"
    solutions.mkdir()
    (solutions / "00_demo.ipynb").write_bytes(DEMO.read_bytes())
    problems = build_all(solutions, chapters)
    assert [p.kind for p in problems] == ["missing"]
    return solutions, chapters


def test_saved_demo_master_is_up_to_date():
    assert DEMO.read_bytes() == notebook_bytes(make_demo_master()), (
        "tests/data/demo_master.ipynb is stale: run `python tests/test_demo_notebook.py`"
    )


def test_demo_build_is_in_sync(demo_repo, capsys):
    solutions, chapters = demo_repo
    assert build_all(solutions, chapters, check=True) == []
    rc = simtlab_main(["build", "--check", "--solutions", str(solutions), "--chapters", str(chapters)])
    assert rc == 0, capsys.readouterr().out


def test_demo_master_passes(demo_repo):
    solutions, _ = demo_repo
    nb = execute_notebook(solutions / "00_demo.ipynb")
    assert master_failures(nb) == []
    results = check_cell_results(nb)
    assert set(results) == {"demo.square.check", "demo.square.hidden", "demo.double_all.check"}
    assert all(ok for ok, _ in results.values())
    # the checks said so
    out = "".join(o.get("text", "") for o in nb.cells[5].outputs)
    out += "".join(o.get("data", {}).get("text/plain", "") for o in nb.cells[5].outputs)
    assert "\u2714 square is right" in out


def test_demo_student_fails_its_checks(demo_repo):
    _, chapters = demo_repo
    student = read_notebook(chapters / "00_demo.ipynb")
    roles = [c.metadata.get("simtlab", {}).get("role") for c in student.cells]
    assert "hidden-check" not in roles

    nb = execute_notebook(chapters / "00_demo.ipynb")
    assert student_failures(nb) == []
    results = check_cell_results(nb)
    assert set(results) == {"demo.square.check", "demo.double_all.check"}
    assert all(ok for ok, _ in results.values())          # they report: the notebook runs on
    square = next(c for c in nb.cells if c.metadata.get("simtlab", {}).get("id") == "demo.square.check")
    assert check_outcomes(square) == [{"exercise": "demo.square", "passed": False, "status": "failed"}]
    shown = output_text(square)
    assert "You have not written this exercise yet" in shown
    assert "Exercise demo.square is not written yet" in shown and 'hint("demo.square")' in shown
    assert "multiply x by itself" not in shown                   # the hint waits for hint()
    double = next(c for c in nb.cells if c.metadata.get("simtlab", {}).get("id") == "demo.double_all.check")
    assert "Exercise demo.double_all is not written yet" in output_text(double)


def test_demo_student_with_wrong_answer_gets_specific_message(demo_repo):
    _, chapters = demo_repo
    nb = read_notebook(chapters / "00_demo.ipynb")
    answer = next(c for c in nb.cells if c.metadata.get("simtlab", {}).get("id") == "demo.double_all")
    answer.source = "def double_all(x, out):\n    for i in range(x.size - 3):\n        out[i] = 2 * x[i]\n"
    answer = next(c for c in nb.cells if c.metadata.get("simtlab", {}).get("id") == "demo.square")
    answer.source = "def square(x):\n    return x * x\n"
    nb = execute_notebook(nb, cwd=chapters)
    cells = {c.metadata.get("simtlab", {}).get("id"): c for c in nb.cells}
    assert check_outcomes(cells["demo.square.check"]) == [{"exercise": "demo.square", "passed": True,
                                                           "status": "passed"}]
    assert check_outcomes(cells["demo.double_all.check"])[0]["passed"] is False
    shown = output_text(cells["demo.double_all.check"])
    assert "out: 3 of 16 elements were never written" in shown
    assert "elements (i=13) to (i=15)" in shown


def test_runner_uses_notebook_folder_and_drops_mplbackend(tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import os; print(os.getcwd()); print(os.environ.get('MPLBACKEND'))"),
        nbformat.v4.new_code_cell("1 / 0"),
        nbformat.v4.new_code_cell("print('after the error')"),
    ]
    path = tmp_path / "probe.ipynb"
    path.write_bytes(notebook_bytes(nb))
    done = execute_notebook(path)
    lines = done.cells[0].outputs[0]["text"].split("\n")
    assert Path(lines[0]).resolve() == tmp_path.resolve()
    assert lines[1] != "Agg"  # ipykernel picks its inline backend, as in JupyterLab
    assert done.cells[1].outputs[0]["ename"] == "ZeroDivisionError"  # allow_errors: the run goes on
    assert done.cells[2].outputs[0]["text"] == "after the error\n"
    assert nbformat.read(path, as_version=4).cells[0].outputs == []  # the file is not touched


if __name__ == "__main__":
    write_demo_master()
    print(f"wrote {DEMO}", file=sys.stderr)
