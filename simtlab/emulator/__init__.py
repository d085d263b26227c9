"""The SIMT emulator: numba-cuda kernels on the CPU, warp by warp, with a full trace."""

from ..simt import KINDS, SPACES
from .errors import (BarrierError, CompileError, EmulationError, KernelException, LaunchError,
                     OutOfBoundsError, RunawayKernelError, UninitializedReadError,
                     UntracedSourceWarning, WarpCollectiveError)
from .launch import emulate
from .memory import ArrayInfo
from .run import Run

__all__ = ["emulate", "Run", "ArrayInfo", "SPACES", "KINDS", "EmulationError", "LaunchError", "CompileError",
           "OutOfBoundsError", "BarrierError", "WarpCollectiveError", "UninitializedReadError",
           "RunawayKernelError", "KernelException", "UntracedSourceWarning"]
