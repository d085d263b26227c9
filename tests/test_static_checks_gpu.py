"""numba-cuda agrees with the emulator's compile-time check (simtlab/emulator/static_checks.py):
every kernel the emulator refuses fails to compile, every one it runs compiles and gives the
same result on the GPU."""

import numpy as np
import pytest

from gpu_support import requires_gpu, run_on_gpu
from static_check_cases import ACCEPTED, REFUSED

pytestmark = [pytest.mark.gpu, requires_gpu]


@pytest.mark.parametrize("kernel, takes_n, named", REFUSED, ids=[k.py_func.__name__ for k, _, _ in REFUSED])
def test_numba_refuses_what_the_emulator_refuses(kernel, takes_n, named):
    from numba import cuda

    signature = "void(float32[:], int32)" if takes_n else "void(float32[:])"
    with pytest.raises(Exception) as err:
        cuda.jit(signature)(kernel.py_func)
    # refused by numba's compiler (typing, lowering, NRT, or a KeyError deep in its ufunc
    # tables), not by a mistake of this test: the exception is raised inside numba's code
    raised_in = str(err.traceback[-1].path)
    assert "numba" in raised_in, f"{type(err.value).__name__} raised in {raised_in}: {err.value}"


@pytest.mark.parametrize("kernel, shared_bytes", ACCEPTED, ids=[k.py_func.__name__ for k, _ in ACCEPTED])
def test_numba_compiles_and_runs_what_the_emulator_runs(kernel, shared_bytes):
    a = np.zeros(4, np.float32)
    run_on_gpu(kernel, 1, 4, a, shared_bytes=shared_bytes)
    assert a[0] == 1.0
