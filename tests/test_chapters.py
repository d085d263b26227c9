"""The course's own notebooks: chapters/ in sync with solutions/, student checks fail.

The masters themselves run top to bottom under nbval: the test command collects solutions/
with --nbval-lax (pyproject.toml), so they are not executed a second time here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from notebook_runner import execute_notebook, student_failures
from simtlab.cli import main as simtlab_main

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
CHAPTERS = REPO / "chapters"

MASTERS = sorted(SOLUTIONS.glob("*.ipynb")) if SOLUTIONS.is_dir() else []
NOTEBOOKS = [pytest.param(p, id=p.stem) for p in MASTERS] or [
    pytest.param(None, id="no-masters", marks=pytest.mark.skip(reason="no master notebooks in solutions/ yet"))
]


def test_build_check_passes_on_repo(capsys):
    rc = simtlab_main(["build", "--check", "--solutions", str(SOLUTIONS), "--chapters", str(CHAPTERS)])
    out = capsys.readouterr().out
    assert rc == 0, f"chapters/ is out of sync with solutions/ (run `simtlab build`):\n{out}"


@pytest.mark.parametrize("master", NOTEBOOKS)
def test_student_notebook_checks_fail(master):
    student = CHAPTERS / master.name
    assert student.exists(), f"{student} is missing: run `simtlab build`"
    nb = execute_notebook(student)
    problems = student_failures(nb)
    assert not problems, f"{student.name}: the student notebook does not behave as it should:\n\n" + "\n\n".join(
        problems
    )
