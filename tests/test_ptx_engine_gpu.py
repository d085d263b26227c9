"""The PTX engine against the GPU, bit for bit, on the instructions added here (bit
manipulation, activemask, float4 accesses): the same CUDA C source compiled by NVRTC through
CuPy. Skipped without a GPU (the lead runs them on an H100)."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_support import requires_gpu
import simtlab
from test_ptx_engine import BITS, VEC4

pytestmark = [pytest.mark.gpu, requires_gpu]


def _gpu(source, name, grid, block, *args):
    import cupy

    from simtlab.cuda_source import source_kernel

    device = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    source_kernel(source, name)((grid,), (block,), tuple(device))
    return [cupy.asnumpy(d) if isinstance(a, np.ndarray) else None for a, d in zip(args, device)]


def _both(source, name, grid, block, *args):
    gpu = _gpu(source, name, grid, block, *[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    cpu = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    simtlab.emulate(simtlab.cuda_c(source, name), grid, block, *cpu)
    return cpu, gpu


def test_bit_instructions_equal_the_gpus():
    n = 1000
    rng = np.random.default_rng(9)
    a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    w = rng.integers(0, 2**63, n, dtype=np.uint64)
    cpu, gpu = _both(BITS, "bits", 8, 128, a, b, w, np.zeros(8 * n, np.uint32), np.zeros(n, np.uint64),
                     np.int32(n))
    assert np.array_equal(cpu[3], gpu[3]) and np.array_equal(cpu[4], gpu[4])


def test_activemask_equals_the_gpus():
    cpu, gpu = _both(BITS, "mask", 1, 40, np.zeros(64, np.uint32))
    assert np.array_equal(cpu[0], gpu[0])


def test_float4_copy_equals_the_gpus():
    a = np.random.default_rng(1).random(4 * 256, dtype=np.float32)
    cpu, gpu = _both(VEC4, "copy4", 2, 128, a, np.zeros_like(a), np.int32(256))
    assert np.array_equal(cpu[1], gpu[1])
