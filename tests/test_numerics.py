"""The emulator computes what the GPU computes: bit intrinsics at the argument's width, warp
votes in numba-cuda's types, 64-bit integer arithmetic that wraps, float64 math.* with the
same bits in both engines, and fused multiply-adds where numba-cuda's compiler fuses them.

Oracles: the GPU ground truth measured on an H100 (benchmarks/results/numerics_h100.json, by
benchmarks/probe_numerics_h100.py), numba-cuda's own type inference on the CPU (as in
tests/test_numba_typing.py), and exact rational arithmetic (fractions) for fused results.
"""

import json
import linecache
import math
import types
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from numba import cuda, njit, types as nbtypes, uint64

import simtlab

ENGINES = ["greenlet", "vector"]
GPU = json.loads((Path(__file__).parent.parent / "benchmarks" / "results" /
                  "numerics_h100.json").read_text())
WIDTHS = {"int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64}


def kernel_from(source, name, **env):
    """A @cuda.jit kernel from source text (registered with linecache: the emulator reads it)."""
    filename = f"<numerics test {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"cuda": cuda, "np": np, "math": math, **env}
    exec(compile(source, filename, "exec"), namespace)
    return cuda.jit(namespace[name])


def emulate_on(engine, kernel, grid, block, *args):
    run = simtlab.emulate(kernel, grid, block, *args, engine=engine)
    assert run.engine == engine, run.engine_reason
    return run


@pytest.fixture
def numba_types(monkeypatch):
    """Variable -> type from numba-cuda's type inference (compute capability 9.0, no GPU)."""
    import numba.cuda.dispatcher as dispatcher
    from numba.cuda.compiler import compile_cuda
    monkeypatch.setattr(dispatcher, "get_current_device",
                        lambda: types.SimpleNamespace(compute_capability=(9, 0)))

    def typemap(kernel, argtypes):
        result = compile_cuda(kernel.py_func, nbtypes.void, argtypes, cc=(9, 0))
        return {k: str(v) for k, v in result.type_annotation.typemap.items()}
    return typemap


# --- bit intrinsics -------------------------------------------------------------------------------
def _gpu_inputs(width):
    return np.array([v & (2**64 - 1) for v in GPU[f"intrinsics_{width}"]["inputs"]],
                    np.uint64).astype(WIDTHS[width])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["popc", "clz", "ffs", "brev"])
def test_bit_intrinsic_at_the_arguments_width(name, width, engine):
    """Today's GPU: popc(int32 -1) = 32, clz(int64 1) = 63, ffs(uint64 2**40) = 41,
    brev(uint64 1) = 2**63; the emulator gave 64, 31, 0 and 2**31."""
    k = kernel_from(f"def k(x, o):\n    i = cuda.grid(1)\n    if i < x.size:\n"
                    f"        o[i] = cuda.{name}(x[i])\n", "k")
    x = _gpu_inputs(width)
    out = np.zeros(x.size, np.uint64)
    emulate_on(engine, k, 1, 32, x, out)
    assert out.tolist() == GPU[f"intrinsics_{width}"][f"{name}->uint64"]


@pytest.mark.parametrize("name", ["popc", "clz", "ffs", "brev"])
def test_bit_intrinsic_result_types_are_numbas(name, numba_types):
    """numba-cuda's result type per width (its type inference, and the GPU's record of it),
    against what each engine returns."""
    from simtlab.emulator.intrinsics import bit_intrinsic_lanes
    k = kernel_from(f"def k(x, o):\n    r = cuda.{name}(x[0])\n    o[0] = r\n", "k")
    for width, dtype in WIDTHS.items():
        expected = numba_types(k, (getattr(nbtypes, width)[::1], nbtypes.float64[::1]))["r"]
        assert expected == GPU["intrinsic_result_types"][f"{name}({width})"]
        seen = {}

        def spy(x):
            seen["r"] = getattr(cuda, name)(x[0])

        simtlab.emulate(spy, 1, 1, np.ones(1, dtype), engine="greenlet")
        assert seen["r"].dtype.name == expected, (name, width)
        lanes = bit_intrinsic_lanes(name, np.ones(4, dtype), np.dtype(dtype))   # vector engine
        assert lanes.dtype.name == expected, (name, width)


# --- votes and matches ------------------------------------------------------------------------------
@cuda.jit
def ballot_and_count(o, counts, active):
    lane = cuda.laneid
    b = cuda.ballot_sync(0xFFFFFFFF, lane >= 16)
    o[lane] = b
    counts[lane] = cuda.popc(b)
    active[lane] = cuda.activemask()


@pytest.mark.parametrize("engine", ENGINES)
def test_popc_of_a_ballot_counts_the_votes_when_lane_31_votes(engine):
    """numba types the ballot int32 (-65536 here): popc counts 16 of its 32 bits. The emulator
    held it as a Python int, whose popc saw 64 bits: 48."""
    o, counts, active = (np.zeros(32, np.int64) for _ in range(3))
    emulate_on(engine, ballot_and_count, 1, 32, o, counts, active)
    assert set(o) == {GPU["ballot"]["value"]}
    assert set(counts) == {GPU["ballot"]["popc"]}
    assert set(active) == {GPU["ballot"]["activemask"]}


def test_vote_result_types_are_numbas(numba_types):
    @cuda.jit
    def votes(x, o):
        lane = cuda.laneid
        b = cuda.ballot_sync(0xFFFFFFFF, lane > 3)
        a = cuda.activemask()
        lt = cuda.lanemask_lt()
        al = cuda.all_sync(0xFFFFFFFF, lane > 3)
        ma = cuda.match_any_sync(0xFFFFFFFF, x[lane])
        mm, mp = cuda.match_all_sync(0xFFFFFFFF, x[lane])
        sc = cuda.syncthreads_count(lane)
        o[lane] = b + a + lt + al + ma + mm + mp + sc

    expected = numba_types(votes, (nbtypes.int32[::1], nbtypes.int64[::1]))
    assert expected["b"] == GPU["ballot"]["types"]["b"] and expected["a"] == GPU["ballot"]["types"]["a"]
    seen = {}

    def spy(x, o):
        lane = cuda.laneid
        seen["b"] = cuda.ballot_sync(0xFFFFFFFF, lane > 3)
        seen["a"] = cuda.activemask()
        seen["lt"] = cuda.lanemask_lt()
        seen["al"] = cuda.all_sync(0xFFFFFFFF, lane > 3)
        seen["ma"] = cuda.match_any_sync(0xFFFFFFFF, x[lane])
        mm, mp = cuda.match_all_sync(0xFFFFFFFF, x[lane])
        seen["mm"] = mm
        seen["mp"] = mp
        seen["sc"] = cuda.syncthreads_count(lane)

    simtlab.emulate(spy, 1, 32, np.zeros(32, np.int32), np.zeros(32, np.int64),
                    engine="greenlet")
    for name, value in seen.items():
        got = "bool" if value.__class__ in (bool, np.bool_) else np.asarray(value).dtype.name
        assert got == expected[name], name


@cuda.jit
def ballot_in_partial_warp(o):
    i = cuda.threadIdx.x
    o[i] = cuda.ballot_sync(0xFFFFFFFF, i % 2 == 0)


@cuda.jit
def ballot_of_active_lanes(o):
    i = cuda.threadIdx.x
    o[i] = cuda.ballot_sync(cuda.activemask(), i % 2 == 0)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kernel, key", [(ballot_in_partial_warp, "ballot_partial_40"),
                                         (ballot_of_active_lanes, "ballot_partial_40_activemask")])
def test_ballot_in_a_partial_last_warp_counts_the_lanes_that_exist(kernel, key, engine):
    """A block of 40 threads with the full mask: the GPU gives 85 in the 8-lane warp (only
    the lanes that exist vote); the emulator called the mask an error."""
    o = np.zeros(40, np.int64)
    emulate_on(engine, kernel, 1, 40, o)
    assert o.tolist() == GPU[key]


def test_auto_runs_a_partial_warp_ballot_on_the_vector_engine():
    run = simtlab.emulate(ballot_in_partial_warp, 1, 40, np.zeros(40, np.int64))
    assert run.engine == "vector", run.engine_reason


@cuda.jit
def matches(x, any_, all_, pred):
    i = cuda.threadIdx.x
    any_[i] = cuda.match_any_sync(0xFFFFFFFF, x[i])
    m, p = cuda.match_all_sync(0xFFFFFFFF, x[i])
    all_[i] = m
    pred[i] = p


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("key, values", [("match", np.arange(32) % 3), ("match_same", [7] * 32)])
def test_match_sync_as_on_the_gpu(key, values, engine):
    x = np.asarray(values, np.int32)
    outs = [np.zeros(32, np.int64) for _ in range(3)]
    emulate_on(engine, matches, 1, 32, x, *outs)
    assert [o.tolist() for o in outs] == [GPU[key]["any"], GPU[key]["all"], GPU[key]["pred"]]


@cuda.jit
def three_way(x, lo, hi):
    i = cuda.grid(1)
    lo[i] = min(x[i], 5, i)
    hi[i] = max(i, x[i], 3, 10 - i)


def test_min_and_max_of_three_or_more_values_run_on_the_vector_engine():
    x = np.array([9, 1, 4, 7, 2, 8, 0, 6], np.int32)
    results = {}
    for engine in ("greenlet", "auto"):
        lo, hi = np.zeros(8, np.int64), np.zeros(8, np.int64)
        run = simtlab.emulate(three_way, 1, 8, x, lo, hi, engine=engine)
        results[run.engine] = (lo, hi)
    assert set(results) == {"greenlet", "vector"}
    i = np.arange(8)
    for lo, hi in results.values():
        np.testing.assert_array_equal(lo, np.minimum(np.minimum(x, 5), i))
        np.testing.assert_array_equal(hi, np.maximum.reduce([i, x, np.full(8, 3), 10 - i]))


def test_the_partial_run_of_an_error_says_why_not_the_vector_engine():
    @cuda.jit
    def out_of_bounds(x):
        x[cuda.threadIdx.x + 1] = 1.0

    with pytest.raises(simtlab.EmulationError) as e:
        simtlab.emulate(out_of_bounds, 1, 32, np.zeros(32, np.float32))
    assert e.value.run.engine == "greenlet"
    assert e.value.run.engine_reason and "vector engine stopped" in e.value.run.engine_reason


# --- 64-bit integers --------------------------------------------------------------------------------
@cuda.jit
def hash64(o):
    i = cuda.grid(1)
    if i < o.size:
        o[i] = (i * 6364136223846793005 + 1442695040888963407) >> 33


@cuda.jit
def hash64_index(table, o):
    i = cuda.grid(1)
    if i < o.size:
        o[i] = table[(i * 6364136223846793005 + 1442695040888963407) >> 33 & 1023]


@cuda.jit
def hash64_names(o):
    i = cuda.grid(1)
    if i < o.size:
        h = i * 6364136223846793005
        o[i] = (h + 1442695040888963407) >> 33


@pytest.mark.parametrize("engine", ENGINES)
def test_int64_arithmetic_wraps_as_on_the_gpu(engine):
    """The GPU's 64-bit hash; the greenlet engine's unbounded Python ints got 197 of 200
    rows wrong."""
    want = np.array(GPU["hash_int64"])
    for kernel in (hash64, hash64_names):
        o = np.zeros(200, np.int64)
        emulate_on(engine, kernel, 1, 256, o)
        np.testing.assert_array_equal(o, want)
    table = np.arange(1024, dtype=np.int64) * 3
    o = np.zeros(200, np.int64)
    emulate_on(engine, hash64_index, 1, 256, table, o)
    np.testing.assert_array_equal(o, table[want & 1023])


@cuda.jit
def hash_uint64(x, o):
    i = cuda.grid(1)
    if i < o.size:
        h = x[i]
        h = h * uint64(6364136223846793005) + uint64(1442695040888963407)
        o[i] = h >> uint64(33)


@pytest.mark.parametrize("engine", ENGINES)
def test_uint64_arithmetic_wraps_as_on_the_gpu(engine):
    x = np.array(GPU["hash_uint64"]["x"], np.uint64)
    o = np.zeros(200, np.uint64)
    emulate_on(engine, hash_uint64, 1, 256, x, o)
    np.testing.assert_array_equal(o, np.array(GPU["hash_uint64"]["o"], np.uint64))


@pytest.mark.parametrize("engine", ENGINES)
def test_wrapping_arithmetic_warns_no_student(engine):
    """The GPU wraps silently: no NumPy overflow warning reaches the notebook (each greenlet
    starts with NumPy's default error state)."""
    x = np.array(GPU["hash_uint64"]["x"], np.uint64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        emulate_on(engine, hash_uint64, 1, 256, x, np.zeros(200, np.uint64))
        emulate_on(engine, hash64_names, 1, 256, np.zeros(200, np.int64))


@cuda.jit
def int32_cube(x, o):
    i = cuda.grid(1)
    if i < o.size:
        o[i] = x[i] * x[i] * x[i]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype, key", [(np.int64, "i32_cube_to_int64"),
                                        (np.int32, "i32_cube_to_int32")])
def test_int32_products_widen_then_wrap_when_stored(dtype, key, engine):
    x = np.array([2**20 + i for i in range(64)], np.int32)
    o = np.zeros(64, dtype)
    emulate_on(engine, int32_cube, 1, 64, x, o)
    assert o.tolist() == GPU[key]


@cuda.jit
def negations(u, s, neg_u, inv_s, neg_b, inv_b):
    i = cuda.grid(1)
    neg_u[i] = -u[i]
    inv_s[i] = cuda.clz(~s[i])
    neg_b[i] = -(s[i] > 0)
    inv_b[i] = ~(s[i] > 0)


@pytest.mark.parametrize("engine", ENGINES)
def test_unary_operators_widen_as_numba_types_them(engine, numba_types):
    """numba: -uint32 is a uint64 computed in 32 bits first (-5 -> 2**32 - 5, as numba's own
    CPU target computes it, and -int32(-2**31) stays -2**31 as on the H100), ~int32 an int64
    (clz sees 64 bits), -bool an int64, ~bool a bool."""
    found = numba_types(kernel_from(
        "def k(u, s):\n    a = -u[0]\n    b = ~s[0]\n    c = -(s[0] > 0)\n    d = ~(s[0] > 0)\n",
        "k"), (nbtypes.uint32[::1], nbtypes.int32[::1]))
    assert [found[v] for v in "abcd"] == ["uint64", "int64", "int64", "bool"]
    u = np.array([5, 0, 7, 1], np.uint32)
    s = np.array([5, -1, -2**31, 2**31 - 1], np.int32)
    outs = [np.zeros(4, np.int64) for _ in range(4)]
    emulate_on(engine, negations, 1, 4, u, s, *outs)
    neg_u, inv_s, neg_b, inv_b = outs
    numba_neg = njit(lambda v: -v)                   # numba's own lowering, on the CPU
    assert neg_u.tolist() == [int(np.int64(numba_neg(v))) for v in u]
    assert neg_u.tolist() == [2**32 - 5, 0, 2**32 - 7, 2**32 - 1]
    # ~v as an int64: clz counts its 64 bits (0 for a negative value)
    assert inv_s.tolist() == [0 if ~v < 0 else 64 - (~v).bit_length() for v in s.tolist()]
    assert neg_b.tolist() == [-1, 0, 0, -1]
    assert inv_b.tolist() == [0, 1, 1, 0]


@cuda.jit
def negate_int32(s, o):
    i = cuda.grid(1)
    o[i] = -s[i]


@pytest.mark.parametrize("engine", ENGINES)
def test_negating_the_lowest_int32_wraps_in_32_bits(engine):
    """The H100 (tests/test_numerics_gpu.py) and numba's CPU target agree: -int32(-2**31) is
    -2**31, though numba types the result int64."""
    s = np.array([-2**31, 5, -7, 2**31 - 1], np.int32)
    o = np.zeros(4, np.int64)
    emulate_on(engine, negate_int32, 1, 4, s, o)
    assert o.tolist() == [int(njit(lambda v: -v)(v)) for v in s] == [-2**31, -5, 7, -(2**31 - 1)]


# --- float64 math -----------------------------------------------------------------------------------
MATH_1 = ["tanh", "exp", "log", "sin", "cos", "tan", "sqrt", "atan", "sinh", "cosh", "expm1",
          "log1p", "log2", "log10", "asinh", "erf", "erfc"]
MATH_2 = ["hypot", "atan2", "pow", "fmod", "copysign"]


def _math_inputs(name):
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-5, 5, 1024), rng.standard_normal(1024) * 20])
    if name in ("log", "sqrt", "log2", "log10", "pow"):
        x = np.abs(x) + 1e-3
    if name == "log1p":
        x = np.abs(x)
    return x, rng.uniform(-3, 3, x.size)


@pytest.mark.parametrize("name", MATH_1 + MATH_2)
def test_float64_math_gives_the_same_bits_in_both_engines(name):
    """Today tanh differed in up to 2 ulp on 518 of 2048 inputs between the engines (Python's
    math against NumPy); both now compute with one function."""
    args = "x[i], y[i]" if name in MATH_2 else "x[i]"
    k = kernel_from(f"def k(x, y, o):\n    i = cuda.grid(1)\n    if i < o.size:\n"
                    f"        o[i] = math.{name}({args})\n", "k")
    x, y = _math_inputs(name)
    outs = {}
    for engine in ENGINES:
        outs[engine] = np.zeros(x.size)
        emulate_on(engine, k, x.size // 256, 256, x, y, outs[engine])
    assert np.array_equal(outs["greenlet"].view(np.int64), outs["vector"].view(np.int64))


# --- fused multiply-add -------------------------------------------------------------------------------
def exact_fma(a, b, c, dtype):
    """``a * b + c`` rounded once to ``dtype``, from exact rationals."""
    out = []
    for x, y, z in zip(a.tolist(), b.tolist(), c.tolist()):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        if dtype == np.float64:
            out.append(float(exact))
            continue
        near = float(exact)                      # to float64, then round to odd, then float32
        if Fraction(near) != exact and not np.float64(near).view(np.int64) & 1:
            near = float(np.nextafter(near, math.inf if Fraction(near) < exact else -math.inf))
        out.append(np.float32(near))
    return np.array(out, dtype)


@cuda.jit
def fma_call(a, b, c, o):
    i = cuda.grid(1)
    if i < o.size:
        o[i] = cuda.fma(a[i], b[i], c[i])


def _fma_inputs(dtype, n=1024, seed=3):
    rng = np.random.default_rng(seed)
    a, b, c = (rng.standard_normal(n).astype(dtype) for _ in range(3))
    c[: n // 2] = -(a[: n // 2].astype(np.float64) * b[: n // 2]).astype(dtype)   # cancellation
    return a, b, c


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cuda_fma_rounds_once(dtype, engine):
    """cuda.fma was a * b + c, rounded twice."""
    a, b, c = _fma_inputs(dtype)
    o = np.zeros(a.size, dtype)
    emulate_on(engine, fma_call, a.size // 256, 256, a, b, c, o)
    want = exact_fma(a, b, c, dtype)
    assert not np.array_equal(want, a * b + c)
    np.testing.assert_array_equal(o, want)


# the probe's cases: (kernel body, reference from inputs a..e) as the GPU computed each
def _contraction_cases(dt):
    F = lambda x, y, z: exact_fma(x, y, z, dt)          # noqa: E731
    return {
        "a*b+c": ("o[i] = a[i] * b[i] + c[i]", lambda a, b, c, d, e: F(a, b, c)),
        "c+a*b": ("o[i] = c[i] + a[i] * b[i]", lambda a, b, c, d, e: F(a, b, c)),
        "a*b-c": ("o[i] = a[i] * b[i] - c[i]", lambda a, b, c, d, e: F(a, b, -c)),
        "c-a*b": ("o[i] = c[i] - a[i] * b[i]", lambda a, b, c, d, e: F(-a, b, c)),
        "a*b+c*d": ("o[i] = a[i] * b[i] + c[i] * d[i]", lambda a, b, c, d, e: F(a, b, c * d)),
        "a*b-c*d": ("o[i] = a[i] * b[i] - c[i] * d[i]", lambda a, b, c, d, e: F(a, b, -(c * d))),
        "t=a*b;t+c": ("t = a[i] * b[i]\n        o[i] = t + c[i]", lambda a, b, c, d, e: F(a, b, c)),
        "t=a*b;t+c;reuse": ("t = a[i] * b[i]\n        o[i] = t + c[i]\n        o2[i] = t",
                            lambda a, b, c, d, e: a * b + c),
        "a*b+c+d": ("o[i] = a[i] * b[i] + c[i] + d[i]", lambda a, b, c, d, e: F(a, b, c) + d),
        "c+d+a*b": ("o[i] = c[i] + d[i] + a[i] * b[i]", lambda a, b, c, d, e: F(a, b, c + d)),
        "a*b+c*d+e": ("o[i] = a[i] * b[i] + c[i] * d[i] + e[i]",
                      lambda a, b, c, d, e: F(a, b, c * d) + e),
        "(a+b)*c+d": ("o[i] = (a[i] + b[i]) * c[i] + d[i]", lambda a, b, c, d, e: F(a + b, c, d)),
        "-(a*b)+c": ("o[i] = -(a[i] * b[i]) + c[i]", lambda a, b, c, d, e: F(-a, b, c)),
        "o[i]+=a*b": ("o[i] = c[i]\n        o[i] += a[i] * b[i]", lambda a, b, c, d, e: F(a, b, c)),
        "acc+=a*b (loop 3)": (
            "acc = a[i] - a[i]\n        for k in range(3):\n"
            "            acc += a[(i + k) % n] * b[(i + 2 * k) % n]\n        o[i] = acc", None),
        "acc=acc+a*b (loop 3)": (
            "acc = a[i] - a[i]\n        for k in range(3):\n"
            "            acc = acc + a[(i + k) % n] * b[(i + 2 * k) % n]\n        o[i] = acc", None),
    }


def _loop_reference(a, b, dt):
    idx = np.arange(a.size)
    acc = np.zeros(a.size, dt)
    for k in range(3):
        acc = exact_fma(a[(idx + k) % a.size], b[(idx + 2 * k) % a.size], acc, dt)
    return acc


CONTRACTION_NAMES = list(_contraction_cases(np.float32))


def test_fused_float32_lanes_round_halfway_cases_once():
    """The vector engine's float32 fma rounds the float64 sum to float32 directly except where
    that sum lands halfway between two float32s: exactly those lanes need the round to odd.
    (1 + 2**-12)**2 = 1 + 2**-11 + 2**-24 is such a halfway value; a tiny c of either sign,
    or 0 (a tie, to even), decides the rounding, as exact fractions say."""
    from simtlab.emulator.intrinsics import fma_lanes
    a = np.full(6, 1 + 2**-12, np.float32)
    c = np.array([0.0, 2**-40, -2**-40, 1e-30, -1e-30, 2**-149], np.float32)
    got = fma_lanes(a, a, c, np.dtype(np.float32))
    exact = [Fraction(float(x)) ** 2 + Fraction(float(z)) for x, z in zip(a, c)]
    below, above = np.float32(1 + 2**-11), np.nextafter(np.float32(1 + 2**-11), np.float32(2))
    midpoint = (Fraction(float(below)) + Fraction(float(above))) / 2
    want = [below if e < midpoint or (e == midpoint and int(below.view(np.int32)) % 2 == 0)
            else above for e in exact]
    assert got.tolist() == [float(w) for w in want]
    assert got.tolist() == [float(below), float(above), float(below), float(above), float(below),
                            float(above)]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", CONTRACTION_NAMES)
def test_sums_of_products_are_fused_where_the_gpu_fuses_them(name, dtype, engine):
    """Each case bit-exact on the H100 against the fused reference (4096 of 4096,
    numerics_h100.json "fma"); the emulator rounded every product (up to 15 ulp off)."""
    assert GPU["fma"][np.dtype(dtype).name][name]["equal_to"][
        "unfused" if name == "t=a*b;t+c;reuse" else next(
            k for k in GPU["fma"][np.dtype(dtype).name][name]["equal_to"] if k != "unfused"
            and GPU["fma"][np.dtype(dtype).name][name]["equal_to"][k] == GPU["n_fma"])] \
        == GPU["n_fma"]
    body, reference = _contraction_cases(dtype)[name]
    k = kernel_from("def k(a, b, c, d, e, o, o2):\n    i = cuda.grid(1)\n    n = a.size\n"
                    f"    if i < n:\n        {body}\n", "k")
    rng = np.random.default_rng(11)
    inputs = [rng.standard_normal(512).astype(dtype) for _ in range(5)]
    o, o2 = np.zeros(512, dtype), np.zeros(512, dtype)
    emulate_on(engine, k, 2, 256, *inputs, o, o2)
    want = _loop_reference(*inputs[:2], dtype) if reference is None else reference(*inputs)
    np.testing.assert_array_equal(o, want)


@cuda.jit
def mixed_width_accumulate(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        acc = 0.0                        # float64
        acc += a[i] * b[i]               # a float32 product, rounded, then added in float64
        out[i] = acc


@pytest.mark.parametrize("engine", ENGINES)
def test_a_float32_product_added_in_float64_is_not_fused(engine):
    """The float32 product is rounded before it is widened (float64_accumulator of
    tests/numba_typing_cases.py matched the GPU bit for bit unfused)."""
    a, b, _ = _fma_inputs(np.float32)
    out = np.zeros(a.size, np.float64)
    emulate_on(engine, mixed_width_accumulate, a.size // 256, 256, a, b, out)
    np.testing.assert_array_equal(out, (a * b).astype(np.float64))
