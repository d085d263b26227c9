"""Progressive hints: hint(exercise) is a nudge, hint(exercise, 2) a stronger one; stubs give nothing away."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from simtlab.exercises import hint
from simtlab.exercises.hints import Hint, course_hints

REPO = Path(__file__).resolve().parent.parent
CHAPTERS = REPO / "chapters"


def answer_cells():
    for path in sorted(CHAPTERS.glob("*.ipynb")):
        for cell in json.loads(path.read_text())["cells"]:
            meta = cell["metadata"].get("simtlab") or {}
            if meta.get("role") == "answer":
                yield path.name, meta["id"], cell


ANSWERS = list(answer_cells())
#: the chapters whose masters give every exercise a first hint and a stronger one
PROGRESSIVE = ("01_", "02_", "03_", "04_", "05_")


def test_every_exercise_has_a_first_and_a_stronger_hint():
    hints = course_hints(CHAPTERS)
    graded = [a for a in ANSWERS if a[0].startswith(PROGRESSIVE)]
    assert len(graded) >= 15
    for _, exercise, _ in graded:
        first, second = hints[exercise][:2]
        assert first and second and first != second, exercise


@pytest.mark.parametrize("name,exercise,cell", ANSWERS, ids=[a[1] for a in ANSWERS])
def test_the_stub_gives_no_hint_away_and_names_hint(name, exercise, cell):
    source = "".join(cell["source"])
    for text in course_hints(CHAPTERS)[exercise]:
        for fragment in re.split(r"[;:]", text):
            fragment = fragment.strip()
            if len(fragment) > 25:
                assert fragment not in source, f"{name} {exercise}: the stub holds its hint: {fragment!r}"
    if "NotWrittenYet(" in source:
        assert source.startswith("from simtlab.student import NotWrittenYet, hint\n")
        assert f'raise NotWrittenYet("{exercise}")' in source


def test_first_hint_is_a_nudge_not_code():
    # the first hint names ideas; code (calls, assignments, indexing with +=) waits for the second
    code = re.compile(r"cuda\.\w+\(|\+=|\w+ = \w|\breturn\b")
    hints = course_hints(CHAPTERS)
    for _, exercise, _ in [a for a in ANSWERS if a[0].startswith(PROGRESSIVE)]:
        assert not code.search(hints[exercise][0]), f"{exercise}: the first hint is code: {hints[exercise][0]!r}"


def test_hint_levels():
    h1 = hint("ch05.sequential", chapters=CHAPTERS)
    h2 = hint("ch05.sequential", 2, chapters=CHAPTERS)
    assert isinstance(h1, Hint) and (h1.level, h2.level) == (1, 2) and h1.levels == 2
    assert h1.text == course_hints(CHAPTERS)["ch05.sequential"][0]
    assert 'hint("ch05.sequential", 2) gives a stronger one' in str(h1)
    assert "that was the last hint" in str(h2)
    assert hint("ch05.sequential", 9, chapters=CHAPTERS) == h2        # past the last: the last
    assert "<b>Hint 1 of 2 for exercise ch05.sequential</b>" in h1._repr_html_()


def test_hint_errors_name_the_problem_and_the_fix():
    with pytest.raises(KeyError, match="no hints for exercise 'ch05.nope'.*ch05.sequential"):
        hint("ch05.nope", chapters=CHAPTERS)
    with pytest.raises(ValueError, match="1 is the first hint"):
        hint("ch05.sequential", 0, chapters=CHAPTERS)


def test_hint_finds_the_course_chapters_by_itself():
    # in a checkout: chapters/ beside the package (an installed wheel: simtlab/chapters, see test_wheel_install)
    assert hint("ch01.first_kernel").text == course_hints(CHAPTERS)["ch01.first_kernel"][0]


@pytest.mark.parametrize("name,exercise,cell", ANSWERS, ids=[a[1] for a in ANSWERS])
def test_the_stub_import_passes_the_graders_answer_rules(name, exercise, cell):
    # the line stays at the top of a finished answer: the grader must not refuse it
    from simtlab.grading.vet import vet_answer

    source = "".join(cell["source"])
    assert vet_answer(source, chapter=name) == [], f"{name} {exercise}: the stub breaks the answer rules"
    master = json.loads((REPO / "solutions" / name).read_text())
    answer = next(c for c in master["cells"] if (c["metadata"].get("simtlab") or {}).get("id") == exercise)
    finished = "from simtlab.student import NotWrittenYet, hint\n" + "".join(answer["source"])
    assert vet_answer(finished, chapter=name) == [], f"{name} {exercise}: a finished answer keeping the line"


def test_numba_compiles_the_stub_and_raises_it_typed():
    # numba's nopython compiler (the CPU twin of numba-cuda's) accepts the stub and raises it as itself
    from numba import njit

    from simtlab.student import NotWrittenYet

    @njit
    def stub(x):
        raise NotWrittenYet("ch09.demo")

    with pytest.raises(NotWrittenYet, match="ch09.demo is not written yet") as info:
        stub(1)
    assert info.value.exercise == "ch09.demo"


SOLUTIONS = REPO / "solutions"


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def master_answer_lines() -> dict[str, set[str]]:
    """Each exercise's answer lines in its master (inside the solution regions, markers left out),
    whitespace and a leading `return` removed, less the lines its student notebook shows anyway."""
    from simtlab.notebooks.build import _scan_regions

    answers: dict[str, set[str]] = {}
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        student = {_squeezed(line) for cell in json.loads((CHAPTERS / path.name).read_text())["cells"]
                   for line in "".join(cell["source"]).split("\n")}
        for cell in json.loads(path.read_text())["cells"]:
            meta = cell["metadata"].get("simtlab") or {}
            if meta.get("role") != "answer":
                continue
            lines = "".join(cell["source"]).split("\n")
            for region in _scan_regions("\n".join(lines))[0]:
                for line in lines[region["begin"] + 1:region["end"]]:
                    # `return x` gives away x: compare the expression; a bare call such as the
                    # barrier `cuda.syncthreads()` names an idea, not an answer
                    code = re.sub(r"^return", "", _squeezed(line.split("#")[0]))
                    if len(code) >= 10 and "###" not in line and code not in student and not re.fullmatch(
                            r"[\w.]+\(\)", code):
                        answers.setdefault(meta["id"], set()).add(code)
    return answers


def test_every_exercise_has_exactly_two_hints():
    hints = course_hints(CHAPTERS)
    assert sorted(hints) == sorted(a[1] for a in ANSWERS)
    wrong = {exercise: len(texts) for exercise, texts in hints.items() if len(texts) != 2}
    assert wrong == {}


def test_no_hint_holds_a_line_of_the_answer():
    """The last hint leaves something to write: no hint quotes a line of the master's answer."""
    hints = course_hints(CHAPTERS)
    quoted = []
    for exercise, lines in master_answer_lines().items():
        for level, text in enumerate(hints[exercise], 1):
            quoted += [f"{exercise} hint {level} quotes `{line}`" for line in sorted(lines) if line in _squeezed(text)]
    assert quoted == []


def test_no_hint_is_two_hints_glued():
    """One sentence-like text per level: two hints joined without a separator read as one garbled
    hint (`... then z the block's linear id ...`): each starts with a capital or code, ends with a stop."""
    for exercise, texts in course_hints(CHAPTERS).items():
        for level, text in enumerate(texts, 1):
            assert text.rstrip().endswith((".", "?", ")")), f"{exercise} hint {level} does not end: {text!r}"
