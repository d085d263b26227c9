"""SIMT Lab: learn to write GPU kernels, with or without a GPU.

``simtlab.emulate`` runs a numba-cuda kernel on the CPU warp by warp and records every memory
access; ``simtlab.launch`` runs it on the GPU when one is usable, else on the emulator.
"""

from .emulator import (BarrierError, CompileError, EmulationError, KernelException, LaunchError,
                       OutOfBoundsError, Run, RunawayKernelError, UninitializedReadError,
                       UntracedSourceWarning, WarpCollectiveError, emulate)
from .cuda_c_kernels import cuda_c     # CUDA C kernels on the CPU (NVRTC -> PTX engine)
from .twins import compare_engines, compare_network, compare_twins   # numba kernels and their CUDA C twins, traced side by side

__version__ = "0.1.0"


_BACKEND_NAMES = ("gpu_available", "active_backend", "launch", "backend_banner", "show_backend")


def __getattr__(name):
    # The GPU probe and the plotting stack load only when asked for: `import simtlab` stays
    # fast and never touches a GPU driver.
    if name in _BACKEND_NAMES:
        from . import backend
        return getattr(backend, name)
    if name == "playground":
        # the package is callable: simtlab.playground(kernel, ...). Not `from . import`: that
        # asks this module for the attribute first, which would land here again.
        import importlib
        return importlib.import_module(".playground", __name__)
    if name == "show_source":
        from .source import show_source
        return show_source
    raise AttributeError(f"module 'simtlab' has no attribute {name!r}")


def load_ipython_extension(ipython):
    """``%load_ext simtlab``: registers the ``%%simt`` cell magic (the kernel playground)."""
    from .playground.magic import register
    register(ipython)


def _register_magic_in_notebook():
    # Inside IPython (a notebook), `import simtlab` is enough for %%simt; IPython is not
    # imported here when it is not already loaded, so plain scripts stay light.
    import sys
    if "IPython" not in sys.modules:
        return
    try:
        from IPython import get_ipython
        ip = get_ipython()
        if ip is not None and "simt" not in ip.magics_manager.magics["cell"]:
            load_ipython_extension(ip)
    except Exception:                  # noqa: BLE001 - a failed registration must not break the import
        pass


_register_magic_in_notebook()

__all__ = ["playground", "load_ipython_extension", "emulate", "cuda_c", "compare_engines", "compare_twins", "compare_network", "Run", "EmulationError", "LaunchError", "CompileError", "OutOfBoundsError",
           "BarrierError", "WarpCollectiveError", "UninitializedReadError",
           "RunawayKernelError", "KernelException", "UntracedSourceWarning", "show_source", "__version__",
           *_BACKEND_NAMES]


def __dir__():
    # the names loaded on first use (__getattr__) are public too: dir() and tab completion list them
    return sorted(set(globals()) | set(__all__))
