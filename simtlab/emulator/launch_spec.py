"""One launch, checked and complete: what every engine gets in its constructor."""

from __future__ import annotations

import types
from dataclasses import dataclass

from ..simt import WARP_SIZE

GLOBAL_ALIGN = 512        # cudaMalloc returns 256-byte (or better) aligned pointers
MAX_TRACE = 4_000_000     # memory accesses a traced run may record before it is stopped


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
    time_limit: float | None = 20.0
    max_steps: int = 1_000_000
    max_trace: int = MAX_TRACE
    checks: bool = True
    trace_blocks: int | None = None   # trace only blocks with a linear id below this (a sample)
    progress: object = None           # progress(blocks done, blocks) after each block, or None

    def __post_init__(self):
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
