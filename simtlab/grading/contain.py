"""Nothing a submission starts outlives its run, sees another run, or runs as root.

Every process that runs student code (the nbval run, the isolated checks) is started through
:func:`start_contained`.  Between the grader and that process sits a *reaper* (``python -m
simtlab.grading.contain``), which marks itself a child subreaper (``PR_SET_CHILD_SUBREAPER``):
a process that detaches (``setsid``, double fork) is re-parented to the reaper, not to init,
so when the run ends, or its time is up, or the reaper is told to stop, the reaper kills every
process below it and waits for them.  A process group is not enough: ``setsid`` leaves it.

Every process of a run also carries the run's token in its environment: :func:`sweep` kills
what a run left even when its reaper was killed first (only the grader's user can do that).

Where the grader runs as root (in a container, as docs/INSTRUCTORS.md advises), each run gets
(:class:`Box`, from :func:`confined`):

- **a uid of its own**, leased from a pool (:class:`UidPool`, 61000 to 61255 unless
  configured; no passwd entry needed): two runs graded at the same time never share a uid, so
  neither can signal, trace or read the other's processes, files or pipes (``/proc/PID/fd``);
  its work folder is owned by that uid, mode 0700.  ``setpriv`` drops to it, gid the same, no
  supplementary groups, ``no_new_privs``;
- **namespaces** (``unshare``): no network (only a loopback), its own System V IPC, its own
  pids (``--pid --mount-proc``: it sees no process but its own, so not the grader's command
  line), and its own mounts: private ``/tmp``, ``/var/tmp`` and ``/dev/shm`` (size-capped
  tmpfs, gone with the run), with only its work folder bound back at its path.  Where mount
  and pid namespaces cannot be made, the run keeps the network namespace and the grader
  removes what the run's uid left in those folders (:func:`isolation` says which applies);
- **a cgroup** (:mod:`.cgroups`): memory and tasks capped for the run as a whole, where the
  grader can make one; the per-process rlimits stay in every case.

Not as root, the command runs as the grader's user with the reaper and rlimits only.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from . import cgroups
from .reaper import PR_SET_CHILD_SUBREAPER, kill_tree, make_subreaper  # noqa: F401 - re-exported

__all__ = ["NOBODY", "Box", "UidPool", "can_drop_privileges", "confined", "isolation", "start_contained",
           "stop", "sweep", "kill_tree", "make_subreaper"]

NOBODY = 65534
REAPER = Path(__file__).with_name("reaper.py")
TOKEN_ENV = "SIMTLAB_GRADE_RUN"

#: the uids runs are given by default: a block no distribution hands out (no passwd entry needed)
DEFAULT_UIDS = (61000, 61255)
UIDS_ENV = "SIMTLAB_GRADE_UIDS"   # "FIRST-LAST": another block (the CLI's --uids sets it)
#: the most tasks (processes and threads) one run may have, where a cgroup caps them: numpy's BLAS
#: starts a thread per core in each process that imports it (pytest's and the kernel's)
PIDS_MAX = 512 + 4 * (os.cpu_count() or 1)
#: the size of each private tmpfs (/tmp, /var/tmp, /dev/shm) of a run; a cgroup charges it to the run too
PRIVATE_TMP_BYTES = 256 * 2**20
#: the world-writable folders a run could leave files in (private per run where mounts can be made)
SHARED_TEMP = ("/tmp", "/var/tmp", "/dev/shm")

_lock = threading.Lock()
_drop_ok: dict = {}
_namespaces: dict = {}


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


# ---------------------------------------------------------------------------
# one uid per run


class UidPool:
    """Uids ``first`` to ``last``, one per run at a time, across every grader on the machine.

    A uid is free when no passwd entry names it (a real account's files would be its files),
    no process runs as it (what a crashed grader left) and no grader holds its lock file
    (``flock`` in a root-only folder: two graders at once never share one).
    """

    def __init__(self, first: int, last: int, lock_dir: str | None = None):
        if not 0 < first <= last:
            raise ValueError(f"a uid range is FIRST-LAST with 0 < FIRST <= LAST, got {first}-{last}")
        self.first, self.last = first, last
        self.lock_dir = Path(lock_dir or _lock_dir())
        self._held: dict[int, int] = {}
        self._guard = threading.Lock()

    def __repr__(self) -> str:
        return f"{self.first}-{self.last}"

    def lease(self) -> int:
        busy = _uids_with_processes()
        with self._guard:
            for uid in range(self.first, self.last + 1):
                if uid in self._held or uid in busy or _has_account(uid):
                    continue
                fd = self._try_lock(uid)
                if fd is not None:
                    self._held[uid] = fd
                    return uid
        raise RuntimeError(f"no free uid in {self}: more runs at once than uids (pass --uids FIRST-LAST "
                           "with a larger block, or fewer --jobs)")

    def release(self, uid: int) -> None:
        with self._guard:
            fd = self._held.pop(uid, None)
        if fd is not None:
            os.close(fd)   # closing drops the flock

    def _try_lock(self, uid: int) -> int | None:
        fd = os.open(self.lock_dir / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError:
            os.close(fd)
            return None


def _lock_dir() -> str:
    """A folder only root can write: the uid locks of every grader on this machine."""
    for parent in ("/run", "/var/run", "/tmp"):
        path = os.path.join(parent, "simtlab-grade-uids")
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_uid == os.geteuid() and not st.st_mode & 0o022 and os.path.isdir(path) \
                and not os.path.islink(path):
            return path
    raise RuntimeError("no folder for the grader's uid locks (/run or /tmp, writable by root only)")


def _has_account(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


def _uids_with_processes() -> set[int]:
    import psutil

    uids = set()
    for p in psutil.process_iter(["uids"]):
        try:
            uids.update(p.info["uids"] or ())
        except Exception:  # noqa: BLE001 - gone meanwhile
            continue
    return uids


_pool: UidPool | None = None
_configured: tuple[int, int] | None = None


def use_uids(first: int, last: int) -> None:
    """Give runs the uids ``first`` to ``last`` (``simtlab grade --uids``)."""
    global _configured
    UidPool(first, last, lock_dir=os.devnull)   # validates the range
    _configured = (first, last)


def uid_pool() -> UidPool:
    """The grader's pool: :func:`use_uids`, else ``SIMTLAB_GRADE_UIDS`` ("FIRST-LAST"), else
    :data:`DEFAULT_UIDS`."""
    global _pool
    with _lock:
        text = os.environ.get(UIDS_ENV, "")
        first, last = _configured or (parse_uid_range(text) if text else DEFAULT_UIDS)
        if _pool is None or (_pool.first, _pool.last) != (first, last):
            _pool = UidPool(first, last)
        return _pool


def parse_uid_range(text: str) -> tuple[int, int]:
    first, sep, last = text.partition("-")
    try:
        lo, hi = int(first), int(last if sep else first)
    except ValueError:
        raise ValueError(f"a uid range is FIRST-LAST (for example 61000-61255), got {text!r}") from None
    if not 0 < lo <= hi:
        raise ValueError(f"a uid range is FIRST-LAST with 0 < FIRST <= LAST, got {text!r}")
    return lo, hi


# ---------------------------------------------------------------------------
# what this machine lets the grader do


def namespaces() -> tuple[str, str]:
    """``("full", "")``: network, IPC, pid and mount namespaces with private temp folders;
    ``("net", why)``: only a network namespace (why the others failed); ``("", why)``: none."""
    with _lock:
        if not _namespaces:
            _namespaces["value"] = _probe_namespaces()
        return _namespaces["value"]


def _probe_namespaces() -> tuple[str, str]:
    if not (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("unshare")):
        return "", "the grader is not root (or has no unshare)"
    full = _unshare(True) + ["sh", "-c", _NS_SETUP, "sh", "", "9", "1m", "0", "", "0", "true"]
    why = _try(full)
    if why is None:
        return "full", ""
    if _try(_unshare(False) + ["true"]) is None:
        return "net", f"mount and pid namespaces are unavailable ({why})"
    return "", f"namespaces are unavailable ({why})"


def _try(cmd: list[str]) -> str | None:
    try:
        r = subprocess.run(cmd, capture_output=True, timeout=30, cwd="/")
    except (OSError, subprocess.SubprocessError) as e:
        return str(e)
    return None if r.returncode == 0 else (r.stderr.decode(errors="replace").strip()[-200:] or f"exit {r.returncode}")


def _unshare(full: bool) -> list[str]:
    if not full:
        return ["unshare", "--net", "--"]
    # --fork: the command is pid 1 of its pid namespace, and when it ends the kernel kills every
    # process left in it; --kill-child: so does the end of unshare (the reaper killing it)
    return ["unshare", "--net", "--ipc", "--mount", "--pid", "--fork", "--kill-child", "--mount-proc",
            "--propagation", "private", "--"]


# Run as root inside the new namespaces, before dropping to the run's uid. Arguments: the work
# folder (kept visible at its path: it is opened before /tmp is covered, then bound back from the
# open descriptor; --no-canonicalize, or `mount` would resolve /proc/self/fd/9 to the path, which
# by then names the new tmpfs), the descriptor to hold it on (a digit, as sh allows, that the run
# does not inherit), the tmpfs size, "1" to bring the loopback up, the path of `ip`, how many
# folders to hide, those folders (each covered by an empty read-only tmpfs), the command.
_NS_SETUP = r"""
set -e
work=$1; fd=$2; size=$3; loopback=$4; ip=$5; hide=$6; shift 6
here=$(pwd -P)
if [ "$loopback" = 1 ]; then "$ip" link set lo up; fi
if [ -n "$work" ]; then eval "exec $fd<\"\$work\""; fi
for dir in /tmp /var/tmp /dev/shm; do
    if [ -d "$dir" ]; then mount -t tmpfs -o "mode=1777,nosuid,nodev,size=$size" simtlab-private "$dir"; fi
done
while [ "$hide" -gt 0 ]; do
    if [ -d "$1" ]; then mount -t tmpfs -o ro,mode=0,size=4k simtlab-hidden "$1"; fi
    shift; hide=$((hide - 1))
done
if [ -n "$work" ]; then mkdir -p "$work"; mount --no-canonicalize --bind "/proc/self/fd/$fd" "$work"; eval "exec $fd<&-"; fi
cd "$here"
exec "$@"
"""


def can_drop_privileges(nested: bool = False) -> bool:
    """Root, with ``unshare`` (a network namespace at least) and ``setpriv``, and an unprivileged
    uid can run this Python and find simtlab.

    ``nested``: that uid's Python must also start this Python again (the nbval run starts its
    kernel): a virtual environment whose interpreter lives in root's home folder passes the
    first test and fails this one.
    """
    level, _ = namespaces()
    with _lock:
        if nested not in _drop_ok:
            ok = False
            if level and shutil.which("setpriv"):
                probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('simtlab') is None)"
                if nested:
                    probe = (f"import subprocess, sys; sys.exit(subprocess.call([sys.executable, '-I', '-c', "
                             f"{probe!r}]))")
                try:
                    r = subprocess.run(_dropped([sys.executable, "-I", "-c", probe], NOBODY, level), capture_output=True,
                                       timeout=60, cwd="/")
                    ok = r.returncode == 0
                except (OSError, subprocess.SubprocessError):
                    ok = False
            _drop_ok[nested] = ok
        return _drop_ok[nested]


def _dropped(cmd: list[str], uid: int, level: str, loopback: bool = False, work: str = "",
             inherited: tuple[int, ...] = ()) -> list[str]:
    """``cmd`` as ``uid`` (gid the same) in the namespaces ``level`` allows (see :func:`namespaces`).
    ``loopback``: bring up ``lo`` first (the nbval run talks to its kernel over 127.0.0.1; nothing
    outside the namespace is reachable); ``work``: the run's folder, visible in its private /tmp;
    ``inherited``: the descriptors the command inherits (the setup must not reuse one)."""
    user = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs", "--", *cmd]
    ip = shutil.which("ip") or "ip"
    if level == "full":
        hidden = [h for h in _hidden if not _holds(h, work)]
        spare = max(set(range(3, 10)) - set(inherited))   # sh names descriptors by one digit
        return [*_unshare(True), "sh", "-c", _NS_SETUP, "sh", work, str(spare), str(PRIVATE_TMP_BYTES),
                "1" if loopback else "0", ip, str(len(hidden)), *hidden, *user]
    if loopback:
        return [*_unshare(False), "sh", "-c", f'{ip} link set lo up && exec "$@"', "sh", *user]
    return [*_unshare(False), *user]


_hidden: tuple[str, ...] = ()


def hide_from_runs(folders) -> list[str]:
    """Cover ``folders`` (the submissions, ``--out``, the masters) with an empty tmpfs in every
    run's mount namespace: a run reads no other student's notebook or feedback, and no master,
    whatever their modes.  A folder that holds this Python or simtlab is left visible (the run
    needs them); the folders left visible are returned."""
    global _hidden
    import simtlab

    needed = [sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(simtlab.__file__))),
              os.path.realpath(sys.executable)]
    hidden, visible = [], []
    for folder in folders:
        path = os.path.realpath(folder)
        (visible if any(_holds(path, os.path.realpath(n)) for n in needed) else hidden).append(path)
    _hidden = tuple(hidden)
    return visible


def _holds(folder: str, path: str) -> bool:
    return bool(path) and (path == folder or path.startswith(folder.rstrip("/") + "/"))


def isolation(memory_limit: int) -> dict:
    """What contains each run on this machine, and what is missing and why: for the grading
    report (printed by ``simtlab grade``, stored in each result)."""
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    level, why_ns = namespaces()
    version, where = cgroups.support()
    missing = []
    if not (root and level and shutil.which("setpriv")):
        missing.append("runs are not given a uid of their own (needs root with unshare and setpriv)")
    if level != "full":
        missing.append(f"no private /tmp, /var/tmp, /dev/shm and no pid namespace: {why_ns or 'not root'}"
                       + ("; the grader removes what each run's uid left there" if level else "")
                       + "; runs can read the submissions, --out and the masters where their modes let others read")
    if not version:
        missing.append(f"memory is capped per process only (RLIMIT_DATA), not per run: {where}")
    return {
        "uids": str(uid_pool()) if root else "",
        "namespaces": {"full": "network, IPC, pid, mount (private /tmp, /var/tmp, /dev/shm)",
                       "net": "network only"}.get(level, "none"),
        "cgroup": (f"v{version} ({where}): memory {memory_limit / 2**30:g} GiB"
                   f"{'' if memory_limit else ' (no cap)'}, {PIDS_MAX} tasks per run") if version else "none",
        "missing": missing,
    }


# ---------------------------------------------------------------------------
# one run


@dataclass
class Box:
    """What one run is confined to: its ``uid`` (None: the grader's user), its namespaces
    (``level``), its ``cgroup`` (None: none could be made) and its ``work`` folder."""

    work: str
    uid: int | None = None
    level: str = ""
    cgroup: cgroups.RunCgroup | None = None

    def own(self, *paths) -> None:
        """Hand ``paths`` to the run's uid (the work folder mode 0700: no other run may look in)."""
        for path in paths:
            if self.uid is not None:
                os.chown(path, self.uid, self.uid)
        os.chmod(self.work, 0o700)

    def describe(self) -> str:
        if self.uid is None:
            return "the grader's user"
        parts = [f"uid {self.uid}", "no network"]
        if self.level == "full":
            parts.append("private /tmp, own pids")
        parts.append(f"cgroup v{self.cgroup.version}" if self.cgroup else "no cgroup")
        return ", ".join(parts)


@contextmanager
def confined(work: str, *, drop: bool, memory_limit: int):
    """A :class:`Box` for one run in ``work``: a leased uid (with ``drop``), a cgroup where one can
    be made; on the way out, the cgroup emptied and removed, what the uid left in the shared
    temp folders removed, the uid given back."""
    pool = uid_pool() if drop else None
    uid = pool.lease() if pool else None
    box = Box(str(work), uid, namespaces()[0] if drop else "")
    try:
        if uid is not None:
            remove_files_of(uid)   # a crashed grader's leftovers: never handed to the next student
        box.cgroup = cgroups.create(f"simtlab-{secrets.token_hex(8)}", memory_limit, PIDS_MAX)
        yield box
    finally:
        if box.cgroup is not None:
            box.cgroup.remove()
        if uid is not None:
            _take_back(box.work)
            remove_files_of(uid)
            pool.release(uid)


def _take_back(work: str) -> None:
    """The work folder back to the grader (mode 0700), before its uid serves another run: what the
    run left inside is out of that run's reach (the grader still reads its results)."""
    try:
        if not os.path.islink(work):
            os.chown(work, os.geteuid(), os.getegid())
            os.chmod(work, 0o700)
    except OSError:
        pass


def remove_files_of(uid: int, folders=SHARED_TEMP) -> int:
    """Remove what ``uid`` left at the top of the shared temp folders; how many entries. Private
    temp folders make this moot; it is the fallback where mount namespaces are unavailable."""
    removed = 0
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)
                removed += 1
            except OSError:
                continue
    return removed


#: the largest file a contained run may write (its log included): see reaper._limit_file_size
MAX_FILE_BYTES = 64 * 2**20


def start_contained(cmd: list[str], *, cwd: str, env: dict, token: str, drop: bool = False,
                    box: Box | None = None, loopback: bool = False, max_file: int = MAX_FILE_BYTES,
                    **popen) -> subprocess.Popen:
    """Start ``cmd`` below a reaper, in ``box`` (see :func:`confined`; with ``drop`` and no box, as
    ``nobody``: tests of the reaper). No file it writes grows past ``max_file`` bytes."""
    env = dict(env)
    env[TOKEN_ENV] = token
    if box is not None and box.uid is not None:
        inner = _dropped(cmd, box.uid, box.level, loopback, box.work, tuple(popen.get("pass_fds", ())))
    elif drop:
        inner = _dropped(cmd, NOBODY, namespaces()[0], loopback)
    else:
        inner = cmd
    # run as a script: the reaper imports nothing of simtlab (it starts in a few milliseconds)
    argv = [sys.executable, "-I", str(REAPER), "--max-file", str(int(max_file))]
    for procs in box.cgroup.procs_files if box is not None and box.cgroup is not None else []:
        argv += ["--cgroup", procs]
    return subprocess.Popen([*argv, "--", *inner], cwd=cwd, env=env, start_new_session=True, **popen)


def stop(proc: subprocess.Popen, token: str, grace: float = 5.0, box: Box | None = None) -> None:
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
    if box is not None and box.cgroup is not None:
        box.cgroup.kill()
    sweep(token)
