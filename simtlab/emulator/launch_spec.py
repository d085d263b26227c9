"""One launch, checked and complete: what every engine gets in its constructor."""

from __future__ import annotations

import types
from dataclasses import dataclass

import numpy as np

from ..simt import WARP_SIZE

GLOBAL_ALIGN = 512        # cudaMalloc returns 256-byte (or better) aligned pointers
MAX_TRACE = 4_000_000     # memory accesses a traced run may record before it is stopped
TIME_LIMIT = 600.0        # seconds of wall-clock time: only a backstop (see iteration_limit)
# The default limit on loop iterations per thread (see iteration_limit): at least this many,
# more for a launch whose arrays hold more elements than this.
MIN_ITERATIONS = 2**20


@dataclass(frozen=True)
class Launch:
    """A kernel launch: the kernel's Python function, the launch shape, the arguments (NumPy
    arrays C-contiguous) and the emulator's options."""

    func: types.FunctionType
    griddim: tuple
    blockdim: tuple
    args: tuple
    arg_names: tuple
    shared_bytes: int = 0
    trace: bool = True
    order: str = "in_order"
    seed: int = 0
    time_limit: float | None = TIME_LIMIT
    max_iterations: int | None = None   # loop iterations per thread; None: iteration_limit's default
    max_trace: int = MAX_TRACE
    checks: bool = True
    trace_blocks: int | None = None   # trace only blocks with a linear id below this (a sample)
    progress: object = None           # progress(blocks done, blocks) after each block, or None
    started: float | None = None      # time.perf_counter() when emulate() began: time_limit counts
                                      # from there, across both engines' attempts

    def __post_init__(self):
        if self.max_iterations is not None and (isinstance(self.max_iterations, bool) or not
                                                isinstance(self.max_iterations, int)
                                                or self.max_iterations < 1):
            raise ValueError(f"max_iterations must be None (the default limit) or a number of "
                             f"loop iterations >= 1, not {self.max_iterations!r}")
        if self.time_limit is not None and not self.time_limit > 0:
            raise ValueError(f"time_limit must be None (no wall-clock limit) or seconds > 0, "
                             f"not {self.time_limit!r}")
        if self.order not in ("in_order", "random"):
            raise ValueError("order must be 'in_order' or 'random'")
        if not self.checks and self.trace:
            raise ValueError("checks=False needs trace=False: the trace is recorded by the checks")

    @property
    def threads_per_block(self) -> int:
        x, y, z = self.blockdim
        return x * y * z

    @property
    def warps_per_block(self) -> int:
        return -(-self.threads_per_block // WARP_SIZE)

    @property
    def num_blocks(self) -> int:
        x, y, z = self.griddim
        return x * y * z

    @property
    def iteration_limit(self) -> int:
        """The most loop iterations one thread may run (every pass through the body of a
        ``for`` or ``while`` loop, in the kernel and the device functions it calls, counts
        one): ``max_iterations``, or by default the larger of ``MIN_ITERATIONS`` and the
        elements of the launch's arrays. The same count on both engines, traced or not,
        however busy the machine: a kernel that loops more than that is stopped as runaway.
        A thread of a correct kernel rarely loops more often than there are elements to
        work on (a grid-stride loop, one thread summing an array); a kernel stuck in a loop
        reaches the limit in seconds."""
        if self.max_iterations is not None:
            return self.max_iterations
        elements = sum(a.size for a in self.args if isinstance(a, np.ndarray))
        return max(MIN_ITERATIONS, elements)
