"""One table of versions per topic, and one launch plan per version, for every path.

Each topic's kernel module (``kernels/<topic>.py``) declares ``VERSIONS``: a tuple of
:class:`Version`, one per numbered kernel version. A version names its kernel in the numba
module and in the CUDA C twin (``kernels/<topic>.cu``), its napkin math (bytes and FLOPs for
``n``), and its *plan*: the launches one whole run needs (grids, blocks, temporary arrays,
second passes, arrays to zero first). The same plan runs

- on the emulator (NumPy arrays): :func:`emulate`, or any ``launch(kernel, grid, block, *args)``
  function (``backend.launch`` on a GPU with host arrays) through :func:`run_plan`;
- on a GPU with CuPy arrays, numba-cuda or CUDA C: :func:`gpu_runner`, which the GPU tests
  and the benchmark (``simtlab/gpubench``) both use.

A plan is ``plan(version, impl, xp, *inputs, **options) -> (launches, out)``: ``impl`` is
"numba" or "cuda-c" (the emulator runs the numba kernel), ``xp`` the array module that
allocates temporaries (NumPy or CuPy), ``options`` the few sizes a student may change (blocks
per grid on the emulator). Size arguments for CUDA C are NumPy integer scalars in ``args``:
the CUDA C twin takes its sizes as trailing ints, the numba kernel reads them from the arrays'
shapes, so NumPy integers reach the CUDA C kernel only.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

IMPLS = ("numba", "cuda-c")

__all__ = ["IMPLS", "Launch", "Version", "find", "numba_args", "run_plan", "emulate", "gpu_runner",
           "copy_constants"]


@dataclass(frozen=True)
class Launch:
    """One kernel launch of a plan: ``kernel<<<grid, block, shared>>>(*args)``, after zeroing
    the arrays in ``zero`` (atomic targets, look-back flags)."""

    kernel: str                    # name in kernels/<topic>.py and kernels/<topic>.cu (numba: or the
                                   # kernel itself, when the plan compiles one for its inputs)
    grid: int | tuple
    block: int | tuple
    args: tuple
    shared: int = 0                # dynamic shared memory in bytes
    zero: tuple = ()
    # CUDA C ``__constant__`` variables to fill before the launch, name -> values (what
    # cudaMemcpyToSymbol does): the GPU copies them into the module, the PTX engine into the kernel
    constants: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Version:
    """One row of a topic's table of versions."""

    label: str                     # what chapters, tests and the benchmark call it: "v3 sequential"
    numba: str | None              # kernel in kernels/<topic>.py; None: CUDA C only
    cuda_c: str | None             # kernel in kernels/<topic>.cu; None: numba only
    plan: Callable = field(repr=False)
    bytes: Callable[[int], int] = field(repr=False)     # the fewest bytes a run moves, for n
    flops: Callable[[int], int] | None = field(default=None, repr=False)
    group: str = ""                # a topic with several problems (sum, vecmat) says which

    @property
    def impls(self) -> tuple[str, ...]:
        return tuple(i for i, name in zip(IMPLS, (self.numba, self.cuda_c)) if name)

    def kernel(self, impl: str) -> str:
        """The kernel's name in ``impl`` (the numba module, or the CUDA C twin)."""
        if impl not in IMPLS:
            raise ValueError(f"impl must be one of {', '.join(IMPLS)}, not {impl!r}")
        name = self.numba if impl == "numba" else self.cuda_c
        if name is None:
            other = "CUDA C" if impl == "numba" else "numba"
            raise ValueError(f"{self.label!r} exists only in {other}: use impl={self.impls[0]!r}")
        return name

    def launches(self, impl: str, xp, *inputs, **options):
        """``(launches, out)`` of one whole run on ``inputs``."""
        return self.plan(self, impl, xp, *inputs, **options)


def find(versions, label: str, group: str | None = None) -> Version:
    """The version called ``label``, or ``label`` without its "vN " (ValueError naming the known ones)."""
    for v in versions:
        if label in (v.label, v.label.split(" ", 1)[-1]) and (group is None or v.group == group):
            return v
    known = ", ".join(v.label for v in versions if group is None or v.group == group)
    raise ValueError(f"unknown version {label!r}; the versions are {known}")


def numba_args(args) -> list:
    """The arguments a numba kernel takes: all but the CUDA C twin's NumPy integer sizes."""
    return [a for a in args if not isinstance(a, np.integer)]


def _kernel_module(topic: str):
    return importlib.import_module(f"simtlab.kernels.{topic}")


def run_plan(topic: str, launches, launch) -> list:
    """Run a plan's numba kernels with ``launch(kernel, grid, block, *args[, shared_bytes=])``
    (``simtlab.emulate``, ``backend.launch``, ...): host arrays, one launch after another.
    Returns what each launch returned."""
    module = _kernel_module(topic)
    results = []
    for step in launches:
        for a in step.zero:
            a[...] = 0
        kernel = getattr(module, step.kernel) if isinstance(step.kernel, str) else step.kernel
        extra = {"shared_bytes": step.shared} if step.shared else {}
        results.append(launch(kernel, step.grid, step.block, *numba_args(step.args), **extra))
    return results


def emulate(topic: str, version: Version, *inputs, **options):
    """Run ``version`` on the emulator: ``(out, runs)``. ``options`` go to the plan when it
    takes them (e.g. ``blockdim``, ``max_blocks``), the rest to ``simtlab.emulate``."""
    import inspect

    from . import emulate as _emulate

    accepted = inspect.signature(version.plan).parameters
    plan_opts = {k: options.pop(k) for k in list(options) if k in accepted}
    launches, out = version.launches("numba", np, *inputs, **plan_opts)
    runs = run_plan(topic, launches, lambda k, g, b, *a, **kw: _emulate(k, g, b, *a, **kw, **options))
    return out, runs


def copy_constants(topic: str, constants: dict) -> None:
    """Fill ``kernels/<topic>.cu``'s ``__constant__`` variables on the GPU (CuPy's module of
    that file, the one :func:`gpu_runner` launches from), as ``cudaMemcpyToSymbol`` does."""
    if not constants:
        return
    import cupy

    from .cuda_source import raw_module

    for name, values in constants.items():
        values = cupy.asarray(values).ravel()
        cupy.ndarray(values.shape, values.dtype, raw_module(topic).get_global(name))[...] = values


def gpu_runner(topic: str, version: Version, impl: str, *inputs, **options):
    """``(run, out)`` for CuPy ``inputs``: ``run()`` enqueues one whole run of ``version`` in
    ``impl`` ("numba" or "cuda-c") on the default stream, without synchronising."""
    import cupy

    from .gpubench.launch import bind

    version.kernel(impl)                       # a clear error for a version impl lacks
    launches, out = version.launches(impl, cupy, *inputs, **options)
    steps = []
    for step in launches:
        copy_constants(topic, step.constants)          # once, before the runs: not timed
        for a in step.zero:
            steps.append(lambda a=a: a.data.memset_async(0, a.nbytes))
        steps.append(bind(impl, topic, step.kernel, step.grid, step.block, *step.args, shared=step.shared))
    if len(steps) == 1:
        return steps[0], out

    def run():
        for s in steps:
            s()
    run.keep = (launches, inputs)
    return run, out
