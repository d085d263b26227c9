"""A tiny master notebook and submissions made from it, for the grading tests (helpers only, no tests)."""

from __future__ import annotations

import copy

import nbformat

from simtlab.notebooks.build import build_student_notebook

SQUARE = """\
def square(x):
    ### BEGIN SOLUTION
    ### HINT: multiply x by itself
    return x * x
    ### END SOLUTION
"""

MEAN = """\
def mean(xs):
    ### BEGIN SOLUTION
    return sum(xs) / len(xs)
    ### END SOLUTION
"""

#: the hidden check's source: it must never reach a student's feedback
HIDDEN_SOURCE = "assert square(12) == 144 and square(0.5) == 0.25, 'square is wrong for other inputs'"

#: points of the tiny master: exercise -> max points
MAX = {"t.square": 4, "t.mean": 2}


def code(source, sid=None, role=None, points=None, **meta):
    cell = nbformat.v4.new_code_cell(source)
    if sid is not None:
        cell.metadata["simtlab"] = {"id": sid, "role": role, **({"points": points} if points is not None else {})}
    cell.metadata.update(meta)
    return cell


def tiny_master() -> nbformat.NotebookNode:
    """Two exercises; t.square has two visible checks and a hidden one (partial credit)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A tiny chapter"),
        code("import math", "t.setup", "setup"),
        code(SQUARE, "t.square", "answer"),
        code("assert square(3) == 9, f'square(3) gave {square(3)}, expected 9'", "t.square.check", "check", 1),
        code("assert square(-2) == 4, f'square(-2) gave {square(-2)}, expected 4'", "t.square.negative", "check", 1),
        code(HIDDEN_SOURCE, "t.square.hidden", "hidden-check", 2),
        nbformat.v4.new_markdown_cell("## The mean"),
        code(MEAN, "t.mean", "answer"),
        code("assert mean([1, 2, 6]) == 3, f'mean([1, 2, 6]) gave {mean([1, 2, 6])}'", "t.mean.check", "check", 2),
        code("print('the end')", "t.end", "readonly"),
    ]
    for i, cell in enumerate(nb.cells):
        cell.id = f"tiny-{i}"
    return nb


def student_version() -> nbformat.NotebookNode:
    return build_student_notebook(tiny_master())


def _cell(nb, sid):
    for cell in nb.cells:
        if cell.metadata.get("simtlab", {}).get("id") == sid:
            return cell
    raise KeyError(sid)


def answered(square: str | None = None, mean: str | None = None, nb=None) -> nbformat.NotebookNode:
    """The student version with the given answer sources (None: left blank)."""
    nb = copy.deepcopy(nb if nb is not None else student_version())
    if square is not None:
        _cell(nb, "t.square").source = square
    if mean is not None:
        _cell(nb, "t.mean").source = mean
    return nb


GOOD_SQUARE = "def square(x):\n    return x ** 2"
GOOD_MEAN = "def mean(xs):\n    return sum(xs) / len(xs)"


def submissions() -> dict[str, object]:
    """name -> notebook (or bytes): every kind of submission the grader must survive.

    Expected grades are in ``EXPECTED``.
    """
    subs: dict[str, object] = {}
    subs["correct"] = answered(GOOD_SQUARE, GOOD_MEAN)
    subs["blank"] = student_version()
    # right for positive numbers only: 1 of 2 visible checks and the hidden one pass
    subs["partial"] = answered("def square(x):\n    return x * abs(x)", "def mean(xs):\n    return 0")

    nb = answered(None, GOOD_MEAN)
    _cell(nb, "t.square.check").source = "assert True"
    _cell(nb, "t.square.negative").source = "assert True"
    subs["edited_check"] = nb

    nb = answered(GOOD_SQUARE, "def mean(xs):\n    return 0")
    nb.cells.remove(_cell(nb, "t.mean.check"))
    subs["deleted_check"] = nb

    nb = answered(GOOD_SQUARE, GOOD_MEAN)
    cells = nb.cells
    order = [0, 1, 7, 8, 2, 4, 3, 5, 6]  # the mean first; the square's checks swapped
    nb.cells = [cells[i] for i in order]
    subs["reordered"] = nb

    subs["showtraceback"] = answered(
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "InteractiveShell.showtraceback = lambda *args, **kwargs: None\n"
        "def square(x):\n    return 0",
        "def mean(xs):\n    return 0",
    )
    subs["infinite_loop"] = answered("while True:\n    pass", GOOD_MEAN)
    # a loop inside the function: it passes the vetting and runs into the checks' time limit
    subs["slow_square"] = answered("def square(x):\n    while True:\n        pass", GOOD_MEAN)
    subs["os_exit"] = answered(GOOD_SQUARE, "import os\nos._exit(1)")
    subs["huge_allocation"] = answered("hoard = bytearray(64 * 2**30)\n" + GOOD_SQUARE, GOOD_MEAN)
    subs["not_json"] = b'{"cells": [{"cell_type": "code", "source": "def square(x'
    subs["empty"] = b""
    # the nbval markers a student may add to make failing cells "pass"
    nb = answered("# NBVAL_RAISES_EXCEPTION\ndef square(x):\n    raise ValueError('nope')\nsquare(1)",
                  "def mean(xs):\n    return 0")
    _cell(nb, "t.mean").metadata["tags"] = ["raises-exception", "nbval-skip"]
    _cell(nb, "t.mean.check").metadata["tags"] = ["nbval-skip"]
    _cell(nb, "t.mean.check").source = "# NBVAL_SKIP\n" + _cell(nb, "t.mean.check").source
    subs["nbval_markers"] = nb
    # code in the kernel finds the grader's results file and appends passes to it
    subs["forger"] = answered(
        "import glob, json, os\n"
        "for path in glob.glob(os.path.join(os.path.dirname(os.getcwd()), 'private', 'results.jsonl')):\n"
        "    with open(path, 'a') as f:\n"
        "        for sid in ('t.square.check', 't.square.negative', 't.square.hidden'):\n"
        "            body = json.dumps({'type': 'cell', 'id': sid, 'nbval_ok': True, 'reply': 'ok'})\n"
        "            f.write(json.dumps({'body': body, 'mac': '0' * 64}) + '\\n')\n"
        "def square(x):\n"
        "    return 0",
        GOOD_MEAN,
    )
    return subs


#: student -> (points per exercise, flags that must appear)
EXPECTED = {
    "correct": ({"t.square": 4, "t.mean": 2}, []),
    "blank": ({"t.square": 0, "t.mean": 0}, ["blank"]),
    "partial": ({"t.square": 3, "t.mean": 0}, []),
    "edited_check": ({"t.square": 0, "t.mean": 2}, ["check edited: t.square.check, t.square.negative"]),
    "deleted_check": ({"t.square": 4, "t.mean": 0}, ["check deleted: t.mean.check"]),
    "reordered": ({"t.square": 4, "t.mean": 2}, ["cells reordered"]),
    # an answer outside the allowlist (IPython, a top-level loop, os, glob) never runs
    "showtraceback": ({"t.square": 0, "t.mean": 0}, ["answer rejected: t.square (line 1: import from `IPython",
                                                     "suspicious code"]),
    "infinite_loop": ({"t.square": 0, "t.mean": 2}, ["answer rejected: t.square (line 1: `while` statement"]),
    # the interpreter's step budget stops the loop: the checks fail, as for any wrong answer
    "slow_square": ({"t.square": 0, "t.mean": 2}, []),
    "os_exit": ({"t.square": 4, "t.mean": 0}, ["answer rejected: t.mean (line 1: import of `os`"]),
    # a call to bytearray is outside what the grader interprets: never run
    "huge_allocation": ({"t.square": 0, "t.mean": 2}, ["needs manual grading: t.square"]),
    "not_json": ({"t.square": 0, "t.mean": 0}, ["not a notebook"]),
    "empty": ({"t.square": 0, "t.mean": 0}, ["empty file"]),
    "nbval_markers": ({"t.square": 0, "t.mean": 0}, ["nbval markers removed", "check edited: t.mean.check"]),
    "forger": ({"t.square": 0, "t.mean": 2}, ["answer rejected: t.square", "suspicious code"]),
    # one folder per student, with a conftest.py that would break the grader if it were loaded
    "frank": ({"t.square": 4, "t.mean": 2}, []),
}
