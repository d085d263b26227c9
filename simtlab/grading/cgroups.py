"""A cgroup per contained run: the memory and the tasks of a whole submission run, capped together.

``RLIMIT_DATA`` caps each process: four forked children of one submission could each hold the
limit. A cgroup caps what all the run's processes hold together (``memory.max``; with cgroup v1,
``memory.limit_in_bytes``) and how many tasks it may have (``pids.max``), and the kernel's OOM
killer picks its victim inside that cgroup only.

The grader can make one where it runs as root with a writable cgroup file system holding the
``memory`` and ``pids`` controllers: cgroup v2 (the unified hierarchy, where the grader enables
the controllers for the children of its own cgroup, moving itself into a leaf if the
"no internal processes" rule asks for it), else cgroup v1 (a ``memory`` and a ``pids``
hierarchy, as on hosts that still mount v1 for memory). :func:`support` says which, or why none;
the grader then keeps only the per-process rlimits and says so (docs/INSTRUCTORS.md).

The grader creates a run's cgroup (:func:`create`); the run's reaper moves its child into it before
that child starts anything (``reaper.py --cgroup``), so no process of the run starts outside it.
"""

from __future__ import annotations

import errno
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["RunCgroup", "create", "support"]

CONTROLLERS = ("memory", "pids")

_lock = threading.Lock()
_support: dict = {}


@dataclass
class RunCgroup:
    """One run's cgroup: ``dirs`` is one folder (v2) or a memory and a pids folder (v1)."""

    version: int
    dirs: list[Path] = field(default_factory=list)

    @property
    def procs_files(self) -> list[str]:
        """Where the run's first process writes its pid to join (every folder, for v1)."""
        return [str(d / "cgroup.procs") for d in self.dirs]

    def pids(self) -> set[int]:
        found = set()
        for d in self.dirs:
            try:
                found |= {int(x) for x in (d / "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                continue
        return found

    def oom_kills(self) -> int:
        """How many processes the OOM killer ended inside this cgroup."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in (self.dirs[0] / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        except (OSError, ValueError, IndexError):
            pass
        return 0

    def kill(self, timeout: float = 5.0) -> None:
        """SIGKILL everything inside, until nothing is left (or ``timeout``)."""
        if self.version == 2:
            try:
                (self.dirs[0] / "cgroup.kill").write_text("1")
            except OSError:
                pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            left = self.pids()
            if not left:
                return
            for pid in left:   # v1 has no cgroup.kill; on v2 this catches a fork racing the kill
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.02)

    def remove(self) -> None:
        self.kill()
        for d in self.dirs:
            for _ in range(100):   # a killed process leaves the cgroup a moment after SIGKILL
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)


def support() -> tuple[int, str]:
    """``(2 or 1, where)``: the cgroup version the grader can make run cgroups in; ``(0, why not)``."""
    with _lock:
        if not _support:
            try:
                _support["value"] = _probe()
            except OSError as e:
                _support["value"] = (0, f"cgroups are not writable here ({e.strerror or e})")
        return _support["value"]


def create(name: str, memory_max: int, pids_max: int) -> RunCgroup | None:
    """A new cgroup ``name`` capped at ``memory_max`` bytes (0: no memory cap) and ``pids_max``
    tasks, or None where the grader cannot make one (:func:`support` says why)."""
    version, where = support()
    if not version:
        return None
    bases = [Path(p) for p in where.split(os.pathsep)]
    group = RunCgroup(version, [b / name for b in bases])
    try:
        for d in group.dirs:
            d.mkdir(mode=0o700)
        _limit(group, memory_max, pids_max)
    except OSError:
        group.remove()
        return None
    return group


def _limit(group: RunCgroup, memory_max: int, pids_max: int) -> None:
    if group.version == 2:
        d = group.dirs[0]
        if memory_max > 0:
            (d / "memory.max").write_text(str(int(memory_max)))
            _write_if_present(d / "memory.swap.max", "0")   # no escape into swap
        (d / "pids.max").write_text(str(int(pids_max)))
        return
    memory, pids = group.dirs
    if memory_max > 0:
        (memory / "memory.limit_in_bytes").write_text(str(int(memory_max)))
        _write_if_present(memory / "memory.memsw.limit_in_bytes", str(int(memory_max)))
    (pids / "pids.max").write_text(str(int(pids_max)))


def _write_if_present(path: Path, value: str) -> None:
    try:
        path.write_text(value)
    except FileNotFoundError:
        pass


# ---------------------------------------------------------------------------
# where the grader may make cgroups


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(mount point, root inside the hierarchy, fs type, super options) of each cgroup mount."""
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fields, tail = left.split(), right.split()
            if len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
                found.append((fields[4], fields[3], tail[0], set(tail[2].split(","))))
    return found


def _own_paths() -> dict[str, str]:
    """controller (or "" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    paths = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                paths[c] = path
    return paths


def _folder(mount: str, root: str, path: str) -> Path:
    rel = os.path.relpath(path, root) if path.startswith(root) else path.lstrip("/")
    return Path(mount) / ("" if rel == "." else rel)


def _probe() -> tuple[int, str]:
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return 0, "the grader is not root: it cannot make cgroups"
    mounts, own = _mounts(), _own_paths()
    reasons = []
    for mount, root, kind, _ in mounts:
        if kind == "cgroup2" and "" in own:
            base = _folder(mount, root, own[""])
            why = _prepare_v2(base)
            if why is None:
                return 2, str(base)
            reasons.append(f"cgroup v2 at {mount}: {why}")
    bases = []
    for controller in CONTROLLERS:
        for mount, root, kind, options in mounts:
            if kind == "cgroup" and controller in options and controller in own:
                bases.append(_folder(mount, root, own[controller]))
                break
    if len(bases) == len(CONTROLLERS):
        why = _writable(bases)
        if why is None:
            return 1, os.pathsep.join(map(str, bases))
        reasons.append(f"cgroup v1: {why}")
    elif not reasons:
        reasons.append("no cgroup file system with the memory and pids controllers is mounted")
    else:
        reasons.append("cgroup v1 has no memory and pids hierarchies")
    return 0, "; ".join(reasons)


def _writable(bases: list[Path]) -> str | None:
    probe = f"simtlab-probe-{os.getpid()}"
    made = []
    try:
        for b in bases:
            (b / probe).mkdir()
            made.append(b / probe)
        return None
    except OSError as e:
        return f"cannot create a cgroup ({e.strerror or e})"
    finally:
        for d in made:
            d.rmdir()


def _prepare_v2(base: Path) -> str | None:
    """Enable memory and pids for the children of ``base`` (the grader's own cgroup); None when done."""
    try:
        available = set((base / "cgroup.controllers").read_text().split())
    except OSError as e:
        return f"unreadable ({e.strerror or e})"
    missing = [c for c in CONTROLLERS if c not in available]
    if missing:
        return f"the {' and '.join(missing)} controller is not available to the grader's cgroup"
    if _enable(base) is None:
        return _writable([base])
    # "no internal processes": a cgroup that holds processes cannot hand controllers to children;
    # the grader moves itself into a leaf of its own cgroup (what container init systems do)
    try:
        leaf = base / f"simtlab-grader-{os.getpid()}"
        leaf.mkdir(exist_ok=True)
        (leaf / "cgroup.procs").write_text(str(os.getpid()))
    except OSError as e:
        return f"cannot move the grader into a leaf cgroup ({e.strerror or e})"
    why = _enable(base)
    return why if why is not None else _writable([base])


def _enable(base: Path) -> str | None:
    try:
        (base / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in CONTROLLERS))
        return None
    except OSError as e:
        if e.errno == errno.EBUSY:
            return "other processes share the grader's cgroup (controllers cannot be enabled)"
        return f"cannot enable the controllers ({e.strerror or e})"
