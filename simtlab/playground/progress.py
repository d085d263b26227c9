"""A progress bar for long emulations: it appears only after the first second, counts blocks
and estimates the time left."""

from __future__ import annotations

import time

#: a run shorter than this shows no bar at all
SHOW_AFTER_S = 1.0


class Progress:
    """``progress(done, total)`` callback for ``emulate``: fills ``bar`` (an ipywidgets
    IntProgress, hidden until the run has taken ``SHOW_AFTER_S``) with the blocks done and
    the time left at the rate so far ("12/64 blocks, ~8 s left"); ``close()`` hides it."""

    def __init__(self, bar, description: str = "", show_after: float | None = None,
                 standalone: bool = False):
        self.bar = bar
        # the first run happens before the playground's widget is on the page: the bar is then
        # shown in the cell's output on its own (inside IPython)
        self.standalone = standalone
        self.description = description
        self.show_after = SHOW_AFTER_S if show_after is None else show_after
        self.t0 = time.perf_counter()
        self.shown = False
        self.updates = 0
        # where the rate is measured from: (time, blocks done then). A launch the greenlet
        # engine runs again reports from block 1 again: the rate restarts there
        self._since = (self.t0, 0)
        self._last_done = 0

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if done < self._last_done:
            self._since = (now, done)
        self._last_done = done
        if not self.shown and now - self.t0 < self.show_after:
            return
        self.updates += 1
        if not self.shown:
            self.shown = True
            self.bar.max = total
            self.bar.layout.display = ""
            if self.standalone:
                _display(self.bar)
        self.bar.value = done
        self.bar.description = f"{done}/{total} blocks{self._time_left(done, total, now)}"
        self.bar.style.description_width = "initial"      # the whole text, not cut at 80 px
        self.bar.tooltip = self.description

    def _time_left(self, done: int, total: int, now: float) -> str:
        start, done_then = self._since
        if done >= total or done <= done_then:
            return ""
        left = (now - start) / (done - done_then) * (total - done)
        return f", ~{_duration(left)} left"

    def close(self) -> None:
        self.bar.layout.display = "none"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    return f"{round(seconds / 60)} min"


def _display(widget) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    if get_ipython() is not None:
        display(widget)
