"""The course's own notebooks: chapters/ in sync with solutions/; a blank student chapter runs
to its last cell (Run All never stops) while every check reports its failure as a card.

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
def test_student_notebook_runs_to_the_end_and_its_checks_report_failures(master):
    student = CHAPTERS / master.name
    assert student.exists(), f"{student} is missing: run `simtlab build`"
    nb = execute_notebook(student)
    problems = student_failures(nb)
    assert not problems, f"{student.name}: the student notebook does not behave as it should:\n\n" + "\n\n".join(
        problems
    )


def test_every_chapter_links_to_the_playground():
    """Chapter 0 is where a student opens any kernel: every other chapter points there."""
    import nbformat
    chapters = sorted(p for p in CHAPTERS.glob("0*.ipynb") if not p.name.startswith("00_"))
    assert len(chapters) >= 8
    for path in chapters:
        nb = nbformat.read(path, as_version=4)
        links = [c for c in nb.cells if c.cell_type == "markdown" and "(00_playground.ipynb)" in c.source]
        assert links, f"{path.name} has no link to 00_playground.ipynb"
