"""``emulate()``: check a launch, hand it to an engine, return the run."""

from __future__ import annotations

import os
import time
import warnings

import numpy as np

from .binding import plain_function
from .errors import EmulationError, InterpretationStopped, LaunchError
from .launch_spec import MAX_TRACE, TIME_LIMIT, Launch
from .limits import as_dim3, check_launch
from .run import Run
from .scheduler import Scheduler
from . import vector


#: set by :func:`interpret_only`: kernels run only on the vector engine's interpreter
_INTERPRET_ONLY = False

# what the vector engine stops on because the kernel is wrong (the check fails on it), not
# because it cannot follow the kernel (then a person must look)
_ERROR_STOPS = ("out-of-bounds", "division by zero", "unwritten shared memory", "loop iterations",
                "executed lines", "ran past time_limit", "write to constant", "atomic on constant",
                "indexed with non-integers")


def interpret_only() -> None:
    """From now on, in this process, a kernel runs only on the vector engine, which interprets
    its syntax tree: never on the greenlet engine, which executes the kernel's Python. A
    kernel the vector engine cannot run raises :class:`InterpretationStopped`. There is no way
    back: the grader's scoring process calls this first (``simtlab.grading.sandbox``)."""
    global _INTERPRET_ONLY
    _INTERPRET_ONLY = True


def interpreting_only() -> bool:
    return _INTERPRET_ONLY


def emulate(kernel, griddim, blockdim, *args, shared_bytes: int = 0, trace=True,
            order: str = "in_order", seed: int = 0, max_iterations: int | None = None,
            time_limit: float | None = TIME_LIMIT, max_trace: int = MAX_TRACE,
            checks: bool = True, engine: str | None = None, trace_blocks: int | None = None,
            progress=None, max_steps: int | None = None) -> Run:
    """Run a numba-cuda kernel on the CPU, warp by warp, and return its :class:`Run`.

    NumPy arrays among ``args`` are the kernel's global memory and are updated in place.
    ``trace``: True (every memory access and every executed line) or False (fastest).
    ``order="random"`` runs blocks, warps and lanes in an order drawn from ``seed``.
    ``checks=False`` (only with ``trace=False``) hands the kernel plain NumPy arrays: the
    fastest mode, for kernels already known to be correct. NumPy still stops an index past
    the end, but negative indices wrap and reads of unwritten shared memory go unnoticed.
    ``engine``: "greenlet" runs each thread as a greenlet (the reference); "vector" runs the
    lanes of whole blocks as NumPy vectors (much faster; kernels within its subset);
    "auto" picks vector when it can and says why not in ``run.engine_reason``. The default
    is "auto", or the environment variable SIMTLAB_ENGINE when it is set (for example
    SIMTLAB_ENGINE=greenlet to run a whole course or test session on the reference engine).
    Either way, any launch the vector engine cannot finish exactly as the greenlet engine
    would (an error, a race, a construct outside its subset) runs again on the greenlet
    engine from the original inputs, so results, traces and error messages are the same,
    with ``trace=True`` or ``trace=False`` (vector/order.py sees races without a trace).
    ``trace_blocks=N`` traces only the blocks with linear id below N (the rest run with every
    check, unrecorded: a sample of a large launch; ``run.traced_blocks`` says how many).
    ``progress(done, total)`` is called after each block, done = 1, 2, ... total (the vector
    engine runs blocks in chunks and reports a chunk's blocks when the chunk ends; a launch the
    greenlet engine runs again counts from 1 again). When the kernel fails, the
    ``EmulationError``'s ``.run`` is the partial :class:`Run` (the trace up to the fault).

    Runaway kernels: a thread that runs more than ``max_iterations`` loop iterations (passes
    through the body of a ``for`` or ``while`` loop, device functions included) is stopped
    with a ``RunawayKernelError``. The count is the same on both engines, traced or not, and
    on any machine, so a launch is stopped at the same thread, line and partial trace every
    time. The default (None) is scaled to the launch: the larger of 1,048,576 and the
    number of elements in the launch's arrays (``Launch.iteration_limit``). ``time_limit``
    is only a backstop, in seconds of wall-clock time (default 600; None: none), for
    launches so large that they run for minutes: its error says it is wall-clock time.
    ``max_steps`` is the former name of ``max_iterations``.
    """
    if max_steps is not None:
        warnings.warn("emulate(max_steps=) is now max_iterations= (loop iterations per "
                      "thread)", DeprecationWarning, stacklevel=2)
        if max_iterations is None:
            max_iterations = max_steps
    if getattr(kernel, "is_cuda_c", False):     # CUDA C: NVRTC's PTX runs in the PTX engine
        from .ptx.engine import emulate_cuda_c
        return emulate_cuda_c(kernel, griddim, blockdim, *args, shared_bytes=shared_bytes,
                              trace=trace, order=order, seed=seed, time_limit=time_limit,
                              max_iterations=max_iterations, max_trace=max_trace, checks=checks,
                              engine=engine, trace_blocks=trace_blocks, progress=progress)
    if engine is None:
        engine = os.environ.get("SIMTLAB_ENGINE", "auto")
    if engine not in ("auto", "vector", "greenlet"):
        raise ValueError(f"engine must be 'auto', 'vector' or 'greenlet', not {engine!r} "
                         "(from engine= or the environment variable SIMTLAB_ENGINE)")
    if not checks and trace:
        raise ValueError("checks=False needs trace=False: the trace is recorded by the checks")
    if trace_blocks is not None and (isinstance(trace_blocks, bool) or
                                     not isinstance(trace_blocks, (int, np.integer))
                                     or trace_blocks < 0):
        raise ValueError(f"trace_blocks must be None (trace every block) or a number of "
                         f"blocks >= 0, not {trace_blocks!r}")
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
                    time_limit=time_limit, max_iterations=max_iterations, max_trace=max_trace,
                    checks=checks, progress=progress, started=time.perf_counter(),
                    trace_blocks=None if trace_blocks is None else int(trace_blocks))
    try:
        trace_ = _run_engines(launch, engine)
    finally:
        for original, data in copy_back:
            original[...] = data
    return Run(trace_, func.__name__)


def _run_engines(launch: Launch, engine: str):
    if _INTERPRET_ONLY:
        return _interpret(launch)
    reason = None
    if engine == "greenlet":
        reason = "engine='greenlet' was asked for"
    elif launch.order == "random":
        reason = "order='random' shuffles threads one at a time, which only the greenlet " \
                 "engine does"
    else:
        why = vector.why_not(launch.func)
        if why is not None:
            reason = f"outside the vector engine's subset: {why}"
    if reason is None:
        inputs = [(a, a.copy()) for a in launch.args if isinstance(a, np.ndarray)]
        try:
            trace_ = _run_vector(launch, inputs)
            if launch.trace and _has_races(trace_):
                reason = "the kernel races: its result depends on the order threads run " \
                         "in, so the greenlet engine's order is kept"
            else:
                return trace_
        except vector.OrderDependent as stop:
            reason = f"the kernel races on {stop.array} (or retries a compare-and-swap " \
                     "there): its result depends on the order threads run in, so the " \
                     "greenlet engine's order is kept, traced or not"
        except vector.Fallback as stop:
            reason = f"the vector engine stopped ({stop}); the greenlet engine reports it"
        _restore(inputs)                      # start again from the launch's inputs
    sched = Scheduler(launch)
    try:
        trace_ = sched.run()
    except EmulationError as exc:
        partial = sched.trace()                            # the trace up to the fault
        partial.engine_reason = reason
        exc.run = Run(partial, launch.func.__name__)
        raise
    trace_.engine_reason = reason
    return trace_


def _interpret(launch: Launch):
    """The launch on the vector engine alone (see :func:`interpret_only`): a kernel outside its
    subset, or one it stops on, raises :class:`InterpretationStopped`; a racy kernel keeps the
    vector engine's trace, its races recorded (``trace.races``), for the check to report."""
    name = launch.func.__name__
    why = vector.why_not(launch.func)
    if why is not None:
        raise InterpretationStopped(f"{why}: outside what the grader interprets", manual=True,
                                    function=name)
    inputs = [(a, a.copy()) for a in launch.args if isinstance(a, np.ndarray)]
    try:
        trace_ = _run_vector(launch, inputs)
    except vector.Fallback as stop:
        reason = str(stop)
        error = any(word in reason for word in _ERROR_STOPS)
        raise InterpretationStopped(
            f"the kernel stopped: {reason}" if error else f"{reason}: outside what the grader interprets",
            manual=not error, function=name) from None
    if launch.trace:
        _has_races(trace_)
    trace_.engine_reason = "interpretation only (grading)"
    return trace_


def _run_vector(launch: Launch, inputs):
    """The vector engine's trace; its ``max_trace`` error carries the partial run the
    greenlet engine's would (a chunk of several blocks that passed it runs again, one block
    at a time from that chunk, to stop where the greenlet engine stops)."""
    again = {}
    try:
        while True:
            try:
                return vector.run(launch, **again)
            except vector.TraceOverflow as over:
                if "one_block_from" in again:
                    raise
                again.update(one_block_from=over.block,
                             reported=max(over.block, again.get("reported", 0)))
            except vector.UnloggedReads as missed:
                # an array the kernel was not expected to write is written after reads that
                # the order check did not keep: once more, keeping every array's reads
                if again.get("log_every_read"):
                    raise
                again.update(log_every_read=True,
                             reported=max(missed.block, again.get("reported", 0)))
            _restore(inputs)
    except EmulationError as exc:
        partial = getattr(exc, "partial_trace", None)
        if partial is not None:
            exc.run = Run(partial, launch.func.__name__)
        raise


def _restore(inputs):
    for array, saved in inputs:
        array[...] = saved


def _has_races(trace_) -> bool:
    from ..analysis.races import find_races
    from .run import Run
    run = Run(trace_, "")
    trace_.memory_table = trace_.memory()     # built once: the Run of the launch reuses it
    trace_.races = find_races(trace_.memory_table, run.arrays, run._unravel,
                              cas_sites=trace_.cas_sites)
    return bool(trace_.races[0])
