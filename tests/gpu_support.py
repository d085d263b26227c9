"""Shared by the GPU tests: skip without a usable GPU, run a kernel on it with numba-cuda."""

import numpy as np
import pytest


def gpu_usable() -> bool:
    try:
        from simtlab import backend
        return backend.gpu_available()
    except Exception:
        return False


requires_gpu = pytest.mark.skipif(not gpu_usable(),
                                  reason="needs a CUDA GPU with CuPy and numba-cuda")


def run_on_gpu(kernel, griddim, blockdim, *args, shared_bytes=0):
    """numba-cuda launch; NumPy arrays are copied in and their results copied back in place."""
    from numba import cuda
    dev = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    kernel[griddim, blockdim, 0, shared_bytes](*dev)
    cuda.synchronize()
    for a, d in zip(args, dev):
        if isinstance(a, np.ndarray):
            a[...] = d.copy_to_host()
