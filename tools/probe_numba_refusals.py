"""Which common student constructs does numba-cuda refuse to compile? Run on a GPU machine:
    PYTHONPATH=/tmp/site python3 tools/probe_numba_refusals.py
(the answers decide what simtlab/emulator/static_checks.py refuses before a kernel runs)."""
import math

import numpy as np
from numba import cuda, float32

SIG = "void(float32[:])"


def returns_value(a):
    i = cuda.grid(1)
    a[i] = 1.0
    return a[i]


def returns_none(a):
    i = cuda.grid(1)
    if i >= a.size:
        return
    a[i] = 1.0


def np_zeros(a):
    t = np.zeros(4, np.float32)
    a[0] = t[0]


def np_empty_like(a):
    t = np.empty_like(a)
    a[0] = t[0]


def np_array(a):
    t = np.array([1.0, 2.0])
    a[0] = t[0]


def np_arange(a):
    t = np.arange(4)
    a[0] = t[0]


def list_literal(a):
    t = [1.0, 2.0]
    a[0] = t[0]


def list_comprehension(a):
    t = [a[j] for j in range(4)]
    a[0] = t[0]


def tuple_literal(a):
    t = (1.0, 2.0)
    a[0] = t[0]


def dict_literal(a):
    t = {0: 1.0}
    a[0] = t[0]


def array_sum(a):
    a[0] = a.sum()


def array_slice_copy(a):
    t = a[0:4].copy()
    a[0] = t[0]


def np_sqrt_scalar(a):
    a[0] = np.sqrt(a[1])


def math_sqrt(a):
    a[0] = math.sqrt(a[1])


def print_fstring(a):
    print(f"{a[0]}")


def print_plain(a):
    print("value", a[0])


def np_sum_func(a):
    a[0] = np.sum(a)


def python_sum_builtin(a):
    a[0] = sum(a)


def max_builtin(a):
    a[0] = max(a[0], a[1])


def abs_builtin(a):
    a[0] = abs(a[1])


def string_var(a):
    s = "abc"
    a[0] = len(s)


def raise_exc(a):
    if a[0] < 0:
        raise ValueError("negative")


def assert_stmt(a):
    assert a[0] >= 0


def while_loop(a):
    i = 0
    while i < 4:
        a[i] = 1.0
        i += 1


def float64_local(a):
    x = 0.0
    x += a[0]
    a[0] = x


def local_array_float32(a):
    t = cuda.local.array(4, float32)
    t[0] = a[0]
    a[0] = t[0]


for name, fn in list(globals().items()):
    if not callable(fn) or getattr(fn, "__module__", None) != "__main__" or name.startswith("_"):
        continue
    try:
        cuda.jit(SIG)(fn)
        print(f"{name:22s} COMPILES")
    except Exception as e:
        first = next((line for line in str(e).splitlines() if line.strip()), "")
        print(f"{name:22s} REFUSED {type(e).__name__}: {first[:150]}")
