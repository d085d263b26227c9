"""The emulator refuses what numba would refuse to compile (simtlab/emulator/static_checks.py).

A shared or local array sized by a launch-time value runs fine as Python, so without this
check a student's kernel would pass in the emulator and fail only on a GPU. The same kernels
are compiled by numba-cuda in tests/test_static_checks_gpu.py.
"""

import numpy as np
import pytest

import simtlab
from static_check_cases import ACCEPTED, REFUSED


@pytest.mark.parametrize("kernel, takes_n, named", REFUSED, ids=[k.py_func.__name__ for k, _, _ in REFUSED])
def test_a_launch_time_shape_is_refused_before_the_kernel_runs(kernel, takes_n, named):
    a = np.full(4, -1.0, np.float32)
    args = (a, np.int32(4)) if takes_n else (a,)
    with pytest.raises(simtlab.CompileError) as err:
        simtlab.emulate(kernel, 1, 4, *args)
    message = str(err.value)
    assert named in message, message
    assert err.value.function == kernel.py_func.__name__
    assert err.value.source.strip(), "the error must quote the offending line"
    if ".array(" in err.value.source:                # a shape rule
        space = "local" if ".local.array(" in err.value.source else "shared"
        assert f"cuda.{space}.array needs a shape numba can read when it compiles the kernel" in message
        if "an expression" in named:         # arithmetic: name the value at module level
            assert "module level" in err.value.fix and "TILE_PAD = TILE + 1" in err.value.fix
        elif "module attribute" in named:    # R.BLOCK: import the name
            assert "import the constant by name" in err.value.fix
        else:                                # a launch-time value: a constant, or dynamic shared memory
            assert "module-level constant" in err.value.fix
            if space == "shared":
                assert "cuda.shared.array(0, float32)" in err.value.fix and "shared_bytes" in err.value.fix
    elif "allocates" in named or "copies" in named:
        assert "cuda.local.array(SIZE, float32)" in err.value.fix and "output array" in err.value.fix
    elif "builds a Python" in named:
        assert "tuple" in err.value.fix and "cuda.local.array" in err.value.fix
    elif "f-string" in named:
        assert "print('x =', x)" in err.value.fix
    elif "cannot compile np." in named:
        assert err.value.fix.startswith("use ") and ("math." in err.value.fix or "built-in" in err.value.fix
                                                     or "loop" in err.value.fix)
    else:
        assert "output array" in err.value.fix and "bare `return`" in err.value.fix
    assert np.all(a == -1.0), "the kernel must not have run"


@pytest.mark.parametrize("kernel, shared_bytes", ACCEPTED, ids=[k.py_func.__name__ for k, _ in ACCEPTED])
def test_a_compile_time_shape_runs(kernel, shared_bytes):
    a = np.zeros(4, np.float32)
    simtlab.emulate(kernel, 1, 4, a, shared_bytes=shared_bytes)
    assert a[0] == 1.0


def test_the_line_number_is_the_files():
    from static_check_cases import shared_from_argument

    with pytest.raises(simtlab.CompileError) as err:
        simtlab.emulate(shared_from_argument, 1, 4, np.zeros(4, np.float32), np.int32(4))
    import inspect
    lines, first = inspect.getsourcelines(shared_from_argument.py_func)
    offset = next(i for i, text in enumerate(lines) if "shared.array" in text)
    assert err.value.line == first + offset


def test_a_device_function_is_checked_too():
    from numba import cuda, float32

    @cuda.jit(device=True)
    def scratch_sum(a, n):
        s = cuda.local.array(n, float32)
        s[0] = a[0]
        return s[0]

    @cuda.jit
    def kernel(a, n):
        a[0] = scratch_sum(a, n)

    with pytest.raises(simtlab.CompileError, match="`n`, a kernel argument") as err:
        simtlab.emulate(kernel, 1, 1, np.zeros(1, np.float32), np.int32(1))
    assert err.value.function == "scratch_sum"


def test_a_refused_kernel_is_refused_on_every_launch_and_its_fix_runs():
    """The verdict is cached per code object: the same kernel is refused again with the same
    message, and the student's corrected kernel (a new function) runs."""
    from numba import cuda

    from static_check_cases import returns_a_value

    messages = []
    for _ in range(2):
        with pytest.raises(simtlab.CompileError) as err:
            simtlab.emulate(returns_a_value, 1, 1, np.zeros(1, np.float32))
        messages.append(str(err.value))
    assert messages[0] == messages[1]

    @cuda.jit
    def returns_a_value(a):          # the fix: the same name, no return value
        a[0] = 1.0

    a = np.zeros(1, np.float32)
    simtlab.emulate(returns_a_value, 1, 1, a)
    assert a[0] == 1.0
