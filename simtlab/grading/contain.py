"""Nothing a submission starts outlives its run; as root, student code runs as ``nobody``.

Every process that runs student code (the nbval run, the isolated checks) is started through
:func:`start_contained`.  Between the grader and that process sits a *reaper* (``python -m
simtlab.grading.contain``), which marks itself a child subreaper (``PR_SET_CHILD_SUBREAPER``):
a process that detaches (``setsid``, double fork) is re-parented to the reaper, not to init,
so when the run ends, or its time is up, or the reaper is told to stop, the reaper kills every
process below it and waits for them.  A process group is not enough: ``setsid`` leaves it.

Every process of a run also carries the run's token in its environment: :func:`sweep` kills
what a run left even when its reaper was killed first (only the grader's user can do that).

Where the grader runs as root (in a container, as docs/INSTRUCTORS.md advises), the command
runs through ``unshare --net`` (no network: a new network namespace has only a loopback) and
``setpriv`` as uid/gid 65534 (``nobody``) without supplementary groups, with ``no_new_privs``,
in a private folder that only it can write.  Elsewhere it runs as the grader's user.

A cgroup would do the same job more thoroughly; this module does not create cgroups: where
the grader may (a writable cgroup v2 of its own) is rare outside systemd units and containers
started for it, and the subreaper works everywhere Linux runs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

__all__ = ["NOBODY", "can_drop_privileges", "start_contained", "sweep", "kill_tree", "make_subreaper"]

NOBODY = 65534
PR_SET_CHILD_SUBREAPER = 36
TOKEN_ENV = "SIMTLAB_GRADE_RUN"

_lock = threading.Lock()
_drop_ok: dict = {}


def make_subreaper() -> bool:
    """Make this process adopt its orphaned descendants (Linux); False where that is not possible."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except OSError:
        return False


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


def sweep(token: str) -> int:
    """Kill every process whose environment carries the run's ``token``; how many."""
    try:
        import psutil
    except ImportError:  # pragma: no cover
        return 0
    found = 0
    for p in psutil.process_iter(["pid"]):
        if p.pid == os.getpid():
            continue
        try:
            if p.environ().get(TOKEN_ENV) == token:
                p.kill()
                found += 1
        except Exception:  # noqa: BLE001 - gone, or not ours to read
            continue
    return found


def can_drop_privileges(nested: bool = False) -> bool:
    """Root, with ``unshare`` and ``setpriv``, and ``nobody`` can run this Python and find simtlab.

    ``nested``: ``nobody``'s Python must also start this Python again (the nbval run starts its
    kernel): a virtual environment whose interpreter lives in root's home folder passes the
    first test and fails this one.
    """
    with _lock:
        if nested not in _drop_ok:
            ok = False
            if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("unshare") and shutil.which("setpriv"):
                probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('simtlab') is None)"
                if nested:
                    probe = (f"import subprocess, sys; sys.exit(subprocess.call([sys.executable, '-I', '-c', "
                             f"{probe!r}]))")
                try:
                    r = subprocess.run(_dropped([sys.executable, "-I", "-c", probe]), capture_output=True,
                                       timeout=60, cwd="/")
                    ok = r.returncode == 0
                except (OSError, subprocess.SubprocessError):
                    ok = False
            _drop_ok[nested] = ok
        return _drop_ok[nested]


def _dropped(cmd: list[str], loopback: bool = False) -> list[str]:
    """``cmd`` in a new network namespace, as nobody.  ``loopback``: bring up ``lo`` first (the
    nbval run talks to its kernel over 127.0.0.1; nothing outside the namespace is reachable)."""
    user = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--no-new-privs", "--", *cmd]
    if loopback:
        ip = shutil.which("ip") or "ip"
        return ["unshare", "--net", "--", "sh", "-c", f'{ip} link set lo up && exec "$@"', "sh", *user]
    return ["unshare", "--net", "--", *user]


def start_contained(cmd: list[str], *, cwd: str, env: dict, token: str, drop: bool, loopback: bool = False,
                    **popen) -> subprocess.Popen:
    """Start ``cmd`` below a reaper; with ``drop``, as ``nobody`` without network (the caller checked
    :func:`can_drop_privileges`, and made ``cwd`` writable by ``nobody``)."""
    env = dict(env)
    env[TOKEN_ENV] = token
    inner = _dropped(cmd, loopback) if drop else cmd
    argv = [sys.executable, "-I", "-m", "simtlab.grading.contain", "--", *inner]
    return subprocess.Popen(argv, cwd=cwd, env=env, start_new_session=True, **popen)


def stop(proc: subprocess.Popen, token: str, grace: float = 5.0) -> None:
    """End a contained run on every path: ask its reaper to kill everything, then make sure."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
        except OSError:
            pass
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    kill_tree(proc.pid, include_self=proc.poll() is None)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignored
        pass
    sweep(token)


# ---------------------------------------------------------------------------
# the reaper itself: python -m simtlab.grading.contain -- CMD...


def _reaper(cmd: list[str]) -> int:
    make_subreaper()
    child = subprocess.Popen(cmd, pass_fds=_inherited_fds())
    stopping = []

    def on_term(signum, frame):
        stopping.append(signum)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
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


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--"]:
        args = args[1:]
    sys.exit(_reaper(args))
