"""Small kernels whose stored results depend on how numba-cuda types their arithmetic.

Each case names the types numba's own type inference gives its variables (checked on the CPU
by tests/test_numba_typing.py, with numba-cuda's typing context) and a NumPy reference computed
in those types. tests/test_numba_typing.py runs each case on both emulator engines;
tests/test_numba_typing_gpu.py on the GPU too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np
from numba import cuda, float32

N = 256
SCALE = 0.1                 # a float global: float64 in numba


@cuda.jit
def math_f32(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        e = math.exp(x[i])           # float32: libdevice expf on the GPU
        s = math.sqrt(x[i])
        t = math.tanh(x[i])
        p = math.pow(x[i], 2.0)      # a float64 argument: float64
        out[i, 0] = e                # stored into float64: shows the float32 rounding
        out[i, 1] = s
        out[i, 2] = t
        out[i, 3] = p


@cuda.jit
def float_literal(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        y = x[i] * 0.1               # float64: x is converted, 0.1 is not rounded to float32
        z = x[i] * SCALE
        w = x[i] * math.pi
        out[i, 0] = y
        out[i, 1] = z
        out[i, 2] = w


@cuda.jit
def float64_accumulator(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        acc = 0.0                    # float64: the whole dot product accumulates in float64
        for k in range(a.shape[1]):
            acc += a[i, k] * b[k]
        out[i] = acc                 # one rounding to float32, at the store


@cuda.jit
def float32_accumulator(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        acc = float32(0.0)           # float32 stays float32
        for k in range(a.shape[1]):
            acc += a[i, k] * b[k]
        out[i] = acc


@cuda.jit
def float_builtin(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        third = float(i) / 3.0       # float64
        out[i] = x[i] * third


@cuda.jit
def atomic_float64_operand(v, out):
    i = cuda.grid(1)
    if i == 0:
        cuda.atomic.add(out, 0, v[0])   # numba rounds the float64 operand to float32 first


@cuda.jit
def int_literal_accumulator(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        acc = 0                      # int64, then float64 once a float32 product is added
        for k in range(a.shape[1]):
            acc += a[i, k] * b[k]
        total = acc
        out[i] = total


@cuda.jit
def int_true_division(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        y = x[i] * (i / 3)           # i / 3 is float64, and so is the product
        out[i] = y


@cuda.jit
def int32_product(a, b, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        p = a[i] * b[i]              # int64: numba widens, no int32 wrap
        out[i] = p


@cuda.jit
def uint32_minus_literal(u, out):
    i = cuda.grid(1)
    if i < u.shape[0]:
        d = u[i] - 1                 # uint32 - int64 literal: int64, so 0 - 1 is -1
        out[i] = d


def _f64(x):
    return x.astype(np.float64)


def _inputs_math():
    x = np.random.default_rng(1).uniform(0.01, 8.0, N).astype(np.float32)
    return x, np.zeros((N, 4), np.float64)


def _ref_math(x, out):
    ref = np.empty_like(out)
    ref[:, 0] = np.exp(_f64(x)).astype(np.float32)
    ref[:, 1] = np.sqrt(_f64(x)).astype(np.float32)
    ref[:, 2] = np.tanh(_f64(x)).astype(np.float32)
    ref[:, 3] = _f64(x) ** 2
    return ref


def _old_math(x, out):
    """What the emulator gave before: math.* in float64."""
    ref = _ref_math(x, out)
    ref[:, :3] = np.stack([np.exp(_f64(x)), np.sqrt(_f64(x)), np.tanh(_f64(x))], 1)
    return ref


def _inputs_literal():
    x = np.random.default_rng(2).uniform(-100, 100, N).astype(np.float32)
    return x, np.zeros((N, 3), np.float32)


def _ref_literal(x, out):
    return np.stack([_f64(x) * 0.1, _f64(x) * SCALE, _f64(x) * math.pi], 1).astype(np.float32)


def _old_literal(x, out):
    return np.stack([x * np.float32(0.1), x * np.float32(SCALE), x * np.float32(math.pi)], 1)


def _inputs_dot():
    r = np.random.default_rng(3)
    return (r.uniform(-1, 1, (N, 97)).astype(np.float32), r.uniform(-1, 1, 97).astype(np.float32),
            np.zeros(N, np.float32))


def _dot(a, b, dtype):
    acc = np.zeros(a.shape[0], dtype)
    for k in range(a.shape[1]):
        acc = (acc + (a[:, k] * b[k]).astype(dtype)).astype(dtype)   # product in float32
    return acc.astype(np.float32)


def _fma_dot(a, b, out):
    """The float32 dot product as the GPU computes it: NVVM contracts ``acc += a * b`` into one
    fused multiply-add (one rounding per step; seen on the H100:
    benchmarks/results/numba_typing_h100.txt), as the emulator does (contraction.py)."""
    acc = np.zeros(a.shape[0], np.float32)
    for i in range(a.shape[0]):
        s = np.float32(0)
        for k in range(a.shape[1]):
            exact = Fraction(float(a[i, k])) * Fraction(float(b[k])) + Fraction(float(s))
            s = np.float32(float(exact))
        acc[i] = s
    return acc


def _inputs_float_builtin():
    x = np.random.default_rng(4).uniform(-100, 100, N).astype(np.float32)
    return x, np.zeros(N, np.float32)


def _ref_float_builtin(x, out):
    return (_f64(x) * (np.arange(N) / 3.0)).astype(np.float32)


def _old_float_builtin(x, out):
    return x * (np.arange(N) / 3.0).astype(np.float32)


# 1 + 2**-24 + 2**-48 rounds up to 1 + 2**-23 in one step, but to 1.0 through float32(2**-24)
_TIE = 2.0 ** -24 + 2.0 ** -48


def _inputs_atomic():
    return np.array([_TIE], np.float64), np.ones(1, np.float32)


def _inputs_int32():
    r = np.random.default_rng(6)
    return (r.integers(-2**31, 2**31 - 1, N, dtype=np.int32),
            r.integers(-2**31, 2**31 - 1, N, dtype=np.int32), np.zeros(N, np.int64))


def _inputs_uint32():
    u = np.random.default_rng(7).integers(0, 4, N, dtype=np.uint32)
    return u, np.zeros(N, np.int64)


@dataclass(frozen=True)
class Case:
    name: str
    kernel: Callable
    inputs: Callable            # () -> the kernel's arguments (fresh arrays)
    reference: Callable         # (*inputs) -> the expected last argument
    old: Callable               # (*inputs) -> what the emulator gave before it typed as numba
    numba_types: dict           # variable -> the type numba infers
    argtypes: str               # the numba signature's arguments
    math_functions: bool = False   # libdevice may differ from the correctly rounded value
    gpu_reference: Callable | None = None   # where the GPU rounds otherwise (None: reference)


CASES = [
    Case("math_f32", math_f32, _inputs_math, _ref_math, _old_math,
         {"e": "float32", "s": "float32", "t": "float32", "p": "float64"},
         "float32[::1], float64[:, ::1]", math_functions=True),
    Case("float_literal", float_literal, _inputs_literal, _ref_literal, _old_literal,
         {"y": "float64", "z": "float64", "w": "float64"}, "float32[::1], float32[:, ::1]"),
    Case("float64_accumulator", float64_accumulator, _inputs_dot,
         lambda a, b, out: _dot(a, b, np.float64), lambda a, b, out: _dot(a, b, np.float32),
         {"acc": "float64"}, "float32[:, ::1], float32[::1], float32[::1]"),
    Case("float32_accumulator", float32_accumulator, _inputs_dot, _fma_dot,
         lambda a, b, out: _dot(a, b, np.float32),
         {"acc": "float32"}, "float32[:, ::1], float32[::1], float32[::1]"),
    Case("float_builtin", float_builtin, _inputs_float_builtin, _ref_float_builtin,
         _old_float_builtin, {"third": "float64"}, "float32[::1], float32[::1]"),
    Case("int_literal_accumulator", int_literal_accumulator, _inputs_dot,
         lambda a, b, out: _dot(a, b, np.float64), lambda a, b, out: _dot(a, b, np.float32),
         {"total": "float64"}, "float32[:, ::1], float32[::1], float32[::1]"),
    Case("int_true_division", int_true_division, _inputs_float_builtin, _ref_float_builtin,
         _old_float_builtin, {"y": "float64"}, "float32[::1], float32[::1]"),
    Case("int32_product", int32_product, _inputs_int32,
         lambda a, b, out: a.astype(np.int64) * b, lambda a, b, out: (a * b).astype(np.int64),
         {"p": "int64"}, "int32[::1], int32[::1], int64[::1]"),
    Case("uint32_minus_literal", uint32_minus_literal, _inputs_uint32,
         lambda u, out: u.astype(np.int64) - 1, lambda u, out: (u - np.uint32(1)).astype(np.int64),
         {"d": "int64"}, "uint32[::1], int64[::1]"),
    Case("atomic_float64_operand", atomic_float64_operand, _inputs_atomic,
         lambda v, out: np.array([np.float32(1.0) + np.float32(v[0])], np.float32),
         lambda v, out: np.array([1.0 + v[0]], np.float32), {}, "float64[::1], float32[::1]"),
]


def launch_shape(case):
    return (N + 63) // 64, 64
