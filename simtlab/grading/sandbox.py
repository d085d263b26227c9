"""The process that scores a submission: the master's checks against the student's answers,
interpreted, never executed.

``simtlab grade`` starts ``python -I -m simtlab.grading.sandbox RESULT_FD CELL_TIMEOUT MEMORY``
in an empty temporary folder (as an unprivileged user, without network, where the grader runs
as root), writes the job to its standard input and closes it.  The job is JSON::

    {"groups": [{"cells": [{"name", "source", "answer", "stub", "id"}...], "checks": [{"id", "source"}...]}]}

``cells`` are the master's setup cells and the answer cells a group of checks needs, in the
master's order; ``checks`` are the master's check cells.  Nothing else of the master, no path,
no key and no argument of the grader reaches this process.

No line of a student's Python runs here. The master's setup and check cells run as Python
(the instructor's code); an answer cell is read as data by :mod:`.interpret`: its kernels run
on the vector engine's interpreter (:func:`simtlab.emulator.launch.interpret_only` is called
first: the greenlet engine, which executes a kernel's Python, is off), its host functions on
:class:`.interpret.HostInterpreter`, its constants are evaluated the same way. An answer
outside that subset is replaced by its stub (the student version's cell, from the master) and
its checks report it: ``manual`` in their record ("needs manual grading").

How it runs (one interpreter start per notebook; a fresh process per group and per check):

- this process (the *zygote*) reads the job into a local variable, imports the modules the
  setup cells import, caps its data memory;
- per group it forks a child that runs the cells, then forks one grandchild per check, so a
  check never sees what an earlier check changed;
- a grandchild runs its check and writes one JSON line (passed, message) to a pipe the zygote
  made; the child enforces the per-check time limit, the zygote one limit per group;
- the zygote writes one numbered record per check and a final count to ``RESULT_FD``, a pipe
  the grader holds; the grader trusts nothing else (the process's output is only a log).
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


def _not_interpreted(exc: BaseException) -> str | None:
    """The reason a kernel was not interpreted (a construct, not an error), if ``exc`` comes
    from one: the check failed, and only a person can tell whether the kernel is right."""
    from simtlab.emulator.errors import InterpretationStopped

    seen, todo = set(), [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, InterpretationStopped) and e.manual:
            return f"{e.function or 'a kernel'}: {e.problem}"
        todo += [getattr(e, "original", None), e.__cause__, e.__context__]
    return None


def _run_check(check: dict, namespace: dict, out_fd: int, cell_errors: list, manual: list) -> None:
    """In the grandchild: run one check and report; never returns."""
    manual = list(manual)
    try:
        namespace = dict(namespace)
        _exec(check["source"], f"<check {check['id']}>", namespace)
        record = {"id": check["id"], "passed": True, "message": ""}
    except BaseException as e:  # noqa: BLE001 - whatever the answer did fails the check
        try:
            message = _message(e)
            stopped = _not_interpreted(e)
            if stopped:
                manual.append(stopped)
        except BaseException:  # noqa: BLE001 - an exception whose str() raises
            message = "the check raised an error"
        if cell_errors:  # the cause is earlier: say so, as the notebook would have shown it
            message = cell_errors[-1]
        record = {"id": check["id"], "passed": False, "message": message}
    if manual:
        record["manual"] = manual
    try:
        _write(out_fd, record)
    finally:
        os._exit(0)


def _bind_answer(cell: dict, namespace: dict, manual: list) -> None:
    """Bind an answer cell's names, read as data (:func:`.interpret.bind_answer`); one outside
    the subset gets its stub (the master's student version) and is noted in ``manual``."""
    from .interpret import NotInterpretable, bind_answer

    if cell.get("stub"):   # the grader replaced it already: the master's own text
        _bind_stub(cell["source"], cell, namespace)
        return
    try:
        namespace.update(bind_answer(cell["source"], cell["name"], namespace))
    except NotInterpretable as e:
        manual.append(f"{cell.get('id')} ({e})")
        _bind_stub(cell.get("fallback", ""), cell, namespace)


class _NotWrittenKernel:
    """A stub's kernel (``raise NotWrittenYet(...)`` in its body): launching it says the exercise
    is not written, as the stub does in a notebook (no engine here runs a kernel's Python)."""

    def __init__(self, exercise: str, name: str):
        self.exercise, self.__name__ = exercise, name

    @property
    def py_func(self):
        from simtlab.emulator.errors import EmulationError
        from simtlab.exercises.report import NotWrittenYet

        error = EmulationError(f"{self.__name__} is not written yet")
        error.__cause__ = NotWrittenYet(self.exercise)
        raise error

    def __getitem__(self, config):
        return lambda *args: self.py_func


def _bind_stub(source: str, cell: dict, namespace: dict) -> None:
    """The student version's stub (the master's text): its host functions raise NotWrittenYet
    when called; its kernels say so when launched."""
    from simtlab.emulator.binding import _is_cuda_dispatcher

    scope = dict(namespace)
    _exec(source, cell["name"] + " (stub)", scope)
    for name, value in scope.items():
        if namespace.get(name, _UNSET) is value:
            continue
        namespace[name] = _NotWrittenKernel(cell.get("id") or "", name) if _is_cuda_dispatcher(value) else value


_UNSET = object()


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
        cell_errors, manual = [], []
        for cell in group["cells"]:
            # like a notebook run: a cell that raises is reported, the next cells still run
            try:
                if cell.get("answer"):
                    _bind_answer(cell, namespace, manual)
                else:
                    _exec(_strip_magics(cell["source"]), cell["name"], namespace)
            except BaseException as e:  # noqa: BLE001
                where = "the answer cell" if cell.get("answer") else "the course's setup cell"
                cell_errors.append(f"{where} {cell['name'].strip('<>').split(' ', 1)[-1]} raised {_message(e)}")
        for check in group["checks"]:
            pid = os.fork()
            if pid == 0:
                _run_check(check, namespace, out_fd, cell_errors, manual)
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


def _forget_stdin() -> None:
    """Descriptor 0 becomes /dev/null: the job's pipe is read, and no fork of this process keeps
    a pipe it did not make (sys.stdin.close() leaves the descriptor open)."""
    sys.stdin.close()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    result_fd, cell_timeout, memory = int(argv[0]), float(argv[1]), int(argv[2])
    from simtlab.emulator.launch import interpret_only
    from simtlab.exercises.card import MODE_ENV

    interpret_only()                    # no kernel's Python runs in this process, ever
    os.environ[MODE_ENV] = "raise"      # a failed check raises (card.py)
    job = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    _forget_stdin()
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
            out = {"seq": seq, "id": check["id"], "passed": rec.get("passed") is True,
                   "message": str(rec.get("message") or "")[:_MAX_MESSAGE],
                   "timed_out": bool(rec.get("timed_out"))}
            if isinstance(rec.get("manual"), list):
                out["manual"] = [str(m)[:300] for m in rec["manual"][:5]]
            _write(result_fd, out)
            seq += 1
    _write(result_fd, {"seq": seq, "count": seq})
    os.close(result_fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
