"""The ``simtlab`` command.

    simtlab build [--check] [--force] [--solutions DIR] [--chapters DIR]
        build the student notebooks in chapters/ from the masters in solutions/;
        with --check write nothing and exit 1 when they are out of sync; a notebook in
        chapters/ holding outputs or edited answers is never overwritten (exit 1) unless
        --force, which first saves a timestamped backup in chapters/.backup/
    simtlab open [--chapters DIR] [--work DIR] [--no-lab] [JUPYTER ARGS ...]
        copy each chapter that is not there yet into the student's work folder (default
        <repo>/work/ in a checkout, ./simtlab-work/ when installed from a wheel), never
        overwriting a copy; when a chapter's template has changed
        since the copy was made, save it beside the copy as NN_name.new.ipynb; then start
        JupyterLab in the work folder, with the course's defaults (simtlab/jupyter_settings.py)

    simtlab progress [--chapters DIR] [--work DIR]
        each chapter's exercises in the work folder: passed, failed, not written, not checked
        (from the check outputs saved in the notebooks)
    simtlab reset CHAPTER [--chapters DIR] [--work DIR]
        start a chapter again: the student's copy goes to <work>/.backup/ first, never deleted

    simtlab grade SUBMISSIONS --out DIR [--solutions DIR] [--jobs N] [--cell-timeout S]
                  [--notebook-timeout S] [--memory-limit GIB] [--kernel NAME] [--regrade]
        grade a folder of submitted notebooks against the masters (see docs/INSTRUCTORS.md);
        writes DIR/gradebook.csv, DIR/feedback/<student>.md, DIR/results/<student>.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["main", "repo_root", "sync_work_folder"]

#: notebook metadata key recording which template a student's copy was made from
TEMPLATE_KEY = "simtlab_template"
#: the work folder, in the current folder, of a course installed from a wheel (no checkout)
WHEEL_WORK_FOLDER = "simtlab-work"


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
    from .notebooks.build import BACKUP_DIR, MasterNotebookError, StudentWorkError, build_all

    solutions = Path(args.solutions) if args.solutions else repo_root() / "solutions"
    chapters = Path(args.chapters) if args.chapters else repo_root() / "chapters"
    try:
        problems = build_all(solutions, chapters, check=args.check, force=args.force)
    except (MasterNotebookError, FileNotFoundError) as e:
        print(f"simtlab build: {e}", file=sys.stderr)
        return 2
    except StudentWorkError as e:
        print(f"simtlab build: {e}", file=sys.stderr)
        return 1
    if args.force and not args.check and (chapters / BACKUP_DIR).is_dir():
        print(f"backups of overwritten notebooks, if any, are in {chapters / BACKUP_DIR}")

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


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _stamp_of(path: Path) -> str | None:
    """The template hash a copy was made from (None when it carries none or cannot be read)."""
    try:
        with open(path, encoding="utf-8") as f:
            meta = json.load(f).get("metadata", {})
    except (OSError, ValueError):
        return None
    stamp = meta.get(TEMPLATE_KEY)
    return stamp.get("sha256") if isinstance(stamp, dict) else None


def _write_copy(template: Path, target: Path, digest: str) -> None:
    """Copy ``template`` to ``target`` (which must not exist), recording the template's hash."""
    with open(template, encoding="utf-8") as f:
        nb = json.load(f)
    nb.setdefault("metadata", {})[TEMPLATE_KEY] = {"name": template.name, "sha256": digest}
    text = json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    with open(target, "x", encoding="utf-8") as f:  # "x": fail rather than overwrite
        f.write(text)
    shutil.copystat(template, target)


def sync_work_folder(chapters: Path, work: Path) -> list[tuple[str, Path]]:
    """Bring the student's ``work`` folder up to date with the templates in ``chapters``.

    Never overwrites a file. Returns ``(action, path)`` pairs:

    - ``("copied", work/X.ipynb)``: the template was not there yet;
    - ``("new-template", work/X.new.ipynb)``: the template changed since ``work/X.ipynb``
      was copied (its recorded hash differs; for a copy without one, the template's file is
      newer), so the new template was saved beside the copy;
    - ``("pending", work/X.new.ipynb)``: that new template was already saved earlier;
    - ``("up-to-date", work/X.ipynb)``.
    """
    work.mkdir(parents=True, exist_ok=True)
    actions = []
    for template in sorted(chapters.glob("*.ipynb")):
        if template.name.startswith("."):
            continue
        digest = _sha256(template)
        copy = work / template.name
        if not copy.exists():
            _write_copy(template, copy, digest)
            actions.append(("copied", copy))
            continue
        stamp = _stamp_of(copy)
        changed = stamp != digest if stamp is not None else template.stat().st_mtime > copy.stat().st_mtime
        if not changed:
            actions.append(("up-to-date", copy))
            continue
        # the changed template goes beside the copy: X.new.ipynb, or X.new-2.ipynb, ... if taken
        stem = template.stem
        n, action = 1, None
        while action is None:
            candidate = work / (f"{stem}.new.ipynb" if n == 1 else f"{stem}.new-{n}.ipynb")
            if not candidate.exists():
                _write_copy(template, candidate, digest)
                action = ("new-template", candidate)
            elif _stamp_of(candidate) == digest:
                action = ("pending", candidate)
            n += 1
        actions.append(action)
    return actions


def _folders(args: argparse.Namespace, command: str) -> tuple[Path, Path] | None:
    """The chapter templates and the student's work folder of ``open``, ``progress`` and ``reset``
    (None, after saying why, when there are no templates)."""
    from .paths import PACKAGED_CHAPTERS, chapters_dir

    chapters = Path(args.chapters) if args.chapters else chapters_dir() or repo_root() / "chapters"
    if not chapters.is_dir() or not any(chapters.glob("*.ipynb")):
        print(f"simtlab {command}: no notebooks in {chapters}; run `simtlab build` first", file=sys.stderr)
        return None
    if args.work:
        work = Path(args.work)
    elif chapters.resolve() == PACKAGED_CHAPTERS.resolve():
        # installed from a wheel: the package folder is no place for the student's files
        work = Path.cwd() / WHEEL_WORK_FOLDER
    else:
        work = chapters.resolve().parent / "work"
    return chapters, work


def _cmd_progress(args: argparse.Namespace, extra: list[str]) -> int:
    from .exercises.progress import notebook_progress, progress_text

    folders = _folders(args, "progress")
    if folders is None:
        return 2
    chapters, work = folders
    print(f"your work folder: {work.resolve()}")
    total = done = 0
    for template in sorted(chapters.glob("[0-9][0-9]_*.ipynb")):
        copy = work / template.name
        with open(template, encoding="utf-8") as f:
            tnb = json.load(f)
        try:
            with open(copy, encoding="utf-8") as f:
                nb = json.load(f)
        except FileNotFoundError:
            nb = {"cells": []}
        except (OSError, ValueError) as e:
            print(f"{template.stem}: your copy cannot be read ({e})")
            continue
        statuses = notebook_progress(nb, tnb)
        if not statuses:
            continue
        total += len(statuses)
        done += sum(s.done for s in statuses)
        print(progress_text(template.stem, statuses))
    print(f"done: {done} of {total} exercises (from the check outputs saved in your notebooks: save a notebook "
          "after running its checks)")
    return 0


def _cmd_reset(args: argparse.Namespace, extra: list[str]) -> int:
    from .exercises.progress import find_template
    from .notebooks.build import _backup

    folders = _folders(args, "reset")
    if folders is None:
        return 2
    chapters, work = folders
    try:
        template = find_template(args.chapter, chapters)
    except LookupError as e:
        print(f"simtlab reset: {e}", file=sys.stderr)
        return 2
    copy = work / template.name
    if copy.exists():
        backup = _backup(copy)          # first the copy of the student's work, then the fresh chapter
        copy.unlink()
        print(f"your {copy.name} is saved as {backup}")
    work.mkdir(parents=True, exist_ok=True)
    _write_copy(template, copy, _sha256(template))
    print(f"{copy} is the course's chapter again, as new")
    return 0


def _cmd_open(args: argparse.Namespace, extra: list[str]) -> int:
    folders = _folders(args, "open")
    if folders is None:
        return 2
    chapters, work = folders
    print(f"your work folder: {work.resolve()}")
    for action, path in sync_work_folder(chapters, work):
        if action == "copied":
            print(f"new chapter: {path}")
        elif action in ("new-template", "pending"):
            original = path.name.split(".new")[0] + ".ipynb"
            print(f"note: the course's {original} has changed since you copied it. Your {original} is kept as it "
                  f"is; the new version is {path.name}, beside it (copy your answers over when you like).")
    if args.no_lab:
        return 0
    if extra and extra[0] == "--":
        extra = extra[1:]
    from .jupyter_settings import install_lab_defaults
    try:
        install_lab_defaults()  # every cell stays in the page (windowingMode "none"); see jupyter_settings
    except OSError as e:
        print(f"note: could not write the course's JupyterLab defaults ({e}); "
              "JupyterLab starts with its own", file=sys.stderr)
    cmd = [sys.executable, "-m", "jupyter", "lab", "--notebook-dir", str(work), *extra]
    if hasattr(os, "geteuid") and os.geteuid() == 0 and "--allow-root" not in extra:
        cmd.append("--allow-root")      # containers often run as root; Jupyter refuses it otherwise
    return _run(cmd, cwd=work)


def _run(cmd: list[str], cwd: Path) -> int:
    """Run ``cmd`` in ``cwd`` and return its exit status (Ctrl-C goes to the child)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=os.environ.copy())
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:  # JupyterLab handles its own Ctrl-C; wait for it to stop
            continue


def _cmd_grade(args: argparse.Namespace, extra: list[str]) -> int:
    from .grading.cli import run_grade

    return run_grade(args, repo_root)


_COMMANDS = {"build": _cmd_build, "open": _cmd_open, "progress": _cmd_progress, "reset": _cmd_reset,
             "grade": _cmd_grade}
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
    b.add_argument("--force", action="store_true",
                   help="overwrite notebooks in chapters/ that hold outputs or edited answers (after a backup)")
    b.add_argument("--solutions", metavar="DIR", help="folder of master notebooks (default: <repo>/solutions)")
    b.add_argument("--chapters", metavar="DIR", help="folder of student notebooks (default: <repo>/chapters)")

    o = sub.add_parser(
        "open",
        allow_abbrev=False,
        help="copy new chapters into your work folder and start JupyterLab there (other arguments go to jupyter lab)",
        description="Copy each chapters/X.ipynb into the work folder unless a copy is there already (a changed "
        "chapter is saved beside your copy as X.new.ipynb; nothing is ever overwritten), then run "
        "`python -m jupyter lab --notebook-dir <work>`; arguments simtlab does not know go to jupyter lab.",
    )
    o.add_argument("--chapters", metavar="DIR",
                   help="folder of chapter templates (default: <repo>/chapters, or the chapters the wheel carries)")
    o.add_argument("--work", metavar="DIR", help="your work folder (default: work/ beside the chapters folder "
                   f"in a checkout, ./{WHEEL_WORK_FOLDER}/ when simtlab is installed from a wheel)")
    o.add_argument("--no-lab", action="store_true", help="only update the work folder; do not start JupyterLab")

    pr = sub.add_parser("progress", allow_abbrev=False, help="which exercises of each chapter you have done",
                        description="List each chapter's exercises with their status (passed, failed, not written, "
                        "not checked), read from the check outputs saved in your work folder's notebooks.")
    r = sub.add_parser("reset", allow_abbrev=False, help="start a chapter again (your copy is kept in a backup)",
                       description="Move your copy of a chapter to <work>/.backup/NN_name.<time>.ipynb and put a fresh "
                       "copy of the course's chapter in its place. Nothing is deleted.")
    r.add_argument("chapter", help="the chapter: 1, 01, ch01 or its file name")
    for command in (pr, r):
        command.add_argument("--chapters", metavar="DIR", help="folder of chapter templates (as for open)")
        command.add_argument("--work", metavar="DIR", help="your work folder (as for open)")
    from .grading.cli import add_grade_parser

    add_grade_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _make_parser()
    args, extra = parser.parse_known_args(sys.argv[1:] if argv is None else list(argv))
    if extra and args.command not in _FORWARDS_EXTRA:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return _COMMANDS[args.command](args, extra)


if __name__ == "__main__":
    sys.exit(main())
