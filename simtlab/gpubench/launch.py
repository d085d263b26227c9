"""One launch of a course kernel, numba-cuda or CUDA C, as a zero-argument function.

Every topic's benchmark binds its kernels the same way: the numba kernel of
``kernels/<topic>.py`` or its CUDA C twin in ``kernels/<topic>.cu``, under the same name.
The twins differ in one convention: a CUDA C kernel takes its sizes as trailing integer
arguments (NumPy scalars, ``np.int32`` or ``np.int64`` as its signature says), while the
numba kernel reads them from its arrays' shapes. So NumPy integer scalars reach the CUDA C
kernel only; everything else (CuPy arrays, Python numbers) reaches both.

Both twins launch on CuPy's current stream (``with cupy.cuda.Stream(): ...``): a CuPy RawKernel
does by itself, a numba kernel is given that stream wrapped by ``cuda.external_stream``. So a
CuPy stream capture (``stream.begin_capture()``, ``gpubench.cnn.capture_graph``) records numba
launches too; on numba's own default stream they would run at once, outside the graph.
"""

from __future__ import annotations

import importlib

import numpy as np

IMPLS = ("numba", "cuda-c")

__all__ = ["IMPLS", "bind"]


def bind(impl: str, topic: str, name: str, grid, block, *args, shared: int = 0):
    """A function that enqueues ``name<<<grid, block, shared>>>(*args)`` on the default stream
    without synchronising. ``args`` are CuPy arrays and scalars; the function keeps the arrays
    alive (numba's views of them do not own their memory)."""
    if impl == "numba":
        from numba import cuda

        module = importlib.import_module(f"simtlab.kernels.{topic}")
        jitted = getattr(module, name) if isinstance(name, str) else name    # a plan may compile its own
        kernel = jitted[grid, block, 0, shared]
        views = [cuda.as_cuda_array(a, sync=False) if hasattr(a, "__cuda_array_interface__") else a
                 for a in args if not isinstance(a, np.integer)]
        on_stream = _numba_on_cupy_stream(jitted, grid, block, shared, kernel)

        def launch():
            on_stream()(*views)
    elif impl == "cuda-c":
        from ..cuda_source import cu_kernel

        kernel = cu_kernel(topic, name)
        if shared > 48 * 1024:                # past 48 KB a kernel opts in (cudaFuncSetAttribute)
            kernel.max_dynamic_shared_size_bytes = shared
        grid = grid if isinstance(grid, tuple) else (grid,)
        block = block if isinstance(block, tuple) else (block,)

        def launch():
            kernel(grid, block, args, shared_mem=shared)
    else:
        raise ValueError(f"impl must be one of {', '.join(IMPLS)}, not {impl!r}")
    launch.keep = args
    return launch


def _numba_on_cupy_stream(jitted, grid, block, shared, default_kernel):
    """A function returning ``jitted`` configured for CuPy's current stream: ``default_kernel``
    (numba's stream 0) while that is CuPy's default stream, else the kernel on
    ``cuda.external_stream(ptr)``, configured once per stream. numba-cuda then launches with one
    ``cuLaunchKernelEx`` on that stream (cuda.core's ``launch``): the arguments, device views
    made in advance, need no copy and no synchronisation, so a stream capture can record it."""
    import cupy
    from numba import cuda

    configured = {0: default_kernel}

    def current():
        ptr = cupy.cuda.get_current_stream().ptr
        kernel = configured.get(ptr)
        if kernel is None:
            kernel = configured[ptr] = jitted[grid, block, cuda.external_stream(ptr), shared]
        return kernel
    return current
