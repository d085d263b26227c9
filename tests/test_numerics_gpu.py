"""The numerics of tests/test_numerics.py on the GPU: numba-cuda and both emulator engines store
the same bits, for bit intrinsics, votes and matches (also in a partial last warp), 64-bit
integer wrap, unary operators, cuda.fma and the sums NVVM contracts into FMAs; float64
math.* within the ulps measured on the H100 (numba_types.MATH_ULP_ON_GPU)."""

import math

import numpy as np
import pytest
from numba import cuda

import simtlab
from gpu_support import requires_gpu, run_on_gpu
from simtlab.emulator.numba_types import MATH_ULP_ON_GPU
from test_numerics import (CONTRACTION_NAMES, MATH_1, MATH_2, WIDTHS, _contraction_cases,
                           _fma_inputs, _gpu_inputs, _math_inputs, kernel_from)

pytestmark = [pytest.mark.gpu, requires_gpu]

ENGINES = ["greenlet", "vector"]


def gpu_and_engines(kernel, grid, block, make_args):
    """The last argument after the GPU and after each engine ran the kernel on fresh inputs."""
    args = make_args()
    run_on_gpu(kernel, grid, block, *args)
    outs = {"gpu": args[-1]}
    for engine in ENGINES:
        args = make_args()
        run = simtlab.emulate(kernel, grid, block, *args, engine=engine)
        assert run.engine == engine, run.engine_reason
        outs[engine] = args[-1]
    return outs


def assert_bits_equal(outs):
    gpu = outs["gpu"]
    for engine in ENGINES:
        np.testing.assert_array_equal(outs[engine], gpu, err_msg=engine)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["popc", "clz", "ffs", "brev"])
def test_bit_intrinsics(name, width):
    k = kernel_from(f"def k(x, o):\n    i = cuda.grid(1)\n    if i < x.size:\n"
                    f"        r = cuda.{name}(x[i])\n        o[i] = r - 1\n", "k")
    # r - 1: numba widens r to 64 bits keeping its signedness, so a uint32 0 gives -1
    assert_bits_equal(gpu_and_engines(k, 1, 32, lambda: (_gpu_inputs(width),
                                                          np.zeros(15, np.int64))))


@cuda.jit
def votes(x, o):
    i = cuda.threadIdx.x
    b = cuda.ballot_sync(0xFFFFFFFF, x[i] > 0)
    m = cuda.match_any_sync(0xFFFFFFFF, x[i])
    mm, mp = cuda.match_all_sync(0xFFFFFFFF, x[i] % 2)
    o[i, 0] = b
    o[i, 1] = cuda.popc(b)
    o[i, 2] = m
    o[i, 3] = mm
    o[i, 4] = mp
    o[i, 5] = cuda.all_sync(0xFFFFFFFF, x[i] >= 0)
    o[i, 6] = cuda.any_sync(0xFFFFFFFF, x[i] > 2)
    o[i, 7] = ~cuda.any_sync(0xFFFFFFFF, x[i] > 2)
    o[i, 8] = cuda.activemask()
    o[i, 9] = cuda.lanemask_lt()
    o[i, 10] = cuda.syncthreads_count(x[i])


@pytest.mark.parametrize("threads", [64, 40, 17])
def test_votes_and_matches_also_in_a_partial_last_warp(threads):
    """With the full mask in a partial warp, only the lanes that exist take part (the ballot is
    in numerics_h100.json; all/any/match/activemask there are not yet measured)."""
    def make():
        x = (np.arange(threads) % 3).astype(np.int32)
        return x, np.zeros((threads, 11), np.int64)
    assert_bits_equal(gpu_and_engines(votes, 1, threads, make))


@cuda.jit
def int64_arithmetic(x, o):
    i = cuda.grid(1)
    if i < x.size:
        h = x[i] * 6364136223846793005 + 1442695040888963407
        o[i, 0] = h >> 33
        o[i, 1] = (h * 31 + i) % 1000003          # wraps before the remainder
        o[i, 2] = -x[i]                           # int32 widened to int64 first
        o[i, 3] = ~x[i]
        o[i, 4] = cuda.clz(~x[i])                 # ~int32 is an int64
        o[i, 5] = x[i] * x[i] * x[i]
        o[i, 6] = min(x[i], i, 7 - i)


def test_int64_wrap_and_unary_operators():
    def make():
        x = np.array([0, 1, -1, 2**31 - 1, -2**31, 12345, -99999, 2**20] * 8, np.int32)
        return x, np.zeros((x.size, 7), np.int64)
    assert_bits_equal(gpu_and_engines(int64_arithmetic, 1, 64, make))


@cuda.jit
def uint_negation(u, o):
    i = cuda.grid(1)
    if i < u.size:
        o[i] = -u[i]                              # negated in 32 bits, then widened: 2**32 - u


def test_negating_an_unsigned_integer():
    make = lambda: (np.arange(32, dtype=np.uint32), np.zeros(32, np.int64))   # noqa: E731
    assert_bits_equal(gpu_and_engines(uint_negation, 1, 32, make))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cuda_fma_and_cbrt(dtype):
    k = kernel_from("def k(a, b, c, o):\n    i = cuda.grid(1)\n    if i < a.size:\n"
                    "        o[i, 0] = cuda.fma(a[i], b[i], c[i])\n"
                    "        o[i, 1] = cuda.cbrt(a[i])\n", "k")

    def make():
        a, b, c = _fma_inputs(dtype)
        return a, b, c, np.zeros((a.size, 2), dtype)
    outs = gpu_and_engines(k, 4, 256, make)
    for engine in ENGINES:
        np.testing.assert_array_equal(outs[engine][:, 0], outs["gpu"][:, 0], err_msg=engine)
        # cbrt: libdevice's against NumPy's correctly rounded value (not measured yet)
        np.testing.assert_allclose(outs[engine][:, 1], outs["gpu"][:, 1],
                                   rtol=2 * np.finfo(dtype).eps, err_msg=engine)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", CONTRACTION_NAMES + ["a*b+c*2.0", "acc-=a*b", "t=a*b;acc+=t"])
def test_contracted_sums(name, dtype):
    bodies = {k: body for k, (body, _) in _contraction_cases(dtype).items()}
    bodies["a*b+c*2.0"] = "o[i] = a[i] * b[i] + c[i] * 2.0"     # float32: c*2.0 is float64
    bodies["acc-=a*b"] = "acc = c[i]\n        acc -= a[i] * b[i]\n        o[i] = acc"
    bodies["t=a*b;acc+=t"] = "acc = c[i]\n        t = a[i] * b[i]\n        acc += t\n        o[i] = acc"
    k = kernel_from("def k(a, b, c, d, e, o2, o):\n    i = cuda.grid(1)\n    n = a.size\n"
                    f"    if i < n:\n        {bodies[name]}\n", "k")

    def make():
        rng = np.random.default_rng(11)
        inputs = [rng.standard_normal(1024).astype(dtype) for _ in range(5)]
        return (*inputs, np.zeros(1024, dtype), np.zeros(1024, dtype))
    assert_bits_equal(gpu_and_engines(k, 4, 256, make))


@pytest.mark.parametrize("name", MATH_1 + MATH_2)
def test_float64_math_within_the_measured_ulps(name):
    args = "x[i], y[i]" if name in MATH_2 else "x[i]"
    k = kernel_from(f"def k(x, y, o):\n    i = cuda.grid(1)\n    if i < o.size:\n"
                    f"        o[i] = math.{name}({args})\n", "k", math=math)

    def make():
        x, y = _math_inputs(name)
        return x, y, np.zeros(x.size)
    outs = gpu_and_engines(k, 8, 256, make)
    np.testing.assert_array_equal(outs["greenlet"], outs["vector"])
    gpu, emu = outs["gpu"].view(np.int64), outs["vector"].view(np.int64)
    ulps = np.abs(np.where(gpu < 0, -2**63 - gpu, gpu) - np.where(emu < 0, -2**63 - emu, emu))
    assert ulps.max() <= (4 if name == "erfc" else MATH_ULP_ON_GPU), ulps.max()
