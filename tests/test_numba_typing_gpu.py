"""The typing cases of tests/numba_typing_cases.py on the GPU: numba-cuda, the greenlet engine
and the vector engine store the same results (float32 math.* within libdevice's error of the
correctly rounded float32 value, which the emulator returns)."""

import numpy as np
import pytest

import simtlab
from gpu_support import requires_gpu, run_on_gpu
from numba_typing_cases import CASES, launch_shape

pytestmark = [pytest.mark.gpu, requires_gpu]

ENGINES = ["greenlet", "vector"]


def _ulps(a, b):
    """Distance in float32 units in the last place (same-sign finite values)."""
    ia = np.asarray(a, np.float32).view(np.int32).astype(np.int64)
    ib = np.asarray(b, np.float32).view(np.int32).astype(np.int64)
    return np.abs(ia - ib)


def emulated(case, engine):
    args = case.inputs()
    simtlab.emulate(case.kernel, *launch_shape(case), *args, engine=engine)
    return args[-1]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gpu_and_both_engines_agree(case):
    gpu_args = case.inputs()
    run_on_gpu(case.kernel, *launch_shape(case), *gpu_args)
    gpu = gpu_args[-1]
    if case.gpu_reference is not None:   # the GPU rounds otherwise (FMA): that is all
        np.testing.assert_array_equal(gpu, case.gpu_reference(*case.inputs()))
        np.testing.assert_array_equal(case.reference(*case.inputs()), emulated(case, "greenlet"))
        return
    if case.old is not None:           # the GPU does not type as NumPy does
        assert not np.array_equal(gpu, case.old(*case.inputs()))
    for engine in ENGINES:
        args = case.inputs()
        run = simtlab.emulate(case.kernel, *launch_shape(case), *args, engine=engine)
        assert run.engine == engine
        emu = args[-1]
        if not case.math_functions:
            np.testing.assert_array_equal(emu, gpu)
            continue
        f32_columns = emu[:, :3]
        # float32 results on the GPU: every stored value is a float32
        assert np.array_equal(gpu[:, :3], gpu[:, :3].astype(np.float32))
        ulps = _ulps(f32_columns, gpu[:, :3])
        assert ulps.max() <= 2, ulps.max()
        np.testing.assert_allclose(emu[:, 3], gpu[:, 3], rtol=1e-15)
        x = case.inputs()[0]
        in_f32 = np.stack([np.exp(x), np.sqrt(x), np.tanh(x)], 1)   # NumPy's float32 functions
        print(f"\n{case.name} [{engine}]: bit-exact vs GPU per column (exp, sqrt, tanh): "
              f"emulator (float64 rounded) {(ulps == 0).sum(0).tolist()}, "
              f"NumPy float32 {(_ulps(in_f32, gpu[:, :3]) == 0).sum(0).tolist()} of {len(x)}; "
              f"max ulps {ulps.max(0).tolist()}")
