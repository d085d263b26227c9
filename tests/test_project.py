"""The project's promises: conda and pip install the same thing; CI runs the README's command."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _name_and_spec(req: str):
    m = re.match(r"^\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*)$", req)
    return m.group(1).lower().replace("_", "-"), m.group(3).strip()


def _conda_spec(spec: str) -> str:
    # conda writes an exact pin as name=1.2.3; pip as name==1.2.3
    return spec.replace("==", "=") if spec.startswith("==") else spec


# the course itself with the cuda-c extra (NVRTC: CUDA C on the CPU), as the README's set-up installs it
STUDENT_INSTALL = "-e .[cuda-c]"


def test_environment_yml_lists_the_same_dependencies_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda, pip = {}, {}
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            for p in dep["pip"]:
                if p.strip() != STUDENT_INSTALL:
                    name, spec = _name_and_spec(p)
                    pip[name] = spec
        else:
            m = re.match(r"^([A-Za-z0-9_.\-]+)\s*(.*)$", dep)
            conda[m.group(1).lower()] = m.group(2)
    assert STUDENT_INSTALL in [p.strip() for d in env["dependencies"] if isinstance(d, dict) for p in d["pip"]]
    for req in project["dependencies"]:
        name, spec = _name_and_spec(req)
        if name in conda:
            assert conda[name] == _conda_spec(spec), f"{name}: conda {conda[name]!r} vs pip {spec!r}"
        else:
            assert name in pip, f"{name} from pyproject.toml is missing in environment.yml"
            assert pip[name] == spec, f"{name}: environment.yml {pip[name]!r} vs {spec!r}"
    listed = set(conda) | set(pip)
    wanted = {_name_and_spec(r)[0] for r in project["dependencies"]} | {"python", "pip"}
    assert listed == wanted, f"only in environment.yml: {listed - wanted}"
    assert f"python={project['requires-python'].lstrip('>=')}" in [
        d for d in env["dependencies"] if isinstance(d, str)]


# distributions that only serve a GPU (numba-cuda requires cuda-bindings and cuda-core)
CUDA_ONLY = ("numba-cuda", "cupy-", "cuda-", "nvidia-")


def test_the_student_install_names_no_cuda_package():
    """A student without a GPU never uses CUDA wheels: the base install leaves them to the GPU
    extras (tests/test_fresh_install.py checks what a fresh venv really gets)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = [_name_and_spec(r)[0] for r in project["dependencies"]]
    assert not [n for n in base if n.startswith(CUDA_ONLY)], base


def test_gpu_and_test_extras_pin_the_same_numba_cuda():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = {}
    for extra in ("gpu-cu12", "gpu-cu13", "test"):
        deps = dict(_name_and_spec(r) for r in project["optional-dependencies"][extra])
        pins[extra] = deps["numba-cuda"]
        if extra != "test":
            assert any(name.startswith("cupy-cuda") for name in deps)
    assert len(set(pins.values())) == 1 and pins["test"].startswith("=="), pins
    readme = (ROOT / "README.md").read_text()
    assert f"numba-cuda ({pins['test'].lstrip('=')}" in readme, "the README's table names another numba-cuda"


def test_ci_runs_the_readme_test_command():
    ci_lines = [l for l in (ROOT / ".ci/run").read_text().splitlines()
                if l.strip() and not l.startswith(("#", "set ", "cd ", "export "))]
    assert len(ci_lines) == 1
    readme = (ROOT / "README.md").read_text()
    command = ci_lines[0].strip()
    assert command in readme, f"README does not show the command CI runs:\n{command}"


def test_readme_has_the_open_command_and_every_chapter():
    readme = (ROOT / "README.md").read_text()
    assert "simtlab open" in readme
    for nb in sorted((ROOT / "solutions").glob("*.ipynb")):
        number = nb.name[:2]
        assert f"| {number} " in readme, f"chapter {nb.name} missing from the README's list"
