"""Timeouts for the tests' subprocesses, browser waits and notebook cells, sized for a busy
machine (a helper module, not a test file).

CI runs on 2 cores beside other work (load 6-8), where each process gets a quarter of a core
or less: a step that takes a minute on an idle machine can take four. A timeout in a test
only stops something that hangs; it never measures speed (that is benchmarks/' job, as ratios
against a reference measured in the same run).
"""

from __future__ import annotations

#: how much slower than on an idle machine a step may run before a test calls it hung
BUSY_FACTOR = 4


def generous(seconds: float) -> float:
    """A timeout for a step that takes up to ``seconds`` on an idle machine."""
    return seconds * BUSY_FACTOR
