"""The vector engine and the greenlet engine agree: outputs, run.memory and run.lines rows,
metrics, races and error messages (tests/engines_support.py does the comparing)."""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda, float32, int32

import simtlab
from simtlab.emulator import launch as launch_module
from simtlab.emulator.vector import values as values_module
from simtlab.kernels import conv, filter2d, gemm, intro, reduction
from simtlab.kernels import divergence as dv
from atomic_cases import cas_loop_add
from engines_support import agreeing_run_engines

ROOT = Path(__file__).resolve().parent.parent
rng = np.random.default_rng(9)


@pytest.fixture
def agree(monkeypatch, tmp_path):
    """Every emulate(engine="auto") in the test runs both engines and compares them; the
    fixture returns the log of (kernel, engine that ran, reason) per launch."""
    log = tmp_path / "engines.log"
    monkeypatch.setattr(launch_module, "_run_engines", agreeing_run_engines(log))

    def rows():
        return [line.split("\t") for line in log.read_text().splitlines()]
    return rows


def _f32(*shape):
    return rng.random(shape, dtype=np.float32)


CASES = {
    "tree reduction": lambda: (reduction.block_sum_tree, 64, 256,
                               (_f32(2**14), np.zeros(64, np.float32))),
    "warp-shuffle reduction": lambda: (reduction.reduce_v5_warp_shuffle, 32, 256,
                                       (_f32(2**14), np.zeros(32, np.float32))),
    "tiled GEMM": lambda: (gemm.gemm_tiled, (3, 2), (16, 16),
                           (_f32(40, 24), _f32(24, 45), np.zeros((40, 45), np.float32))),
    "naive GEMM": lambda: (gemm.gemm_naive, (3, 3), (16, 16),
                           (_f32(40, 24), _f32(24, 45), np.zeros((40, 45), np.float32))),
    "conv2d shared": lambda: (filter2d.conv2d_v2_shared, (4, 4), (16, 16),
                              (_f32(64, 64), _f32(5, 5), np.zeros((60, 60), np.float32))),
    "conv2d global": lambda: (filter2d.conv2d_v1_global, (4, 4), (16, 16),
                              (_f32(64, 64), _f32(5, 5), np.zeros((60, 60), np.float32))),
    "vector add": lambda: (intro.vector_add_v2, 3, 128,
                           (_f32(1000), _f32(1000), np.zeros(1000, np.float32))),
    "conv2d relu (ch 1)": lambda: (intro.conv2d_relu_v1, 4, 32,
                                   (_f32(40, 40) - 0.5, _f32(4, 5, 5) - 0.5,
                                    np.zeros((4, 8, 8), np.float32))),
    "implicit GEMM, offset table": lambda: (
        conv.conv_v3b_offset_table, (4, 1), (16, 16),
        (_f32(2 * 2 * 7 * 9), _f32(5, 18), conv.gather_table(2, 7, 9, 3), np.zeros((2, 5, 4, 4), np.float32),
         7, 9, 2, 1)),
    "implicit GEMM, NHWC": lambda: (conv.conv_v3_implicit_gemm_nhwc, (5, 1), (16, 16),
                                    (_f32(2, 9, 9, 3), _f32(5, 3, 3, 3), np.zeros((2, 7, 7, 5), np.float32), 1, 0)),
    "whoami": lambda: (intro.whoami_2d, (3, 2), (16, 8),
                       tuple(np.full((15, 45), -1, np.int32) for _ in range(3))),
    "branch by parity": lambda: (dv.branch_by_parity, 2, 64, (_f32(100), np.zeros(100, np.float32))),
    "branch by warp": lambda: (dv.branch_by_warp, 2, 64, (_f32(100), np.zeros(100, np.float32))),
    "triangle sums": lambda: (dv.triangle_sum, 2, 64,
                              (rng.integers(0, 40, 100).astype(np.int32), np.zeros(100, np.int64))),
    "triangle sums by order": lambda: (
        dv.triangle_sum_by_order, 2, 64,
        (np.arange(100, dtype=np.int32) % 37, np.argsort(np.arange(100) % 37).astype(np.int32),
         np.zeros(100, np.int64))),
}


@pytest.mark.parametrize("trace", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_course_kernels_agree_and_run_on_the_vector_engine(agree, case, trace):
    kernel, grid, block, args = CASES[case]()
    run = simtlab.emulate(kernel, grid, block, *args, trace=trace)
    assert run.engine == "vector", run.engine_reason
    assert [row[1] for row in agree()] == ["vector"]


# --- what the vector engine covers beyond the course kernels ----------------------------------
@cuda.jit(device=True)
def clamp_add(v, lo, hi):
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v + float32(1)


@cuda.jit
def control_flow(x, out, counts):
    i = cuda.grid(1)
    if i >= x.size:
        return                                     # early return
    acc = float32(0)
    k = 0
    while True:
        k += 1
        if k % 3 == 0:
            continue
        if k > i % 7 + 2:
            break
        acc += x[i] * float32(k)                   # float32 on every lane (an int: float64)
    for j in range(i % 5, 9, 2):                   # per-lane bounds
        if j == 7:
            break
        acc += float32(j) if j % 2 == 0 else float32(-j)
    v = clamp_add(acc, float32(-4), float32(40)) if i % 2 == 0 or x[i] > 0.5 else acc
    out[i] = math.sqrt(abs(v)) + min(i, 3) - max(k, 2)
    old = cuda.atomic.add(counts, i % 4, 1)
    counts[4 + i] = old


@cuda.jit
def warp_work(x, out, votes):
    t = cuda.threadIdx.x
    lane = t % 32
    v = x[cuda.grid(1)]
    offset = 1
    while offset < 32:                              # inclusive scan by shuffles
        n = cuda.shfl_up_sync(0xFFFFFFFF, v, offset)
        if lane >= offset:
            v += n
        offset *= 2
    out[cuda.grid(1)] = v + cuda.shfl_xor_sync(0xFFFFFFFF, v, 1)
    b = cuda.ballot_sync(0xFFFFFFFF, v > 8)
    if lane == 0:
        votes[cuda.blockIdx.x * 8 + t // 32] = b
    if t < 32:
        m = cuda.activemask()
        a = cuda.all_sync(m, v > -1)
        votes[64 + cuda.blockIdx.x * 32 + lane] = m + a + cuda.any_sync(m, v > 100)
    c = cuda.syncthreads_count(1 if v > 4 else 0)
    if t == 0:
        votes[200 + cuda.blockIdx.x] = c


@cuda.jit
def shared_2d_and_local(x, out):
    tile = cuda.shared.array((8, 33), float32)
    dyn = cuda.shared.array(0, int32)
    priv = cuda.local.array(4, float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    tile[ty, tx] = x[cuda.blockIdx.x, ty, tx]
    dyn[ty * 32 + tx] = ty
    for k in range(4):
        priv[k] = k * tile[ty, tx]
    cuda.syncthreads()
    out[cuda.blockIdx.x, ty, tx] = tile[7 - ty, 31 - tx] + priv[3] + dyn[(7 - ty) * 32 + tx]


def test_control_flow_device_functions_math_atomics_agree(agree):
    x = _f32(200)
    out, counts = np.zeros(200, np.float32), np.zeros(204, np.int64)
    run = simtlab.emulate(control_flow, 4, 64, x, out, counts)
    assert run.engine == "vector", run.engine_reason
    assert sorted(counts[4:]) == sorted(k for r in range(4) for k in range(50))


def test_warp_collectives_agree(agree):
    x = _f32(512) * 2
    out, votes = np.zeros(512, np.float32), np.zeros(256, np.int64)
    run = simtlab.emulate(warp_work, 2, 256, x, out, votes)
    assert run.engine == "vector", run.engine_reason


def test_2d_shared_dynamic_shared_and_local_arrays_agree(agree):
    x = _f32(3, 8, 32)
    out = np.zeros_like(x)
    run = simtlab.emulate(shared_2d_and_local, 3, (32, 8), x, out, shared_bytes=1024)
    assert run.engine == "vector", run.engine_reason
    assert [a.space for a in run.arrays] == ["global", "global", "shared", "shared", "local"]


# --- errors: the same messages, from the greenlet engine, after the vector engine stops -------
@cuda.jit
def out_of_bounds(x):
    x[cuda.grid(1) + 1] = 1.0


@cuda.jit
def early_return_barrier(x):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    if t >= 40:
        return
    s[t] = x[t]
    cuda.syncthreads()
    x[t] = s[39 - t]


@cuda.jit
def unwritten_shared(x):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    if t < 32:
        s[t] = x[t]
    cuda.syncthreads()
    x[t] = s[63 - t]


@cuda.jit
def shuffle_in_a_branch(x):
    t = cuda.threadIdx.x
    if t < 16:
        x[t] = cuda.shfl_down_sync(0xFFFFFFFF, x[t], 1)


@cuda.jit
def spins_forever(x):
    while x[0] < 1:
        pass


@pytest.mark.parametrize("kernel, size, error, kw", [
    (out_of_bounds, 64, simtlab.OutOfBoundsError, {}),
    (early_return_barrier, 64, simtlab.BarrierError, {}),
    (unwritten_shared, 64, simtlab.UninitializedReadError, {}),
    (shuffle_in_a_branch, 32, simtlab.WarpCollectiveError, {}),
    (spins_forever, 32, simtlab.RunawayKernelError, {"max_iterations": 2000}),
])
def test_errors_agree(agree, kernel, size, error, kw):
    with pytest.raises(error):
        simtlab.emulate(kernel, 1, size, np.zeros(size, np.float32), **kw)
    (row,) = agree()
    assert row[1:] == ["error", error.__name__]     # the same error from both engines


def test_a_trace_past_max_trace_is_the_same_error(agree):
    x = np.zeros(256, np.float32)
    with pytest.raises(simtlab.EmulationError, match="the trace passed 100 memory accesses"):
        simtlab.emulate(dv.branch_by_parity, 2, 128, x, np.zeros(256, np.float32), max_trace=100)
    assert agree()[0][1:] == ["error", "EmulationError"]


def test_a_race_keeps_the_greenlet_engines_order(agree):
    from simtlab.kernels import patterns
    x = np.arange(64, dtype=np.float32)
    run = simtlab.emulate(patterns.average3_in_place, 1, 64, x)
    assert run.engine == "greenlet" and "races" in run.engine_reason
    assert run.metrics["races"] > 0


@cuda.jit
def racy_total(x, total):
    i = cuda.grid(1)
    if i < x.size:
        total[0] = total[0] + x[i]


@cuda.jit
def read_the_next_blocks_element(a):
    """One thread per block: block b reads a[b + 1], which block b + 1 overwrites after."""
    i = cuda.grid(1)
    v = a[(i + 1) % a.size]
    a[i] = v + 1


@cuda.jit
def histogram_by_atomics(x, bins):
    i = cuda.grid(1)
    for k in range(i, x.size, cuda.gridsize(1)):
        cuda.atomic.add(bins, x[k] % bins.size, 1)


@cuda.jit
def two_lanes_per_element(out):
    """Lanes 2j and 2j + 1 add one to s[j] through one index vector: the greenlet engine
    counts 2, lockstep would count 1 (both read before either writes)."""
    s = cuda.shared.array(32, int32)
    t = cuda.threadIdx.x
    if t < 32:
        s[t] = 0
    cuda.syncthreads()
    j = t // 2
    s[j] = s[j] + 1
    cuda.syncthreads()
    if t < 32:
        out[t] = s[t]


ORDER_DEPENDENT = {
    "racy total": lambda: (racy_total, 2, 128, (np.ones(256, np.float32),
                                                np.zeros(1, np.float32))),
    "in-place average": lambda: ("average3_in_place", 1, 64,
                                 (np.arange(64, dtype=np.float32) ** 2,)),
    "blocks in one chunk": lambda: (read_the_next_blocks_element, 8, 1,
                                    (np.arange(8, dtype=np.int32),)),
    "compare-and-swap loop": lambda: (cas_loop_add, 2, 64, (np.arange(100, dtype=np.int32),
                                                       np.zeros(4, np.int32))),
    "one index, two lanes per element": lambda: (two_lanes_per_element, 1, 64,
                                                 (np.zeros(32, np.int32),)),
}


def _order_case(name):
    kernel, grid, block, args = ORDER_DEPENDENT[name]()
    if isinstance(kernel, str):
        from simtlab.kernels import patterns
        kernel = getattr(patterns, kernel)
    return kernel, grid, block, args


@pytest.mark.parametrize("case", sorted(ORDER_DEPENDENT))
def test_trace_false_never_changes_a_result(case):
    """A kernel whose result depends on the order threads run in gives the greenlet engine's
    result traced or not (the vector engine's lockstep order, untraced, used to keep
    total[0] = 1 where the traced run gave 256)."""
    kernel, grid, block, args = _order_case(case)
    reference = [a.copy() for a in args]
    simtlab.emulate(kernel, grid, block, *reference, engine="greenlet", trace=False)
    for trace in (True, False):
        got = [a.copy() for a in args]
        run = simtlab.emulate(kernel, grid, block, *got, trace=trace)
        for g, r in zip(got, reference):
            np.testing.assert_array_equal(g, r)
        assert run.engine == "greenlet", run.engine_reason
        assert ("compare-and-swap" if "compare" in case else "races") in run.engine_reason


def test_a_racy_total_is_the_sum_with_and_without_trace():
    for trace in (True, False):
        total = np.zeros(1, np.float32)
        simtlab.emulate(racy_total, 2, 128, np.ones(256, np.float32), total, trace=trace)
        assert total[0] == 256


@pytest.mark.parametrize("case", sorted(ORDER_DEPENDENT))
def test_order_dependent_kernels_agree_traced(agree, case):
    kernel, grid, block, args = _order_case(case)
    simtlab.emulate(kernel, grid, block, *args)
    assert [row[1] for row in agree()] == ["greenlet"]


@pytest.mark.parametrize("trace", [True, False])
def test_atomics_alone_stay_on_the_vector_engine(agree, trace):
    x = np.arange(1000, dtype=np.int32) * 7
    bins = np.zeros(16, np.int32)
    run = simtlab.emulate(histogram_by_atomics, 2, 64, x, bins, trace=trace)
    np.testing.assert_array_equal(bins, np.bincount(x % 16, minlength=16))
    assert run.engine == "vector", run.engine_reason


@cuda.jit
def add_one_in_place(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] = x[i] + 1


def _count_vector_runs(monkeypatch):
    """The keyword arguments of every vector-engine run of the test's launches."""
    from simtlab.emulator import vector
    calls, real = [], vector.run

    def counting(launch, **options):
        calls.append(options)
        return real(launch, **options)
    monkeypatch.setattr(vector, "run", counting)
    return calls


def test_an_argument_written_in_place_is_checked_in_one_run(monkeypatch):
    """x is read and then written by each thread: the order check keeps x's reads from the
    start (the kernel stores to x), so one vector run settles it."""
    calls = _count_vector_runs(monkeypatch)
    x = np.arange(300, dtype=np.float32)
    run = simtlab.emulate(add_one_in_place, 3, 128, x, trace=False)
    np.testing.assert_array_equal(x, np.arange(300, dtype=np.float32) + 1)
    assert run.engine == "vector", run.engine_reason
    assert calls == [{}]


@pytest.mark.parametrize("trace", [True, False])
def test_a_write_to_an_argument_guessed_read_only_is_still_checked(monkeypatch, trace):
    """If the guess of which arguments are never written misses one (here: forced to guess
    that no argument is written), its reads were not kept: the launch runs again on the
    vector engine keeping them. A race still goes to the greenlet engine; a race-free kernel
    stays on the vector engine, with the right result."""
    from simtlab.emulator.vector import engine as vector_engine
    monkeypatch.setattr(vector_engine.VectorEngine, "_logs_reads_of",
                        lambda self, name: self.log_every_read)
    calls = _count_vector_runs(monkeypatch)
    total = np.zeros(1, np.float32)
    run = simtlab.emulate(racy_total, 2, 128, np.ones(256, np.float32), total, trace=trace)
    assert total[0] == 256
    assert run.engine == "greenlet" and "races" in run.engine_reason, run.engine_reason
    assert calls == [{}, {"log_every_read": True, "reported": 0}]
    del calls[:]
    x = np.arange(300, dtype=np.float32)
    run = simtlab.emulate(add_one_in_place, 3, 128, x, trace=trace)
    np.testing.assert_array_equal(x, np.arange(300, dtype=np.float32) + 1)
    assert run.engine == "vector", run.engine_reason
    assert calls == [{}, {"log_every_read": True, "reported": 0}]


def _stored(source):
    import ast
    import textwrap
    from simtlab.emulator.vector.interpreter import names_written_through
    return names_written_through(ast.parse(textwrap.dedent(source)).body[0])


def test_the_names_an_array_may_be_written_through():
    """Reads alone are never guessed to write; a store, an atomic, a call or an alias that
    is written are."""
    plain = _stored("""
        def k(a, b, c):
            i = cuda.grid(1)
            v = a[i] if i < a.size else b[0]
            c[i] = v + b[i] * a.shape[0]""")
    assert "c" in plain and not {"a", "b"} & plain
    assert {"m"} <= _stored("""
        def k(m, x):
            row = m[0]
            row[1] = x[2]""") and "x" not in _stored("""
        def k(m, x):
            row = m[0]
            row[1] = x[2]""")
    atomic = _stored("""
        def k(h, x):
            cuda.atomic.add(h, x[0], 1)""")
    assert "h" in atomic and "x" not in atomic
    assert {"a"} <= _stored("""
        def k(a, n):
            helper(a, n)""")
    assert {"b"} <= _stored("""
        def k(a, b):
            p, q = a, b
            q[0] = 1""")
    assert "s" in _stored("""
        def k(x):
            s = cuda.shared.array(4, float32)
            s[0] += x[0]""")


def test_auto_says_why_it_chose_the_greenlet_engine():
    x = np.zeros(32, np.float32)
    run = simtlab.emulate(out_of_bounds, 1, 31, x, order="random", seed=1)
    assert run.engine == "greenlet" and "order='random'" in run.engine_reason

    @cuda.jit
    def with_a_slice(a):
        b = a[0:4]
        b[0] = 1.0

    run = simtlab.emulate(with_a_slice, 1, 1, x)
    assert run.engine == "greenlet" and "slice" in run.engine_reason
    run = simtlab.emulate(out_of_bounds, 1, 31, x, engine="greenlet")
    assert run.engine == "greenlet" and "asked" in run.engine_reason
    run = simtlab.emulate(out_of_bounds, 1, 31, x, engine="vector")
    assert run.engine == "vector" and run.engine_reason == ""
    with pytest.raises(ValueError, match="engine"):
        simtlab.emulate(out_of_bounds, 1, 31, x, engine="fast")


# --- every course kernel and exercise solution, through the course's own tests -------------------
@pytest.mark.slow
def test_the_kernel_and_exercise_tests_pass_with_both_engines_compared(tmp_path):
    """Runs tests/test_kernels_*.py and tests/test_exercises_*.py with every launch compared
    between the engines; every course kernel they launch must have run on the vector engine
    (those that race on the greenlet engine, for its order)."""
    log = tmp_path / "engines.log"
    files = sorted(str(p) for p in (ROOT / "tests").glob("test_kernels_*.py")) + \
        sorted(str(p) for p in (ROOT / "tests").glob("test_exercises_ch0*.py"))
    env = dict(os.environ, SIMTLAB_ENGINES_AGREE=str(log))
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:xdist", "-q", "-x",
                           "-p", "no:cacheprovider", *files], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]
    rows = [line.split("\t") for line in log.read_text().splitlines()]
    engines, reasons = {}, {}
    for name, engine, reason in rows:
        engines.setdefault(name, set()).add(engine)
        reasons.setdefault(name, set()).add(reason)
    import importlib
    problems = []
    for topic in ("patterns", "reduction", "scan"):
        module = importlib.import_module(f"simtlab.kernels.{topic}")
        for name, value in vars(module).items():
            if not hasattr(value, "py_func") or value.py_func.__module__ != module.__name__ \
                    or value.targetoptions.get("device"):
                continue
            name = value.py_func.__name__
            if name not in engines:
                problems.append(f"{topic}.{name} was not launched by the tests")
                continue
            # a kernel that races keeps the greenlet engine's order; any other ran vectorised
            racy = engines[name] == {"greenlet"} and any("races" in r for r in reasons[name]) \
                and all("races" in r or "order='random'" in r for r in reasons[name])
            if not (racy or "vector" in engines[name]):
                problems.append(f"{topic}.{name}: {sorted(reasons[name])}")
    assert problems == []
    assert sum(engine == "vector" for _, engine, _ in rows) > 300


def test_the_environment_picks_the_default_engine(monkeypatch):
    x = np.zeros(32, np.float32)
    monkeypatch.setenv("SIMTLAB_ENGINE", "greenlet")
    assert simtlab.emulate(out_of_bounds, 1, 31, x).engine == "greenlet"
    monkeypatch.setenv("SIMTLAB_ENGINE", "vector")
    assert simtlab.emulate(out_of_bounds, 1, 31, x).engine == "vector"
    monkeypatch.setenv("SIMTLAB_ENGINE", "turbo")
    with pytest.raises(ValueError, match="SIMTLAB_ENGINE"):
        simtlab.emulate(out_of_bounds, 1, 31, x)


@cuda.jit
def python_int_division(x, out):
    i = cuda.grid(1)
    d = i % 4                         # a Python int: 0 on every fourth lane
    out[i] = x[i] + 12 // d if d > 0 or x[i] > 2 else x[i]


def test_a_python_division_by_zero_is_the_greenlet_engines_error(agree):
    x = np.zeros(64, np.float32)
    x[8] = 3.0                        # lane 8 divides by 0.0
    with pytest.raises(simtlab.KernelException, match="ZeroDivisionError"):
        simtlab.emulate(python_int_division, 1, 64, x, np.zeros(64, np.float32))
    x[8] = 0.0
    run = simtlab.emulate(python_int_division, 1, 64, x, np.zeros(64, np.float32))
    assert run.engine == "vector", run.engine_reason


# --- a sampled trace, progress reports and max_trace on the vector engine ----------------------
SAMPLED = ["tree reduction", "warp-shuffle reduction", "tiled GEMM", "conv2d shared",
           "vector add", "triangle sums"]


@pytest.mark.parametrize("chunk_lanes", [1 << 16, 256])
@pytest.mark.parametrize("case", SAMPLED)
def test_a_sampled_trace_with_progress_agrees_on_the_vector_engine(agree, monkeypatch, case,
                                                                   chunk_lanes):
    """trace_blocks and progress= run on the vector engine with the greenlet engine's rows
    and the greenlet engine's progress calls; chunk_lanes=256 makes chunks of one or a few
    blocks, so the sample's end falls inside the launch's chunks."""
    from simtlab.emulator.vector import engine as vector_engine
    monkeypatch.setattr(vector_engine, "CHUNK_LANES", chunk_lanes)
    kernel, grid, block, args = CASES[case]()
    blocks = int(np.prod(grid))
    for sample in (0, 1, blocks // 2 + 1, blocks + 3):
        calls = []
        fresh = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
        run = simtlab.emulate(kernel, grid, block, *fresh, trace_blocks=sample,
                              progress=lambda done, total: calls.append((done, total)))
        assert run.engine == "vector", run.engine_reason
        assert run.traced_blocks == min(sample, blocks)
        assert set(run.memory.block.tolist()) == set(range(min(sample, blocks)))
        per_block = [(d, blocks) for d in range(1, blocks + 1)]
        assert calls == per_block + per_block, "both engines report every block, in order"
    assert [row[1] for row in agree()] == ["vector"] * 4


def test_trace_blocks_must_be_a_count_of_blocks():
    x = np.zeros(32, np.float32)
    for bad in (-1, 2.5, "3", True):
        with pytest.raises(ValueError, match="trace_blocks must be None"):
            simtlab.emulate(out_of_bounds, 1, 31, x, trace_blocks=bad)


@pytest.mark.parametrize("chunk_lanes", [1 << 16, 128])
@pytest.mark.parametrize("case, max_trace", [
    # a block of the tree reduction records 1,279 rows: 512, 384, 192, ... per barrier round
    ("tree reduction", 2 * 1279 + 512 + 384 + 10),   # past it in block 2's third round
    ("tree reduction", 3 * 1279 + 100),              # in the first barrier round of block 3
    ("vector add", 777),                        # no barrier: past it at the end of a block
    ("tiled GEMM", 5000),
])
def test_max_trace_stops_where_the_greenlet_engine_stops(agree, monkeypatch, case, max_trace,
                                                         chunk_lanes):
    """The vector engine's max_trace error carries the greenlet engine's partial run (rows,
    lines of the finished threads, outputs so far: compared by the agree fixture)."""
    from simtlab.emulator.vector import engine as vector_engine
    monkeypatch.setattr(vector_engine, "CHUNK_LANES", chunk_lanes)
    kernel, grid, block, args = CASES[case]()
    with pytest.raises(simtlab.EmulationError, match="the trace passed") as err:
        simtlab.emulate(kernel, grid, block, *args, max_trace=max_trace)
    partial = err.value.run
    assert partial.engine == "vector"
    assert len(partial.memory) > max_trace
    assert agree()[0][1:] == ["error", "EmulationError"]


def test_max_trace_counts_only_the_sampled_blocks(agree):
    # 64 blocks of 1,279 rows each: over 3,000 in all, under it for the first two blocks
    kernel, grid, block, args = CASES["tree reduction"]()
    run = simtlab.emulate(kernel, grid, block, *args, trace_blocks=2, max_trace=3000)
    assert run.engine == "vector" and run.traced_blocks == 2 and len(run.memory) == 2 * 1279
    with pytest.raises(simtlab.EmulationError, match="the trace passed") as err:
        simtlab.emulate(kernel, grid, block, *CASES["tree reduction"]()[3], trace_blocks=4,
                        max_trace=3000)
    assert set(err.value.run.memory.block.tolist()) == {0, 1, 2}    # stopped in block 2
    assert len(err.value.run.memory) == 2 * 1279 + 512                # after its first round


# --- atomics in the greenlet engine's order, divergent loops ----------------------------------
# The greenlet engine runs each thread on until it waits: a thread's atomics in a loop all
# happen before the next thread's. The vector engine keeps that order (vector/arrays.py).
@cuda.jit
def atomic_orders(x, total, hist, counter, tickets, shared_out):
    i = cuda.grid(1)
    local = cuda.shared.array(8, int32)
    t = cuda.threadIdx.x
    if t < 8:
        local[t] = 0
    cuda.syncthreads()
    k = i
    while k < x.size:                               # grid-stride: several atomics per thread
        cuda.atomic.add(total, 0, x[k])             # float32: rounds in the threads' order
        cuda.atomic.add(hist, k % 5, 1)
        cuda.atomic.max(hist, 5, k % 37)
        cuda.atomic.add(local, k % 8, 1)
        k += cuda.gridsize(1)
    tickets[i] = cuda.atomic.add(counter, 0, 1)     # old value used, once per thread
    cuda.syncthreads()
    if t < 8:
        shared_out[cuda.blockIdx.x, t] = local[t]


def test_deferred_atomics_in_a_loop_agree_on_the_vector_engine(agree):
    x = _f32(3000) * np.float32(1000)
    total, hist = np.zeros(1, np.float32), np.zeros(6, np.int64)
    counter, tickets = np.zeros(1, np.int32), np.zeros(192, np.int32)
    shared_out = np.zeros((3, 8), np.int32)
    for trace in (True, False):
        run = simtlab.emulate(atomic_orders, 3, 64, x, total, hist, counter, tickets, shared_out,
                              trace=trace)
        assert run.engine == "vector", run.engine_reason
    # the float sum in the greenlet engine's order: thread by thread, each its own elements
    expect = np.float32(0)
    for _ in range(2):
        for thread in range(192):
            for k in range(thread, 3000, 192):
                expect = np.float32(expect + x[k])
    assert total[0] == expect
    assert sorted(tickets) == list(range(192, 384))      # the second launch's tickets


@cuda.jit
def used_atomics_in_a_loop(x, acc, olds):
    i = cuda.grid(1)
    for j in range(3):
        olds[i * 3 + j] = cuda.atomic.add(acc, 0, x[i] * float32(j + 1))


@cuda.jit
def cas_retry_count(acc, tries):
    i = cuda.grid(1)
    old = acc[0]
    n = 0
    while True:
        n += 1
        seen = cuda.atomic.cas(acc, 0, old, old + i + 1)
        if seen == old:
            break
        old = seen
    tries[i] = n


def test_atomics_whose_order_the_vector_engine_cannot_keep_run_on_the_greenlet_engine(agree):
    x = _f32(64)
    acc, olds = np.zeros(1, np.float32), np.zeros(192, np.float32)
    run = simtlab.emulate(used_atomics_in_a_loop, 2, 32, x, acc, olds, trace=False)
    assert run.engine == "greenlet" and "order" in run.engine_reason
    # thread by thread: thread 0's three adds, then thread 1's...
    expect, seen = np.float32(0), []
    for i in range(64):
        for j in range(3):
            seen.append(expect)
            expect = np.float32(expect + x[i] * np.float32(j + 1))
    assert olds.tolist() == seen and acc[0] == expect
    acc, tries = np.zeros(1, np.int64), np.zeros(64, np.int64)
    simtlab.emulate(cas_retry_count, 2, 32, acc, tries, trace=False)
    assert tries.tolist() == [1] * 64           # no thread is interrupted between read and CAS


@cuda.jit
def collatz(start, steps):
    i = cuda.grid(1)
    if i < start.size:
        n = start[i]
        k = 0
        while n != 1:
            if n % 2 == 0:
                n = n // 2
            else:
                n = 3 * n + 1
            k += 1
            if k > 1000:
                break
        steps[i] = k


@pytest.mark.parametrize("sparse_from", [None, 64])
def test_a_divergent_while_loop_agrees_on_the_vector_engine(agree, monkeypatch, sparse_from):
    if sparse_from:                 # the loop's last iterations divide on the active lanes only
        monkeypatch.setattr(values_module, "_SPARSE_FROM", sparse_from)
    start = np.concatenate([[1, 2, 27, 97], rng.integers(1, 3000, 196)]).astype(np.int64)
    steps = np.zeros(200, np.int32)
    for trace in (True, False):
        run = simtlab.emulate(collatz, 4, 64, start, steps, trace=trace)
        assert run.engine == "vector", run.engine_reason

    def reference(n):
        k = 0
        while n != 1:
            n, k = (n // 2 if n % 2 == 0 else 3 * n + 1), k + 1
        return k
    assert steps.tolist() == [reference(n) for n in start.tolist()]
