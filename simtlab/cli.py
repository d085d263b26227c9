"""The ``simtlab`` command.

    simtlab build [--check] [--solutions DIR] [--chapters DIR]
        build the student notebooks in chapters/ from the masters in solutions/;
        with --check write nothing and exit 1 when they are out of sync
    simtlab open [JUPYTER ARGS ...]
        start JupyterLab on the course's chapters/ folder

(``simtlab grade`` will come later: add it in ``_make_parser`` and ``_COMMANDS``.)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["main", "repo_root"]


def repo_root() -> Path:
    """The course repository: the folder holding ``solutions/`` and ``chapters/``.

    The package's parent folder when simtlab is installed from a checkout
    (editable install), otherwise the first folder at or above the current one
    with a ``solutions/`` or ``chapters/`` folder and a ``pyproject.toml``.
    """
    here = Path(__file__).resolve().parent.parent
    candidates = [here, Path.cwd(), *Path.cwd().parents]
    for folder in candidates:
        if (folder / "pyproject.toml").is_file() and (
            (folder / "solutions").is_dir() or (folder / "chapters").is_dir()
        ):
            return folder
    raise SystemExit(
        "simtlab: cannot find the course repository (a folder with pyproject.toml and "
        "solutions/ or chapters/); run from inside it or pass --solutions/--chapters"
    )


def _cmd_build(args: argparse.Namespace, extra: list[str]) -> int:
    from .notebooks.build import MasterNotebookError, build_all

    solutions = Path(args.solutions) if args.solutions else repo_root() / "solutions"
    chapters = Path(args.chapters) if args.chapters else repo_root() / "chapters"
    try:
        problems = build_all(solutions, chapters, check=args.check)
    except (MasterNotebookError, FileNotFoundError) as e:
        print(f"simtlab build: {e}", file=sys.stderr)
        return 2

    extras = [p for p in problems if p.kind == "extra"]
    if args.check:
        if problems:
            print(f"simtlab build --check: {len(problems)} student notebook(s) out of sync with {solutions}:")
            for p in problems:
                print(f"  - {p}")
            print("run `simtlab build` to rebuild them")
            return 1
        print(f"simtlab build --check: {chapters} is in sync with {solutions}")
        return 0

    written = [p for p in problems if p.fixed]
    for p in written:
        print(f"wrote {p.path} ({'new' if p.kind == 'missing' else 'was out of date'})")
    for p in extras:
        print(f"warning: {p}", file=sys.stderr)
    if not written:
        print(f"{chapters} was already in sync with {solutions}")
    return 0


def _cmd_open(args: argparse.Namespace, extra: list[str]) -> int:
    chapters = Path(args.chapters) if args.chapters else repo_root() / "chapters"
    if not chapters.is_dir() or not any(chapters.glob("*.ipynb")):
        print(f"simtlab open: no notebooks in {chapters}; run `simtlab build` first", file=sys.stderr)
        return 2
    if extra and extra[0] == "--":
        extra = extra[1:]
    cmd = [sys.executable, "-m", "jupyter", "lab", "--notebook-dir", str(chapters), *extra]
    return _run(cmd, cwd=chapters)


def _run(cmd: list[str], cwd: Path) -> int:
    """Run ``cmd`` in ``cwd`` and return its exit status (Ctrl-C goes to the child)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=os.environ.copy())
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:  # JupyterLab handles its own Ctrl-C; wait for it to stop
            continue


_COMMANDS = {"build": _cmd_build, "open": _cmd_open}
# commands that pass the arguments they do not know on to another program
_FORWARDS_EXTRA = {"open"}


def _make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="simtlab", description="SIMT Lab: an interactive CUDA course.", allow_abbrev=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    b = sub.add_parser(
        "build",
        allow_abbrev=False,
        help="build the student notebooks in chapters/ from the masters in solutions/",
        description="Build chapters/X.ipynb (student version) from every solutions/X.ipynb (master).",
    )
    b.add_argument("--check", action="store_true", help="write nothing; exit 1 if chapters/ is out of sync")
    b.add_argument("--solutions", metavar="DIR", help="folder of master notebooks (default: <repo>/solutions)")
    b.add_argument("--chapters", metavar="DIR", help="folder of student notebooks (default: <repo>/chapters)")

    o = sub.add_parser(
        "open",
        allow_abbrev=False,
        help="start JupyterLab on the chapters/ folder (other arguments go to jupyter lab)",
        description="Run `python -m jupyter lab --notebook-dir <chapters>` in the chapters folder; "
        "arguments simtlab does not know are passed to jupyter lab.",
    )
    o.add_argument("--chapters", metavar="DIR", help="folder of student notebooks (default: <repo>/chapters)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _make_parser()
    args, extra = parser.parse_known_args(sys.argv[1:] if argv is None else list(argv))
    if extra and args.command not in _FORWARDS_EXTRA:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return _COMMANDS[args.command](args, extra)


if __name__ == "__main__":
    sys.exit(main())
