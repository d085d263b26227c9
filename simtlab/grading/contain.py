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

import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

from .reaper import PR_SET_CHILD_SUBREAPER, kill_tree, make_subreaper  # noqa: F401 - re-exported

__all__ = ["NOBODY", "can_drop_privileges", "start_contained", "sweep", "kill_tree", "make_subreaper"]

NOBODY = 65534
REAPER = Path(__file__).with_name("reaper.py")
TOKEN_ENV = "SIMTLAB_GRADE_RUN"

_lock = threading.Lock()
_drop_ok: dict = {}


def new_token() -> str:
    """A run's token: the grader's pid (so a test can look for what its own grading left), then
    random hex (so no run's sweep touches another's)."""
    return f"{os.getpid()}-{secrets.token_hex(12)}"


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


#: the largest file a contained run may write (its log included): see reaper._limit_file_size
MAX_FILE_BYTES = 64 * 2**20


def start_contained(cmd: list[str], *, cwd: str, env: dict, token: str, drop: bool, loopback: bool = False,
                    max_file: int = MAX_FILE_BYTES, **popen) -> subprocess.Popen:
    """Start ``cmd`` below a reaper; with ``drop``, as ``nobody`` without network (the caller checked
    :func:`can_drop_privileges`, and made ``cwd`` writable by ``nobody``). No file it writes grows
    past ``max_file`` bytes."""
    env = dict(env)
    env[TOKEN_ENV] = token
    inner = _dropped(cmd, loopback) if drop else cmd
    # run as a script: the reaper imports nothing of simtlab (it starts in a few milliseconds)
    argv = [sys.executable, "-I", str(REAPER), "--max-file", str(int(max_file)), "--", *inner]
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
