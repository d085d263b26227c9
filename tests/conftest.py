"""Test-session hooks shared by all test files (keep each one small and say whose it is)."""

from __future__ import annotations

import json
import time

_SESSION_START = time.time()


def pytest_terminal_summary(terminalreporter):
    """Browser test (tests/test_browser.py): where the screenshots are, and each chapter's times."""
    from browser_support import ARTIFACTS, RUN_TIMES

    try:
        if RUN_TIMES.stat().st_mtime < _SESSION_START:
            return  # written by an earlier session
        times = json.loads(RUN_TIMES.read_text())
    except (OSError, ValueError):
        return
    terminalreporter.section("chapters in the browser")
    terminalreporter.write_line(f"screenshots and run_times.json: {ARTIFACTS}")
    for chapter, t in sorted(times.items()):
        terminalreporter.write_line(
            f"{chapter}: Run All {t['run_all_s']:.1f} s (opening {t['open_s']:.1f} s), main widget "
            f"'{t['control']}' -> {t['picked']!r}: figure updated in {t['widget_update_s'] * 1000:.0f} ms")
