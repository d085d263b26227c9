"""Progress and navigation as a student meets them: `simtlab progress`, the progress cell at the
end of a chapter, `simtlab reset` (a backup first), "Next: chapter N" links, no news pop-up."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import nbformat
import pytest

from notebook_runner import execute_notebook, output_text
from simtlab.cli import TEMPLATE_KEY, main as simtlab_main

REPO = Path(__file__).resolve().parent.parent
CHAPTERS = REPO / "chapters"
CHAPTER1 = CHAPTERS / "01_gpu_architecture.ipynb"
MASTER1 = REPO / "solutions" / "01_gpu_architecture.ipynb"
WRONG_SCALE_ADD = """@cuda.jit
def scale_add(a, b, out, alpha):
    i = cuda.threadIdx.x
    if i < out.size:
        out[i] = alpha * a[i] + b[i]
"""


def _cli(*args) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        rc = simtlab_main([str(a) for a in args])
    return rc, out.getvalue()


def _by_id(nb, cid):
    return next(c for c in nb.cells if (c.metadata.get("simtlab") or {}).get("id") == cid)


@pytest.fixture(scope="module")
def worked_chapter(tmp_path_factory):
    """A student's chapter 1 after a session: linear_id right, first_kernel wrong, grid_stride
    untouched; run in a kernel (as JupyterLab would), ending with the chapter's progress cell."""
    student = nbformat.read(CHAPTER1, as_version=4)
    master = nbformat.read(MASTER1, as_version=4)
    nb = nbformat.read(CHAPTER1, as_version=4)
    keep = {"ch01.imports", "ch01.linear_id", "ch01.linear_id.check", "ch01.first_kernel",
            "ch01.first_kernel.check", "ch01.grid_stride.setup", "ch01.grid_stride", "ch01.progress"}
    nb.cells = [c for c in student.cells if (c.metadata.get("simtlab") or {}).get("id") in keep]
    _by_id(nb, "ch01.linear_id").source = _by_id(master, "ch01.linear_id").source
    _by_id(nb, "ch01.first_kernel").source = WRONG_SCALE_ADD
    work = tmp_path_factory.mktemp("work")
    executed = execute_notebook(nb, cwd=work)
    nbformat.write(executed, work / CHAPTER1.name)      # as JupyterLab saves it
    return work, executed


def test_the_progress_cell_shows_what_this_session_checked(worked_chapter):
    _, nb = worked_chapter
    shown = output_text(_by_id(nb, "ch01.progress"))
    assert "01_gpu_architecture: 1 of 3 exercises done" in shown
    assert "ch01.linear_id: passed" in shown
    assert "ch01.first_kernel: failed" in shown
    assert "ch01.grid_stride: not written" in shown


def test_simtlab_progress_reads_the_saved_notebooks(worked_chapter):
    work, _ = worked_chapter
    rc, out = _cli("progress", "--chapters", CHAPTERS, "--work", work)
    assert rc == 0, out
    block = out[out.index("01_gpu_architecture:"):].split("\n")[:4]
    assert block == ["01_gpu_architecture: 1 of 3 exercises done", "  \u2714 ch01.linear_id: passed",
                     "  \u2718 ch01.first_kernel: failed", "  \u00b7 ch01.grid_stride: not written"]
    assert "02_warps_and_divergence: 0 of 3 exercises done" in out      # no copy yet: none done
    assert re.search(r"done: 1 of \d+ exercises", out)


def test_an_edited_answer_without_a_check_is_not_checked(tmp_path):
    nb = nbformat.read(CHAPTER1, as_version=4)
    _by_id(nb, "ch01.grid_stride").source += "\n# started"
    nbformat.write(nb, tmp_path / CHAPTER1.name)
    rc, out = _cli("progress", "--chapters", CHAPTERS, "--work", tmp_path)
    assert "? ch01.grid_stride: not checked" in out and "\u00b7 ch01.linear_id: not written" in out


def test_reset_keeps_the_students_copy_in_a_backup(tmp_path):
    work = tmp_path / "work"
    rc, out = _cli("open", "--chapters", CHAPTERS, "--work", work, "--no-lab")
    assert rc == 0, out
    copy = work / CHAPTER1.name
    nb = nbformat.read(copy, as_version=4)
    _by_id(nb, "ch01.first_kernel").source = WRONG_SCALE_ADD
    nbformat.write(nb, copy)
    edited = copy.read_bytes()

    rc, out = _cli("reset", "ch01", "--chapters", CHAPTERS, "--work", work)
    assert rc == 0, out
    backups = list((work / ".backup").glob("01_gpu_architecture.*.ipynb"))
    assert len(backups) == 1 and backups[0].read_bytes() == edited       # the work, byte for byte
    fresh = json.loads(copy.read_text())
    assert fresh["metadata"][TEMPLATE_KEY]["name"] == CHAPTER1.name
    assert fresh["cells"] == json.loads(CHAPTER1.read_text())["cells"]   # the chapter as new

    rc, _ = _cli("reset", "1", "--chapters", CHAPTERS, "--work", work)  # again: a second backup
    assert rc == 0 and len(list((work / ".backup").glob("01_gpu_architecture.*.ipynb"))) == 2
    rc, out = _cli("reset", "42", "--chapters", CHAPTERS, "--work", work)
    assert rc == 2 and "no chapter '42'" in out and "01_gpu_architecture" in out


def _chapter_files():
    return sorted(p for p in CHAPTERS.glob("[0-9][0-9]_*.ipynb"))


def test_next_chapter_is_a_link_to_the_next_notebook():
    files = _chapter_files()
    for path, following in zip(files, files[1:] + files[:1]):
        text = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
        if following == files[0]:
            assert f"]({following.name})" in text.split("last chapter")[-1], path.name
        else:
            links = re.findall(r"Next: \[chapter (\d+)[^\]]*\]\(([^)]+)\)", text)
            assert links == [(str(int(following.name[:2])), following.name)], (path.name, links)


def test_every_chapter_with_exercises_ends_with_its_progress_cell():
    for path in _chapter_files():
        nb = nbformat.read(path, as_version=4)
        has_exercises = any((c.metadata.get("simtlab") or {}).get("role") == "answer" for c in nb.cells)
        code = [c for c in nb.cells if c.cell_type == "code"]
        calls = f'progress("ch{path.name[:2]}")'
        assert (calls in code[-1].source) is has_exercises, path.name


def test_simtlab_open_turns_the_news_pop_up_off(tmp_path):
    from simtlab.jupyter_settings import install_lab_defaults

    written = json.loads(install_lab_defaults(tmp_path).read_text())
    assert written["@jupyterlab/apputils-extension:notification"] == {"fetchNews": "false",
                                                                      "checkForUpdates": False}
