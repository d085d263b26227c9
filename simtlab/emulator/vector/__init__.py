"""The vector engine: a block's threads (or a whole grid's) run as NumPy lanes.

``run(launch)`` returns the same ``Trace`` as the greenlet engine, or raises ``Fallback``
naming what it could not reproduce; ``why_not(func)`` says before the run whether a kernel is
within the subset. See ``interpreter.py`` for how statements run over lanes.
"""

from __future__ import annotations

from .engine import run
from .interpreter import TraceOverflow
from .order import OrderDependent, UnloggedReads
from .subset import why_not
from .values import Fallback

__all__ = ["run", "why_not", "Fallback", "TraceOverflow", "OrderDependent",
           "UnloggedReads"]
