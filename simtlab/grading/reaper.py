"""The reaper between the grader and a run: ``python -I reaper.py [--max-file N] [--cgroup PROCS]... -- CMD...``
(see :mod:`.contain`).  ``--cgroup``: the run's cgroup (its ``cgroup.procs`` files), joined by CMD
before it starts.

It marks itself a child subreaper, so every process below it stays below it (``setsid`` and
double forks included: orphans are re-parented to the nearest subreaper), starts CMD, and when
CMD ends or the reaper is told to stop (SIGTERM, SIGINT), kills everything below it and waits
for it.  Run as a script, it imports nothing but the standard library and psutil.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
PR_SET_PDEATHSIG = 1


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except OSError:
        return False


def make_subreaper() -> bool:
    """Make this process adopt its orphaned descendants (Linux); False where that is not possible."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def _descendants(pid: int) -> list:
    try:
        import psutil

        return psutil.Process(pid).children(recursive=True)
    except Exception:  # noqa: BLE001 - gone already, or psutil missing
        return []


def kill_tree(pid: int, include_self: bool = False, reap: bool = False) -> int:
    """SIGKILL every descendant of ``pid`` (and ``pid``), until none is left; how many were killed."""
    killed = 0
    for _ in range(50):  # a fork loop makes new children while we kill: stop them in rounds
        victims = _descendants(pid)
        if not victims:
            break
        for p in victims:
            try:
                p.send_signal(signal.SIGSTOP)
            except Exception:  # noqa: BLE001
                pass
        for p in victims:
            try:
                p.kill()
                killed += 1
            except Exception:  # noqa: BLE001
                pass
        if reap:  # the reaper waits for what it adopted; the grader leaves that to each Popen
            _reap()
        time.sleep(0.01)
    if include_self:
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except OSError:
            pass
    return killed


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


# ---------------------------------------------------------------------------
# the reaper itself


def _reaper(cmd: list[str], cgroup_procs: list[str] = ()) -> int:
    make_subreaper()
    stopping = []

    def on_term(signum, frame):
        stopping.append(signum)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    # a grader that dies (killed, interrupted) takes its runs with it: SIGTERM when the parent ends
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() == 1:
        return 1  # the grader is gone already
    # the child joins the run's cgroup before it execs: nothing of the run starts outside it, and
    # the reaper, outside, is never the OOM killer's pick nor counted in the run's tasks
    child = subprocess.Popen(cmd, pass_fds=_inherited_fds(), preexec_fn=_joiner(cgroup_procs) if cgroup_procs else None)
    code = None
    while code is None and not stopping:
        try:
            code = child.wait(timeout=0.2)
        except subprocess.TimeoutExpired:
            continue
    kill_tree(os.getpid(), reap=True)
    if code is None:
        child.wait()
        code = -signal.SIGKILL
    return code if code >= 0 else 128 - code


def _inherited_fds() -> tuple[int, ...]:
    fds = []
    for name in os.listdir("/proc/self/fd") if os.path.isdir("/proc/self/fd") else []:
        fd = int(name)
        if fd > 2:
            try:
                os.fstat(fd)
            except OSError:
                continue
            if os.get_inheritable(fd):
                fds.append(fd)
    return tuple(fds)


def _joiner(procs_files: list[str]):
    def join() -> None:
        for path in procs_files:
            with open(path, "w") as f:   # an error here fails the start: never run outside the cap
                f.write(str(os.getpid()))
    return join


def _limit_file_size(limit: int) -> None:
    """No file a run writes grows past ``limit`` bytes (a log a student fills with 500 MB of
    prints): the writer gets EFBIG, or SIGXFSZ ends it."""
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


if __name__ == "__main__":
    args = sys.argv[1:]
    procs = []
    while args[:1] in (["--max-file"], ["--cgroup"]):
        if args[0] == "--max-file":
            _limit_file_size(int(args[1]))
        else:
            procs.append(args[1])
        args = args[2:]
    if args[:1] == ["--"]:
        args = args[1:]
    sys.exit(_reaper(args, procs))
