"""A fresh machine: the README's set-up command, word for word, in a new folder and venv.

The repository's files (those git tracks, plus new ones it does not ignore) are copied to a
temporary folder with no ``.venv``; the README's "set up and open the course" command runs
there under bash, exactly as written. Its last step, ``simtlab open``, starts JupyterLab:
a Jupyter config in a folder of the test's own gives it a free port, a token and no
browser. The test waits for ``/api/status``, checks the course's JupyterLab defaults and
the chapters in ``work/``, stops JupyterLab, then imports the course, runs the emulator and
builds a widget in the new venv. Any step the README forgot fails here.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from browser_support import free_port, http_get, log_tail, stop_process_group, wait_for_lab
from load_support import generous

REPO = Path(__file__).resolve().parent.parent
SKIP_DIRS = {".venv", ".git", "work", "artifacts", "build", "dist", "__pycache__", ".pytest_cache",
             ".ipynb_checkpoints", ".backup"}


def readme_setup_command() -> str:
    """The README's bash line that sets up and opens the course from the checkout (the editable
    install ending in simtlab open; the wheel's line is tested by tests/test_wheel_install.py)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", readme, flags=re.S)
    lines = [line.strip() for b in blocks for line in b.splitlines()
             if line.strip().endswith("simtlab open") and "python3 -m venv" in line and "install -e " in line]
    assert len(lines) == 1, f"the README should show one set-up command ending in `simtlab open`, found {lines}"
    return lines[0]


def copy_checkout(dest: Path) -> None:
    """The files a fresh clone would hold, with this working tree's changes."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             cwd=REPO, capture_output=True, check=True).stdout
        files = [f for f in out.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: copy what is there
        files = [str(p.relative_to(REPO)) for p in REPO.rglob("*") if p.is_file()]
    for rel in files:
        parts = Path(rel).parts
        if any(part in SKIP_DIRS for part in parts[:-1]):
            continue
        src = REPO / rel
        if src.is_file():  # a file deleted in the working tree is still in git's index
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


#: what the cuda-c extra brings: NVIDIA's compiler, the bindings that call it, the headers
CUDA_C_EXTRA = {"cuda-bindings", "cuda-pathfinder", "nvidia-cuda-nvrtc", "nvidia-cuda-runtime",
                "nvidia-cuda-cccl"}


def cuda_distributions(python: Path, env: dict) -> list[str]:
    """The distributions in ``python``'s environment that only serve a GPU (numba-cuda and the
    CUDA wheels it requires, CuPy, NVIDIA's libraries)."""
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=json"], env=env,
                            capture_output=True, text=True, timeout=120, check=True).stdout
    names = [d["name"].lower().replace("_", "-") for d in json.loads(listed)]
    return [n for n in names if n.startswith(("numba-cuda", "cupy-", "cuda-", "nvidia-"))]


def test_readme_setup_command_is_the_one_tested():
    command = readme_setup_command()
    assert command.startswith("python3 -m venv .venv && "), command
    assert command.endswith(".venv/bin/simtlab open"), command


@pytest.mark.slow
def test_fresh_install_from_the_readme(tmp_path):
    command = readme_setup_command()
    checkout = tmp_path / "simtlab"
    checkout.mkdir()
    copy_checkout(checkout)
    assert not (checkout / ".venv").exists() and not (checkout / "work").exists()

    # Jupyter's own folders move into the test's folder; its config gives the port and token.
    port, token = free_port(), os.urandom(12).hex()
    jupyter = tmp_path / "jupyter"
    (jupyter / "config").mkdir(parents=True)
    (jupyter / "config" / "jupyter_server_config.json").write_text(json.dumps({
        "ServerApp": {"ip": "127.0.0.1", "port": port, "port_retries": 0, "open_browser": False},
        "IdentityProvider": {"token": token},
    }))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VIRTUAL_ENV", "PYTHONPATH", "JUPYTER", "CONDA_PREFIX"))}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(Path(sys.prefix))))  # not this venv's python3
    env.update(JUPYTER_CONFIG_DIR=str(jupyter / "config"), JUPYTER_DATA_DIR=str(jupyter / "data"),
               JUPYTER_RUNTIME_DIR=str(jupyter / "runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(jupyter / "user-settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(jupyter / "workspaces"))
    log = tmp_path / "setup.log"
    start = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(["bash", "-c", command], cwd=checkout, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for_lab(base, token, proc, log, timeout=generous(600))
        setup_s = time.monotonic() - start
        venv_python = checkout / ".venv" / "bin" / "python"
        assert venv_python.exists(), "the README's command did not make .venv"

        # JupyterLab serves the page, with the course's defaults, from the new venv
        status, body = http_get(f"{base}/lab?token={token}")
        assert status == 200 and b"JupyterLab" in body, f"/lab answered HTTP {status}"
        status, body = http_get(f"{base}/lab/api/settings/@jupyterlab/notebook-extension:tracker?token={token}")
        assert status == 200, status
        schema = json.loads(body)["schema"]["properties"]["windowingMode"]
        assert schema["default"] == "none", "simtlab open did not install the course's JupyterLab defaults"
        status, body = http_get(f"{base}/api/kernelspecs?token={token}")
        specs = json.loads(body)["kernelspecs"]
        assert "python3" in specs, f"no python3 kernel in the new venv: {sorted(specs)}"
        chapters = sorted(p.name for p in (checkout / "chapters").glob("*.ipynb"))
        work = sorted(p.name for p in (checkout / "work").glob("*.ipynb"))
        assert chapters and work == chapters, f"work/ holds {work}, chapters/ {chapters}"
    finally:
        stop_process_group(proc)

    # the course, the emulator and the widgets in the new venv (widgets need the lab extension)
    probe = (
        "import numpy as np, simtlab, simtlab.widgets\n"
        "from simtlab import emulate\n"
        "from simtlab.kernels import intro\n"
        "a = np.arange(40, dtype=np.float32); b = np.ones(40, np.float32); out = np.zeros(40, np.float32)\n"
        "run = emulate(intro.vector_add_v1, 2, 32, a, b, out)\n"
        "assert np.array_equal(out, a + b), out\n"
        "w = simtlab.widgets.mapping_widget()\n"
        "k = simtlab.cuda_c('extern \"C\" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }', 'twice')\n"
        "x = np.ones(32, np.float32); simtlab.emulate(k, 1, 32, x)\n"
        "assert np.array_equal(x, np.full(32, 2, np.float32)), x\n"
        "assert w.figure.value[:8] == b'\\x89PNG\\r\\n\\x1a\\n'\n"
        "print('ok', simtlab.__file__)\n"
    )
    elsewhere = tmp_path / "elsewhere"  # not beside the checkout's folder, which is also named simtlab
    elsewhere.mkdir()
    result = subprocess.run([str(venv_python), "-c", probe], cwd=elsewhere, env=env, capture_output=True,
                            text=True, timeout=generous(300))
    assert result.returncode == 0, f"in the fresh venv:\n{result.stdout}\n{result.stderr}"
    assert str(checkout) in result.stdout, f"simtlab imported from elsewhere: {result.stdout}"
    # NVRTC and its headers (the cuda-c extra: CUDA C on the CPU), nothing that serves only a GPU
    assert set(cuda_distributions(venv_python, env)) <= CUDA_C_EXTRA, (
        "the student install pulled CUDA wheels a machine without a GPU never uses: "
        f"{sorted(set(cuda_distributions(venv_python, env)) - CUDA_C_EXTRA)}")
    ext = subprocess.run([str(checkout / ".venv" / "bin" / "jupyter"), "labextension", "list"], env=env,
                         capture_output=True, text=True, timeout=generous(120))
    assert "@jupyter-widgets/jupyterlab-manager" in ext.stdout + ext.stderr, (
        "the widgets' JupyterLab extension is missing in the fresh venv (widgets would show "
        "'Error displaying widget'):\n" + ext.stdout + ext.stderr)
    print(f"fresh install: the README's command answered in {setup_s:.0f} s; setup log {log}\n"
          + log_tail(log, 600))
