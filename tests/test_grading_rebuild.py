"""The grader's parts that need no kernel: rebuilding, matching, scoring rules, feedback, layout."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat
import pytest

from simtlab.grading import NotANotebook, load_master, parse_submission, rebuild
from simtlab.grading.feedback import feedback_markdown
from simtlab.grading.gradebook import GradeOptions, _write_atomic, discover, score_chapter
from simtlab.grading.nbplugin import sign_ok
from simtlab.grading.rebuild import match_master, strip_nbval_markers
from simtlab.grading.run import RunResult
from simtlab.notebooks.build import MasterNotebookError, exercise_checks, validate_master
from test_grading_support import GOOD_MEAN, GOOD_SQUARE, HIDDEN_SOURCE, answered, code, student_version, tiny_master

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def master(tmp_path):
    path = tmp_path / "01_tiny.ipynb"
    nbformat.write(tiny_master(), str(path))
    return load_master(path)


def sources(nb) -> dict:
    return {c.metadata.get("simtlab", {}).get("id"): c.source for c in nb.cells if c.metadata.get("simtlab")}


# ---------------------------------------------------------------------------
# exercises and points


def test_checks_group_by_answer_id_prefix(master):
    ex = exercise_checks(tiny_master())
    assert list(ex) == ["t.square", "t.mean"]
    assert [(c["id"], c["role"], c["points"]) for c in ex["t.square"]] == [
        ("t.square.check", "check", 1), ("t.square.negative", "check", 1), ("t.square.hidden", "hidden-check", 2)]
    assert master.max_points() == {"t.square": 4, "t.mean": 2}


def test_explicit_exercise_key_and_fallbacks():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        code("x = 0", "lonely.check", "check", 1),                      # no answer above: its own exercise
        code("### BEGIN SOLUTION\na = 1\n### END SOLUTION", "a", "answer"),
        code("### BEGIN SOLUTION\nb = 1\n### END SOLUTION", "b", "answer"),
        code("assert a == 1", "first", "check", 2, ),                  # nearest answer above: b
        code("assert a == 1", "second", "check", 3),
    ]
    nb.cells[3].metadata["simtlab"]["exercise"] = "a"               # explicit
    ex = exercise_checks(nb)
    assert {e: [c["id"] for c in cs] for e, cs in ex.items()} == {
        "lonely.check": ["lonely.check"], "a": ["first"], "b": ["second"]}


def test_exercise_key_is_validated():
    nb = tiny_master()
    nb.cells[3].metadata["simtlab"]["exercise"] = "t.nothing"
    nb.cells[1].metadata["simtlab"]["exercise"] = "t.square"
    with pytest.raises(MasterNotebookError) as info:
        validate_master(nb, "tiny")
    msg = str(info.value)
    assert "'t.nothing', which is not the id of an answer cell" in msg
    assert "only check and hidden-check cells name an exercise (this is a setup cell)" in msg


@pytest.mark.parametrize("path", sorted((REPO / "solutions").glob("*.ipynb")), ids=lambda p: p.stem)
def test_course_masters_checks_belong_to_their_exercise(path):
    """Every check of the course's masters counts towards an answer cell of its own chapter."""
    m = load_master(path)
    answers = {c.metadata["simtlab"]["id"] for c in m.nb.cells
               if c.metadata.get("simtlab", {}).get("role") == "answer"}
    if not answers:  # a chapter without exercises (the playground): nothing to grade
        assert m.exercises == {}
        return
    assert m.exercises and set(m.exercises) <= answers
    for exercise, checks in m.exercises.items():
        assert all(c["id"].startswith(exercise + ".") for c in checks), exercise


# ---------------------------------------------------------------------------
# reading submissions


@pytest.mark.parametrize("data, reason", [
    (b"", "empty"),
    (b"   \n", "empty"),
    (b"\xff\xfe\x00garbage", "not UTF-8"),
    (b'{"cells": [', "not JSON"),
    (b"[1, 2, 3]", "not a notebook"),
    (b'{"metadata": {}}', "not a notebook"),
])
def test_parse_submission_says_why_not(data, reason):
    with pytest.raises(NotANotebook, match=reason):
        parse_submission(data)


def test_parse_submission_reads_a_notebook():
    nb = parse_submission(nbformat.writes(student_version()).encode())
    assert len(nb.cells) == len(student_version().cells)


def test_match_master_by_stamp_ids_name_or_only_one(master, tmp_path):
    other_nb = nbformat.v4.new_notebook()
    other_nb.cells = [code("### BEGIN SOLUTION\nz = 1\n### END SOLUTION", "o.z", "answer"),
                      code("assert z", "o.z.check", "check", 1)]
    nbformat.write(other_nb, str(tmp_path / "02_other.ipynb"))
    other = load_master(tmp_path / "02_other.ipynb")
    both = [master, other]
    assert match_master(student_version(), both, "whatever.ipynb") is master             # ids
    stamped = nbformat.v4.new_notebook(metadata={"simtlab_template": {"name": "02_other.ipynb"}})
    assert match_master(stamped, both, "x.ipynb") is other                               # stamp
    plain = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
    assert match_master(plain, both, "02_other-Copy1.ipynb") is other                    # name
    assert match_master(plain, both, "alice.ipynb") is None
    assert match_master(plain, [master], "alice.ipynb") is master                        # only one


# ---------------------------------------------------------------------------
# rebuilding


def test_rebuild_takes_only_answers_from_the_student(master):
    sub = answered(GOOD_SQUARE, GOOD_MEAN)
    for cell in sub.cells:
        if cell.metadata.get("simtlab", {}).get("role") == "check":
            cell.source = "assert True"
    sub.cells.insert(1, code("print('my scratch cell')"))
    frozen = copy.deepcopy(sub)
    out = rebuild(master, sub)
    assert sub == frozen  # the submission is not changed
    got = sources(out.nb)
    want = sources(tiny_master())
    assert got["t.square"] == GOOD_SQUARE and got["t.mean"] == GOOD_MEAN
    for sid in ("t.setup", "t.square.check", "t.square.negative", "t.mean.check", "t.end"):
        assert got[sid] == want[sid]
    assert got["t.square.hidden"] == HIDDEN_SOURCE  # the hidden check is back
    assert [c.cell_type for c in out.nb.cells] == [c.cell_type for c in tiny_master().cells]
    assert all(c.outputs == [] and c.execution_count is None for c in out.nb.cells if c.cell_type == "code")
    assert "my scratch cell" not in json.dumps(out.nb)
    assert "check edited: t.square.check, t.square.negative, t.mean.check" in out.flags
    assert "extra cells ignored: 1" in out.flags
    assert out.answers == {"t.square": "id", "t.mean": "id"}


def test_answers_matched_by_cell_id_then_position(master):
    sub = answered(GOOD_SQUARE, GOOD_MEAN)
    for cell in sub.cells:  # metadata lost (e.g. copied into another notebook tool)
        cell.metadata = {}
    sub.cells[2].id = "renamed"  # the square's cell id lost too: found by position
    out = rebuild(master, sub)
    assert out.answers == {"t.square": "position", "t.mean": "cell id"}
    assert sources(out.nb)["t.square"] == GOOD_SQUARE and sources(out.nb)["t.mean"] == GOOD_MEAN


def test_missing_answer_is_graded_as_the_stub(master):
    sub = answered(GOOD_SQUARE, None)
    sub.cells = [c for c in sub.cells if c.metadata.get("simtlab", {}).get("id") != "t.mean"]
    sub.cells.append(nbformat.v4.new_markdown_cell("notes"))
    out = rebuild(master, sub)
    assert out.answers["t.mean"] == "missing"
    assert "raise NotWrittenYet(\"t.mean\")" in sources(out.nb)["t.mean"]
    assert "answer missing: t.mean" in out.flags


def test_nbval_markers_and_tags_are_stripped(master):
    sub = answered("# NBVAL_SKIP\n" + GOOD_SQUARE, GOOD_MEAN)
    sub.cells[7].metadata["tags"] = ["raises-exception", "mine"]
    out = rebuild(master, sub)
    assert "NBVAL" not in sources(out.nb)["t.square"]
    for cell in out.nb.cells:
        tags = cell.metadata.get("tags", [])
        assert not any(t.startswith("nbval") or t == "raises-exception" for t in tags)
    assert "nbval markers removed" in out.flags
    assert strip_nbval_markers("x = 1\n  ## NBVAL_RAISES_EXCEPTION\ny = 2") == ("x = 1\ny = 2", True)
    assert strip_nbval_markers("# NBVAL is great") == ("# NBVAL is great", False)


def test_reorder_delete_duplicate_and_blank_flags(master):
    sub = student_version()
    assert rebuild(master, sub).flags == ["blank"]
    sub = answered(GOOD_SQUARE, None)
    cells = sub.cells
    sub.cells = [cells[0], cells[1], cells[3], cells[2], *cells[4:]]
    assert "cells reordered" in rebuild(master, sub).flags
    sub = answered(GOOD_SQUARE, None)
    sub.cells = [c for c in sub.cells if c.metadata.get("simtlab", {}).get("id") not in ("t.mean.check", "t.setup")]
    flags = rebuild(master, sub).flags
    assert "check deleted: t.mean.check" in flags and "read-only cell deleted: t.setup" in flags
    sub = answered(GOOD_SQUARE, GOOD_MEAN)
    sub.cells.append(copy.deepcopy(sub.cells[2]))
    sub.cells[-1].source = "def square(x):\n    return 0"
    out = rebuild(master, sub)
    assert "duplicate cells: t.square" in out.flags and sources(out.nb)["t.square"] == GOOD_SQUARE


def test_suspicious_code_is_flagged(master):
    out = rebuild(master, answered("import builtins\n" + GOOD_SQUARE, "get_ipython().set_custom_exc((), None)"))
    flag = next(f for f in out.flags if f.startswith("suspicious code"))
    assert "builtins" in flag and "custom exception handler" in flag and "IPython internals" in flag
    assert not any(f.startswith("suspicious") for f in rebuild(master, answered(GOOD_SQUARE, GOOD_MEAN)).flags)


# ---------------------------------------------------------------------------
# deciding pass or fail from the plugin's records


def _cell(sid, **kw):
    rec = {"type": "cell", "id": sid, "index": 0, "nbval_ok": True, "reply": "ok", "error_output": False,
           "ename": None, "evalue": None, "message": None, "timed_out": False, "kernel_died": False,
           "exit_code": None, "kernel_dead_before": False, "setup_failed": False, "skipped": False}
    rec.update(kw)
    return rec


def _score(master, cells, **run_kw):
    run = RunResult(cells=cells, started=True, ended=True, **run_kw)
    return score_chapter(master, rebuild(master, answered(GOOD_SQUARE, GOOD_MEAN)), run, GradeOptions())


def test_a_check_passes_only_with_an_ok_reply_and_no_error(master):
    ok = [_cell("t.square.check"), _cell("t.square.negative"), _cell("t.square.hidden"), _cell("t.mean.check")]
    s = _score(master, ok)
    assert {e: i["points"] for e, i in s["exercises"].items()} == {"t.square": 4, "t.mean": 2}
    assert s["flags"] == []
    # nbval saw no error, but the kernel's reply says error: the showtraceback trick
    trick = ok[:3] + [_cell("t.mean.check", reply="error", ename="AssertionError", evalue="bad")]
    s = _score(master, trick)
    assert s["exercises"]["t.mean"]["points"] == 0
    assert s["exercises"]["t.mean"]["checks"][0]["message"] == "AssertionError: bad"
    assert "traceback hidden: t.mean.check" in s["flags"]
    # nbval saw an error output
    failed = ok[:3] + [_cell("t.mean.check", nbval_ok=False, reply="error", error_output=True,
                             ename="AssertionError", evalue="")]
    assert _score(master, failed)["exercises"]["t.mean"]["points"] == 0
    # no reply at all, a skipped check, a missing record
    for rec in (_cell("t.mean.check", reply=None), _cell("t.mean.check", skipped=True, nbval_ok=False)):
        assert _score(master, ok[:3] + [rec])["exercises"]["t.mean"]["points"] == 0
    assert _score(master, ok[:3])["exercises"]["t.mean"]["points"] == 0


def test_kernel_death_memory_and_timeouts(master):
    cells = [_cell("t.square.check"), _cell("t.square.negative", nbval_ok=False, reply="error", error_output=True,
                                             ename="MemoryError", evalue=""),
             _cell("t.square.hidden", nbval_ok=False, reply=None, timed_out=True, message="Timeout"),
             _cell("t.mean", nbval_ok=False, reply=None, kernel_died=True, exit_code=-9),
             _cell("t.mean.check", nbval_ok=False, reply=None, kernel_dead_before=True)]
    s = _score(master, cells)
    assert s["exercises"]["t.square"]["points"] == 1 and s["exercises"]["t.mean"]["points"] == 0
    assert {"out of memory", "kernel died (killed by signal 9)", "cell timeout: t.square.hidden"} <= set(s["flags"])
    assert "the kernel died earlier, in t.mean" in s["exercises"]["t.mean"]["checks"][0]["message"]


def test_grader_errors_are_not_the_students_fault(master):
    s = score_chapter(master, rebuild(master, student_version()), RunResult(started=False, returncode=4, log="boom"),
                      GradeOptions())
    assert s["grader_error"] and "grader error" in s["flags"]
    assert all(c["message"].startswith("not graded") for e in s["exercises"].values() for c in e["checks"])


def test_results_lines_need_the_key():
    import hashlib
    import hmac

    body = json.dumps({"type": "cell", "id": "x"})
    line = json.dumps({"body": body, "mac": hmac.new(b"k", body.encode(), hashlib.sha256).hexdigest()})
    assert sign_ok(b"k", line) == {"type": "cell", "id": "x"}
    assert sign_ok(b"other", line) is None
    assert sign_ok(b"k", "not json") is None


# ---------------------------------------------------------------------------
# feedback and files


def test_feedback_never_shows_hidden_source(master):
    s = _score(master, [_cell("t.square.check"), _cell("t.square.hidden", nbval_ok=False, reply="error",
                                                         error_output=True, ename="AssertionError",
                                                         evalue="square is wrong for other inputs")])
    s["notebook"] = "alice.ipynb"
    text = feedback_markdown({"student": "alice", "total": 1, "max": 6, "chapters": [s], "problems": []})
    # a hidden check's own message may quote what it tests: the student reads the instructor's words only
    assert "FAILED: hidden check `t.square.hidden` (2 points): a hidden check failed" in text
    assert "square is wrong" not in text
    assert "passed: check `t.square.check` (1 point)" in text
    assert HIDDEN_SOURCE not in text and "square(12)" not in text


def test_hidden_check_feedback_is_the_instructors_message(tmp_path):
    nb = tiny_master()
    for cell in nb.cells:
        if cell.metadata.get("simtlab", {}).get("id") == "t.square.hidden":
            cell.metadata["simtlab"]["feedback"] = "square must work for fractions and zero too"
    nbformat.write(nb, str(tmp_path / "01_tiny.ipynb"))
    custom = load_master(tmp_path / "01_tiny.ipynb")  # the master's validation accepts the key
    s = _score(custom, [_cell("t.square.hidden", nbval_ok=False, reply="error", error_output=True,
                               ename="AssertionError", evalue="square(0.5) gave 0")])
    s["notebook"] = "alice.ipynb"
    text = feedback_markdown({"student": "alice", "total": 0, "max": 6, "chapters": [s], "problems": []})
    assert "(2 points): square must work for fractions and zero too" in text
    assert "square(0.5)" not in text
    for cell in nb.cells:
        if cell.metadata.get("simtlab", {}).get("id") == "t.square.check":
            cell.metadata["simtlab"]["feedback"] = "a visible check shows its own message"
    nbformat.write(nb, str(tmp_path / "01_tiny.ipynb"))
    with pytest.raises(Exception, match="only hidden-check cells carry 'feedback'"):
        load_master(tmp_path / "01_tiny.ipynb")


def test_discover_layouts(tmp_path):
    (tmp_path / "alice.ipynb").write_text("{}")
    (tmp_path / "bob" / "sub").mkdir(parents=True)
    (tmp_path / "bob" / "sub" / "01.ipynb").write_text("{}")
    (tmp_path / "bob" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "bob" / ".ipynb_checkpoints" / "01-checkpoint.ipynb").write_text("{}")
    (tmp_path / "carol").mkdir()
    (tmp_path / ".hidden.ipynb").write_text("{}")
    (tmp_path / "notes.txt").write_text("x")
    subs, ignored = discover(tmp_path)
    assert [(s.student, [p.name for p in s.notebooks]) for s in subs] == [
        ("alice", ["alice.ipynb"]), ("bob", ["01.ipynb"]), ("carol", [])]
    assert [p.name for p in ignored] == ["notes.txt"]


def test_atomic_write_replaces_whole_file(tmp_path):
    target = tmp_path / "a" / "gradebook.csv"
    _write_atomic(target, "one\n")
    _write_atomic(target, "two\n")
    assert target.read_text() == "two\n"
    assert [p.name for p in target.parent.iterdir()] == ["gradebook.csv"]


def _iso(passed: dict, complete=True, killed=False):
    from simtlab.grading.isolated import IsolatedResult

    return IsolatedResult(checks={cid: {"passed": ok, "message": "" if ok else "AssertionError: no", "timed_out": False}
                                  for cid, ok in passed.items()}, complete=complete, killed=killed)


def test_points_come_from_the_isolated_run_not_from_nbval(master):
    """nbval's run says every cell passed (a kernel a student fooled); the isolated run decides."""
    ok = [_cell("t.square.check"), _cell("t.square.negative"), _cell("t.mean.check")]
    run = RunResult(cells=ok, started=True, ended=True)
    iso = _iso({"t.square.check": True, "t.square.negative": False, "t.square.hidden": False, "t.mean.check": False})
    s = score_chapter(master, rebuild(master, answered(GOOD_SQUARE, GOOD_MEAN)), run, GradeOptions(), iso=iso)
    assert {e: i["points"] for e, i in s["exercises"].items()} == {"t.square": 1, "t.mean": 0}
    assert not s["grader_error"]


def test_lost_nbval_results_are_a_flag_not_a_grader_error(master):
    """A results file deleted under nbval's run used to be a grader error on every run."""
    run = RunResult(cells=[], started=False, ended=False, returncode=1)
    iso = _iso({"t.square.check": True, "t.square.negative": True, "t.square.hidden": True, "t.mean.check": True})
    s = score_chapter(master, rebuild(master, answered(GOOD_SQUARE, GOOD_MEAN)), run, GradeOptions(), iso=iso)
    assert not s["grader_error"] and "feedback run lost" in s["flags"]
    assert {e: i["points"] for e, i in s["exercises"].items()} == {"t.square": 4, "t.mean": 2}
    # an incomplete isolated run (records missing, or not counted) scores what reported, and says so
    partial = _iso({"t.square.check": True}, complete=False)
    s = score_chapter(master, rebuild(master, answered(GOOD_SQUARE, GOOD_MEAN)),
                      RunResult(cells=[], started=True, ended=True), GradeOptions(), iso=partial)
    assert "check run incomplete" in s["flags"]
    assert {e: i["points"] for e, i in s["exercises"].items()} == {"t.square": 1, "t.mean": 0}
