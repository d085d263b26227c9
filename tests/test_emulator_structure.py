"""The emulator's seam: one home for the SIMT constants, no import cycle, one trace default,
metrics that are facts about the kernel, and no device function silently left untraced."""

import ast
import inspect
import re
from pathlib import Path

import numpy as np
import pytest
from numba import cuda, float32

import simtlab
from simtlab import simt
from simtlab.emulator import launch, launch_spec, scheduler

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "simtlab").rglob("*.py")) + sorted((ROOT / "kernels").rglob("*.py"))


def _assignments(name):
    """Files (relative) that bind ``name`` at module level."""
    out = []
    for path in SOURCES:
        tree = ast.parse(path.read_text())
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) else []
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                out.append(str(path.relative_to(ROOT)))
    return out


def test_warp_size_and_the_site_encoding_have_one_home():
    assert _assignments("WARP_SIZE") == ["simtlab/simt.py"]
    assert _assignments("LINE_MASK") == ["simtlab/simt.py"]
    shifts = [str(p.relative_to(ROOT)) for p in SOURCES
              if re.search(r"<<\s*20\b|>>\s*20\b|0xFFFFF\b", p.read_text())]
    assert shifts == [], f"the site encoding is spelt out in {shifts}: use simtlab.simt"
    site = simt.make_site(3, 41)
    assert simt.site_line(site) == 41 and simt.site_code(site) == 3


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            yield "." * node.level + (node.module or "")
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names)


def test_analysis_never_imports_the_emulator():
    for path in (ROOT / "simtlab" / "analysis").glob("*.py"):
        bad = [m for m in _imports(path) if "emulator" in m]
        assert bad == [], f"{path.name} imports {bad}: analyses read traces through simtlab.simt"
    for leaf in ("simt.py", "keys.py"):       # what both sides use imports neither
        assert [m for m in _imports(ROOT / "simtlab" / leaf) if m.startswith(".")] == []


def test_scheduler_takes_one_launch_and_emulate_sets_no_attributes_on_it():
    params = list(inspect.signature(scheduler.Scheduler.__init__).parameters)
    assert params == ["self", "launch"]
    src = inspect.getsource(launch)
    assert not re.search(r"sched\.\w+\s*=", src), "launch.py sets scheduler attributes"


def test_one_max_trace_default():
    assert inspect.signature(launch.emulate).parameters["max_trace"].default == launch_spec.MAX_TRACE
    text = "".join(p.read_text() for p in SOURCES)
    assert len(re.findall(r"max_trace\s*(?::\s*int)?\s*=\s*\d", text)) == 0
    assert "_bd" not in vars(simtlab.emulator.cuda_api.FakeCuda)


@cuda.jit
def _scale(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] * float32(2)


def test_metrics_are_facts_about_the_kernel_identical_on_every_run():
    x = np.arange(100, dtype=np.float32)
    runs = [simtlab.emulate(_scale, 4, 32, x, np.zeros_like(x)) for _ in range(2)]
    assert runs[0].metrics == runs[1].metrics
    assert "elapsed_s" not in runs[0].metrics
    assert all(isinstance(r.elapsed_s, float) and r.elapsed_s > 0 for r in runs)


def test_a_device_function_without_source_is_named_in_a_warning():
    namespace = {"cuda": cuda}
    exec("def twice(v):\n    return v * 2\n", namespace)
    twice = cuda.jit(device=True)(namespace["twice"])

    @cuda.jit
    def use(x):
        i = cuda.grid(1)
        x[i] = twice(x[i])

    x = np.ones(32, np.float32)
    with pytest.warns(simtlab.UntracedSourceWarning, match=r"twice\(\)"):
        run = simtlab.emulate(use, 1, 32, x)
    assert (x == 2).all()
    assert len(run.memory) == 64            # its caller's accesses are still in the trace


def test_a_divergent_barrier_is_called_undefined_behaviour_not_a_deadlock():
    @cuda.jit
    def half_barrier(x):
        if cuda.threadIdx.x < 16:
            cuda.syncthreads()
        x[cuda.threadIdx.x] = 1

    with pytest.raises(simtlab.BarrierError) as e:
        simtlab.emulate(half_barrier, 1, 32, np.zeros(32, np.float32))
    assert "undefined behaviour" in str(e.value) and "deadlock" not in str(e.value).lower()
