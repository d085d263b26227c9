"""A runaway kernel is stopped by a count, not by the clock: the same thread, line, partial
trace and error on both engines, traced or not, however busy the machine is; wall-clock time
is only a generous backstop, whose error says it is wall-clock."""

import inspect
import time

import numpy as np
import pytest
from numba import cuda

import simtlab
from simtlab.emulator import launch as launch_module
from simtlab.emulator.launch_spec import MIN_ITERATIONS
from simtlab.emulator.vector import interpreter as vector_interpreter
from engines_support import agreeing_run_engines


@pytest.fixture
def agree(monkeypatch, tmp_path):
    """Every emulate(engine="auto") runs both engines and asserts that outputs, partial runs
    and errors agree (tests/engines_support.py); returns the log rows."""
    log = tmp_path / "engines.log"
    monkeypatch.setattr(launch_module, "_run_engines", agreeing_run_engines(log))
    return lambda: [line.split("\t") for line in log.read_text().splitlines()]


def _line_of(kernel, text):
    """The file line number of the first source line of ``kernel`` that contains ``text``."""
    lines, first = inspect.getsourcelines(kernel.py_func)
    return first + next(i for i, line in enumerate(lines) if text in line)


@cuda.jit
def spins_in_registers(x):
    i = 0
    while True:                       # no memory access, no barrier: only a count can stop it
        i += 1


@cuda.jit
def one_thread_never_leaves(x, out):
    t = cuda.threadIdx.x
    out[t] = x[t]                     # every thread writes before it loops
    n = 0
    while n != t or t == 37:          # thread 37 never leaves
        n += 1
    out[t] = n


@pytest.mark.parametrize("engine", ["greenlet", "auto"])
@pytest.mark.parametrize("trace", [False, True])
def test_a_register_spin_is_stopped_by_the_default_iteration_limit(engine, trace):
    x = np.zeros(32, np.float32)
    with pytest.raises(simtlab.RunawayKernelError) as e:
        simtlab.emulate(spins_in_registers, 1, 32, x, trace=trace, engine=engine)
    err = e.value
    # the default for a launch with fewer array elements than MIN_ITERATIONS
    assert (err.limit, err.count) == ("max_iterations", MIN_ITERATIONS)
    assert f"{MIN_ITERATIONS:,} loop iterations" in err.problem
    assert err.block == (0, 0, 0) and err.thread == (0, 0, 0)      # the first thread to run
    assert err.line == _line_of(spins_in_registers, "while True")
    assert err.fix.endswith(f"emulate(..., max_iterations={4 * MIN_ITERATIONS:_})")
    assert "wall-clock" not in str(err)


def test_the_stop_is_the_same_on_both_engines_traced_or_not(agree):
    x = np.arange(64, dtype=np.float32)
    errors = {}
    for trace in (True, False):
        out = np.zeros(64, np.float32)
        with pytest.raises(simtlab.RunawayKernelError) as e:
            simtlab.emulate(one_thread_never_leaves, 1, 64, x, out, trace=trace,
                            max_iterations=5000)
        errors[trace] = e.value
        # the greenlet engine's order: threads 0-36 have finished, 37 loops
        expected = np.where(np.arange(64) < 37, np.arange(64), 0).astype(np.float32)
        expected[37] = 37
        np.testing.assert_array_equal(out, expected)
    # the same limit, thread, line and count, with the trace on or off
    assert str(errors[True]) == str(errors[False])
    err = errors[True]
    assert err.thread == (37, 0, 0) and err.count == 5000
    assert err.line == _line_of(one_thread_never_leaves, "while n != t")
    run = err.run                    # the partial run, the same on both engines (agree)
    # the lines of every thread that ran, the runaway one's up to where it was stopped: its
    # loop header once for the first test and once per iteration it entered
    assert sorted(set(run.lines.thread)) == list(range(38))
    header = run.lines[(run.lines.thread == 37) & (run.lines.line == err.line)]
    assert len(header) == 1 + 5000
    writes = run.accesses("out", kind="write")
    assert sorted(writes.thread) == sorted(list(range(38)) + list(range(37)))
    assert [row[1:] for row in agree()] == [["error", "RunawayKernelError"]] * 2


def test_a_correct_launch_past_the_vector_engines_handover_runs_on_the_greenlet_engine(
        monkeypatch):
    @cuda.jit
    def loops_100_times(out):
        t = cuda.threadIdx.x
        s = 0
        for k in range(100):
            s += k
        out[t] = s

    monkeypatch.setattr(vector_interpreter, "HANDOVER_ITERATIONS", 50)
    out = np.zeros(32, np.int64)
    run = simtlab.emulate(loops_100_times, 1, 32, out)
    assert np.all(out == sum(range(100)))
    assert run.engine == "greenlet" and "50 loop iterations" in run.engine_reason


def test_a_traced_launch_past_the_vector_engines_line_budget_runs_on_the_greenlet_engine(
        monkeypatch):
    monkeypatch.setattr(vector_interpreter, "HANDOVER_LINE_ROWS", 1000)
    out = np.zeros(64, np.float32)
    x = np.arange(64, dtype=np.float32)

    @cuda.jit
    def counts_up(x, out):
        t = cuda.threadIdx.x
        n = 0
        while n < t:
            n += 1
        out[t] = n + x[t]

    run = simtlab.emulate(counts_up, 1, 64, x, out)
    np.testing.assert_array_equal(out, 2 * x)
    assert run.engine == "greenlet" and "executed lines" in run.engine_reason
    assert len(run.lines) > 1000


def test_the_default_limit_grows_with_the_launchs_arrays():
    """One thread summing an array longer than MIN_ITERATIONS is not a runaway: the default
    allows as many iterations as the launch's arrays hold elements."""
    @cuda.jit
    def one_thread_sums(x, total):
        s = 0.0
        for i in range(x.size):
            s += x[i]
        total[0] = s

    x = np.ones(MIN_ITERATIONS + 4096, np.float32)
    total = np.zeros(1, np.float32)
    run = simtlab.emulate(one_thread_sums, 1, 1, x, total, engine="greenlet")   # traced
    assert total[0] == x.size                 # float32 holds every integer up to 2**24
    assert len(run.accesses("x")) == x.size


def test_a_slow_clock_changes_nothing_in_a_correct_launch(monkeypatch):
    """A machine so busy that the clock seems to run 2 s per reading: the launch still runs
    where it ran (the vector engine), to the same result; before, the vector engine handed it
    to the greenlet engine after 20 s."""
    @cuda.jit
    def loops(out):
        t = cuda.threadIdx.x
        s = 0
        for k in range(2000):
            s += k % 7
        out[t] = s

    clock = [0.0]

    def slow_clock():
        clock[0] += 2.0              # 2000 iterations read it ~30 times: a minute, not ten
        return clock[0]

    monkeypatch.setattr(time, "perf_counter", slow_clock)
    out = np.zeros(64, np.int64)
    run = simtlab.emulate(loops, 1, 64, out)
    assert np.all(out == sum(k % 7 for k in range(2000)))
    assert run.engine == "vector" and run.engine_reason == ""


def test_wall_clock_is_a_backstop_whose_error_says_so():
    """A launch allowed (nearly) endless iterations is stopped by time_limit, and the error
    says the limit is wall-clock time (no duration is asserted: only what stops it)."""
    with pytest.raises(simtlab.RunawayKernelError) as e:
        simtlab.emulate(spins_in_registers, 1, 1, np.zeros(1, np.float32), trace=False,
                        engine="greenlet", max_iterations=10**15, time_limit=0.2)
    err = e.value
    assert err.limit == "time_limit" and err.count == 0.2
    assert "wall-clock" in err.problem and "max_iterations" in err.problem
    assert err.fix.endswith("emulate(..., time_limit=0.8)")
    assert err.line == _line_of(spins_in_registers, "i += 1") or \
        err.line == _line_of(spins_in_registers, "while True")


def test_limits_are_checked_and_the_former_name_still_works():
    x = np.zeros(1, np.float32)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="max_iterations"):
            simtlab.emulate(spins_in_registers, 1, 1, x, max_iterations=bad)
    with pytest.raises(ValueError, match="time_limit"):
        simtlab.emulate(spins_in_registers, 1, 1, x, time_limit=0)
    with pytest.warns(DeprecationWarning, match="max_iterations"), \
            pytest.raises(simtlab.RunawayKernelError) as e:
        simtlab.emulate(spins_in_registers, 1, 1, x, max_steps=300)
    assert e.value.count == 300
