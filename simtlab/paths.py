"""Where the course's files are, in a checkout (editable install) and in an installed wheel.

- the kernels (``.py`` and their CUDA C twins ``.cu``): the folder of ``simtlab.kernels``;
  pyproject.toml maps that package to ``kernels/`` at the top of the checkout, and the wheel
  carries the same files as ``simtlab/kernels/``, so one lookup serves both installs;
- the student chapters: ``chapters/`` of the checkout simtlab was installed from (editable),
  else the copy the wheel carries in ``simtlab/chapters/``. The masters (``solutions/``) are not
  in the wheel: they hold the answers. ``simtlab build`` and ``simtlab grade`` need a checkout.

``install_command(extra)`` is the command that adds an extra's packages (``grade``, ``gpu-cu12``,
...) to the Python that runs simtlab, in the form that works for the install at hand.
"""

from __future__ import annotations

import re
import shlex
import sys
from importlib import metadata
from pathlib import Path

from . import kernels as _kernels

__all__ = ["KERNELS_DIR", "PACKAGE_DIR", "PACKAGED_CHAPTERS", "checkout_root", "chapters_dir",
           "extra_requirements", "install_command"]

PACKAGE_DIR = Path(__file__).resolve().parent
KERNELS_DIR = Path(_kernels.__file__).resolve().parent
#: the chapters inside an installed wheel (absent in a checkout)
PACKAGED_CHAPTERS = PACKAGE_DIR / "chapters"


def checkout_root() -> Path | None:
    """The checkout simtlab is imported from (editable install), or None (installed wheel)."""
    root = PACKAGE_DIR.parent
    if (root / "pyproject.toml").is_file() and ((root / "chapters").is_dir() or (root / "solutions").is_dir()):
        return root
    return None


def chapters_dir() -> Path | None:
    """The chapter templates ``simtlab open`` copies: the checkout's, else the wheel's; None if neither."""
    root = checkout_root()
    if root is not None and (root / "chapters").is_dir():
        return root / "chapters"
    if any(PACKAGED_CHAPTERS.glob("*.ipynb")):
        return PACKAGED_CHAPTERS
    return None


def extra_requirements(extra: str) -> list[str]:
    """The requirements of one extra of the installed simtlab (``["nbval>=0.11", ...]``), as its
    metadata lists them; empty when the extra or the metadata is missing."""
    try:
        requires = metadata.requires("simtlab") or []
    except metadata.PackageNotFoundError:
        return []
    marker = re.compile(r"""extra\s*==\s*["']""" + re.escape(extra) + r"""["']""")
    found = []
    for line in requires:
        requirement, _, condition = line.partition(";")
        if marker.search(condition):
            found.append(requirement.strip())
    return found


def install_command(extra: str) -> str:
    """A command line that installs ``extra``'s packages into the Python running this code.

    From a checkout: an editable install of the checkout with the extra. From a wheel (no
    checkout, so ``pip install -e ".[grade]"`` has nothing to install from): the extra's own
    requirements, by name. Either way through this interpreter's pip, so the packages land in
    the environment simtlab runs in, not in whatever ``pip`` comes first on the PATH.
    """
    python = shlex.quote(sys.executable)
    root = checkout_root()
    if root is not None:
        return f"{python} -m pip install -e {shlex.quote(f'{root}[{extra}]')}"
    requirements = extra_requirements(extra) or [f"simtlab[{extra}]"]
    return f"{python} -m pip install " + " ".join(shlex.quote(r) for r in requirements)
