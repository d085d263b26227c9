"""Where the points come from: each check run apart from everything but the vetted answers.

:func:`plan_job` takes a master and a student's answers (only those :mod:`.vet` accepted; a
rejected or missing answer is replaced by the student version's stub) and lists, per check,
the master's setup cells and answer cells before it.  :func:`run_isolated` hands that job to
:mod:`.sandbox` in a fresh process, in an empty temporary folder, below a reaper, as a uid
of its own with private temp folders and a cgroup where the grader is root (see
:mod:`.contain`), and reads the results from a pipe only the grader holds: numbered records and
a final count, or no points at all.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field

from . import contain

__all__ = ["IsolatedResult", "plan_job", "run_isolated"]

#: the most the grader reads from the scoring process's pipe
MAX_RESULTS_BYTES = 16 * 2**20


@dataclass
class IsolatedResult:
    """``checks``: check id -> {"passed", "message", "timed_out"}; ``complete``: every record came,
    numbered, with the right count; ``killed``: the whole run hit its time limit."""

    checks: dict = field(default_factory=dict)
    complete: bool = False
    killed: bool = False
    seconds: float = 0.0
    log: str = ""
    as_user: str = ""


def _meta(cell) -> dict:
    meta = cell.get("metadata", {}).get("simtlab")
    return meta if isinstance(meta, dict) else {}


def plan_job(master, answers: dict[str, str], stubs: dict[str, str] | None = None) -> dict:
    """The job for :mod:`.sandbox`: groups of checks with the cells each needs.

    ``answers``: answer id -> the source the sandbox reads as data (:mod:`.interpret`);
    ``stubs``: answer id -> the student version's stub (the master's text), which stands in
    for an answer the grader refused (its source in ``answers`` is then the stub too).
    """
    stubs = stubs or {}
    groups: list[dict] = []
    cells: list[dict] = []
    for cell in master.nb.cells:
        if cell.get("cell_type") != "code":
            continue
        meta = _meta(cell)
        role = meta.get("role")
        if role == "setup":
            cells.append({"name": f"<setup {meta.get('id')}>", "source": cell.source, "answer": False})
        elif role == "answer":
            sid = meta["id"]
            source = answers.get(sid, "")
            cells.append({"name": f"<answer {sid}>", "id": sid, "source": source, "answer": True,
                          "stub": sid in stubs and stubs[sid] == source, "fallback": stubs.get(sid, "")})
        elif role in ("check", "hidden-check"):
            check = {"id": meta["id"], "source": cell.source}
            if groups and groups[-1]["cells"] == cells:
                groups[-1]["checks"].append(check)
            else:
                groups.append({"cells": list(cells), "checks": [check]})
    return {"groups": groups}


def run_isolated(job: dict, *, cell_timeout: float, total_timeout: float, memory_limit: int,
                 drop_privileges: bool | None = None) -> IsolatedResult:
    """Run ``job`` in a contained sandbox process; never raises for anything student code does."""
    out = IsolatedResult()
    expected = [c["id"] for g in job["groups"] for c in g["checks"]]
    if not expected:
        out.complete = True
        return out
    drop = contain.can_drop_privileges() if drop_privileges is None else drop_privileges
    token = contain.new_token()
    work = tempfile.mkdtemp(prefix="simtlab-sandbox-")
    log_fd, log_path = tempfile.mkstemp(prefix="simtlab-sandbox-log-")
    read_fd, write_fd = os.pipe()
    start = time.monotonic()
    proc = None
    try:
        with contain.confined(work, drop=drop, memory_limit=memory_limit) as box:
            box.own(work)
            out.as_user = box.describe()
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": work, "TMPDIR": work,
                   "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1", "NUMBA_CACHE_DIR": work,
                   "MPLCONFIGDIR": work, "LANG": "C.UTF-8"}
            if "LD_LIBRARY_PATH" in os.environ:   # a Python built with a shared libpython elsewhere
                env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
            cmd = [sys.executable, "-I", "-m", "simtlab.grading.sandbox", str(write_fd), repr(float(cell_timeout)),
                   str(int(memory_limit))]
            try:
                proc = contain.start_contained(cmd, cwd=work, env=env, token=token, box=box, stdin=-1,
                                               stdout=log_fd, stderr=log_fd, pass_fds=(write_fd,))
                os.close(write_fd)
                write_fd = None
                feeder = threading.Thread(target=_feed, args=(proc, json.dumps(job).encode()), daemon=True)
                feeder.start()
                data, out.killed = _read_all(read_fd, start + total_timeout)
            finally:
                if proc is not None:
                    contain.stop(proc, token, box=box)
                shutil.rmtree(work, ignore_errors=True)   # before the uid goes back to the pool
    finally:
        for fd in (read_fd, write_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        os.close(log_fd)
        from .run import tail

        out.log = tail(log_path, 3000)
        os.unlink(log_path)
        shutil.rmtree(work, ignore_errors=True)
    out.seconds = time.monotonic() - start
    out.checks, out.complete = _verify(data, expected)
    return out


def _feed(proc, payload: bytes) -> None:
    try:
        proc.stdin.write(payload)
        proc.stdin.close()
    except OSError:
        pass


def _read_all(fd: int, deadline: float) -> tuple[bytes, bool]:
    import select

    chunks, total = [], 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), True
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                return b"".join(chunks), False
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_RESULTS_BYTES:   # far more than records: read no more, trust none
                return b"", False


def _verify(data: bytes, expected: list[str]) -> tuple[dict, bool]:
    """The records, if they are exactly ``expected`` in order, numbered, then the count."""
    records = []
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            return {}, False
        records.append(rec)
    checks = {}
    for i, rec in enumerate(records[: len(expected)]):
        if not isinstance(rec, dict) or rec.get("seq") != i or rec.get("id") != expected[i]:
            return {}, False
        checks[rec["id"]] = {"passed": rec.get("passed") is True, "message": str(rec.get("message") or ""),
                             "timed_out": bool(rec.get("timed_out")),
                             "manual": [str(m) for m in rec.get("manual") or [] if isinstance(rec.get("manual"), list)]}
    complete = (len(records) == len(expected) + 1 and isinstance(records[-1], dict)
                and records[-1] == {"seq": len(expected), "count": len(expected)})
    return checks, complete
