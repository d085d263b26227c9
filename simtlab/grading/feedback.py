"""The feedback file each student gets: which checks passed, and why the others failed.

It never holds the source of a hidden check or of a solution: each check's id and points,
and for a failure the message the grader kept (:func:`.secure.safe_message`: one line, capped,
withheld when it quotes the master; for a hidden check, the instructor's ``feedback`` only).
"""

from __future__ import annotations

__all__ = ["feedback_markdown"]


def _pts(n) -> str:
    n = int(n) if float(n).is_integer() else n
    return f"{n} point" + ("" if n == 1 else "s")


def feedback_markdown(result: dict) -> str:
    """The feedback of one student's result (as :func:`simtlab.grading.grade_folder` stores it)."""
    lines = [f"# Feedback for {result['student']}", ""]
    lines.append(f"**Total: {result['total']:g} / {result['max']:g} points**")
    lines.append("")
    for problem in result.get("problems", []):
        lines.append(f"- {problem}")
    if result.get("problems"):
        lines.append("")
    for chapter in result.get("chapters", []):
        got = sum(e["points"] for e in chapter["exercises"].values())
        top = sum(e["max"] for e in chapter["exercises"].values())
        lines.append(f"## {chapter['master']}: {got:g} / {top:g}")
        lines.append("")
        lines.append(f"Graded file: `{chapter['notebook']}`")
        lines.append("")
        for note in chapter.get("notes", []):
            lines.append(f"- {note}")
        if chapter.get("notes"):
            lines.append("")
        for exercise, info in chapter["exercises"].items():
            lines.append(f"### Exercise `{exercise}`: {info['points']:g} / {info['max']:g}")
            lines.append("")
            for check in info["checks"]:
                kind = "hidden check" if check["hidden"] else "check"
                head = f"{kind} `{check['id']}` ({_pts(check['max'])})"
                if check["passed"]:
                    lines.append(f"- passed: {head}")
                else:
                    message = (check.get("message") or "failed").replace("\n", " ").strip()
                    lines.append(f"- FAILED: {head}: {message}")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"
