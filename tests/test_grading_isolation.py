"""Submissions graded at the same time against each other, and against what outlives a run.

Every process that runs a student's code (nbval's feedback run, the scoring process) is started
through ``contain.start_contained`` in a ``contain.confined`` box. These tests start the scoring
process (``run_isolated``) with a setup cell that does what an attacking submission's code would
do in the feedback run: the setup cell is Python the process executes, like a student's cell
under nbval, through the same containment. Each attack class of the review has one test:

- another student's sandbox: find the other run's processes, folders and pipes; signal them, write
  forged records into the pipe its results travel through (the victim must keep its result);
- leftovers in /tmp, /var/tmp and /dev/shm;
- a memory hog spread over four forked children (the cap is per run, not per process);
- inherited pipes or descriptors, and the grader's command line (another student's path) in /proc;
- the folders of the submissions, the results and the masters, hidden from every run.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from simtlab.grading import cgroups, contain
from simtlab.grading.isolated import run_isolated

needs_root = pytest.mark.skipif(not contain.can_drop_privileges(),
                                reason="needs root with unshare and setpriv (runs as uids of their own)")


def _job(setup: str, check: str, check_id: str = "probe") -> dict:
    return {"groups": [{"cells": [{"name": "<setup s>", "source": setup, "answer": False}],
                        "checks": [{"id": check_id, "source": check}]}]}


def _run(job: dict, memory_limit: int = 2**31, **kw):
    return run_isolated(job, cell_timeout=60, total_timeout=120, memory_limit=memory_limit, **kw)


def _side_by_side(first: dict, second: dict, delay: float = 1.5):
    """Run two jobs at once (the second ``delay`` s later, once the first is up); both results."""
    results = {}
    victim = threading.Thread(target=lambda: results.__setitem__("first", _run(first)))
    victim.start()
    threading.Event().wait(delay)
    results["second"] = _run(second)
    victim.join()
    return results["first"], results["second"]


# the attacker: everything of another run it can reach, for 8 s; only runs of this test process
# are touched (their token starts with its pid), so running this against an older grader harms
# no one else's grading on a shared machine
ATTACKER = r"""
import glob, json, os, signal, time
mine = {os.getpid(), os.getppid()}
reached = []
deadline = time.monotonic() + 8
while time.monotonic() < deadline and not reached:
    for folder in glob.glob('/tmp/simtlab-sandbox-*') + glob.glob('/tmp/simtlab-grade-*'):
        if os.path.realpath(folder) != os.path.realpath(os.getcwd()):
            try:
                reached.append(('listed another run folder', folder, len(os.listdir(folder))))
            except OSError:
                pass
    for pid in [int(p) for p in os.listdir('/proc') if p.isdigit()]:
        if pid in mine:
            continue
        try:
            env = open(f'/proc/{pid}/environ', 'rb').read().split(b'\0')
        except OSError:
            continue
        if f'SIMTLAB_GRADE_RUN={GRADER}-'.encode() not in [e[:len('SIMTLAB_GRADE_RUN=') + len(str(GRADER)) + 1] for e in env]:
            continue
        try:
            os.kill(pid, 0)
            reached.append(('may signal', pid))
        except OSError:
            pass
        for fd in os.listdir(f'/proc/{pid}/fd') if os.access(f'/proc/{pid}/fd', os.R_OK) else []:
            try:
                if os.readlink(f'/proc/{pid}/fd/{fd}').startswith('pipe:'):
                    with open(f'/proc/{pid}/fd/{fd}', 'wb', buffering=0) as pipe:
                        pipe.write(b'{"seq": 0, "id": "honest", "passed": false}\n')
                    reached.append(('wrote into a pipe of', pid, fd))
            except OSError:
                pass
    time.sleep(0.2)
"""

VICTIM_SETUP = "import time\ntime.sleep(10)\nanswer = 6 * 7"


@needs_root
def test_a_run_cannot_reach_another_run_graded_at_the_same_time():
    """Another student's sandbox: the attacker finds no folder, process or pipe of the victim, and
    the victim, graded beside it, keeps its pass. Before separate uids and pid namespaces both ran
    as nobody: the attacker could signal the victim and write into its result pipe."""
    victim, attacker = _side_by_side(
        _job(VICTIM_SETUP, "assert answer == 42", "honest"),
        _job(ATTACKER.replace("GRADER", str(os.getpid())), "assert reached == [], reached"))
    assert attacker.complete, attacker.log
    assert attacker.checks["probe"]["passed"], attacker.checks["probe"]["message"]
    assert victim.complete and victim.checks["honest"]["passed"], (victim.checks, victim.log)
    uid_of = {r.as_user.split(",")[0] for r in (victim, attacker)}
    assert len(uid_of) == 2 and all(u.startswith("uid ") for u in uid_of), uid_of


@needs_root
def test_two_runs_at_once_have_their_own_uid_and_a_private_work_folder():
    probe = ("import os, stat\nst = os.stat('.')\n"
             "seen = (os.getuid(), os.getgid(), os.getgroups(), st.st_uid, stat.S_IMODE(st.st_mode))")
    first, second = _side_by_side(_job(probe + "\nimport time\ntime.sleep(4)", "assert False, seen"),
                                  _job(probe, "assert False, seen"), delay=1.0)
    seen = [eval(r.checks["probe"]["message"].split(": ", 1)[1]) for r in (first, second)]  # noqa: S307
    assert seen[0][0] != seen[1][0], f"two runs at once share a uid: {seen}"
    low, high = contain.uid_pool().first, contain.uid_pool().last
    for uid, gid, groups, owner, mode in seen:
        assert low <= uid <= high and gid == uid and groups == [] and owner == uid and mode == 0o700, seen


LEFTOVERS = """
import os
for folder in ('/tmp', '/var/tmp', '/dev/shm'):
    with open(os.path.join(folder, NAME), 'w') as f:
        f.write('left behind for the next student')
"""


def _leftover_paths(name: str) -> list[Path]:
    return [Path(folder) / name for folder in ("/tmp", "/var/tmp", "/dev/shm")]


@needs_root
@pytest.mark.parametrize("level", ["namespaces", "fallback"])
def test_nothing_a_run_leaves_in_the_temp_folders_survives_it(monkeypatch, level):
    """/tmp leftovers: with mount namespaces the run's /tmp, /var/tmp and /dev/shm are its own
    tmpfs; without them (``fallback``: only a network namespace) the grader removes what the run's
    uid left there. Before, the files stayed, readable by the next run as nobody."""
    if level == "fallback":
        monkeypatch.setattr(contain, "namespaces", lambda: ("net", "forced by the test"))
    elif contain.namespaces()[0] != "full":
        pytest.skip(f"mount namespaces are unavailable here: {contain.namespaces()[1]}")
    name = f"simtlab-leftover-{secrets.token_hex(6)}"
    try:
        result = _run(_job(LEFTOVERS.replace("NAME", repr(name)), "assert True"))
        assert result.complete and result.checks["probe"]["passed"], (result.checks, result.log)
        left = [str(p) for p in _leftover_paths(name) if p.exists()]
        assert left == [], f"left behind after the run: {left}"
    finally:
        for path in _leftover_paths(name):
            path.unlink(missing_ok=True)


def test_the_fallback_removes_only_what_the_runs_uid_left(tmp_path):
    mine, other = tmp_path / "mine", tmp_path / "other"
    (mine / "deep").mkdir(parents=True)
    (mine / "deep" / "file").write_text("x")
    other.write_text("y")
    (tmp_path / "link").symlink_to(other)
    uid = 61234
    if os.geteuid() != 0:
        pytest.skip("needs root to give files to another uid")
    os.chown(mine, uid, uid)
    os.chown(tmp_path / "link", uid, uid, follow_symlinks=False)
    assert contain.remove_files_of(uid, folders=[str(tmp_path)]) == 2
    assert not mine.exists() and not (tmp_path / "link").is_symlink()
    assert other.read_text() == "y"   # the link was removed, not what it points to


MEMORY_HOG = r"""
import os, time
SHARE = CAP * 2 // 5      # 2 fit in the cap with room for the interpreters; 3 are 1.2 caps
report_r, report_w = os.pipe()
release_r, release_w = os.pipe()
children = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        os.close(report_r); os.close(release_w)
        try:
            hoard = bytearray(SHARE)
            hoard[::4096] = b'x' * len(hoard[::4096])   # touch every page: resident, charged
            os.write(report_w, bytes([i]))              # which child holds its share
            os.read(release_r, 1)                       # hold it until the parent has counted
        finally:
            os._exit(0)
    children.append(pid)
os.close(report_w); os.close(release_r)
reported, ended = set(), set()
deadline = time.monotonic() + 60
# every child either reports (its share resident) or ends (the OOM killer) first; one that reported may end later
while len(reported | {children.index(pid) for pid in ended}) < 4 and time.monotonic() < deadline:
    import select
    if select.select([report_r], [], [], 0.1)[0]:
        reported |= set(os.read(report_r, 16))
    for pid in children:
        if pid not in ended and os.waitpid(pid, os.WNOHANG)[0]:
            ended.add(pid)
time.sleep(0.5)                                         # an OOM kill in flight lands before the count
for pid in children:
    if pid not in ended and os.waitpid(pid, os.WNOHANG)[0]:
        ended.add(pid)
# children holding their share now: reported and not ended (a child still allocating holds nothing yet)
held_together = len([i for i in reported if children[i] not in ended])
os.close(release_w)
for pid in children:
    if pid not in ended:
        os.waitpid(pid, 0)
"""


@pytest.mark.skipif(not cgroups.support()[0], reason=f"no writable cgroup here: {cgroups.support()[1]}")
def test_four_forked_children_cannot_hold_more_than_the_runs_memory_cap():
    """A forked memory hog: four children, each 2/5 of the cap (within the per-process
    RLIMIT_DATA), hold at most the cap together: the OOM killer ends the rest, so at most two
    hold their share at once. Before, the cap was per process only and all four held 8/5 of it.
    (With shares of exactly a third, three children could fit once the kernel dropped the
    interpreters' file pages: a flaky margin, seen once in CI.)"""
    cap = 1536 * 2**20
    result = _run(_job(MEMORY_HOG.replace("CAP", str(cap)), "assert held_together <= 2, held_together"),
                  memory_limit=cap)
    assert result.complete, result.log
    assert result.checks["probe"]["passed"], result.checks["probe"]["message"]


FDS = r"""
import fcntl, os, stat
found = {}
for fd in os.listdir('/proc/self/fd'):
    try:
        target = os.readlink(f'/proc/self/fd/{fd}')
        writable = fcntl.fcntl(int(fd), fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY
    except OSError:
        continue   # the listing's own descriptor, closed already
    found[int(fd)] = (target, writable)
pipes = [(fd, w) for fd, (t, w) in found.items() if t.startswith('pipe:')]
sockets = [fd for fd, (t, _) in found.items() if t.startswith('socket:')]
files = sorted({t for t, _ in found.values() if t.startswith('/')})
seen = []
for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
    try:
        if MARKER.encode() in open(f'/proc/{pid}/cmdline', 'rb').read():
            seen.append(pid)
    except OSError:
        pass
"""


@needs_root
def test_a_run_finds_no_inherited_pipe_and_no_other_students_path():
    """Inherited descriptors and the grader's command line: inside the run, the only pipe is the
    one its checks write their records to (write-only); stdin is /dev/null, stdout and stderr its
    log. A process of the grader's (as root) whose command line names another student's notebook
    is invisible (pid namespace). Before, descriptor 0 was the job's pipe and /proc showed every
    command line of the machine."""
    marker = f"/submissions/another-student-{secrets.token_hex(6)}.ipynb"
    decoy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", marker])
    try:
        result = _run(_job(FDS.replace("MARKER", repr(marker)),
                           "assert False, (pipes, sockets, files, seen)"))
    finally:
        decoy.kill()
        decoy.wait()
    pipes, sockets, files, seen = eval(result.checks["probe"]["message"].split(": ", 1)[1])  # noqa: S307
    assert [w for _, w in pipes] == [True], pipes
    assert sockets == []
    assert [f for f in files if f != os.devnull and not Path(f).name.startswith("simtlab-sandbox-log-")] == [], files
    assert seen == [], "the run read another student's path in a command line of the grader"


# in a fresh process (pytest holds descriptors 3 to 9 for its capture): a run that inherits a
# pipe on descriptor FD, started in a box, writes into it
INHERITS_FD = """
import os, shutil, sys, tempfile
from simtlab.grading import contain
r, w = os.pipe()
read_end = 30                      # out of the way of FD
os.dup2(r, read_end)
os.close(r)
if w != FD:
    os.dup2(w, FD)
    os.close(w)
work = tempfile.mkdtemp(prefix="simtlab-sandbox-")
with contain.confined(work, drop=True, memory_limit=0) as box:
    box.own(work)
    token = contain.new_token()
    proc = contain.start_contained([sys.executable, "-I", "-c", "import os; os.write(FD, b'reached')"],
                                   cwd=work, env={"PATH": os.environ["PATH"]}, token=token, box=box,
                                   pass_fds=(FD,))
    os.close(FD)
    proc.wait(timeout=60)
    contain.stop(proc, token, box=box)
shutil.rmtree(work, ignore_errors=True)
print(os.read(read_end, 100).decode() or "nothing")
"""


@needs_root
@pytest.mark.parametrize("fd", [9, 8, 3])
def test_a_descriptor_the_run_inherits_reaches_it_whatever_its_number(fd):
    """The namespace setup holds the work folder on a spare descriptor while it covers /tmp: it
    must not take the one the run inherits (the results pipe, the key's pipe), whatever its
    number (it once always took 9)."""
    out = subprocess.run([sys.executable, "-c", INHERITS_FD.replace("FD", str(fd))], capture_output=True,
                         text=True, timeout=120)
    assert out.stdout.strip() == "reached", out.stdout + out.stderr[-2000:]


def _world_readable_folder() -> Path:
    """A folder others may read, outside the temp folders a run gets private copies of."""
    for parent in ("/srv", "/opt", "/run"):
        if os.access(parent, os.W_OK):
            folder = Path(tempfile.mkdtemp(prefix="simtlab-test-", dir=parent))
            folder.chmod(0o755)
            return folder
    pytest.skip("no writable folder outside /tmp, /var/tmp and /dev/shm")


@needs_root
def test_the_submissions_out_and_masters_are_hidden_from_runs():
    """The folders the grader names (submissions, --out, masters) are empty to a run, whatever
    their modes; a world-readable folder it does not name stays readable (the control)."""
    if contain.namespaces()[0] != "full":
        pytest.skip(f"mount namespaces are unavailable here: {contain.namespaces()[1]}")
    hidden, shown = _world_readable_folder(), _world_readable_folder()
    try:
        for folder in (hidden, shown):
            (folder / "other_student.ipynb").write_text("another student's answers")
            (folder / "other_student.ipynb").chmod(0o644)
        assert contain.hide_from_runs([hidden]) == []
        probe = ("import os\nseen = {}\nfor f in FOLDERS:\n    try:\n        seen[f] = open(os.path.join(f, "
                 "'other_student.ipynb')).read()\n    except OSError as e:\n        seen[f] = type(e).__name__")
        result = _run(_job(probe.replace("FOLDERS", repr([str(hidden), str(shown)])), "assert False, seen"))
        seen = eval(result.checks["probe"]["message"].split(": ", 1)[1])  # noqa: S307
        assert seen[str(shown)] == "another student's answers", seen
        assert seen[str(hidden)] in ("FileNotFoundError", "PermissionError"), seen
    finally:
        contain.hide_from_runs([])
        for folder in (hidden, shown):
            shutil.rmtree(folder)


def test_a_folder_holding_the_grader_itself_is_never_hidden():
    import simtlab

    repo = Path(simtlab.__file__).resolve().parent.parent
    try:
        assert contain.hide_from_runs([repo, "/nonexistent/submissions"]) == [str(repo)]
    finally:
        contain.hide_from_runs([])


def test_each_uid_goes_to_one_run_at_a_time_across_graders(tmp_path):
    """Two graders (two pools on one lock folder) never lease the same uid; a uid with a passwd
    entry (nobody) is never leased; a released uid is leased again."""
    first = contain.UidPool(65534, 65536, lock_dir=str(tmp_path))
    second = contain.UidPool(65534, 65536, lock_dir=str(tmp_path))
    a = first.lease()
    b = second.lease()
    assert {a, b} == {65535, 65536}
    with pytest.raises(RuntimeError, match="no free uid"):
        first.lease()
    first.release(a)
    assert second.lease() == a


def test_a_uid_range_is_parsed_and_checked():
    assert contain.parse_uid_range("61000-61063") == (61000, 61063)
    for bad in ("61063-61000", "0-5", "a-b", "-3"):
        with pytest.raises(ValueError):
            contain.parse_uid_range(bad)


def test_a_bad_uid_range_is_a_setup_error(tmp_path, capsys):
    from simtlab.cli import main as simtlab_main

    (tmp_path / "subs").mkdir()
    rc = simtlab_main(["grade", str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--uids", "62000-61000",
                       "--no-feedback-run"])
    assert rc == 2 and "--uids" in capsys.readouterr().err
