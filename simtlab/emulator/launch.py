"""``emulate()``: check a launch, hand it to an engine, return the run."""

from __future__ import annotations

import numpy as np

from .binding import plain_function
from .errors import EmulationError, LaunchError
from .launch_spec import MAX_TRACE, Launch
from .limits import as_dim3, check_launch
from .run import Run
from .scheduler import Scheduler


def emulate(kernel, griddim, blockdim, *args, shared_bytes: int = 0, trace=True,
            order: str = "in_order", seed: int = 0, time_limit: float | None = 20.0,
            max_steps: int = 1_000_000, max_trace: int = MAX_TRACE, checks: bool = True,
            trace_blocks: int | None = None, progress=None) -> Run:
    """Run a numba-cuda kernel on the CPU, warp by warp, and return its :class:`Run`.

    NumPy arrays among ``args`` are the kernel's global memory and are updated in place.
    ``trace``: True (every memory access and every executed line) or False (fastest).
    ``order="random"`` runs blocks, warps and lanes in an order drawn from ``seed``.
    ``checks=False`` (only with ``trace=False``) hands the kernel plain NumPy arrays: the
    fastest mode, for kernels already known to be correct. NumPy still stops an index past
    the end, but negative indices wrap and reads of unwritten shared memory go unnoticed.
    ``trace_blocks=N`` traces only the blocks with linear id below N (the rest run with checks
    but unrecorded: a sample of a large launch). ``progress(done, total)`` is called after each
    block. When the kernel fails, the ``EmulationError``'s ``.run`` is the partial :class:`Run`
    (the trace up to the fault), so a caller can still show what happened before it.
    """
    if not checks and trace:
        raise ValueError("checks=False needs trace=False: the trace is recorded by the checks")
    func = plain_function(kernel)
    griddim = as_dim3(griddim, "griddim")
    blockdim = as_dim3(blockdim, "blockdim")
    check_launch(griddim, blockdim, int(shared_bytes))
    nparams = func.__code__.co_argcount
    if len(args) != nparams and not func.__defaults__:
        names = ", ".join(func.__code__.co_varnames[:nparams])
        raise LaunchError(f"{func.__name__}({names}) takes {nparams} arguments, "
                          f"the launch passes {len(args)}",
                          fix="pass one argument per kernel parameter")

    kernel_args, names, copy_back = [], [], []
    for pos, value in enumerate(args):
        if hasattr(value, "__cuda_array_interface__") and not isinstance(value, np.ndarray):
            raise LaunchError(f"argument {pos} is a GPU array ({type(value).__name__})",
                              fix="the emulator works on NumPy arrays: pass a NumPy array "
                                  "(e.g. cupy.asnumpy(x) or x.copy_to_host())")
        names.append(func.__code__.co_varnames[pos] if pos < nparams else f"arg{pos}")
        if isinstance(value, np.ndarray) and not value.flags.c_contiguous:
            data = np.ascontiguousarray(value)
            copy_back.append((value, data))
            value = data
        kernel_args.append(value)
    launch = Launch(func, griddim, blockdim, tuple(kernel_args), tuple(names),
                    shared_bytes=int(shared_bytes), trace=bool(trace), order=order, seed=seed,
                    time_limit=time_limit, max_steps=max_steps, max_trace=max_trace,
                    checks=checks, trace_blocks=trace_blocks, progress=progress)
    sched = Scheduler(launch)
    try:
        trace_ = sched.run()
    except EmulationError as exc:
        exc.run = Run(sched.trace(), func.__name__)       # the trace up to the fault
        raise
    finally:
        for original, data in copy_back:
            original[...] = data
    return Run(trace_, func.__name__)
