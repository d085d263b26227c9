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
    """A thread ran more loop iterations than ``max_iterations`` (most likely an endless
    loop), or the launch ran past ``time_limit`` seconds of wall-clock time (the backstop).

    ``limit``: which of the two stopped it; ``count``: the iterations the thread ran, or the
    seconds; ``raise_to``: a larger value of that limit, which the fix suggests. ``advise``
    rewrites the fix for where the launch came from (the playground, ``%%simt``, an exercise
    check)."""

    title = "runaway kernel"
    limit: str | None = None
    count = None
    raise_to = None
    _cause = ""          # the fix's first part: what to look for
    _raise = ""          # its second part: when raising the limit is the fix, then how

    @classmethod
    def too_many_iterations(cls, limit: int, **where):
        err = cls(
            f"a thread ran {limit:,} loop iterations without finishing, the limit on loop "
            f"iterations per thread (max_iterations={limit:_}; every pass through a loop body "
            "counts one, on both engines, traced or not, however fast the machine is): most "
            "likely a loop that never ends", **where)
        err.limit, err.count, err.raise_to = "max_iterations", limit, 4 * limit
        err._cause = ("look for a loop whose condition never becomes false (a loop variable "
                      "that is not updated, or a thread waiting for a value no thread writes)")
        err._raise = "if the kernel is right and its threads loop that often, allow more:"
        return err.advise()

    @classmethod
    def out_of_time(cls, seconds: float, **where):
        err = cls(
            f"the launch ran longer than {seconds:g} s of wall-clock time (time_limit="
            f"{seconds:g}). Wall-clock time depends on how busy the machine is: a large launch "
            "on a slow or loaded machine can take this long with no loop running away "
            "(loops are stopped by max_iterations, which counts iterations, not seconds)",
            **where)
        err.limit, err.count, err.raise_to = "time_limit", seconds, 4 * seconds
        err._cause = "a smaller launch, or trace=False, runs faster"
        err._raise = "to wait longer, pass more seconds (None: no wall-clock limit):"
        return err.advise()

    def advise(self, how=None, *, instead: str | None = None):
        """Put in the fix how to pass the larger limit where the student is: ``how(name,
        value)`` writes it (default ``emulate(..., name=value)``); ``instead``: what to say
        where the student cannot change the limit (an exercise's check). Returns the error."""
        if instead is None:
            how = how or (lambda name, value: f"emulate(..., {name}={value})")
            value = f"{self.raise_to:_}" if isinstance(self.raise_to, int) else \
                f"{self.raise_to:g}"
            instead = f"{self._raise} {how(self.limit, value)}"
        self.fix = f"{self._cause}; {instead}"
        self.args = (self._format(),)
        return self


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
