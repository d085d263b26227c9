"""``simtlab grade``: its arguments and what it prints (``simtlab.cli`` hooks it in)."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

__all__ = ["add_grade_parser", "run_grade"]


def add_grade_parser(sub) -> argparse.ArgumentParser:
    g = sub.add_parser(
        "grade",
        allow_abbrev=False,
        help="grade a folder of submitted notebooks against the masters in solutions/",
        description="Grade SUBMISSIONS (one NAME.ipynb per student, or one folder per student) against the "
        "masters: each submission is rebuilt from its master (only the answer cells come from the student), "
        "run under nbval in its own process, and scored. Writes OUT/gradebook.csv, OUT/feedback/<student>.md "
        "and OUT/results/<student>.json; students already graded in OUT are skipped unless --regrade. "
        "Exit status 0 when grading completed, whatever the grades; 1 when a grader error kept some "
        "student from being graded; 2 for a bad setup. See docs/INSTRUCTORS.md.",
    )
    g.add_argument("submissions", metavar="SUBMISSIONS", help="folder of submissions (never written to)")
    g.add_argument("--out", required=True, metavar="DIR", help="where the gradebook and feedback go")
    g.add_argument("--solutions", metavar="DIR", help="folder of master notebooks (default: <repo>/solutions)")
    g.add_argument("--jobs", type=int, default=0, metavar="N",
                   help="submissions graded at once (default: one per CPU core)")
    g.add_argument("--cell-timeout", type=float, default=60.0, metavar="S",
                   help="seconds one cell may run (default: 60)")
    g.add_argument("--notebook-timeout", type=float, default=None, metavar="S",
                   help="seconds a whole notebook may run, kernel start included (default: 10 x --cell-timeout)")
    g.add_argument("--memory-limit", type=float, default=4.0, metavar="GIB",
                   help="data memory each notebook's kernel may use, in GiB (default: 4; 0: no limit)")
    g.add_argument("--kernel", default="python3", metavar="NAME",
                   help="Jupyter kernel that runs the notebooks (default: python3)")
    g.add_argument("--regrade", action="store_true", help="grade again students already graded in --out")
    g.add_argument("--uids", metavar="FIRST-LAST",
                   help="as root: the uids students' code runs as, one per run at a time (default: 61000-61255; "
                        "uids without a passwd entry, used by nothing else)")
    g.add_argument("--no-feedback-run", action="store_true",
                   help="skip nbval's run of each notebook (it gives feedback flags, never points; it needs "
                        "root, to run students' code as a uid of its own)")
    return g


def _need(module: str, why: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        from ..paths import install_command

        return f"{module} is not installed ({why}); install the grading tools with: {install_command('grade')}"
    return None


def run_grade(args: argparse.Namespace, repo_root) -> int:
    missing = [m for m in (
        _need("nbval", "it runs the notebooks"), _need("pytest", "nbval is a pytest plugin"),
        _need("ipykernel", "the kernel that runs the notebooks")) if m]
    if missing:
        for m in missing:
            print(f"simtlab grade: {m}", file=sys.stderr)
        return 2
    for name in ("jobs", "cell_timeout", "notebook_timeout", "memory_limit"):
        value = getattr(args, name)
        if value is not None and value < 0 or (name == "cell_timeout" and value == 0):
            print(f"simtlab grade: --{name.replace('_', '-')} must be positive, got {value}", file=sys.stderr)
            return 2

    from ..notebooks.build import MasterNotebookError
    from .contain import parse_uid_range
    from .gradebook import GradeOptions, GradingSetupError, grade_folder, student_row

    try:
        uids = parse_uid_range(args.uids) if args.uids else None
    except ValueError as e:
        print(f"simtlab grade: --uids: {e}", file=sys.stderr)
        return 2

    solutions = Path(args.solutions) if args.solutions else repo_root() / "solutions"
    opts = GradeOptions(
        kernel=args.kernel, cell_timeout=args.cell_timeout, notebook_timeout=args.notebook_timeout,
        memory_limit=int(args.memory_limit * 2**30), jobs=args.jobs, regrade=args.regrade,
        feedback_run=False if args.no_feedback_run else None, uids=uids,
    )

    def progress(student, result, skipped):
        if skipped:
            print(f"  skipped {student} (graded already; --regrade grades again)", flush=True)
        else:
            flags = [f for c in result.get("chapters", []) for f in c["flags"]] + result.get("flags", [])
            print(f"  graded  {student}: {result['total']:g} points" + (f" ({'; '.join(flags)})" if flags else ""),
                  flush=True)

    jobs = opts.jobs or os.cpu_count() or 1
    print(f"simtlab grade: {args.submissions} against {solutions} ({jobs} at a time, "
          f"{opts.cell_timeout:g} s per cell, {opts.whole_timeout:g} s per notebook)", flush=True)
    _print_isolation(opts)
    try:
        report = grade_folder(args.submissions, args.out, solutions, opts, progress=progress)
    except (FileNotFoundError, MasterNotebookError, ValueError, GradingSetupError) as e:
        print(f"simtlab grade: {e}", file=sys.stderr)
        return 2

    cols = report["columns"]
    rows = [(r["student"], student_row(r, cols)) for r in report["results"]]
    width = max([len("student")] + [len(s) for s, _ in rows])
    print()
    print(f"{'student':<{width}}  {'points':>9}  flags")
    for student, row in sorted(rows, key=lambda x: x[0].lower()):
        flags = "; ".join(row["flags"])
        if len(flags) > 100:
            flags = flags[:97] + "..."
        print(f"{student:<{width}}  {row['total']:>4g}/{row['max']:<4g}  {flags}")
    print()
    for path in report["ignored"]:
        print(f"ignored {path} (not a notebook or a folder)")
    for student in report.get("unverified", []):
        print(f"note: {student}'s stored result was not written by this grader (changed, forged or deleted); "
              "graded again")
    for student in report["changed"]:
        print(f"note: {student}'s files changed since they were graded; --regrade grades them again")
    out = Path(args.out)
    print(f"gradebook: {report['gradebook']}")
    print(f"feedback:  {out / 'feedback'}/<student>.md    details: {out / 'results'}/<student>.json")
    errors = [r["student"] for r in report["results"] if r.get("grader_error")]
    if errors:
        print(f"simtlab grade: grader error for {', '.join(errors)} (see their results/*.json); "
              "they are graded again on the next run", file=sys.stderr)
        return 1
    return 0


def _print_isolation(opts) -> None:
    """What contains each run here, and what does not (docs/INSTRUCTORS.md, section 6)."""
    from . import contain

    if opts.uids:
        contain.use_uids(*opts.uids)
    iso = contain.isolation(opts.memory_limit)
    if iso["uids"]:
        print(f"isolation: each run as its own uid ({iso['uids']}), namespaces: {iso['namespaces']}; "
              f"cgroup: {iso['cgroup']}", flush=True)
    for line in iso["missing"]:
        print(f"isolation: {line}", flush=True)
