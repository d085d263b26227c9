"""Show the course's real kernel source in a notebook, instead of a copy pasted into markdown.

``show_source(kernels.scan.scan_v2)`` gives the Python source of a kernel (a ``@cuda.jit``
dispatcher or a plain function); ``show_source("scan.cu", "scan_v2")`` gives one function of a
CUDA C file in ``kernels/``, with the comment lines right above it (the ``// ---- vN: ...``
line that says what the version changes). The result is an ``IPython.display.Code`` object, so
JupyterLab highlights it; ``str(...)``/``.data`` is the plain text, which tests use.
"""

from __future__ import annotations

import inspect
import re
import textwrap
from pathlib import Path

__all__ = ["kernel_source", "cu_function_source", "show_source"]

from .paths import KERNELS_DIR  # kernels/ in a checkout, simtlab/kernels/ in a wheel


def _python_function(obj):
    # numba's dispatcher keeps the Python function in .py_func; device functions too
    return getattr(obj, "py_func", obj)


def kernel_source(obj) -> str:
    """The source of a Python kernel or function, with the comment lines right above it."""
    fn = _python_function(obj)
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise ValueError(f"cannot find the source of {obj!r}: show_source needs a function "
                         "defined in a file (a kernel from simtlab.kernels, or one in a notebook cell)") from e
    comments = []
    try:
        file_lines = inspect.getsourcefile(fn) and Path(inspect.getsourcefile(fn)).read_text().splitlines()
    except OSError:
        file_lines = None
    if file_lines:
        k = start - 2                       # the line above the first decorator, 0-based
        while k >= 0 and file_lines[k].lstrip().startswith("#"):
            comments.insert(0, file_lines[k] + "\n")
            k -= 1
    return textwrap.dedent("".join(comments + lines))


def _cu_path(file: str) -> Path:
    path = Path(file)
    if not path.is_absolute() and not path.exists():
        path = KERNELS_DIR / path
    if path.suffix != ".cu":
        path = path.with_suffix(".cu")
    if not path.exists():
        known = ", ".join(sorted(p.name for p in KERNELS_DIR.glob("*.cu"))) or "none"
        raise FileNotFoundError(f"no CUDA file {path.name} in kernels/ (there are: {known})")
    return path


def _matching_brace(text: str, open_at: int) -> int:
    depth = 0
    for k in range(open_at, len(text)):
        if text[k] == "{":
            depth += 1
        elif text[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    raise ValueError("unbalanced braces")


def cu_function_source(file: str, name: str) -> str:
    """One function (kernel or device function) of a ``.cu`` file, with its leading comments."""
    text = _cu_path(file).read_text()
    pattern = re.compile(r"^[^\n;{}]*\b" + re.escape(name) + r"\s*\(", re.MULTILINE)
    for m in pattern.finditer(text):
        brace = text.find("{", m.end())
        semicolon = text.find(";", m.end())
        if brace < 0 or (0 <= semicolon < brace):
            continue                        # a declaration or a call, not the definition
        end = _matching_brace(text, brace)
        lines_before = text[: m.start()].splitlines(keepends=True)
        lead = []
        while lines_before and (lines_before[-1].lstrip().startswith(("//", "template", "__launch_bounds__"))
                                or lines_before[-1].strip().startswith("extern")):
            lead.insert(0, lines_before.pop())
        return "".join(lead) + text[m.start(): end + 1] + "\n"
    raise ValueError(f"no function named {name!r} in {file}")


def show_source(obj, name: str | None = None):
    """An ``IPython.display.Code`` of a kernel's source, or of function ``name`` in a .cu file."""
    from IPython.display import Code

    if isinstance(obj, str):
        if name is None:
            return Code(_cu_path(obj).read_text(), language="cuda")
        return Code(cu_function_source(obj, name), language="cuda")
    return Code(kernel_source(obj), language="python")
