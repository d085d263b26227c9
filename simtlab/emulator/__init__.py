"""The SIMT emulator: numba-cuda kernels on the CPU, warp by warp, with a full trace."""

from ..simt import KINDS, SPACES
from .errors import (BarrierError, CompileError, EmulationError, KernelException, LaunchError,
                     OutOfBoundsError, RunawayKernelError, UninitializedReadError,
                     UntracedSourceWarning, WarpCollectiveError)
from .heap import keep_freed_memory
from .launch import emulate
from .memory import ArrayInfo
from .run import Run

__all__ = ["emulate", "Run", "ArrayInfo", "SPACES", "KINDS", "EmulationError", "LaunchError", "CompileError",
           "OutOfBoundsError", "BarrierError", "WarpCollectiveError", "UninitializedReadError",
           "RunawayKernelError", "KernelException", "UntracedSourceWarning"]

keep_freed_memory()       # a traced launch's temporaries reuse freed pages (see heap.py)
