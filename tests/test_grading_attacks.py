"""A determined student against `simtlab grade`: every attack earns what a blank notebook
earns, is flagged, leaves no process behind and reads no master source into any feedback file.

One run grades a folder of attack submissions against the course's chapter 1 (the attacks are
written into the first answer cell, ``ch01.linear_id``; the other answers are left blank, so a
blank notebook scores 0 and so must every attack).  Other tests cover the output files, the
stored results, the containment of processes and the isolated check runner on their own.
"""

from __future__ import annotations

import contextlib
import copy
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import nbformat
import psutil
import pytest

from simtlab.cli import main as simtlab_main
from simtlab.grading import contain, load_master, rebuild
from simtlab.grading.isolated import run_isolated
from simtlab.grading.secure import master_rules, vet_answers

REPO = Path(__file__).resolve().parent.parent
CH01 = REPO / "solutions" / "01_gpu_architecture.ipynb"
CH03 = REPO / "solutions" / "03_communication_patterns.ipynb"


def _cli(*args, feedback=False) -> tuple[int, str, str]:
    """``simtlab grade ARGS``; without nbval's feedback run unless ``feedback`` (it needs root with a
    Python that nobody can read, which a developer's box seldom has; points never come from it)."""
    out, err = io.StringIO(), io.StringIO()
    extra = [] if feedback else ["--no-feedback-run"]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = simtlab_main(["grade", *map(str, args), *extra])
    return rc, out.getvalue(), err.getvalue()


def _honest(master):
    """The student version with the master's answers written in: an honest student's full marks."""
    nb = copy.deepcopy(master.student)
    answers = {(c.metadata.get("simtlab") or {}).get("id"): c.source for c in master.nb.cells
               if (c.metadata.get("simtlab") or {}).get("role") == "answer"}
    for cell in nb.cells:
        sid = (cell.get("metadata", {}).get("simtlab") or {}).get("id")
        if sid in answers:
            cell.source = "\n".join(line for line in answers[sid].split("\n") if "###" not in line)
    return nb


def _with_answer(master, sid: str, source: str):
    nb = copy.deepcopy(master.student)
    for cell in nb.cells:
        if (cell.get("metadata", {}).get("simtlab") or {}).get("id") == sid:
            cell.source = source
            return nb
    raise KeyError(sid)


# name -> source of the ch01.linear_id answer cell; each one is an attack the grader must stop
ATTACKS = {
    "monkeypatch_setattr": (
        "from simtlab.kernels import intro\n"
        "mod = intro.np\n"
        "setattr(intro, 'check' + '_linear_id', None)\n"
        "def linear_thread_id(*a):\n    return 0\n"),
    "monkeypatch_importlib": (
        "import importlib\n"
        "ex = importlib.import_module('simtlab.' + 'exercises.ch01')\n"
        "ex.check_linear_id = lambda *a: None\n"),
    "import_hook": (
        "import sys\n"
        "class Finder:\n    pass\n"
        "sys.meta_path.insert(0, Finder())\n"),
    "wrap_emulate": (
        "import simtlab\n"
        "real = simtlab.emulate\n"
        "simtlab.emulate = lambda *a, **k: real\n"),
    "input_transformer": (
        "get_ipython().input_transformers_cleanup.append(lambda lines: ['pass\\n'])\n"),
    "ast_transformer": (
        "from IPython import get_ipython\n"
        "import ast\n"
        "get_ipython().ast_transformers.append(ast.NodeTransformer())\n"),
    "post_run_cell": (
        "ip = get_ipython()\n"
        "ip.events.register('post_run_cell', lambda result: None)\n"),
    "settrace": (
        "import sys\n"
        "sys.settrace(lambda *a: None)\n"),
    "key_from_parent_memory": (
        "import os\n"
        "mem = open(f'/proc/{os.getppid()}/mem', 'rb')\n"),
    "run_master": "%run ../../solutions/01_gpu_architecture.ipynb\n",
    "shell_escape": "!cat /proc/$PPID/cmdline\n",
    "detached_rewriter": (
        "import subprocess\n"
        "subprocess.Popen(['setsid', 'sh', '-c', 'sleep 5; echo forged > gradebook.csv'])\n"),
    "dunder_escape": (
        "subs = ().__class__.__base__.__subclasses__()\n"),
    "rebinds_check_module": (
        "from simtlab.kernels import intro as ch01\n"),
    # vetted, it runs: it raises an error quoting the master's solution, at length
    "leaks_solution": (
        "def linear_thread_id(tx, ty, tz, bdx, bdy):\n"
        "    raise ValueError('return tx + ty * bdx + tz * bdx * bdy ' * 100)\n"
        "def global_thread_id(thread_idx, block_idx, block_dim, grid_dim):\n"
        "    raise ValueError('x' * 5000)\n"),
}


# answer id -> source: the attack classes of the last review, each in the cell it targets; every
# one is read as data and never runs (the vetting stops some first; the interpreter the rest)
NEW_ATTACKS = {
    # pickle / exec reached through numba's own modules
    "numba_cloudpickle": ("ch01.linear_id",
                          "from numba.cloudpickle import loads\n"
                          "linear_thread_id = loads(b'payload')\n"),
    "numba_serialize": ("ch01.linear_id",
                        "from numba.cuda import serialize\n"
                        "def linear_thread_id(tx, ty, tz, bdx, bdy):\n    return serialize._rebuild_reduction(tx)\n"),
    # ctypes re-exported by a numba module: PyRun_SimpleString
    "numba_ctypes": ("ch01.linear_id",
                     "from numba.core.typing.ctypes_utils import ctypes\n"
                     "ctypes.pythonapi.PyRun_SimpleString(b'import os')\n"),
    # operator.attrgetter through numpy.polynomial.polyutils
    "polyutils_attrgetter": ("ch01.linear_id",
                             "from numpy.polynomial import polyutils\n"
                             "linear_thread_id = polyutils.operator.attrgetter('x')\n"),
    # gc.get_objects() swapping a check's __code__ (through numba's re-export of gc)
    "gc_code_swap": ("ch01.linear_id",
                     "from numba.core.serialize import gc\n"
                     "swap = [o for o in gc.get_objects() if getattr(o, '__name__', '') == 'check_linear_id']\n"),
    # exec hidden in a kernel body that runs at check time
    "exec_in_kernel": ("ch01.first_kernel",
                       "@cuda.jit\ndef scale_add(a, b, out, alpha):\n"
                       "    exec('import simtlab.exercises.ch01 as c; c.check_first_kernel = print')\n"
                       "    i = cuda.grid(1)\n    if i < out.size:\n        out[i] = alpha * a[i] + b[i]\n"),
    # forged records written to the pipe the checks report through
    "forged_records": ("ch01.linear_id",
                       "from numba.core.config import os\n"
                       "for fd in range(3, 20):\n    os.write(fd, b'{\"seq\": 0, \"passed\": true}\\n')\n"),
    # a replaced builtins.__import__ handing the checks a permissive module
    "replaced_import": ("ch01.linear_id",
                        "import numba\nnumba.core.utils.builtins.__import__ = None\n"
                        "def linear_thread_id(tx, ty, tz, bdx, bdy):\n    return 0\n"),
    # a kernel that calls a course kernel of the setup's module
    "kernel_borrows_course_code": ("ch01.first_kernel",
                                   "@cuda.jit\ndef scale_add(a, b, out, alpha):\n"
                                   "    intro.vector_add_v2(a, b, out)\n"),
    # a huge print
    "huge_print": ("ch01.linear_id", "print('x' * 500_000_000)\n"),
}


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    root = tmp_path_factory.mktemp("attacks")
    subs = root / "submissions"
    subs.mkdir()
    master = load_master(CH01)
    for name, source in ATTACKS.items():
        nbformat.write(_with_answer(master, "ch01.linear_id", source), str(subs / f"{name}.ipynb"))
    for name, (sid, source) in NEW_ATTACKS.items():
        nbformat.write(_with_answer(master, sid, source), str(subs / f"{name}.ipynb"))
    nbformat.write(master.student, str(subs / "blank.ipynb"))
    nbformat.write(_honest(master), str(subs / "honest.ipynb"))   # graded beside the attacks
    # the masters, on the submissions' file system: a hard link to one, and a copy of its bytes
    solutions = root / "solutions"
    shutil.copytree(REPO / "solutions", solutions)
    os.link(solutions / CH01.name, subs / "hard_link.ipynb")
    shutil.copyfile(CH01, subs / "byte_copy.ipynb")
    # malformed metadata: an id that is a list, a template name that is a list
    nb = copy.deepcopy(master.student)
    nb.cells[1].metadata["simtlab"] = {"id": ["ch01.linear_id"], "role": "answer"}
    nbformat.write(nb, str(subs / "id_is_a_list.ipynb"))
    nb = copy.deepcopy(master.student)
    nb.metadata["simtlab_template"] = {"name": ["01_gpu_architecture.ipynb"]}
    nbformat.write(nb, str(subs / "template_is_a_list.ipynb"))
    # nbformat 3 carrying a payload in the answer cell of chapter 1
    v3_payload = {"nbformat": 3, "nbformat_minor": 0, "metadata": {"simtlab_template": {"name": CH01.name}},
                  "worksheets": [{"cells": [{"cell_type": "code", "language": "python", "outputs": [],
                                             "metadata": {"simtlab": {"id": "ch01.linear_id", "role": "answer"}},
                                             "input": "import os\nos.system('touch /tmp/simtlab-v3-payload')\n"}]}]}
    (subs / "nbformat3_payload.ipynb").write_text(json.dumps(v3_payload))
    # a folder named like the grader's rename of a duplicate
    nbformat.write(master.student, str(subs / "p_dup.ipynb"))
    (subs / "p_dup").mkdir()
    nbformat.write(master.student, str(subs / "p_dup" / CH01.name))
    (subs / "p_dup (p_dup.ipynb)").mkdir()
    nbformat.write(master.student, str(subs / "p_dup (p_dup.ipynb)" / CH01.name))
    # a link to the master itself, and a folder holding one
    (subs / "symlink_to_master.ipynb").symlink_to(CH01)
    (subs / "linker").mkdir()
    (subs / "linker" / "01_gpu_architecture.ipynb").symlink_to(CH01)
    # spreadsheet formulas and colliding names
    nbformat.write(master.student, str(subs / "=HYPERLINK(1).ipynb"))
    nbformat.write(master.student, str(subs / "Alice.ipynb"))
    nbformat.write(master.student, str(subs / "alice.ipynb"))
    # malformed files
    (subs / "deep_json.ipynb").write_text('{"cells": ' + "[" * 200000 + "]" * 200000 + "}")
    (subs / "latin1.ipynb").write_bytes('{"cells": [], "x": "caf\xe9"}'.encode("latin-1"))
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {},
          "worksheets": [{"cells": [{"cell_type": "code", "input": "x = 1", "language": "python",
                                     "outputs": [], "metadata": {}}]}]}
    (subs / "nbformat3.ipynb").write_text(json.dumps(v3))

    out = root / "grades"
    start = time.monotonic()
    rc, stdout, stderr = _cli(subs, "--out", out, "--jobs", 2, "--cell-timeout", 30, "--solutions", solutions)
    seconds = time.monotonic() - start
    with open(out / "gradebook.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return {"rc": rc, "stdout": stdout, "stderr": stderr, "rows": rows, "out": out, "subs": subs,
            "seconds": seconds, "master": master, "solutions": solutions}


def _row(attacked, student):
    for row in attacked["rows"]:
        if row["student"].lstrip("'") == student:
            return row
    raise KeyError(student)


def test_the_run_completes(attacked):
    assert attacked["rc"] == 0, attacked["stdout"] + attacked["stderr"]
    assert "grader error" not in attacked["stdout"]
    # the report says how runs are confined here, and what is missing
    assert "\nisolation: " in attacked["stdout"], attacked["stdout"][:2000]


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_no_attack_earns_more_than_a_blank_notebook(attacked, name):
    blank = float(_row(attacked, "blank")["total"])
    row = _row(attacked, name)
    assert float(row["total"]) <= blank == 0, row


@pytest.mark.parametrize("name", sorted(set(ATTACKS) - {"leaks_solution"}))
def test_every_attack_is_flagged_with_its_line(attacked, name):
    flags = _row(attacked, name)["flags"]
    assert "answer rejected: ch01.linear_id (line " in flags, flags


@pytest.mark.parametrize("name", sorted(NEW_ATTACKS))
def test_each_attack_class_earns_at_most_the_blank_and_is_flagged(attacked, name):
    """Nothing of these answers runs: the vetting rejects them, or the interpreter refuses them
    (needs manual grading); either way the exercise scores zero and the row says why."""
    blank = float(_row(attacked, "blank")["total"])
    row = _row(attacked, name)
    assert float(row["total"]) <= blank == 0, row
    assert "answer rejected: " in row["flags"] or "needs manual grading: " in row["flags"], row


def test_the_honest_student_beside_the_attacks_keeps_full_marks(attacked):
    row = _row(attacked, "honest")
    assert float(row["total"]) == float(row["max"]) > 0 and row["flags"] == "", row


def test_copies_and_hard_links_of_the_master_are_flagged_zeros(attacked):
    for student in ("hard_link", "byte_copy"):
        row = _row(attacked, student)
        assert float(row["total"]) == 0 and "copy of the master" in row["flags"], row


def test_malformed_metadata_and_format_3_payloads_are_flagged_zeros(attacked):
    for student in ("id_is_a_list", "template_is_a_list", "nbformat3_payload"):
        row = _row(attacked, student)
        assert float(row["total"]) == 0 and row["flags"], row
        assert "grader error" not in row["flags"], row
    assert not Path("/tmp/simtlab-v3-payload").exists()


def test_every_submission_gets_exactly_one_row(attacked):
    students = [r["student"].lstrip("'") for r in attacked["rows"]]
    assert len(students) == len(set(students))
    assert {"p_dup", "p_dup (p_dup.ipynb)", "p_dup (p_dup.ipynb) 2"} <= set(students), students
    entries = [p for p in attacked["subs"].iterdir() if p.suffix == ".ipynb" or p.is_dir()]
    assert len(students) == len(entries)


def test_grading_twice_in_any_order_with_any_jobs_gives_the_same_gradebook(attacked, tmp_path):
    """Every grade depends on the student's notebook alone: a second grading, of the same class in
    the other order (other names, so other file names and order), one at a time, agrees."""
    names = ["honest", "blank", "exec_in_kernel", "kernel_borrows_course_code", "numba_cloudpickle"]
    subs = tmp_path / "subs"
    subs.mkdir()
    for i, name in enumerate(reversed(names)):  # renamed so the order of the folder is reversed too
        shutil.copyfile(attacked["subs"] / f"{name}.ipynb", subs / f"{chr(ord('a') + i)}_{name}.ipynb")
    rc, _, _ = _cli(subs, "--out", tmp_path / "out", "--jobs", 1, "--cell-timeout", 30,
                    "--solutions", attacked["solutions"])
    assert rc == 0
    with open(tmp_path / "out" / "gradebook.csv", newline="") as f:
        again = {r["student"].split("_", 1)[1]: r for r in csv.DictReader(f)}
    for name in names:
        first = _row(attacked, name)
        assert {k: v for k, v in again[name].items() if k != "student"} == \
            {k: v for k, v in first.items() if k != "student"}, name


def test_links_are_refused_and_flagged(attacked):
    for student in ("symlink_to_master", "linker"):
        row = _row(attacked, student)
        assert float(row["total"]) == 0 and "symlink refused" in row["flags"], row


def test_malformed_files_are_flagged_zeros_never_grader_errors(attacked):
    for student in ("deep_json", "latin1"):
        row = _row(attacked, student)
        assert float(row["total"]) == 0 and "not a notebook" in row["flags"], row
    row = _row(attacked, "nbformat3")  # converted: it matches no chapter of the course
    assert float(row["total"]) == 0 and "unknown chapter" in row["flags"], row


def test_spreadsheet_formulas_are_neutralised(attacked):
    text = (attacked["out"] / "gradebook.csv").read_text()
    for line in text.splitlines()[1:]:
        first = next(csv.reader([line]))
        assert all(not cell.startswith(("=", "+", "-", "@")) for cell in first), line
    assert "'=HYPERLINK(1)" in text


def test_colliding_names_get_distinct_feedback_files(attacked):
    feedback = attacked["out"] / "feedback"
    files = [p.name.lower() for p in feedback.glob("*.md")]
    assert len(files) == len(set(files)) == len(attacked["rows"])
    results = [json.loads(p.read_text()) for p in (attacked["out"] / "results").glob("*.json")]
    assert {"Alice", "alice"} <= {r["student"] for r in results}


def test_no_master_source_in_any_feedback_file(attacked):
    rules = master_rules(attacked["master"])
    assert rules.secret_lines  # the solutions' lines that must never reach a student
    for path in (attacked["out"] / "feedback").glob("*.md"):
        text = " ".join(path.read_text().split())
        for line in rules.secret_lines:
            assert line not in text, f"{path.name} quotes the master: {line!r}"
    leak = (attacked["out"] / "feedback").glob("leaks_solution*.md")
    text = next(leak).read_text()
    # its `raise` is outside what the grader interprets: it never ran, so its message never came
    assert "needs manual grading" in text or "outside what the grader interprets" in text
    assert all(len(line) < 500 for line in text.splitlines())


def test_no_process_is_left_behind(attacked):
    time.sleep(1)
    left = []
    mine = f"{os.getpid()}-"  # tokens of runs this process started (other graders may run beside it)
    for p in psutil.process_iter(["pid"]):
        try:
            if p.environ().get(contain.TOKEN_ENV, "").startswith(mine):
                left.append((p.pid, p.cmdline()))
        except (psutil.Error, OSError):
            continue
    assert left == []


def test_forged_or_deleted_results_are_graded_again_without_regrade(attacked, tmp_path):
    """A result file changed by anyone but the grader does not verify: the student is graded again."""
    out = attacked["out"]
    forged = out / "results" / "blank.json"
    data = json.loads(forged.read_text())
    data["chapters"][0]["exercises"]["ch01.linear_id"]["points"] = 1
    forged.write_text(json.dumps(data))
    (out / "results" / "run_master.json").unlink()
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ("blank", "run_master", "settrace"):
        (subs / f"{name}.ipynb").write_bytes((attacked["subs"] / f"{name}.ipynb").read_bytes())
    rc, stdout, _ = _cli(subs, "--out", out, "--cell-timeout", 30)
    assert rc == 0
    assert "blank's stored result was not written by this grader" in stdout
    assert "graded  blank: 0 points" in stdout and "graded  run_master" in stdout
    assert "skipped settrace" in stdout
    with open(out / "gradebook.csv", newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    assert rows["blank"]["total"] == "0"


def test_the_course_kernels_are_not_answers():
    """Chapter 3: the library's transpose and stencil kernels are rejected where the exercise asks
    for them (they earned 5 of 6 points before)."""
    master = load_master(CH03)
    nb = _with_answer(master, "ch03.transpose",
                      "TILE, BLOCK_ROWS = P.TILE, P.BLOCK_ROWS\ntranspose_padded = P.transpose_v3_padded\n")
    for cell in nb.cells:
        if (cell.get("metadata", {}).get("simtlab") or {}).get("id") == "ch03.stencil_shared":
            cell.source = "from simtlab.kernels.patterns import stencil1d_v2_shared as stencil_shared\n"
    to_run, rejected = vet_answers(master, rebuild(master, nb))
    assert set(rejected) == {"ch03.transpose", "ch03.stencil_shared"}
    assert "course's own kernel" in str(rejected["ch03.transpose"][0])
    assert "NotWrittenYet" in to_run["ch03.transpose"]  # the stub runs instead


# ---------------------------------------------------------------------------
# containment and the isolated runner on their own

_DETACH = r"""
import os, sys, time
marker = sys.argv[1]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(3)
        open(marker, "w").write("I outlived the grader")
        os._exit(0)
    os._exit(0)
print("detached", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("timeout", [False, True])
def test_a_detached_process_dies_with_its_run(tmp_path, timeout):
    """setsid and a double fork leave the process group; the reaper still kills them, on the
    normal path and on the timeout path."""
    marker = tmp_path / "marker"
    script = tmp_path / "detach.py"
    script.write_text(_DETACH if timeout else _DETACH.replace("time.sleep(60)", "pass"))
    proc = contain.start_contained([sys.executable, str(script), str(marker)], cwd=str(tmp_path),
                                   env=dict(os.environ), token="t" + str(os.getpid()) + str(timeout), drop=False,
                                   stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"detached"
    if timeout:
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=1)
    else:
        proc.wait(timeout=30)
    contain.stop(proc, "t" + str(os.getpid()) + str(timeout))
    time.sleep(4)
    assert not marker.exists(), "a detached process outlived its run"
    assert contain.sweep("t" + str(os.getpid()) + str(timeout)) == 0


def test_records_are_numbered_and_counted():
    from simtlab.grading.isolated import _verify

    good = b'{"seq": 0, "id": "a", "passed": true}\n{"seq": 1, "id": "b", "passed": false}\n{"seq": 2, "count": 2}\n'
    checks, complete = _verify(good, ["a", "b"])
    assert complete and checks["a"]["passed"] and not checks["b"]["passed"]
    assert _verify(good.replace(b'"seq": 1', b'"seq": 5'), ["a", "b"]) == ({}, False)
    assert not _verify(good.rsplit(b"\n", 2)[0] + b"\n", ["a", "b"])[1]  # no count: incomplete
    extra = good + b'{"seq": 3, "id": "b", "passed": true}\n'
    assert not _verify(extra, ["a", "b"])[1]


@pytest.mark.skipif(not contain.can_drop_privileges(), reason="needs root, unshare and setpriv")
def test_as_root_checks_run_as_a_uid_of_their_own_without_network():
    setup = "import os, socket\nuid, gid = os.getuid(), os.getgid()\ncwd_files = os.listdir('.')"
    net = ("s = socket.socket()\ns.settimeout(3)\ntry:\n    s.connect(('1.1.1.1', 53))\n    reached = True\n"
           "except OSError:\n    reached = False\nassert not reached, 'the network is reachable'")
    pool = contain.uid_pool()
    job = {"groups": [{"cells": [{"name": "<setup s>", "source": setup, "answer": False}],
                       "checks": [{"id": "uid", "source": f"assert {pool.first} <= uid <= {pool.last} and gid == uid, "
                                                          "(uid, gid)"},
                                  {"id": "net", "source": net},
                                  {"id": "empty", "source": "assert cwd_files == [], cwd_files"}]}]}
    result = run_isolated(job, cell_timeout=20, total_timeout=120, memory_limit=2**31)
    assert result.complete and result.as_user.startswith("uid ") and "no network" in result.as_user
    assert result.checks["uid"]["passed"], result.checks["uid"]
    assert result.checks["net"]["passed"], result.checks["net"]
    assert result.checks["empty"]["passed"], result.checks["empty"]


def test_the_guides_docker_command():
    """Docker cannot run in CI here (no daemon): check the arguments the guide gives instead."""
    import re
    import shlex

    text = (REPO / "docs" / "INSTRUCTORS.md").read_text()
    block = text[text.index("docker build -t simtlab-grader"):]
    build, run = block.split("DOCKERFILE\n\n", 1)
    assert "util-linux" in build and "iproute2" in build  # unshare, setpriv and ip inside the image
    assert '".[grade]"' in build
    command = run[run.index("docker run"):run.index("```")].replace("\\\n", " ")
    args = shlex.split(command)
    assert args[:3] == ["docker", "run", "--rm"]
    pairs = {a: b for a, b in zip(args, args[1:]) if a.startswith("--")}
    assert pairs["--network"] == "none"
    assert re.fullmatch(r"\d+g", pairs["--memory"]) and int(pairs["--pids-limit"]) > 0
    assert pairs["--cap-add"] == "SYS_ADMIN"  # unshare --net for each run
    assert "--user" not in args  # root inside: student code runs as uids of its own
    mounts = [b for a, b in zip(args, args[1:]) if a == "-v"]
    assert any(m.endswith(":/submissions:ro") for m in mounts)
    assert any(m.endswith(":/course/solutions:ro") for m in mounts)
    image = args.index("simtlab-grader")
    assert args[image + 1:image + 3] == ["simtlab", "grade"] and "--out" in args and "/grades" in args


def guide_dockerfile_copies() -> list[tuple[list[str], str]]:
    """The ``COPY`` lines of the guide's Dockerfile: (sources, destination) each."""
    text = (REPO / "docs" / "INSTRUCTORS.md").read_text()
    dockerfile = text.split("<<'DOCKERFILE'\n", 1)[1].split("\nDOCKERFILE", 1)[0]
    copies = []
    for line in dockerfile.splitlines():
        if line.startswith("COPY "):
            *sources, dest = line.split()[1:]
            copies.append((sources, dest))
    return copies


def _build_context(dest: Path) -> None:
    """What `docker build` would see inside the image's /course: only what the guide copies."""
    for sources, target in guide_dockerfile_copies():
        for src in sources:
            into = dest / target / Path(src).name if target.endswith("/") else dest / target
            if (REPO / src).is_dir():
                shutil.copytree(REPO / src, into, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
            else:
                into.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / src, into)


def test_the_guides_dockerfile_copies_every_folder_pyproject_builds_from():
    """Docker cannot run here: check the image's COPY lines against what setuptools reads
    (pyproject.toml, its readme, every folder of ``package-dir``)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    needed = {"pyproject.toml", project["project"]["readme"]}
    needed |= {folder.split("/")[0] for folder in project["tool"]["setuptools"]["package-dir"].values()}
    copied = {}
    for sources, dest in guide_dockerfile_copies():
        for src in sources:
            copied[src] = str(Path(dest) / Path(src).name) if dest.endswith("/") else dest
    missing = sorted(needed - set(copied))
    assert not missing, f"the guide's Dockerfile does not copy {missing}: pip install . fails in the image"
    moved = {src: dest for src, dest in copied.items() if src in needed and Path(dest) != Path(src)}
    assert not moved, f"copied under another name, pyproject.toml would not find them: {moved}"


@pytest.mark.slow
def test_the_guides_dockerfile_context_builds_the_course(tmp_path):
    """The wheel pip builds from exactly what the image copies holds the whole course."""
    from test_wheel_install import expected_wheel_files

    context, dist = tmp_path / "course", tmp_path / "dist"
    _build_context(context)
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(context)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"pip cannot build the image's copy of the course:\n{result.stderr[-3000:]}"
    wheel, = dist.glob("simtlab-*.whl")
    missing = sorted(expected_wheel_files() - set(zipfile.ZipFile(wheel).namelist()))
    assert not missing, f"the image's install lacks {missing}"


def test_messages_are_capped_and_never_quote_the_master():
    from simtlab.grading.secure import MESSAGE_LIMIT, WITHHELD, safe_message

    master = load_master(CH01)
    assert safe_message("CheckFailed: out[3] is 0.0, expected 2.5", master) == "CheckFailed: out[3] is 0.0, expected 2.5"
    assert safe_message("ValueError: return tx + ty * bdx + tz * bdx * bdy", master) == WITHHELD
    # a stretch of the solution across two of its lines, with other words around it
    stretch = "AssertionError: got block_dim[1] * block_dim[2] thread = linear_thread_id(thread_idx[0], wrong"
    assert safe_message(stretch, master) == WITHHELD
    assert safe_message("ImportError: from simtlab.exercises import ch01 failed", master) != WITHHELD
    long = safe_message("KeyError: " + "x" * 5000 + "\n" * 50, master)
    assert len(long) <= MESSAGE_LIMIT and "\n" not in long


def test_a_long_graded_failure_keeps_its_fix_whole():
    """The grader's message for a real failure of chapter 1: the fix comes first and survives the
    length cap, which falls after a whole sentence (it once cut "Only elements of the first block's ...")."""
    from numba import cuda

    from simtlab.exercises import ch01
    from simtlab.exercises.report import CheckFailed
    from simtlab.grading.sandbox import _message
    from simtlab.grading.secure import CUT_NOTE, MESSAGE_LIMIT, safe_message

    @cuda.jit
    def scale_add(a, b, out, alpha):
        i = cuda.threadIdx.x            # every block writes the first block's elements
        if i < out.size:
            out[i] = alpha * a[i] + b[i]

    with pytest.raises(CheckFailed) as info:
        ch01.check_first_kernel(scale_add, launches=[(798, 4, 256)], seed=1)
    assert len(str(info.value)) > MESSAGE_LIMIT                 # too long for the feedback file
    graded = safe_message(_message(info.value), load_master(CH01))
    assert len(graded) <= MESSAGE_LIMIT
    fix = info.value.fix.strip()
    assert fix.startswith("Only elements of the first block's range were written")
    assert fix in graded                                          # the whole advice, word for word
    assert graded.endswith(CUT_NOTE) and graded[: -len(CUT_NOTE)].endswith((".", ":", ")"))


def test_the_cap_falls_after_a_sentence():
    from simtlab.grading.secure import CUT_NOTE, capped

    text = "First sentence is short. " + "Second sentence goes on " * 20 + "and ends here."
    out = capped(text, 120)
    assert out == "First sentence is short." + CUT_NOTE
    assert capped("short. text", 120) == "short. text"
