"""JupyterLab defaults the course relies on, installed by ``simtlab open``.

JupyterLab reads default overrides from ``<app dir>/settings/overrides.d/*.json`` (one file
per package), then the user's own ``overrides.json``, then the settings the user changed in
the Settings editor. The course writes only its own file, ``overrides.d/simtlab.json``, so a
student's choices always win and nothing of theirs is overwritten.

- ``windowingMode: "none"``: every cell of a notebook stays in the page. With JupyterLab's
  default windowing, cells far from the view are detached or skipped, so Ctrl+F misses text
  in them and a widget's figure can show up blank after scrolling back to it.
- ``fetchNews: "false"``, ``checkForUpdates: false``: no "Would you like to get notified about
  official Jupyter news?" pop-up over the first chapter a student opens (and no request to the
  network for it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["LAB_DEFAULTS", "OVERRIDES_FILE", "install_lab_defaults", "lab_settings_dir"]

#: plugin id -> setting -> value; JupyterLab's defaults for the course
LAB_DEFAULTS = {
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
}

#: the course's file in the ``overrides.d`` folder of JupyterLab's settings
OVERRIDES_FILE = "simtlab.json"


def lab_settings_dir() -> Path:
    """JupyterLab's application settings folder (``<app dir>/settings``) for this Python."""
    from jupyterlab.commands import get_app_dir

    return Path(get_app_dir()) / "settings"


def install_lab_defaults(settings_dir: str | os.PathLike | None = None) -> Path:
    """Write :data:`LAB_DEFAULTS` to ``<settings_dir>/overrides.d/simtlab.json``.

    ``settings_dir`` defaults to :func:`lab_settings_dir`. The file is rewritten only when
    its content differs. Returns the file's path; raises ``OSError`` when the folder cannot
    be written (``simtlab open`` then says so and starts JupyterLab anyway).
    """
    folder = Path(settings_dir) if settings_dir is not None else lab_settings_dir()
    path = folder / "overrides.d" / OVERRIDES_FILE
    text = json.dumps(LAB_DEFAULTS, indent=2, sort_keys=True) + "\n"
    try:
        if path.read_text(encoding="utf-8") == text:
            return path
    except (OSError, UnicodeDecodeError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{OVERRIDES_FILE}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)  # atomic: a JupyterLab starting meanwhile never reads half a file
    return path
