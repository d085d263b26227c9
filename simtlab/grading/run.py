"""Run one rebuilt notebook under nbval, in a subprocess, and read back how each cell ended."""

from __future__ import annotations

import os
import secrets
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import subprocess

import nbformat

from ..exercises.card import MODE_ENV as CHECK_MODE_ENV
from . import contain
from .signing import sign_ok

__all__ = ["RunResult", "run_notebook", "DEFAULT_MEMORY_LIMIT"]

#: default cap on the data memory of each grading process and its kernel (bytes)
DEFAULT_MEMORY_LIMIT = 4 * 2**30

# environment variables of an outer pytest that must not reach the grading pytest
_DROP_ENV_PREFIXES = ("PYTEST_", "COV_CORE_")
_DROP_ENV = ("MPLBACKEND", "JPY_PARENT_PID", "JPY_SESSION_NAME")


@dataclass
class RunResult:
    """What came back from one run.

    ``cells``: one record per code cell that ended (see ``nbplugin._cell_record``),
    in order; ``started``/``ended``: pytest's plugin started / finished normally;
    ``killed``: the whole-notebook timeout fired; ``bad_lines``: results lines
    whose signature did not match (written by someone else); ``log``: the end of
    pytest's output, for the instructor.
    """

    cells: list[dict] = field(default_factory=list)
    started: bool = False
    ended: bool = False
    killed: bool = False
    returncode: int | None = None
    bad_lines: int = 0
    seconds: float = 0.0
    log: str = ""

    @property
    def kernel_never_started(self) -> bool:
        """pytest ran, but every cell failed in setup: the kernel died before it answered."""
        return bool(self.started and self.cells and all(r.get("setup_failed") for r in self.cells))


# what a grading process may see of the grader's environment: nothing secret, nothing of pytest
_KEEP_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "JUPYTER_PATH", "VIRTUAL_ENV", "CONDA_PREFIX",
             "LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH")
_KEEP_PREFIXES = ("NUMBA_", "SIMTLAB_BACKEND")


def _child_env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k in _KEEP_ENV or k.startswith(_KEEP_PREFIXES)}
    env["HOME"] = str(home)
    env["TMPDIR"] = str(home)
    env["IPYTHONDIR"] = str(home / ".ipython")
    env["MPLCONFIGDIR"] = str(home / ".matplotlib")
    env["JUPYTER_RUNTIME_DIR"] = str(home / ".jupyter-runtime")
    env["JUPYTER_DATA_DIR"] = str(home / ".jupyter-data")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    # only nbval and our plugin: no other installed pytest plugin takes part in grading
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    # a failed check raises in this run, as nbval must see it (a student's notebook shows a card instead)
    env[CHECK_MODE_ENV] = "raise"
    return env


def tail(path, size: int) -> str:
    """The last ``size`` bytes of a file, read without reading the rest (a log may be huge)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - size))
            return f.read(size).decode("utf-8", errors="replace")
    except OSError:
        return ""


#: the most of the results file the grader reads (one record per cell: far less than this)
MAX_RESULTS_BYTES = 8 * 2**20


def _read_results(path: Path, key: bytes) -> tuple[list[dict], int]:
    records, bad = [], 0
    try:
        with open(path, "rb") as f:
            lines = f.read(MAX_RESULTS_BYTES).decode("utf-8", errors="replace").splitlines()
    except OSError:
        return [], 0
    for line in lines:
        if not line.strip():
            continue
        rec = sign_ok(key, line)
        if rec is None:
            bad += 1
        else:
            records.append(rec)
    return records, bad


def run_notebook(
    nb: nbformat.NotebookNode,
    workdir: str | Path,
    *,
    name: str = "submission.ipynb",
    kernel: str = "python3",
    cell_timeout: float = 60,
    notebook_timeout: float = 600,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
    drop_privileges: bool | None = None,
) -> RunResult:
    """Run ``nb`` with ``pytest --nbval-lax`` in a subprocess and return each cell's outcome.

    ``workdir`` must be an empty private folder: the notebook goes to
    ``workdir/notebook/`` (the kernel's working folder), results and logs to
    ``workdir/private/``.  The kernel is ``kernel`` (a kernelspec name), each cell
    may run ``cell_timeout`` seconds, the whole run ``notebook_timeout`` seconds,
    after which pytest, the kernel and their children are killed.  The data
    memory of pytest and of the kernel is capped at ``memory_limit`` bytes, per process and,
    where a cgroup can be made, for the run as a whole (0: no cap).  Everything the run starts
    is killed when it ends (:mod:`.contain`); as root it runs confined: a uid of its own, no
    network, its own pids and temp folders (``drop_privileges``: None decides by itself).
    Never raises for anything the notebook does.
    """
    workdir = Path(workdir)
    nbdir, private, home = workdir / "notebook", workdir / "private", workdir / "home"
    for d in (nbdir, private, home):
        d.mkdir(parents=True, exist_ok=True)
    drop = contain.can_drop_privileges(nested=True) if drop_privileges is None else drop_privileges
    nbpath = nbdir / name
    nbformat.write(nb, str(nbpath))
    ini = private / "pytest.ini"
    ini.write_text("[pytest]\n")
    results = private / "results.jsonl"
    results.touch()
    log = private / "pytest.log"
    key = secrets.token_hex(32).encode()
    token = contain.new_token()

    cmd = [
        sys.executable, "-m", "pytest", str(nbpath),
        "-c", str(ini), "--rootdir", str(nbdir), "--noconftest",
        "-p", "no:cacheprovider", "-p", "nbval.plugin", "-p", "simtlab.grading.nbplugin",
        "--nbval-lax", "--nbval-kernel-name", kernel,
        "--nbval-cell-timeout", repr(float(cell_timeout)),
        "--nbval-kernel-startup-timeout", "180",     # seconds: minutes on a busy machine, not hung
        "--simtlab-results", str(results),
        "--simtlab-memory-limit", str(int(memory_limit)),
        "-q", "--color=no", "-W", "ignore",
    ]
    out = RunResult()
    start = time.monotonic()
    with contain.confined(str(workdir), drop=drop, memory_limit=memory_limit) as box:
        box.own(workdir, nbdir, private, home, nbpath, ini, results)
        _run_in(box, cmd, nbdir, home, log, key, token, notebook_timeout, out)
    out.seconds = time.monotonic() - start
    records, out.bad_lines = _read_results(results, key)
    out.started = any(r.get("type") == "start" for r in records)
    out.ended = any(r.get("type") == "end" for r in records)
    out.cells = [r for r in records if r.get("type") == "cell"]
    out.log = tail(log, 4000)
    return out


def _run_in(box, cmd: list[str], nbdir: Path, home: Path, log: Path, key: bytes, token: str,
            notebook_timeout: float, out: RunResult) -> None:
    """Start the nbval run in ``box`` (the key reaches it through a pipe), wait, stop it on every path."""
    read_fd, write_fd = os.pipe()
    proc = None
    try:
        os.write(write_fd, key + b"\n")
        os.close(write_fd)
        write_fd = None
        cmd = cmd + ["--simtlab-key-fd", str(read_fd)]
        with open(log, "wb") as logf:
            proc = contain.start_contained(
                cmd, cwd=str(nbdir), env=_child_env(home), token=token, box=box, loopback=True,
                stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT, pass_fds=(read_fd,),
            )
            os.close(read_fd)
            read_fd = None
            try:
                out.returncode = proc.wait(timeout=notebook_timeout)
            except subprocess.TimeoutExpired:
                out.killed = True
    finally:
        for fd in (read_fd, write_fd):
            if fd is not None:
                os.close(fd)
        if proc is not None:
            contain.stop(proc, token, box=box)  # on every path: nothing the run started outlives it
            if out.returncode is None:
                out.returncode = proc.returncode
