"""Where the course's files are, in a checkout (editable install) and in an installed wheel.

- the kernels (``.py`` and their CUDA C twins ``.cu``): the folder of ``simtlab.kernels``;
  pyproject.toml maps that package to ``kernels/`` at the top of the checkout, and the wheel
  carries the same files as ``simtlab/kernels/``, so one lookup serves both installs;
- the student chapters: ``chapters/`` of the checkout simtlab was installed from (editable),
  else the copy the wheel carries in ``simtlab/chapters/``. The masters (``solutions/``) are not
  in the wheel: they hold the answers. ``simtlab build`` and ``simtlab grade`` need a checkout.
"""

from __future__ import annotations

from pathlib import Path

from . import kernels as _kernels

__all__ = ["KERNELS_DIR", "PACKAGE_DIR", "PACKAGED_CHAPTERS", "checkout_root", "chapters_dir"]

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
