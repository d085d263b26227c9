"""The process that runs a submission's vetted answers against the master's checks.

``simtlab grade`` starts ``python -I -m simtlab.grading.sandbox RESULT_FD CELL_TIMEOUT MEMORY``
in an empty temporary folder (as an unprivileged user, without network, where the grader runs
as root), writes the job to its standard input and closes it.  The job is JSON::

    {"groups": [{"cells": [{"name", "source", "answer"}...], "checks": [{"id", "source"}...]}]}

``cells`` are the master's setup cells and the vetted answer cells a group of checks needs, in
the master's order; ``checks`` are the master's check cells.  Nothing else of the master, no
path, no key and no argument of the grader reaches this process.

How it runs (one interpreter start per notebook; a fresh process per group and per check):

- this process (the *zygote*) reads the job into a local variable, imports the modules the
  setup cells import, caps its data memory, and never runs student code;
- per group it forks a child that runs the cells, then forks one grandchild per check, so a
  check never sees what an earlier check changed;
- a grandchild runs its check and writes one JSON line (passed, message) to a pipe the zygote
  made; the child enforces the per-check time limit, the zygote one limit per group;
- the zygote writes one numbered record per check and a final count to ``RESULT_FD``, a pipe
  the grader holds; the grader trusts nothing else (the process's output is only a log).

Student code cannot reach the pipes: vetted answers import no ``os``/``sys``, use no ``open``,
no dunder, no file input or output (see :mod:`.vet`).
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time

_MAX_MESSAGE = 2000


def _strip_magics(source: str) -> str:
    # the master's setup cells may start with `%matplotlib inline`: not Python, and not needed here
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))


def _preimport(groups) -> None:
    import ast
    import importlib

    os.environ.setdefault("MPLBACKEND", "Agg")
    modules = {"numpy", "numba", "numba.cuda", "simtlab", "simtlab.exercises"}
    for group in groups:
        for cell in group["cells"]:
            if cell.get("answer"):
                continue
            try:
                tree = ast.parse(_strip_magics(cell["source"]))
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules.update(a.name for a in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    modules.add(node.module)
        for check in group["checks"]:
            if "simtlab.exercises" in check["source"]:
                for word in check["source"].replace(",", " ").split():
                    if word.startswith("ch") and word[2:4].isdigit():
                        modules.add(f"simtlab.exercises.{word[:4]}")
    for name in sorted(modules):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - the setup cell will raise it again, with its message
            pass


def _limit_memory(limit: int) -> None:
    if limit <= 0:
        return
    import resource

    which = resource.RLIMIT_DATA if sys.platform.startswith("linux") else resource.RLIMIT_AS
    _, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(which, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _message(exc: BaseException) -> str:
    from simtlab.exercises.report import CheckFailed

    if isinstance(exc, CheckFailed):   # the course's own failure: the fix first (see CheckFailed.feedback)
        return exc.feedback()[:_MAX_MESSAGE]
    text = str(exc).strip()
    message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return message[:_MAX_MESSAGE]


def _exec(source: str, name: str, namespace: dict) -> None:
    import linecache

    # registered like IPython registers a cell: the emulator reads a kernel's source by its file name
    lines = source.splitlines(True)
    linecache.cache[name] = (len(source), None, lines, name)
    exec(compile(source, name, "exec"), namespace)  # noqa: S102 - vetted answers and the master's cells


def _write(fd: int, record: dict) -> None:
    data = (json.dumps(record) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def _run_check(check: dict, namespace: dict, out_fd: int, cell_errors: list) -> None:
    """In the grandchild: run one check and report; never returns."""
    try:
        namespace = dict(namespace)
        _exec(check["source"], f"<check {check['id']}>", namespace)
        record = {"id": check["id"], "passed": True, "message": ""}
    except BaseException as e:  # noqa: BLE001 - whatever the student's code raised fails the check
        try:
            message = _message(e)
        except BaseException:  # noqa: BLE001 - an exception whose str() raises
            message = "the check raised an error"
        if cell_errors:  # the cause is earlier: say so, as the notebook would have shown it
            message = cell_errors[-1]
        record = {"id": check["id"], "passed": False, "message": message}
    try:
        _write(out_fd, record)
    finally:
        os._exit(0)


def _wait(pid: int, timeout: float) -> bool:
    """Wait for ``pid`` up to ``timeout`` seconds; kill it after that.  True: it ended in time."""
    deadline = time.monotonic() + timeout
    while True:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            return True
        if time.monotonic() >= deadline:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            os.waitpid(pid, 0)
            return False
        time.sleep(0.02)


def _run_group(group: dict, out_fd: int, cell_timeout: float) -> None:
    """In the child: run the cells, then each check in its own fork; never returns."""
    code = 0
    try:
        namespace = {"__name__": "__main__", "__builtins__": __builtins__}
        cell_errors = []
        for cell in group["cells"]:
            # like a notebook run: a cell that raises is reported, the next cells still run
            source = cell["source"] if cell.get("answer") else _strip_magics(cell["source"])
            try:
                _exec(source, cell["name"], namespace)
            except BaseException as e:  # noqa: BLE001
                where = "the answer cell" if cell.get("answer") else "the course's setup cell"
                cell_errors.append(f"{where} {cell['name'].strip('<>').split(' ', 1)[-1]} raised {_message(e)}")
        for check in group["checks"]:
            pid = os.fork()
            if pid == 0:
                _run_check(check, namespace, out_fd, cell_errors)
            if not _wait(pid, cell_timeout):
                _write(out_fd, {"id": check["id"], "passed": False,
                                "message": f"timed out after {cell_timeout:g} s", "timed_out": True})
    except BaseException:  # noqa: BLE001
        code = 1
    finally:
        os._exit(code)


def _collect(read_fd: int, pid: int, deadline: float) -> tuple[list[dict], bool]:
    """The zygote reads one group's records until the child ends or its time is up."""
    buf, timed_out = b"", False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([read_fd], [], [], min(left, 0.5))
        if ready:
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break  # every writer is gone: the child and its checks ended
            buf += chunk
    if timed_out:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    records = []
    for line in buf.decode("utf-8", errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and isinstance(rec.get("id"), str):
            records.append(rec)
    return records, timed_out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    result_fd, cell_timeout, memory = int(argv[0]), float(argv[1]), int(argv[2])
    job = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    sys.stdin.close()
    groups = job["groups"]
    _preimport(groups)
    _limit_memory(memory)
    seq = 0
    for group in groups:
        read_fd, write_fd = os.pipe()
        budget = cell_timeout * (len(group["cells"]) + len(group["checks"])) + 5
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            os.close(result_fd)
            os.setpgid(0, 0)
            _run_group(group, write_fd, cell_timeout)
        os.close(write_fd)
        records, timed_out = _collect(read_fd, pid, time.monotonic() + budget)
        os.close(read_fd)
        got = {}
        for rec in records:
            got.setdefault(rec["id"], rec)
        for check in group["checks"]:
            rec = got.get(check["id"])
            if rec is None:
                why = (f"not run: the exercise's cells took longer than {budget:g} s" if timed_out
                       else "not run: the process running the check ended before it reported")
                rec = {"passed": False, "message": why}
            _write(result_fd, {"seq": seq, "id": check["id"], "passed": rec.get("passed") is True,
                               "message": str(rec.get("message") or "")[:_MAX_MESSAGE],
                               "timed_out": bool(rec.get("timed_out"))})
            seq += 1
    _write(result_fd, {"seq": seq, "count": seq})
    os.close(result_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
