"""A progress bar for long emulations: it appears only after the first second."""

from __future__ import annotations

import time

#: a run shorter than this shows no bar at all
SHOW_AFTER_S = 1.0


class Progress:
    """``progress(done, total)`` callback for ``emulate``: fills ``bar`` (an ipywidgets
    IntProgress, hidden until the run has taken ``SHOW_AFTER_S``); ``close()`` hides it."""

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

    def __call__(self, done: int, total: int) -> None:
        if not self.shown and time.perf_counter() - self.t0 < self.show_after:
            return
        self.updates += 1
        if not self.shown:
            self.shown = True
            self.bar.max = total
            self.bar.layout.display = ""
            if self.standalone:
                _display(self.bar)
        self.bar.value = done
        self.bar.description = f"{done}/{total} blocks"
        self.bar.tooltip = self.description

    def close(self) -> None:
        self.bar.layout.display = "none"


def _display(widget) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    if get_ipython() is not None:
        display(widget)
