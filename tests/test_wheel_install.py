"""A non-editable install: build the wheel, install it in a fresh venv, open the course from it.

`pip install .` and a wheel copy only what pyproject.toml names, so a package folder or a data
file it forgets works in a checkout and breaks for everyone else. The slow test builds the wheel
(`pip wheel --no-deps`, as the README says) from a copy of the checkout, checks that it holds
every module, kernel (.py and .cu), data file and chapter, and none of the masters; installs it
with the `grade` extra in a new venv; runs `simtlab open --no-browser` in an empty folder (the
chapters land in ./simtlab-work/, JupyterLab answers); and runs chapter 3's master under nbval
against the installed package (chapter 3 needs the .cu files and simtlab.gpubench).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

from browser_support import free_port, http_get, log_tail, stop_process_group, wait_for_lab
from load_support import generous
from test_fresh_install import copy_checkout

REPO = Path(__file__).resolve().parent.parent
#: the chapter run under nbval from the installed wheel: it uses kernels/patterns.cu and gpubench
CHAPTER = "03_communication_patterns.ipynb"


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def expected_wheel_files() -> set[str]:
    """Every file the wheel must carry, by its path inside the wheel."""
    want = {str(p.relative_to(REPO)) for p in (REPO / "simtlab").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}         # modules and data files alike
    want |= {f"simtlab/kernels/{p.name}" for p in (REPO / "kernels").iterdir() if p.suffix in (".py", ".cu")}
    want |= {f"simtlab/chapters/{p.name}" for p in (REPO / "chapters").glob("*.ipynb")}
    return want


def test_pyproject_names_every_package_folder():
    setuptools = _pyproject()["tool"]["setuptools"]
    folders = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "simtlab").rglob("__init__.py")
               if "__pycache__" not in p.parts}
    assert set(setuptools["packages"]) == folders | {"simtlab.kernels", "simtlab.chapters"}, (
        "pyproject.toml's [tool.setuptools] packages must name every folder of simtlab/ with an __init__.py "
        "(a missing one is left out of the wheel)")
    assert setuptools["package-dir"]["simtlab.kernels"] == "kernels"
    assert setuptools["package-dir"]["simtlab.chapters"] == "chapters"
    data = setuptools["package-data"]
    assert "*.cu" in data["simtlab.kernels"] and "*.ipynb" in data["simtlab.chapters"]


def test_expected_files_cover_the_course():
    want = expected_wheel_files()
    assert "simtlab/gpubench/harness.py" in want and "simtlab/kernels/patterns.cu" in want
    assert f"simtlab/chapters/{CHAPTER}" in want and "simtlab/data/h100_timings.json" in want


def _base_python() -> str:
    """The interpreter this venv was made from: the fresh venv must not see this one's packages."""
    base = getattr(sys, "_base_executable", None)
    return base if base and Path(base).exists() else sys.executable


def _clean_env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH", "JUPYTER", "CONDA_PREFIX"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(Path(sys.prefix))))
    jupyter = tmp_path / "jupyter"
    env.update(JUPYTER_CONFIG_DIR=str(jupyter / "config"), JUPYTER_DATA_DIR=str(jupyter / "data"),
               JUPYTER_RUNTIME_DIR=str(jupyter / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(jupyter / "user-settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(jupyter / "workspaces"))
    return env


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert result.returncode == 0, (f"{' '.join(map(str, cmd))} failed ({result.returncode}):\n"
                                    f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    return result


@pytest.mark.slow
def test_wheel_installs_and_serves_the_course(tmp_path):
    start = time.monotonic()
    checkout = tmp_path / "simtlab"
    checkout.mkdir()
    copy_checkout(checkout)
    dist = tmp_path / "dist"

    # 1. the wheel, built as the README says, holds the whole course and no answers
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", dist, checkout], timeout=generous(300))
    wheels = list(dist.glob("simtlab-*.whl"))
    assert len(wheels) == 1, wheels
    names = set(zipfile.ZipFile(wheels[0]).namelist())
    missing = sorted(expected_wheel_files() - names)
    assert not missing, f"the wheel lacks {len(missing)} file(s) of the course: {missing}"
    assert not [n for n in names if n.startswith("solutions/") or "/solutions/" in n], \
        "the wheel carries the masters (solutions/): students would get the answers"
    built_s = time.monotonic() - start

    # 2. a fresh venv with the wheel and the grade extra (nbval, ipykernel), nothing of this venv
    env = _clean_env(tmp_path)
    venv = tmp_path / "venv"
    _run([_base_python(), "-m", "venv", venv], env=env, timeout=generous(120))
    py = venv / "bin" / "python"
    _run([py, "-m", "pip", "install", "-q", "--no-compile", f"{wheels[0]}[grade]"], env=env, timeout=generous(600))
    installed_s = time.monotonic() - start

    # 3. `simtlab open --no-browser` in an empty folder: chapters copied, JupyterLab answers
    student = tmp_path / "student"
    student.mkdir()
    port, token = free_port(), os.urandom(12).hex()
    config = Path(env["JUPYTER_CONFIG_DIR"])
    config.mkdir(parents=True)
    (config / "jupyter_server_config.json").write_text(json.dumps({
        "ServerApp": {"ip": "127.0.0.1", "port": port, "port_retries": 0},
        "IdentityProvider": {"token": token},
    }))
    log = tmp_path / "open.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(venv / "bin" / "simtlab"), "open", "--no-browser"], cwd=student, env=env,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for_lab(base, token, proc, log, timeout=generous(180))
        status, body = http_get(f"{base}/lab?token={token}")
        assert status == 200 and b"JupyterLab" in body, f"/lab answered HTTP {status}"
        status, body = http_get(f"{base}/api/contents?token={token}")
        listed = {item["name"] for item in json.loads(body)["content"]}
    finally:
        stop_process_group(proc)
    work = student / "simtlab-work"
    chapters = sorted(p.name for p in (REPO / "chapters").glob("*.ipynb"))
    assert sorted(p.name for p in work.glob("*.ipynb")) == chapters, log_tail(log)
    assert set(chapters) <= listed, f"JupyterLab does not serve the work folder: it lists {sorted(listed)}"
    assert f"your work folder: {work}" in log.read_text(), log_tail(log)
    # the copies are the shipped chapters, stamped with their template's hash
    copy = json.loads((work / CHAPTER).read_text())
    assert copy["metadata"]["simtlab_template"]["name"] == CHAPTER

    # a second open keeps the student's edits
    copy["cells"][0]["source"] = "my notes\n" + "".join(copy["cells"][0]["source"])
    (work / CHAPTER).write_text(json.dumps(copy))
    edited = (work / CHAPTER).read_bytes()
    _run([venv / "bin" / "simtlab", "open", "--no-lab"], cwd=student, env=env, timeout=generous(120))
    assert (work / CHAPTER).read_bytes() == edited

    # 4. the installed package, not the checkout, serves the kernels and their CUDA C twins
    probe = ("import simtlab, simtlab.gpubench, simtlab.kernels.patterns\n"
             "from simtlab.cuda_source import cu_files\n"
             "from simtlab.source import show_source\n"
             "print(simtlab.__file__)\n"
             "print(sorted(p.name for p in cu_files()))\n"
             "from simtlab.student import hint\nprint(hint('ch03.transpose', 2).levels)\n"
             "print(show_source('scan.cu', 'scan_v2_blelloch').data)\n")
    out = _run([py, "-c", probe], cwd=student, env=env, timeout=generous(120)).stdout.splitlines()
    assert out[0].startswith(str(venv)), f"simtlab imported from {out[0]}, not the fresh venv"
    assert out[1] == str(sorted(p.name for p in (REPO / "kernels").glob("*.cu"))), out[1]
    assert out[2] == "2", f"hint() found no hints in the wheel's chapters: {out[2]}"
    assert "scan_v2_blelloch" in "\n".join(out[3:]), out

    # 5. chapter 3's master runs top to bottom under nbval on the installed package
    grading = tmp_path / "grading"
    grading.mkdir()
    shutil.copy2(REPO / "solutions" / CHAPTER, grading / CHAPTER)
    result = subprocess.run([str(py), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax", CHAPTER],
                            cwd=grading, env=env, capture_output=True, text=True, timeout=generous(600))
    assert result.returncode == 0, f"{CHAPTER} under nbval from the wheel:\n{result.stdout[-6000:]}"
    print(f"wheel built in {built_s:.0f} s, installed by {installed_s:.0f} s, all done in "
          f"{time.monotonic() - start:.0f} s")


def test_open_from_a_wheel_uses_the_packaged_chapters_and_the_current_folder(tmp_path, monkeypatch, capsys):
    """The fast twin of the slow test: no checkout, so the wheel's chapters go to ./simtlab-work."""
    import simtlab.paths as paths
    from simtlab.cli import main

    packaged = tmp_path / "site-packages" / "simtlab" / "chapters"
    packaged.mkdir(parents=True)
    shutil.copy2(REPO / "chapters" / CHAPTER, packaged / CHAPTER)
    monkeypatch.setattr(paths, "PACKAGED_CHAPTERS", packaged)
    monkeypatch.setattr(paths, "checkout_root", lambda: None)
    student = tmp_path / "student"
    student.mkdir()
    monkeypatch.chdir(student)
    assert paths.chapters_dir() == packaged
    assert main(["open", "--no-lab"]) == 0
    assert (student / "simtlab-work" / CHAPTER).is_file()
    assert not (packaged.parent / "work").exists()           # nothing written inside the package
    assert f"your work folder: {student / 'simtlab-work'}" in capsys.readouterr().out


def test_grade_in_a_wheel_install_names_a_command_that_works_there(tmp_path, monkeypatch, capsys):
    """Without a checkout, `pip install -e ".[grade]"` has nothing to install: the message gives
    the grade extra's packages by name, for the Python that runs simtlab."""
    import importlib.util
    import shlex

    import simtlab.paths as paths
    from simtlab.cli import main

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "nbval" else real_find_spec(name, *a))
    monkeypatch.setattr(paths, "checkout_root", lambda: None)
    assert main(["grade", str(tmp_path), "--out", str(tmp_path / "grades")]) == 2
    message = capsys.readouterr().err
    assert "nbval is not installed" in message, message
    command = shlex.split(message.split("install the grading tools with: ", 1)[1])
    assert command[:4] == [sys.executable, "-m", "pip", "install"], command
    assert "-e" not in command and not any(".[grade]" in c for c in command), command
    assert command[4:] == _pyproject()["project"]["optional-dependencies"]["grade"]


def test_grade_in_a_checkout_installs_the_checkout_with_its_extra(tmp_path, monkeypatch, capsys):
    import importlib.util
    import shlex

    from simtlab.cli import main

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "nbval" else real_find_spec(name, *a))
    assert main(["grade", str(tmp_path), "--out", str(tmp_path / "grades")]) == 2
    command = shlex.split(capsys.readouterr().err.split("install the grading tools with: ", 1)[1])
    assert command == [sys.executable, "-m", "pip", "install", "-e", f"{REPO}[grade]"], command


def test_readme_installs_the_wheel_into_a_venv_of_its_own():
    """The README's wheel line must not install into whatever Python comes first on the PATH."""
    import re
    import shlex

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    lines = [line.strip() for block in re.findall(r"```bash\n(.*?)```", readme, flags=re.S)
             for line in block.splitlines() if ".whl" in line and line.strip().endswith("simtlab open")]
    assert len(lines) == 1, f"the README should show one wheel install ending in `simtlab open`: {lines}"
    steps = [shlex.split(step) for step in lines[0].split("&&")]
    assert steps[0][:3] == ["python3", "-m", "venv"], steps[0]
    venv = steps[0][3]
    for step in steps[1:]:
        assert step[0].startswith(f"{venv}/bin/"), f"runs {step[0]} outside the venv {venv}: {lines[0]}"
