"""SIMT Lab: learn to write GPU kernels, with or without a GPU.

``simtlab.emulate`` runs a numba-cuda kernel on the CPU warp by warp and records every memory
access; ``simtlab.launch`` runs it on the GPU when one is usable, else on the emulator.
"""

from .emulator import (BarrierError, CompileError, EmulationError, KernelException, LaunchError,
                       OutOfBoundsError, Run, RunawayKernelError, UninitializedReadError,
                       UntracedSourceWarning, WarpCollectiveError, emulate)
from .exercises import NotWrittenYet, hint  # what a student answer cell's stub imports

__version__ = "0.1.0"


def __getattr__(name):
    # The GPU probe and the plotting stack load only when asked for: `import simtlab` stays
    # fast and never touches a GPU driver.
    if name in ("gpu_available", "active_backend", "launch", "backend_banner", "show_backend"):
        from . import backend
        return getattr(backend, name)
    if name == "show_source":
        from .source import show_source
        return show_source
    raise AttributeError(f"module 'simtlab' has no attribute {name!r}")


__all__ = ["emulate", "Run", "EmulationError", "LaunchError", "CompileError", "OutOfBoundsError",
           "BarrierError", "WarpCollectiveError", "UninitializedReadError",
           "RunawayKernelError", "KernelException", "UntracedSourceWarning", "show_source", "NotWrittenYet", "hint",
           "__version__"]
