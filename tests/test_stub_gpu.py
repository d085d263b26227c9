"""The generated stub compiles for the GPU: a student with a GPU who runs a cell holding
`raise NotWrittenYet("...")` in a @cuda.jit kernel gets a kernel numba-cuda accepts (on the CPU,
numba's nopython compiler raises it as the typed exception; see tests/test_hints.py)."""

import pytest

from gpu_support import requires_gpu

pytestmark = [pytest.mark.gpu, requires_gpu]


def test_numba_cuda_compiles_the_stub():
    from numba import cuda

    from simtlab.student import NotWrittenYet

    def stub(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] = 1.0
        raise NotWrittenYet("ch05.sequential")

    kernel = cuda.jit("void(float32[:])")(stub)      # a signature: numba-cuda compiles now
    assert kernel.overloads, "numba-cuda compiled no version of the stub kernel"
