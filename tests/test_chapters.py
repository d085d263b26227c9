"""The course's own notebooks: chapters/ in sync with solutions/; a blank student chapter runs
to its last cell (Run All never stops) while every check reports its failure as a card.

The masters themselves run top to bottom under nbval: the test command collects solutions/
with --nbval-lax (pyproject.toml), so they are not executed a second time here.
"""

from __future__ import annotations

import re
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


# The documents the course was started from, by the names the chapters use; each needs its
# authors (or author) and its year in the chapter's Sources list.
SOURCE_NAMES = {
    "the Cairo graduation report": ("Cairo University", "2021"),
    "the Waterloo lab report": ("Jackson Guo", "ECE 459"),
    "the LeNet-5 blog post": ("moomoohorse", "2023"),
    "the Toronto electrode-CNN report": ("Kirschbaum", "2021"),
}
# how chapters cited them before they were named: material a student does not have
VAGUE_CITATIONS = re.compile(r"(?i)\bseeds?\b|\bseed's\b|reference material|\bEEG\b|\(00\d\)|ECE408 blog"
                             r"|(?<!Cairo )graduation report|(?<!Waterloo )lab report(?! \(chapter)")


def _markdown(path):
    import nbformat
    return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown"]


@pytest.mark.parametrize("master", NOTEBOOKS)
def test_every_source_a_chapter_cites_is_named_in_its_sources_list(master):
    """A student has none of the reports: each one the text refers to is named once, with its
    authors, course or year, in the chapter's Sources list, and only by that name elsewhere."""
    cells = _markdown(master)
    text = "\n".join(cells)
    sources = next((c.split("**Sources.**", 1)[1] for c in cells if "**Sources.**" in c), "")
    for name, (who, when) in SOURCE_NAMES.items():
        if name in text.replace(sources, ""):
            entry = next((line for line in sources.splitlines() if line.startswith(f"- **{name}**")), None)
            assert entry, f"{master.name} cites {name!r} but its Sources list does not name it"
            assert who in entry and when in entry, entry
    vague = [m.group(0) for c in cells
             for m in VAGUE_CITATIONS.finditer(c.replace(sources, "").replace("\n", " "))]
    assert not vague, f"{master.name} cites sources a student cannot identify: {vague}"


def test_chapter_0_says_which_launch_its_first_widget_shows():
    """The next cell relaunches chapter 0's first widget: the text under it says so and names
    the new block size, instead of describing only the first launch."""
    import nbformat
    nb = nbformat.read(SOLUTIONS / "00_playground.ipynb", as_version=4)
    relaunches = [(i, m) for i, c in enumerate(nb.cells) if c.cell_type == "code"
                  for m in re.finditer(r"pg\.relaunch\(blockdim=(\d+)\)", c.source)]
    assert relaunches
    for i, match in relaunches:
        text = next(c.source for c in reversed(nb.cells[:i]) if c.cell_type == "markdown")
        assert f"blocks of {match.group(1)} threads" in text and "same widget" in text, text
