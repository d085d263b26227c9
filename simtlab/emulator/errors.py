"""Every kernel error the emulator raises: each names where it happened and how to fix it."""

from __future__ import annotations


class EmulationError(Exception):
    """Base class of every kernel error found by the emulator.

    Attributes give the place of the fault so that exercise checks and tests can point at it:
    ``block`` and ``thread`` are ``(x, y, z)`` tuples (or ``None`` for launch errors),
    ``line`` the kernel source line number, ``source`` its text and ``fix`` a suggestion.
    """

    title = "kernel error"

    def __init__(self, problem: str, *, block=None, thread=None, line=None, source=None,
                 function=None, fix: str | None = None):
        self.problem = problem
        self.block = block
        self.thread = thread
        self.line = line
        self.source = source
        self.function = function
        self.fix = fix
        super().__init__(self._format())

    def _format(self) -> str:
        parts = [f"{self.title}: {self.problem}"]
        where = []
        if self.block is not None:
            where.append(f"block {tuple(self.block)}")
        if self.thread is not None:
            where.append(f"thread {tuple(self.thread)}")
        if where:
            parts.append("  at " + ", ".join(where))
        if self.line is not None:
            fn = f" in {self.function}()" if self.function else ""
            src = f": {self.source.strip()}" if self.source else ""
            parts.append(f"  line {self.line}{fn}{src}")
        if self.fix:
            parts.append(f"  fix: {self.fix}")
        return "\n".join(parts)


class LaunchError(EmulationError):
    """The launch itself is impossible on the hardware (block too large, grid too large...)."""

    title = "launch error"


class CompileError(EmulationError):
    """Code the emulator could run but numba would refuse to compile for a GPU."""

    title = "the kernel would not compile for a GPU"


class OutOfBoundsError(EmulationError):
    """An index outside the array, negative indices included."""

    title = "out-of-bounds access"
    array: str | None = None      # the array's name and the index, when an access (not a launch) failed
    index = None


class BarrierError(EmulationError):
    """A ``syncthreads`` that not every thread of the block reaches (a divergent barrier)."""

    title = ("divergent barrier: undefined behaviour (may hang or silently give wrong results; "
             "a GPU may even complete it)")


class WarpCollectiveError(EmulationError):
    """A shuffle, vote or ``syncwarp`` whose lanes disagree or do not all arrive."""

    title = "warp collective error"


class UninitializedReadError(EmulationError):
    """A read of shared memory that no thread wrote (``array``: its name, ``index``: the element)."""

    title = "read of uninitialised shared memory"
    array: str | None = None
    index = None


class RunawayKernelError(EmulationError):
    """The kernel ran past its step or time budget: most likely an endless loop."""

    title = "runaway kernel"


class InterpretationStopped(EmulationError):
    """Interpretation only (grading: :func:`simtlab.emulator.launch.interpret_only`): the vector
    engine stopped (an error it leaves the greenlet engine to report, or a construct outside
    its subset), and no other engine may run the kernel's Python. ``manual``: True when the
    kernel may be right and only a person can tell (a construct, not an error)."""

    title = "kernel not interpreted"

    def __init__(self, problem: str, *, manual: bool, **where):
        self.manual = manual
        super().__init__(problem, **where)


class UntracedSourceWarning(UserWarning):
    """A device function whose source cannot be read runs, but its lines are not traced."""


class KernelException(EmulationError):
    """A Python exception raised by the kernel's own code (its ``__cause__`` is the original)."""

    title = "exception in kernel"


__all__ = [
    "EmulationError", "LaunchError", "CompileError", "OutOfBoundsError", "BarrierError",
    "WarpCollectiveError", "UninitializedReadError", "RunawayKernelError", "KernelException",
]
