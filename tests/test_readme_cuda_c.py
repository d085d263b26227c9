"""The README's CUDA C playground cell runs on a machine without a GPU, as written."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("lark")
import simtlab.cuda_c_kernels as CC

README = Path(__file__).resolve().parent.parent / "README.md"


def _cuda_c_cell() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    cells = [b for b in blocks if "simtlab.cuda_c(" in b and "simtlab.playground(" in b]
    assert len(cells) == 1, f"the README should show one CUDA C playground cell, found {len(cells)}"
    return cells[0]


def test_the_readme_cuda_c_playground_cell_runs_without_a_gpu(monkeypatch):
    try:
        CC._nvrtc()
    except CC.CompilerMissing as exc:
        pytest.skip(f"no NVRTC: {exc}")
    monkeypatch.setattr("simtlab.backend.gpu_available", lambda: False)
    namespace: dict = {}
    exec(compile(_cuda_c_cell(), "README.md", "exec"), namespace)
    pg = namespace["pg"]
    assert pg.error is None and pg.run.engine == "ptx"
    x = namespace["x"]
    assert np.array_equal(pg.outputs["out"], 2 * x)
    assert "PTX" in list(pg.tabs.titles)
