"""Student work is never overwritten: `simtlab open` copies, `simtlab build` refuses without --force."""

from __future__ import annotations

import json
import os
import time

import nbformat
import pytest

from simtlab.cli import TEMPLATE_KEY, main as simtlab_main, sync_work_folder
from simtlab.notebooks import StudentWorkError, build_all, build_student_notebook, notebook_bytes, student_work
from simtlab.notebooks.build import BACKUP_DIR, read_notebook

ANSWER = "def square(x):\n    ### BEGIN SOLUTION\n    return x * x\n    ### END SOLUTION\n"


def master(title="# Chapter"):
    nb = nbformat.v4.new_notebook()
    md = nbformat.v4.new_markdown_cell(title)
    ans = nbformat.v4.new_code_cell(ANSWER)
    ans.metadata["simtlab"] = {"id": "ex1", "role": "answer"}
    chk = nbformat.v4.new_code_cell("assert square(3) == 9")
    chk.metadata["simtlab"] = {"id": "ex1.check", "role": "check", "points": 1}
    ro = nbformat.v4.new_code_cell("print('hello')")
    nb.cells = [md, ans, chk, ro]
    for i, c in enumerate(nb.cells):
        c.id = f"c{i}"
    return nb


def write(path, nb):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(notebook_bytes(nb))


@pytest.fixture
def course(tmp_path):
    sol, chap = tmp_path / "solutions", tmp_path / "chapters"
    write(sol / "01_a.ipynb", master())
    build_all(sol, chap)
    return sol, chap


def _student_edit(path, answer="def square(x):\n    return x ** 2\n", output=True):
    nb = read_notebook(path)
    for cell in nb.cells:
        if cell.metadata.get("simtlab", {}).get("role") == "answer" and answer is not None:
            cell.source = answer
        if output and cell.cell_type == "code" and cell.source.startswith("print"):
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="hello\n")]
            cell.execution_count = 1
    path.write_bytes(notebook_bytes(nb))


# ------------------------------------------------------------------ build_all


def test_student_work_reasons(course):
    sol, chap = course
    generated = build_student_notebook(read_notebook(sol / "01_a.ipynb"))
    assert student_work(chap / "01_a.ipynb", generated) == []
    _student_edit(chap / "01_a.ipynb")
    reasons = student_work(chap / "01_a.ipynb", generated)
    assert any("1 cell(s) have outputs (first: cell 3)" in r for r in reasons)
    assert any("answer cell(s) differ from the generated stub: ex1" in r for r in reasons)


def test_build_refuses_to_overwrite_work(course, capsys):
    sol, chap = course
    _student_edit(chap / "01_a.ipynb", answer=None)            # outputs only
    write(sol / "01_a.ipynb", master("# Chapter, revised"))    # the master changes: the file is stale
    before = (chap / "01_a.ipynb").read_bytes()

    with pytest.raises(StudentWorkError, match="refusing to overwrite 1 notebook.*\n.*01_a.ipynb: 1 cell"):
        build_all(sol, chap)
    assert (chap / "01_a.ipynb").read_bytes() == before
    assert build_all(sol, chap, check=True)[0].kind == "stale"    # --check only reports

    args = ["build", "--solutions", str(sol), "--chapters", str(chap)]
    assert simtlab_main(args) == 1
    err = capsys.readouterr().err
    assert "refusing to overwrite" in err and "--force" in err
    assert (chap / "01_a.ipynb").read_bytes() == before


def test_build_refuses_when_an_answer_was_edited(course):
    sol, chap = course
    _student_edit(chap / "01_a.ipynb", output=False)
    with pytest.raises(StudentWorkError, match="answer cell\\(s\\) differ from the generated stub: ex1"):
        build_all(sol, chap)


def test_build_force_backs_up_first(course, capsys):
    sol, chap = course
    _student_edit(chap / "01_a.ipynb")
    before = (chap / "01_a.ipynb").read_bytes()
    assert simtlab_main(["build", "--force", "--solutions", str(sol), "--chapters", str(chap)]) == 0
    backups = list((chap / BACKUP_DIR).glob("01_a.*.ipynb"))
    assert len(backups) == 1 and backups[0].read_bytes() == before
    assert build_all(sol, chap, check=True) == []    # the backup folder is not an extra chapter
    # a second forced rebuild in the same second keeps both backups
    _student_edit(chap / "01_a.ipynb")
    build_all(sol, chap, force=True)
    assert len(list((chap / BACKUP_DIR).glob("01_a.*.ipynb"))) == 2


def test_a_changed_hint_is_not_student_work(course):
    sol, chap = course
    changed = master()
    changed.cells[1].source = ANSWER.replace("    ### BEGIN SOLUTION\n", "    ### BEGIN SOLUTION\n    ### HINT: x times x\n")
    write(sol / "01_a.ipynb", changed)
    problems = build_all(sol, chap)                     # the old stub is only a template: rewritten
    assert [(p.kind, p.fixed) for p in problems] == [("stale", True)]
    assert "x times x" in (chap / "01_a.ipynb").read_text()
    # but code written around an unchanged stub line is work
    path = chap / "01_a.ipynb"
    nb = read_notebook(path)
    nb.cells[1].source = "import math\n" + nb.cells[1].source
    path.write_bytes(notebook_bytes(nb))
    write(sol / "01_a.ipynb", master())
    with pytest.raises(StudentWorkError, match="ex1"):
        build_all(sol, chap)


def test_build_still_rewrites_plain_stale_templates(course):
    sol, chap = course
    path = chap / "01_a.ipynb"
    path.write_text(path.read_text().replace("print('hello')", "print('hi')"))   # no outputs, answers untouched
    problems = build_all(sol, chap)
    assert [(p.kind, p.fixed) for p in problems] == [("stale", True)]


# ------------------------------------------------------------------ simtlab open


def test_open_copies_missing_chapters_only(course, monkeypatch):
    import simtlab.cli as cli

    sol, chap = course
    work = chap.parent / "work"
    calls = []
    monkeypatch.setattr(cli, "_run", lambda cmd, cwd: calls.append((cmd, cwd)) or 0)
    assert simtlab_main(["open", "--chapters", str(chap)]) == 0
    copy = work / "01_a.ipynb"
    assert copy.exists() and calls[0][1] == work and str(work) in calls[0][0]
    stamp = json.loads(copy.read_text())["metadata"][TEMPLATE_KEY]
    assert stamp["name"] == "01_a.ipynb" and len(stamp["sha256"]) == 64

    _student_edit(copy)
    edited = copy.read_bytes()
    assert [a for a, _ in sync_work_folder(chap, work)] == ["up-to-date"]
    assert copy.read_bytes() == edited


def test_open_saves_a_changed_template_beside_the_copy(course, capsys):
    sol, chap = course
    work = chap.parent / "work"
    sync_work_folder(chap, work)
    copy = work / "01_a.ipynb"
    _student_edit(copy)
    edited = copy.read_bytes()

    write(sol / "01_a.ipynb", master("# Chapter, revised"))
    build_all(sol, chap)
    assert simtlab_main(["open", "--chapters", str(chap), "--no-lab"]) == 0
    out = capsys.readouterr().out
    assert "has changed since you copied it" in out and "01_a.new.ipynb" in out
    assert copy.read_bytes() == edited                               # never overwritten
    new = work / "01_a.new.ipynb"
    assert "revised" in read_notebook(new).cells[0].source

    # again: nothing more is written, the note is repeated
    assert sync_work_folder(chap, work) == [("pending", new)]
    # the student edits the .new copy, then the template changes again: a third file
    _student_edit(new)
    new_edited = new.read_bytes()
    write(sol / "01_a.ipynb", master("# Chapter, revised twice"))
    build_all(sol, chap, force=True)
    actions = sync_work_folder(chap, work)
    assert actions == [("new-template", work / "01_a.new-2.ipynb")]
    assert new.read_bytes() == new_edited and copy.read_bytes() == edited


def test_open_copy_without_stamp_uses_modification_times(course):
    sol, chap = course
    work = chap.parent / "work"
    work.mkdir()
    copy = work / "01_a.ipynb"
    copy.write_bytes((chap / "01_a.ipynb").read_bytes())   # copied by hand: no stamp
    old = time.time() - 3600
    os.utime(copy, (old, old))
    assert sync_work_folder(chap, work) == [("new-template", work / "01_a.new.ipynb")]
    os.utime(copy, None)                                     # the student saved after the template
    (work / "01_a.new.ipynb").unlink()
    assert sync_work_folder(chap, work) == [("up-to-date", copy)]
