"""Unit tests of simtlab.notebooks.build on small synthetic notebooks."""

from __future__ import annotations

import ast
from pathlib import Path
import subprocess
import os
import sys

import nbformat
import pytest

from simtlab.cli import main as simtlab_main
from simtlab.notebooks import MasterNotebookError, build_all, build_student_notebook, notebook_bytes
from simtlab.notebooks.build import read_notebook


def code(source, sid=None, role=None, points=None, cell_id=None, **extra_meta):
    cell = nbformat.v4.new_code_cell(source)
    if sid is not None or role is not None:
        meta = {"id": sid, "role": role}
        if points is not None:
            meta["points"] = points
        cell.metadata["simtlab"] = meta
    cell.metadata.update(extra_meta)
    cell.id = cell_id or f"c{abs(hash((source, sid))) % 10**8}"
    return cell


def md(source, cell_id="md"):
    cell = nbformat.v4.new_markdown_cell(source)
    cell.id = cell_id
    return cell


def notebook(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    for i, c in enumerate(nb.cells):
        c.id = f"cell{i}"
    return nb


SQUARE = """\
def square(x):
    y = 0
    ### BEGIN SOLUTION
    ### HINT: multiply x by itself
    y = x * x
    ### END SOLUTION
    return y
"""


def standard_master():
    return notebook(
        md("# Title"),
        code("import math", "s", "setup"),
        code(SQUARE, "ex1", "answer"),
        code("assert square(3) == 9", "ex1.check", "check", points=1),
        code("assert square(4) == 16", "ex1.hidden", "hidden-check", points=2),
        code("print('hello')"),
    )


# ---------------------------------------------------------------------------
# stubs


IMPORT = "from simtlab.student import NotWrittenYet, hint\n"


def test_python_region_becomes_a_typed_stub_that_gives_nothing_away():
    student = build_student_notebook(standard_master())
    answer = student.cells[2]
    assert answer.source == (
        IMPORT
        + "def square(x):\n"
        "    y = 0\n"
        '    raise NotWrittenYet("ex1")\n'
        "    return y\n"
    )
    assert "multiply" not in answer.source                      # the hint is not in the stub...
    assert answer.metadata["simtlab_hints"] == ["multiply x by itself"]    # ...but in the metadata
    ast.parse(answer.source)


def test_the_stub_raises_not_written_yet_naming_the_exercise():
    from simtlab.exercises import NotWrittenYet

    source = build_student_notebook(standard_master()).cells[2].source
    namespace = {}
    exec(source, namespace)
    with pytest.raises(NotWrittenYet, match=r"^Exercise ex1 is not written yet") as info:
        namespace["square"](3)
    assert info.value.exercise == "ex1"


def test_deep_indentation():
    src = "def f(xs):\n    for x in xs:\n        if x:\n            ### BEGIN SOLUTION\n            print(x)\n            print(x)\n            ### END SOLUTION\n    return 1"
    nb = notebook(code(src, "deep", "answer"))
    cell = build_student_notebook(nb).cells[0]
    assert cell.source == (
        IMPORT + "def f(xs):\n    for x in xs:\n        if x:\n"
        '            raise NotWrittenYet("deep")\n'
        "    return 1"
    )
    assert "simtlab_hints" not in cell.metadata                  # no hint lines: no hints
    ast.parse(cell.source)


def test_stub_uses_code_indentation_when_markers_are_less_indented():
    src = "for i in range(3):\n### BEGIN SOLUTION\n    print(i)\n### END SOLUTION\n"
    out = build_student_notebook(notebook(code(src, "x", "answer"))).cells[0].source
    assert out == IMPORT + 'for i in range(3):\n    raise NotWrittenYet("x")\n'
    ast.parse(out)


def test_import_goes_after_a_cell_magic():
    src = "%%time\n### BEGIN SOLUTION\nn = 4\n### END SOLUTION"
    out = build_student_notebook(notebook(code(src, "m", "answer"))).cells[0].source
    assert out == "%%time\n" + IMPORT + 'raise NotWrittenYet("m")'


def test_progressive_hints_from_several_regions_and_levels():
    src = (
        "def a():\n    ### BEGIN SOLUTION\n    ### HINT 1: think of \"quotes\"\n"
        "    return 1\n    ### END SOLUTION\n"
        "\n"
        "def b():\n    ### BEGIN SOLUTION\n    ### HINT 2: use \\ backslash\n    return 2\n"
        "    ### END SOLUTION\n"
    )
    cell = build_student_notebook(notebook(code(src, "two", "answer"))).cells[0]
    tree = ast.parse(cell.source)
    raises = [n for n in ast.walk(tree) if isinstance(n, ast.Raise)]
    assert [r.exc.args[0].value for r in raises] == ["two", "two"]
    assert "return 1" not in cell.source and "return 2" not in cell.source and "HINT" not in cell.source
    assert cell.metadata["simtlab_hints"] == ['think of "quotes"', "use \\ backslash"]


def test_a_hint_level_given_twice_in_one_cell_is_refused():
    """Two '### HINT 2:' lines of one cell were once joined into one garbled hint."""
    src = (
        "def a():\n    ### BEGIN SOLUTION\n    ### HINT 2: x varies fastest\n    return 1\n    ### END SOLUTION\n"
        "def b():\n    ### BEGIN SOLUTION\n    ### HINT 2: the block's linear id\n    return 2\n    ### END SOLUTION\n"
    )
    msg = build_error(code(src, "ex", "answer"))
    assert "cell 0 (id 'ex'): HINT 2 is given 2 times in one answer cell" in msg


def test_c_region_inside_string_becomes_c_comment():
    src = (
        'SRC = r"""\n'
        "__global__ void scale(float *x, int n) {\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < n) {\n"
        "        // ### BEGIN SOLUTION\n"
        "        x[i] *= 2.0f;\n"
        "        // ### END SOLUTION\n"
        "    }\n"
        "}\n"
        '"""\n'
    )
    out = build_student_notebook(notebook(code(src, "c1", "answer"))).cells[0].source
    assert "        /* YOUR CODE HERE */\n" in out
    assert "x[i] *= 2.0f" not in out and "###" not in out and "NotWrittenYet" not in out
    ast.parse(out)


def test_c_region_hint_goes_to_metadata_not_the_comment():
    src = 'S = """\n  // ### BEGIN SOLUTION\n  // ### HINT: use threadIdx.x */ here\n  y = 1;\n  // ### END SOLUTION\n"""'
    cell = build_student_notebook(notebook(code(src, "c2", "answer"))).cells[0]
    assert cell.source == 'S = """\n  /* YOUR CODE HERE */\n"""'
    assert cell.metadata["simtlab_hints"] == ["use threadIdx.x */ here"]


def test_region_of_top_level_code_becomes_bare_raise():
    out = build_student_notebook(notebook(code("### BEGIN SOLUTION\nn = 4\n### END SOLUTION", "t", "answer")))
    assert out.cells[0].source == IMPORT + 'raise NotWrittenYet("t")'


def test_a_template_from_the_older_stub_format_is_not_student_work(tmp_path):
    from simtlab.notebooks.build import student_work

    master = standard_master()
    old = build_student_notebook(master)
    old.cells[2].source = (old.cells[2].source.replace(IMPORT, "")
                           .replace('raise NotWrittenYet("ex1")',
                                    'raise NotImplementedError("Exercise ex1: multiply x by itself")'))
    path = tmp_path / "old.ipynb"
    path.write_bytes(notebook_bytes(old))
    assert student_work(path, build_student_notebook(master)) == []
    old.cells[2].source = old.cells[2].source.replace("y = 0", "y = 1")      # a real edit still counts
    path.write_bytes(notebook_bytes(old))
    assert student_work(path, build_student_notebook(master)) != []


# ---------------------------------------------------------------------------
# cells and metadata


def test_hidden_checks_removed_and_metadata_kept():
    student = build_student_notebook(standard_master())
    roles = [c.metadata.get("simtlab", {}).get("role") for c in student.cells]
    assert roles == [None, "setup", "answer", "check", None]
    assert student.cells[3].metadata["simtlab"] == {"id": "ex1.check", "role": "check", "points": 1}
    assert student.cells[2].metadata["simtlab"] == {"id": "ex1", "role": "answer"}


def test_outputs_and_execution_counts_cleared():
    master = standard_master()
    for c in master.cells:
        if c.cell_type == "code":
            c.execution_count = 7
            c.outputs = [nbformat.v4.new_output("stream", name="stdout", text="old\n")]
            c.metadata["execution"] = {"iopub.status.busy": "2024-01-01"}
    master.metadata["widgets"] = {"state": {}}
    master.metadata["language_info"] = {"name": "python", "version": "3.12.1"}
    student = build_student_notebook(master)
    for c in student.cells:
        if c.cell_type == "code":
            assert c.outputs == [] and c.execution_count is None
            assert "execution" not in c.metadata
    assert "widgets" not in student.metadata
    assert student.metadata["language_info"] == {"name": "python"}
    assert student.metadata["kernelspec"]["name"] == "python3"
    # the master itself is untouched
    assert master.cells[1].execution_count == 7 and master.cells[1].outputs


def test_read_only_flags():
    """Locked: the text and the setup, check and readonly cells; answers are editable; a plain code
    cell (a demo the text asks to change) is the student's: editable and deletable, like its copies."""
    student = build_student_notebook(standard_master())
    seen = set()
    for c in student.cells:
        role = c.metadata.get("simtlab", {}).get("role")
        plain_code = c.cell_type == "code" and role is None
        assert c.metadata["editable"] is (role == "answer" or plain_code), (c.cell_type, role)
        assert c.metadata["deletable"] is plain_code, (c.cell_type, role)
        seen.add((c.cell_type, role))
    assert {("markdown", None), ("code", None), ("code", "answer"), ("code", "check"), ("code", "setup")} <= seen


def test_chapter_zero_cell_the_text_asks_to_change_is_editable():
    """Chapter 0 §2 says "Change the shape in the cell above and run it again": that cell is editable."""
    master = read_notebook(Path(__file__).resolve().parent.parent / "solutions" / "00_playground.ipynb")
    student = build_student_notebook(master)
    asks = next(i for i, c in enumerate(student.cells) if "Change the shape in the cell above" in c.source)
    above = student.cells[asks - 1]
    assert "cuda.shared.array((32, 32)" in above.source and above.metadata["editable"] is True


def test_the_introduction_says_which_cells_are_locked():
    from simtlab.notebooks.build import HOW_IT_WORKS

    student = build_student_notebook(standard_master())
    first_text = next(c for c in student.cells if c.cell_type == "markdown")
    assert first_text.source.endswith(HOW_IT_WORKS)
    assert "the text, the check cells and the setup cells are read-only" in HOW_IT_WORKS


def test_other_cell_metadata_kept():
    master = notebook(code("x = 1", "s", "setup", tags=["nbval-ignore-output"]))
    assert build_student_notebook(master).cells[0].metadata["tags"] == ["nbval-ignore-output"]


def test_student_notebook_is_valid_nbformat():
    student = build_student_notebook(standard_master())
    nbformat.validate(student)
    assert nbformat.reads(notebook_bytes(student).decode(), as_version=4) == student


def test_deterministic_bytes():
    a = notebook_bytes(build_student_notebook(standard_master()))
    b = notebook_bytes(build_student_notebook(standard_master()))
    assert a == b
    assert a.endswith(b"}\n")
    assert b'"cell2"' in a  # master cell ids kept, no random ids


def test_deterministic_ids_for_masters_without_ids():
    raw = {
        "nbformat": 4,
        "nbformat_minor": 4,
        "metadata": {},
        "cells": [
            {"cell_type": "code", "source": ["x = 1\n", "y = 2"], "metadata": {}, "outputs": [], "execution_count": 3},
            {"cell_type": "markdown", "source": "hi", "metadata": {}},
        ],
    }
    a = build_student_notebook(nbformat.from_dict(raw))
    b = build_student_notebook(nbformat.from_dict(raw))
    assert [c.id for c in a.cells] == ["cell-0", "cell-1"] == [c.id for c in b.cells]
    assert a.cells[0].source == "x = 1\ny = 2"
    assert notebook_bytes(a) == notebook_bytes(b)


# ---------------------------------------------------------------------------
# validation


def build_error(*cells) -> str:
    with pytest.raises(MasterNotebookError) as info:
        build_student_notebook(notebook(*cells), name="solutions/01_x.ipynb")
    return str(info.value)


@pytest.mark.parametrize(
    "source, expected",
    [
        ("def f():\n    ### BEGIN SOLUTION\n    return 1\n", "BEGIN SOLUTION has no END SOLUTION"),
        ("def f():\n    return 1\n    ### END SOLUTION\n", "END SOLUTION without a BEGIN SOLUTION"),
        (
            "### BEGIN SOLUTION\n### BEGIN SOLUTION\nx=1\n### END SOLUTION\n",
            "BEGIN SOLUTION inside the region opened on line 1",
        ),
        ("### BEGIN SOLUTION\nx=1\n// ### END SOLUTION\n", "must be closed by '### END SOLUTION'"),
        ("## BEGIN SOLUTION\nx = 1\n### END SOLUTION\n", "looks like a marker"),
        ("### HINT: outside\nx = 1\n", "HINT:' outside"),
        ("x = 1\n", "answer cell has no"),
    ],
)
def test_region_problems_name_notebook_cell_and_line(source, expected):
    msg = build_error(code("x = 0", "s", "setup"), code(source, "ex", "answer"))
    assert "solutions/01_x.ipynb" in msg
    assert "cell 1 (id 'ex')" in msg
    assert expected in msg


def test_duplicate_ids():
    msg = build_error(code("x = 0", "same", "setup"), code("### BEGIN SOLUTION\n1\n### END SOLUTION", "same", "answer"))
    assert "cell 1 (id 'same'): id 'same' is already used by cell 0" in msg


def test_check_cells_need_points():
    msg = build_error(code("check()", "c", "check"), code("check()", "h", "hidden-check", points="2"))
    assert "cell 0 (id 'c'): a check cell needs metadata['simtlab']['points']" in msg
    assert "cell 1 (id 'h'): a hidden-check cell needs" in msg


def test_bad_role_missing_id_and_region_outside_answer():
    msg = build_error(
        code("x = 1", "a", "answr"),
        code("x = 1", None, "setup"),
        code("### BEGIN SOLUTION\nx=1\n### END SOLUTION", "b", "setup"),
        code("### BEGIN SOLUTION\nx=1\n### END SOLUTION"),
        code("x = 1", "d", "setup", points=1),
    )
    assert "cell 0 (id 'a'): role 'answr' is not one of" in msg
    assert "cell 1: metadata['simtlab']['id'] must be a non-empty string" in msg
    assert "cell 2 (id 'b'): a setup cell must not contain a solution region" in msg
    assert "cell 3: has a solution region but no metadata['simtlab']" in msg
    assert "cell 4 (id 'd'): only check and hidden-check cells carry points" in msg
    assert "5 problem(s)" in msg


# ---------------------------------------------------------------------------
# build_all


def write(path, nb):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(notebook_bytes(nb))


def test_build_all_writes_and_check_detects_missing_stale_extra(tmp_path):
    sol, chap = tmp_path / "solutions", tmp_path / "chapters"
    write(sol / "01_a.ipynb", standard_master())
    write(sol / "02_b.ipynb", notebook(code("print(1)", "r", "readonly")))

    problems = build_all(sol, chap, check=True)
    assert sorted((p.kind, p.path.name, p.fixed) for p in problems) == [
        ("missing", "01_a.ipynb", False),
        ("missing", "02_b.ipynb", False),
    ]
    assert not chap.exists()  # check mode writes nothing

    problems = build_all(sol, chap)
    assert sorted((p.kind, p.path.name, p.fixed) for p in problems) == [
        ("missing", "01_a.ipynb", True),
        ("missing", "02_b.ipynb", True),
    ]
    first = (chap / "01_a.ipynb").read_bytes()
    assert first == notebook_bytes(build_student_notebook(standard_master()))
    assert build_all(sol, chap, check=True) == []
    assert build_all(sol, chap) == []
    assert (chap / "01_a.ipynb").read_bytes() == first

    # a student notebook edited by hand, a master changed, a chapter without master
    (chap / "02_b.ipynb").write_text((chap / "02_b.ipynb").read_text().replace("print(1)", "print(2)"))
    master = standard_master()
    master.cells[0].source = "# New title"
    write(sol / "01_a.ipynb", master)
    write(chap / "99_orphan.ipynb", notebook(md("orphan")))
    problems = build_all(sol, chap, check=True)
    assert sorted((p.kind, p.path.name) for p in problems) == [
        ("extra", "99_orphan.ipynb"),
        ("stale", "01_a.ipynb"),
        ("stale", "02_b.ipynb"),
    ]
    assert "out of date" in str(next(p for p in problems if p.kind == "stale"))

    build_all(sol, chap)
    assert (chap / "99_orphan.ipynb").exists()  # never deleted
    assert [p.kind for p in build_all(sol, chap, check=True)] == ["extra"]
    assert "# New title" in read_notebook(chap / "01_a.ipynb").cells[0].source


def test_build_all_broken_master_writes_nothing(tmp_path):
    sol, chap = tmp_path / "solutions", tmp_path / "chapters"
    write(sol / "01_a.ipynb", standard_master())
    write(sol / "02_bad.ipynb", notebook(code("### BEGIN SOLUTION\nx = 1\n", "bad", "answer")))
    with pytest.raises(MasterNotebookError, match=r"02_bad.ipynb.*\n.*cell 0 \(id 'bad'\).*no END SOLUTION"):
        build_all(sol, chap)
    assert not chap.exists()


# ---------------------------------------------------------------------------
# command line


def test_cli_build_check(tmp_path, capsys):
    sol, chap = tmp_path / "solutions", tmp_path / "chapters"
    write(sol / "01_a.ipynb", standard_master())
    args = ["--solutions", str(sol), "--chapters", str(chap)]

    assert simtlab_main(["build", "--check", *args]) == 1
    out = capsys.readouterr().out
    assert "1 student notebook(s) out of sync" in out and "01_a.ipynb: missing" in out

    assert simtlab_main(["build", *args]) == 0
    assert "wrote" in capsys.readouterr().out
    assert simtlab_main(["build", "--check", *args]) == 0

    write(sol / "02_bad.ipynb", notebook(code("x", "bad", "answer")))
    assert simtlab_main(["build", *args]) == 2
    assert "answer cell has no" in capsys.readouterr().err


def test_cli_rejects_unknown_build_arguments(capsys):
    with pytest.raises(SystemExit) as info:
        simtlab_main(["build", "--chek"])
    assert info.value.code == 2


def test_cli_open_forwards_arguments(tmp_path, monkeypatch):
    import simtlab.cli as cli

    chap = tmp_path / "chapters"
    write(chap / "01_a.ipynb", build_student_notebook(standard_master()))
    calls = []
    monkeypatch.setattr(cli, "_run", lambda cmd, cwd: calls.append((cmd, cwd)) or 0)
    assert cli.main(["open", "--chapters", str(chap), "--port", "9999", "--ServerApp.token=abc"]) == 0
    cmd, cwd = calls[0]
    work = chap.resolve().parent / "work"   # the student's copies, beside the templates
    as_root = ["--allow-root"] if os.geteuid() == 0 else []    # Jupyter refuses root otherwise
    assert cmd == [sys.executable, "-m", "jupyter", "lab", "--notebook-dir", str(work), "--port", "9999",
                   "--ServerApp.token=abc", *as_root]
    assert cwd == work and (work / "01_a.ipynb").exists()
    assert cli.main(["open", "--chapters", str(chap), "--", "--help"]) == 0
    assert "--help" in calls[1][0] and "--" not in calls[1][0]


def test_cli_open_without_notebooks(tmp_path, capsys):
    assert simtlab_main(["open", "--chapters", str(tmp_path)]) == 2
    assert "simtlab build" in capsys.readouterr().err


def test_console_script_runs():
    result = subprocess.run([sys.executable, "-m", "simtlab.cli", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "build" in result.stdout and "open" in result.stdout
