"""The emulator's arithmetic is typed as numba-cuda types it (simtlab/emulator/numba_types.py).

Oracle: numba-cuda's own type inference, run on the CPU with its CUDA typing context, gives each
case's variable types; the case's NumPy reference is computed in those types; both engines
must give the reference bit for bit (and each case's reference differs from what the emulator
gave when it typed values as NumPy does, so these tests fail on that behaviour).
"""

import math
import types

import numpy as np
import pytest
from numba import cuda, types as nbtypes

import simtlab
from numba_typing_cases import CASES, launch_shape

ENGINES = ["greenlet", "vector"]


@pytest.fixture
def numba_typemap(monkeypatch):
    """Variable -> type, from numba-cuda's type inference for a compute capability 9.0 device
    (no GPU needed: nothing is compiled to PTX)."""
    import numba.cuda.dispatcher as dispatcher
    from numba.cuda.compiler import compile_cuda

    # device functions numba compiles while typing ask the driver for the device's capability
    monkeypatch.setattr(dispatcher, "get_current_device",
                        lambda: types.SimpleNamespace(compute_capability=(9, 0)))

    def typemap(case):
        args = eval(f"({case.argtypes},)", vars(nbtypes))
        result = compile_cuda(case.kernel.py_func, nbtypes.void, args, cc=(9, 0))
        found = result.type_annotation.typemap
        return {name: str(found[name]) for name in case.numba_types}

    return typemap


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_numba_types_the_case_as_declared(case, numba_typemap):
    assert numba_typemap(case) == case.numba_types


@pytest.mark.parametrize("trace", [True, False], ids=["trace", "no-trace"])
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_engine_gives_numba_typed_result(case, engine, trace):
    args = case.inputs()
    expected = case.reference(*case.inputs())
    if case.old is not None:       # the case can fail: NumPy's typing gives another result
        assert not np.array_equal(case.old(*case.inputs()), expected)
    run = simtlab.emulate(case.kernel, *launch_shape(case), *args, engine=engine, trace=trace)
    assert run.engine == engine
    np.testing.assert_array_equal(args[-1], expected)


def test_math_floor_returns_a_float_in_both_engines():
    """numba-cuda's math.floor of a float is that float type (Python's is an int, which
    cannot hold inf: the emulator used to stop with OverflowError where the GPU stores inf)."""
    @cuda.jit
    def k(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            f = math.floor(x[i])
            out[i] = f

    x = np.array([np.inf, -np.inf, 2.5, -2.5], np.float32)
    for engine in ENGINES:
        out = np.zeros(4, np.float32)
        simtlab.emulate(k, 1, 4, x, out, engine=engine)
        np.testing.assert_array_equal(out, [np.inf, -np.inf, 2.0, -3.0])


def test_float_division_by_zero_gives_inf_as_on_the_gpu():
    """numba-cuda compiles kernels with NumPy's error model: 1.0 / 0.0 is inf, not Python's
    ZeroDivisionError (float() is float64 in numba, no longer a Python float here)."""
    @cuda.jit
    def k(out):
        i = cuda.grid(1)
        d = float(i % 4)
        out[i] = 1.0 / d

    for engine in ENGINES:
        out = np.zeros(8, np.float32)
        with np.errstate(divide="ignore"):
            run = simtlab.emulate(k, 1, 8, out, engine=engine)
        assert run.engine == engine
        np.testing.assert_array_equal(out, [np.inf, 1, 0.5, np.float32(1 / 3)] * 2)


@cuda.jit
def lane_dependent_type(x, out):
    i = cuda.grid(1)
    v = x[i] if i % 2 == 0 else 0.5          # float32 on even lanes, float64 on odd ones
    out[i] = math.sqrt(v) * x[i]


def test_a_type_that_differs_between_lanes_runs_on_the_greenlet_engine():
    """Each thread computes in its own value's type (greenlet engine); one NumPy vector cannot
    hold float32 and float64 lanes, so the vector engine hands such a launch over and the
    engines agree. (numba unifies ``v`` to float64 on every lane: not modelled, see
    numba_types.py.)"""
    x = np.linspace(0.1, 9.0, 64, dtype=np.float32)
    outs = {}
    for engine in ("greenlet", "auto"):
        outs[engine] = np.zeros(64, np.float64)
        run = simtlab.emulate(lane_dependent_type, 1, 64, x, outs[engine], engine=engine)
        assert run.engine == "greenlet"
    assert "type differs between lanes" in run.engine_reason
    np.testing.assert_array_equal(outs["auto"], outs["greenlet"])


@cuda.jit
def lane_dependent_type_stored(x, out):
    i = cuda.grid(1)
    v = x[i] if i % 2 == 0 else 0.5          # stored and compared only: exact on vectors
    if v > 1:
        out[i] = v
    else:
        out[i] = -v


def test_a_type_that_differs_between_lanes_but_is_only_stored_stays_on_the_vector_engine():
    x = np.linspace(0.1, 9.0, 64, dtype=np.float32)
    outs = {}
    for engine in ("greenlet", "vector"):
        outs[engine] = np.zeros(64, np.float64)
        run = simtlab.emulate(lane_dependent_type_stored, 1, 64, x, outs[engine], engine=engine)
        assert run.engine == engine
    np.testing.assert_array_equal(outs["vector"], outs["greenlet"])
