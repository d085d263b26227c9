"""Progressive hints: ``hint("ch05.sequential")`` gives a first hint, ``hint(..., 2)`` a stronger one.

The hints are written in the master notebooks, inside the answer's solution region, as
``### HINT 1: ...`` (a nudge: which idea to use) and ``### HINT 2: ...`` (how to use it);
``simtlab build`` moves them out of the code into the student answer cell's metadata
(``simtlab_hints``), so that the stub the student sees gives nothing away. ``hint`` reads them
from the course's chapters (those of the checkout, or those the wheel carries).
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from pathlib import Path

from ..html_theme import CARD_TEXT, HINT_EDGE, MUTED

__all__ = ["Hint", "hint", "course_hints"]

#: the cell metadata key `simtlab build` writes the hints to
HINTS_KEY = "simtlab_hints"


@dataclass(frozen=True)
class Hint:
    """One hint, shown by Jupyter as a short block of text."""

    exercise: str
    level: int          # 1 = the first (weakest) hint
    levels: int         # how many hints the exercise has
    text: str

    def __str__(self) -> str:
        more = (f'\n(hint("{self.exercise}", {self.level + 1}) gives a stronger one)'
                if self.level < self.levels else "\n(that was the last hint: the check's message says what is "
                "wrong with your answer)")
        return f"Hint {self.level} of {self.levels} for exercise {self.exercise}: {self.text}{more}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head, _, more = str(self).partition("\n")
        return (f'<div style="border-left:4px solid {HINT_EDGE};padding:4px 10px;{CARD_TEXT}">'
                f'<b>{html.escape(head.partition(": ")[0])}</b>: {html.escape(self.text)}'
                f'<div style="color:{MUTED}">{html.escape(more)}</div></div>')


_CACHE: dict[tuple[str, float], dict[str, list[str]]] = {}


def _notebook_hints(path: Path) -> dict[str, list[str]]:
    key = (str(path), path.stat().st_mtime)
    if key not in _CACHE:
        with open(path, encoding="utf-8") as f:
            cells = json.load(f).get("cells", [])
        found = {}
        for cell in cells:
            meta = cell.get("metadata", {})
            role = meta.get("simtlab") or {}
            if isinstance(role, dict) and role.get("role") == "answer" and meta.get(HINTS_KEY):
                found[str(role.get("id"))] = [str(h) for h in meta[HINTS_KEY]]
        _CACHE[key] = found
    return _CACHE[key]


def course_hints(chapters: str | Path | None = None) -> dict[str, list[str]]:
    """Every exercise's hints, weakest first: ``{exercise id: [hint 1, hint 2, ...]}``."""
    if chapters is None:
        from ..paths import chapters_dir

        chapters = chapters_dir()
        if chapters is None:
            raise FileNotFoundError("hint: cannot find the course's chapters (neither a checkout's chapters/ "
                                    "nor the ones an installed wheel carries); reinstall simtlab")
    hints: dict[str, list[str]] = {}
    for path in sorted(Path(chapters).glob("*.ipynb")):
        hints.update(_notebook_hints(path))
    return hints


def hint(exercise: str, level: int = 1, chapters: str | Path | None = None) -> Hint:
    """Hint number ``level`` (1 = the first, weakest) for ``exercise`` (its id, e.g. ``"ch05.sequential"``,
    the one its stub names). A level past the last gives the last hint, saying so."""
    all_hints = course_hints(chapters)
    if exercise not in all_hints:
        known = ", ".join(sorted(all_hints)) or "none"
        raise KeyError(f"no hints for exercise {exercise!r}: the exercises with hints are {known}")
    texts = all_hints[exercise]
    if isinstance(level, bool) or not isinstance(level, int) or level < 1:
        raise ValueError(f"hint level must be 1, 2, ... (1 is the first hint), got {level!r}")
    level = min(level, len(texts))
    return Hint(exercise, level, len(texts), texts[level - 1])
