"""Run notebooks for the tests (a helper module, not a test file).

``execute_notebook`` runs a notebook in a fresh python3 kernel, in the
notebook's folder, keeping going after errors, and returns the executed copy
(the file on disk is not touched).  ``check_cell_results`` and
``cell_results`` read the outcome of each cell back.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

import nbformat
from nbclient import NotebookClient

from load_support import generous

__all__ = ["CellResult", "execute_notebook", "check_cell_results", "cell_results", "error_text", "check_outcomes",
           "output_text", "checker_source_lines", "leaked_checker_lines", "student_failures"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def execute_notebook(path_or_nb, timeout: int = int(generous(120)),
                     cwd: str | os.PathLike | None = None) -> nbformat.NotebookNode:
    """Execute a notebook (a path or a NotebookNode) and return the executed copy.

    The kernel is ``python3``, errors do not stop the run (``allow_errors=True``),
    ``timeout`` is per cell, and the kernel starts in the notebook's folder (for a
    NotebookNode: ``cwd``, default the current folder).  ``MPLBACKEND`` is removed
    from the kernel's environment so matplotlib behaves as in JupyterLab.
    """
    if isinstance(path_or_nb, (str, os.PathLike)):
        path = Path(path_or_nb)
        with open(path, encoding="utf-8") as f:
            nb = nbformat.read(f, as_version=4)
        folder = Path(cwd) if cwd is not None else path.resolve().parent
    else:
        nb = nbformat.from_dict(path_or_nb)  # a copy: the caller's notebook is not changed
        folder = Path(cwd) if cwd is not None else Path.cwd()

    env = dict(os.environ)
    env.pop("MPLBACKEND", None)
    for attempt in range(1, KERNEL_START_TRIES + 1):
        client = NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(folder)}},
        )
        try:
            client.execute(cwd=str(folder), env=env)
            return nb
        except RuntimeError as exc:
            # A kernel that dies before it answers ran no cell: under a loaded test run its
            # TCP port can be taken between jupyter_client picking it and the kernel binding it.
            if "before replying to kernel_info" not in str(exc) or attempt == KERNEL_START_TRIES:
                raise


#: kernel starts before a kernel that dies on start fails the test
KERNEL_START_TRIES = 3


def error_text(cell) -> str | None:
    """The error a code cell raised (name, value and traceback without colours), or None."""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            tb = "\n".join(out.get("traceback", []))
            tb = _ANSI.sub("", tb)
            return f"{out.get('ename')}: {out.get('evalue')}\n{tb}"
    return None


def error_name(cell) -> str | None:
    """The exception class name of a code cell's error output, or None."""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return out.get("ename")
    return None


class CellResult(NamedTuple):
    index: int
    cell_id: str | None  # metadata.simtlab.id
    role: str | None  # metadata.simtlab.role
    ok: bool
    ename: str | None
    error: str | None
    source: str


def cell_results(nb) -> list[CellResult]:
    """One :class:`CellResult` per code cell of an executed notebook."""
    results = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("simtlab") or {}
        err = error_text(cell)
        results.append(
            CellResult(index, meta.get("id"), meta.get("role"), err is None, error_name(cell), err, cell.source)
        )
    return results


def check_cell_results(nb) -> dict[str, tuple[bool, str | None]]:
    """``{id: (ok, error_text)}`` for the check and hidden-check cells of an executed notebook."""
    return {
        r.cell_id: (r.ok, r.error) for r in cell_results(nb) if r.role in ("check", "hidden-check")
    }


def _describe(r: CellResult) -> str:
    label = f"cell {r.index}" + (f" (id {r.cell_id!r}, role {r.role})" if r.cell_id else "")
    first = r.source.strip().splitlines()[0] if r.source.strip() else ""
    return f"{label} `{first[:60]}`"


def master_failures(nb) -> list[str]:
    """Problems of an executed master notebook: every cell must run without error."""
    return [f"{_describe(r)} raised\n{r.error}" for r in cell_results(nb) if not r.ok]


def check_outcomes(cell) -> list[dict]:
    """The results a check cell's outputs are marked with (``{"exercise", "passed"}`` each, see
    simtlab/exercises/card.py), in output order."""
    from simtlab.exercises.card import OUTPUT_KEY

    return [out["metadata"][OUTPUT_KEY] for out in cell.get("outputs", [])
            if isinstance(out.get("metadata"), dict) and isinstance(out["metadata"].get(OUTPUT_KEY), dict)]


def output_text(cell) -> str:
    """Everything a code cell shows: streams, each display's text and HTML, the error's traceback."""
    parts = []
    for out in cell.get("outputs", []):
        parts.append("".join(out.get("text", "")))
        for mime in ("text/plain", "text/html"):
            parts.append("".join((out.get("data") or {}).get(mime, "")))
        parts.append(_ANSI.sub("", "\n".join(out.get("traceback", []))))
    return "\n".join(parts)


#: the checker's own files: what of them a check's output may never show
CHECKER = Path(__file__).resolve().parent.parent / "simtlab" / "exercises"


def checker_source_lines(min_length: int = 20) -> set[str]:
    """Lines of the checks' source (simtlab/exercises/*.py), stripped, at least ``min_length``
    characters long, that are code (not comments, docstrings or string pieces): a traceback
    through the checker shows such lines, a card never does."""
    import ast

    lines = set()
    for path in CHECKER.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        strings = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) or isinstance(node, ast.JoinedStr):
                strings.update(range(node.lineno, node.end_lineno + 1))
        for n, line in enumerate(text.splitlines(), 1):
            code = line.strip()
            if len(code) >= min_length and n not in strings and not code.startswith("#"):
                lines.add(code)
    return lines


def leaked_checker_lines(nb) -> list[str]:
    """Lines of the checker's source that some cell of an executed notebook shows."""
    source = checker_source_lines()
    leaks = []
    for r, cell in zip(cell_results(nb), (c for c in nb.cells if c.cell_type == "code")):
        shown = output_text(cell)
        leaks += [f"{_describe(r)} shows `{line}`" for line in sorted(source) if line in shown]
    return leaks


def student_failures(nb) -> list[str]:
    """Problems of an executed student notebook (blank exercises), as Run All meets it.

    No cell may raise: every check cell reports its failure as a card marked as failed (it
    does not stop the chapter), shows no line of the checker's source, and the answer cells
    (whose stubs are inside functions) run. Hidden-check cells must not be there at all.
    """
    problems = []
    for r, cell in zip(cell_results(nb), (c for c in nb.cells if c.cell_type == "code")):
        if r.role == "hidden-check":
            problems.append(f"{_describe(r)} is a hidden check and must not be in the student notebook")
        elif not r.ok:
            problems.append(f"{_describe(r)} raised (Run All would stop there)\n{r.error}")
        elif r.role == "check":
            outcomes = check_outcomes(cell)
            if not outcomes or any(o.get("passed") for o in outcomes):
                problems.append(f"{_describe(r)} does not report a failure with the exercise not written: "
                                f"{outcomes}")
    problems += leaked_checker_lines(nb)
    return problems
