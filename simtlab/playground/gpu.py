"""The playground's GPU side: run the same kernel on the GPU, compare its outputs with the
emulator's, and time it (median of several launches, with GB/s or FLOP/s when the student
says how many bytes or FLOPs one launch moves or does).

``gpu_check`` takes the launcher and the timer as arguments so that a test without a GPU can
hand it fakes; by default they are numba-cuda and ``simtlab.backend.time_gpu``.
"""

from __future__ import annotations

import numpy as np


def _numba_launcher(kernel, griddim, blockdim, args, shared_bytes):
    """``(launch, outputs)``: ``launch()`` runs the kernel once on device copies of ``args``;
    ``outputs()`` copies every array argument back (after the first launch, that is)."""
    from numba import cuda

    from ..backend import _dim3

    if not hasattr(kernel, "py_func"):
        kernel = cuda.jit(kernel)
    device = [cuda.to_device(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a for a in args]
    config = kernel[_dim3(griddim), _dim3(blockdim), 0, int(shared_bytes)]

    def launch():
        config(*device)

    def outputs():
        cuda.synchronize()
        return [d.copy_to_host() if isinstance(a, np.ndarray) else None for a, d in zip(args, device)]

    return launch, outputs


def _cupy_launcher(kernel, griddim, blockdim, args, shared_bytes):
    """``(launch, outputs)`` for a CUDA C kernel (``simtlab.cuda_c``): the same source
    compiled by NVRTC through CuPy; scalars passed as the C types of its declaration."""
    import cupy

    from ..backend import _dim3
    from ..cuda_source import source_kernel
    from ..emulator.ptx.engine import c_signature

    function = source_kernel(kernel.source, kernel.name)
    signature = c_signature(kernel.source, kernel.name) or [(None, None, False)] * len(args)
    device = [cupy.asarray(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else
              (np.dtype(ctype).type(a) if ctype is not None else a)
              for a, (_, ctype, _) in zip(args, signature)]

    def launch():
        function(_dim3(griddim), _dim3(blockdim), tuple(device), shared_mem=int(shared_bytes))

    def outputs():
        cupy.cuda.runtime.deviceSynchronize()
        return [cupy.asnumpy(d) if isinstance(a, np.ndarray) else None for a, d in zip(args, device)]

    return launch, outputs


def _default_launcher(kernel):
    return _cupy_launcher if getattr(kernel, "is_cuda_c", False) else _numba_launcher


def _default_timer(fn, repeat):
    from ..backend import time_gpu
    return time_gpu(fn, warmup=2, repeat=repeat)


def compare_outputs(names, emulated: list, gpu: list) -> dict:
    """Per array argument: do the GPU's values equal the emulator's (within float tolerance)?"""
    out = {}
    for name, a, b in zip(names, emulated, gpu):
        if a is None or b is None:
            continue
        if np.issubdtype(a.dtype, np.floating):
            # the emulator fuses multiply-adds where numba-cuda does (contraction.py) and
            # wraps integers as the GPU; what remains: libdevice's math functions (up to 2 ulp
            # from the emulator's, numba_types.MATH_ULP_ON_GPU) and the sums contraction.py
            # lists as not modelled (a product rounded once more, half an ulp of it), which
            # a long sum accumulates: 1e-5 is about 80 float32 ulps
            same = bool(np.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
        else:
            same = bool(np.array_equal(a, b))
        diff = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
        out[name] = {"match": same, "max_abs_diff": diff}
    return out


def gpu_check(kernel, griddim, blockdim, inputs: list, emulated: list, names: list, *,
              shared_bytes: int = 0, nbytes: float | None = None, flops: float | None = None,
              repeat: int = 20, launcher=None, timer=None) -> dict:
    """Run the kernel on the GPU with fresh copies of ``inputs``, compare each array with the
    emulator's result (``emulated``, same order), then time ``repeat`` launches.

    Returns ``{"outputs": {name: {"match", "max_abs_diff"}}, "all_match", "median_ms",
    "min_ms", "repeat", "gbps" (nbytes / median time, when given), "gflops"}``.
    """
    launcher = launcher or _default_launcher(kernel)
    timer = timer or _default_timer
    launch, outputs = launcher(kernel, griddim, blockdim, [a.copy() if isinstance(a, np.ndarray) else a
                                                           for a in inputs], shared_bytes)
    launch()
    compared = compare_outputs(names, emulated, outputs())
    timing = timer(launch, repeat)
    seconds = timing["median_ms"] / 1e3
    result = {"outputs": compared, "all_match": all(c["match"] for c in compared.values()),
              "median_ms": timing["median_ms"], "min_ms": timing.get("min_ms"), "repeat": repeat,
              "gbps": nbytes / seconds / 1e9 if nbytes and seconds > 0 else None,
              "gflops": flops / seconds / 1e9 if flops and seconds > 0 else None}
    return result


__all__ = ["gpu_check", "compare_outputs"]
