"""Load a repository script (tools/, benchmarks/) as a module, so its functions can be tested
(a helper module, not a test file)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_script(relative_path: str):
    """The module of the script at ``relative_path`` from the repository root, freshly executed."""
    path = ROOT / relative_path
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
