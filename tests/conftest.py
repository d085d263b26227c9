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
            f"'{t['control']}' -> {t['picked']!r}: figure updated in {t['widget_update_s'] * 1000:.0f} ms "
            f"(polled), {_ms(t.get('page_update_ms'))} from the change event to the new image's load")


def _ms(value) -> str:
    return "no load event" if value is None else f"{value:.0f} ms"


def pytest_configure(config):
    """tests/engines_support.py: SIMTLAB_ENGINES_AGREE=<log file> compares the greenlet and
    the vector engine on every emulator launch of the session."""
    import os
    log = os.environ.get("SIMTLAB_ENGINES_AGREE")
    if log:
        from engines_support import agreeing_run_engines
        from simtlab.emulator import launch
        launch._run_engines = agreeing_run_engines(log)
