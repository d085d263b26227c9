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

__all__ = ["CellResult", "execute_notebook", "check_cell_results", "cell_results", "error_text"]

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


def student_failures(nb) -> list[str]:
    """Problems of an executed student notebook.

    Every check cell must fail (it has an error output); every other cell must
    run, except that an answer cell may stop at its own stub (a region at the top
    level of a cell becomes a bare ``raise NotWrittenYet("<exercise id>")``).
    Hidden-check cells must not be there at all.
    """
    problems = []
    for r in cell_results(nb):
        if r.role == "hidden-check":
            problems.append(f"{_describe(r)} is a hidden check and must not be in the student notebook")
        elif r.role == "check":
            if r.ok:
                problems.append(f"{_describe(r)} passes with the exercise not written; it must fail")
        elif r.role == "answer":
            if not r.ok and not (r.ename == "NotWrittenYet" and "Exercise " in (r.error or "")):
                problems.append(f"{_describe(r)} raised something other than its stub\n{r.error}")
        elif not r.ok:
            problems.append(f"{_describe(r)} raised\n{r.error}")
    return problems
