"""Colours and wrapping for the HTML the course writes: cards, tables, notes, verdicts.

Every text and surface colour is one of JupyterLab's theme variables (``var(--jp-...)``), so
the course's HTML follows the theme the student picked: dark text on light surfaces in
"JupyterLab Light", light text on dark surfaces in "JupyterLab Dark". The value after the
comma in each ``var()`` is the light theme's, for a page without JupyterLab's variables
(nbconvert's HTML, another notebook front end).

Colours of meaning (error red, pass green, "worse" orange) are the theme's own colour mixed
with the theme's strongest text colour (black in the light theme, white in the dark one): the
theme's red and green alone are too pale on a light grey surface and too dark on a dark one
(``--jp-error-color1`` is #d32f2f, contrast 4.3 on the light theme's #eee, and #f44336, 2.7 on
the dark theme's #424242). Mixed, they keep WCAG's 4.5:1 for text on both themes' surfaces and
on the tinted surfaces below (tests/test_browser.py measures it in Chromium, both themes).

Wide content wraps instead of being cut: an ipywidgets ``HTML`` sizes its content to the
widest unbreakable thing in it, so one long ``white-space:pre`` line of source made every
paragraph of the races tab as wide as that line, and the tab cut them mid-word. Code cells
wrap (``CODE_WRAP``) and tables of numbers keep their numbers on one line (``NO_WRAP``).
"""

from __future__ import annotations

#: body text and the quieter text of notes (JupyterLab's own font colours)
TEXT = "var(--jp-ui-font-color1,rgba(0,0,0,.87))"
MUTED = "var(--jp-ui-font-color2,rgba(0,0,0,.54))"
#: the page's surface, and a raised one (a table's function row)
SURFACE = "var(--jp-layout-color1,#fff)"
RAISED = "var(--jp-layout-color2,#eee)"
#: the theme's strongest text colour: black in light themes, white in dark ones
_STRONGEST = "var(--jp-content-font-color0,#000)"

_ERROR = "var(--jp-error-color1,#d32f2f)"
_SUCCESS = "var(--jp-success-color1,#388e3c)"
_WARN = "var(--jp-warn-color1,#f57c00)"


def _mix(colour: str, percent: int, other: str) -> str:
    return f"color-mix(in srgb,{colour} {percent}%,{other})"


#: text of meaning: an error or a race, a pass, a number that is worse than it could be
ERROR = _mix(_ERROR, 60, _STRONGEST)
SUCCESS = _mix(_SUCCESS, 60, _STRONGEST)
WARN = _mix(_WARN, 60, _STRONGEST)
#: an error card's surface and a source line marked as faulty or racy: the page's surface tinted red
ERROR_SURFACE = _mix(_ERROR, 10, SURFACE)
ERROR_MARK = _mix(_ERROR, 20, SURFACE)
#: the coloured edge of a card (decoration: no text is drawn on it)
ERROR_EDGE = _ERROR
HINT_EDGE = _WARN
NOTE_EDGE = _WARN

#: source code in a table cell: keeps its indentation, wraps where the cell ends
CODE_WRAP = "white-space:pre-wrap;overflow-wrap:anywhere"
#: a number or a short label that must not break
NO_WRAP = "white-space:nowrap"
#: a card's text: the theme's font and colour, long words break instead of overflowing
CARD_TEXT = f"color:{TEXT};font-family:var(--jp-ui-font-family,sans-serif);overflow-wrap:anywhere"


def error_card_style() -> str:
    """The style of a card that reports something wrong (a failed check, an emulator error)."""
    return (f"border-left:6px solid {ERROR_EDGE};background:{ERROR_SURFACE};{CARD_TEXT};"
            "padding:8px 12px;margin:4px 0;line-height:1.5")


def coloured(text_html: str, colour: str, bold: bool = False) -> str:
    """``text_html`` (already escaped) in ``colour``, one of this module's colours."""
    inner = f"<b>{text_html}</b>" if bold else text_html
    return f"<span style='color:{colour}'>{inner}</span>"


__all__ = ["TEXT", "MUTED", "SURFACE", "RAISED", "ERROR", "SUCCESS", "WARN", "ERROR_SURFACE", "ERROR_MARK",
           "ERROR_EDGE", "HINT_EDGE", "NOTE_EDGE", "CODE_WRAP", "NO_WRAP", "CARD_TEXT", "error_card_style",
           "coloured"]
