"""simtlab.exercises.report: the messages checks give students."""

from __future__ import annotations

import numpy as np
import pytest

from numba import cuda

import simtlab
from simtlab.exercises.report import (
    CheckFailed,
    ExerciseNotWritten,
    NotWrittenYet,
    by_error_type,
    call_student,
    compare_arrays,
    failing_in,
    passed,
    poison,
    poison_value,
    run_student_kernel,
)


def failure(got, expected, name="out", **kw) -> str:
    with pytest.raises(CheckFailed) as info:
        compare_arrays(got, expected, name, **kw)
    return str(info.value)


def test_check_failed_is_an_assertion_error():
    assert issubclass(CheckFailed, AssertionError)


def test_equal_arrays_pass():
    compare_arrays(np.arange(5, dtype=np.float32), np.arange(5), "out")
    compare_arrays(np.arange(5, dtype=np.float32) + 1e-7, np.arange(5), "out")
    compare_arrays([[1, 2], [3, 4]], np.array([[1, 2], [3, 4]], dtype=np.int64), "m")
    compare_arrays(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]), "nan expected")


def test_wrong_values_name_index_expected_got_and_count():
    got = np.arange(10, dtype=np.float32)
    got[[3, 7]] = -1
    msg = failure(got, np.arange(10), index_names=("i",))
    assert "out: 2 of 10 elements have the wrong value" in msg
    assert "element (i=3): expected 3, got -1" in msg
    assert "element (i=7): expected 7, got -1" in msg


def test_many_wrong_values_are_summarised():
    msg = failure(np.zeros(100), np.arange(100.0))
    assert "99 of 100 elements" in msg and "all of elements (1) to (99)" in msg
    assert msg.count("element (") == 5 + 0 and "... and 94 more" in msg


def test_2d_index_names():
    got = np.ones((3, 4), dtype=np.int32)
    got[2, 1] = 5
    msg = failure(got, np.ones((3, 4), dtype=np.int32), "C", index_names=("row", "col"))
    assert "C: 1 of 12 elements has the wrong value" in msg
    assert "element (row=2, col=1): expected 1, got 5" in msg


def test_integers_compared_exactly():
    big = np.array([2**40], dtype=np.int64)
    msg = failure(big + 1, big, "n")
    assert "expected 1099511627776, got 1099511627777" in msg


def test_shape_mismatch():
    assert "out has shape (3,), expected shape (4,)" in failure(np.zeros(3), np.zeros(4))


def test_poison_values():
    assert np.isnan(poison(3)).all() and poison(3).dtype == np.float32
    assert (poison((2, 2), np.int32) == np.iinfo(np.int32).min).all()
    assert (poison(2, np.uint8) == 255).all()
    assert np.isnan(poison_value(np.complex64))
    with pytest.raises(TypeError):
        poison(2, bool)


def test_unwritten_float_element():
    out = poison(8, np.float32)
    out[:] = np.arange(8)
    out[5] = np.nan
    msg = failure(out, np.arange(8), index_names=("i",))
    assert "out: element (i=5) was never written" in msg
    assert "NaN" in msg


def test_unwritten_int_elements_and_wrong_ones_together():
    out = poison(10, np.int32)
    out[:6] = np.arange(6)
    out[2] = 99
    msg = failure(out, np.arange(10))
    assert "4 of 10 elements were never written" in msg
    assert "elements (6) to (9)" in msg
    assert "-2147483648" in msg
    assert "1 of 10 elements has the wrong value" in msg and "element (2): expected 2, got 99" in msg


def test_passed_prints_outside_ipython(capsys):
    passed("all good")
    assert capsys.readouterr().out == "\u2714 all good\n"


# ---------------------------------------------------------------------------
# run_student_kernel, call_student and failing_in, on the real emulator


@cuda.jit
def _stub_kernel(x, out):
    i = cuda.grid(1)
    raise NotWrittenYet("ch09.demo")


@cuda.jit
def _unguarded_kernel(x, out):
    i = cuda.grid(1)
    out[i] = 2 * x[i]


@cuda.jit
def _old_stub_kernel(x, out):
    raise NotImplementedError("Exercise 1.1: replace this line with your code")


def test_not_written_yet_names_the_exercise_and_the_hint():
    stub = NotWrittenYet("ch09.demo")
    assert isinstance(stub, NotImplementedError) and stub.exercise == "ch09.demo"
    assert str(stub).startswith("Exercise ch09.demo is not written yet")
    assert 'hint("ch09.demo")' in str(stub) and 'hint("ch09.demo", 2)' in str(stub)


def test_run_student_kernel_returns_the_run():
    x = np.arange(64, dtype=np.float32)
    out = poison(64)
    run = run_student_kernel(_unguarded_kernel, 1, 64, x, out)
    assert isinstance(run, simtlab.Run)
    assert np.array_equal(out, 2 * x)


def test_run_student_kernel_stub_is_typed_not_matched_by_text():
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(ExerciseNotWritten, match=r"^Exercise ch09\.demo is not written yet") as info:
        run_student_kernel(_stub_kernel, 1, 64, x, poison(64))
    assert info.value.exercise == "ch09.demo"
    assert isinstance(info.value.original, simtlab.EmulationError)
    # a NotImplementedError that is not the stub is a crash of the student's code, not "not written"
    with pytest.raises(CheckFailed) as info:
        run_student_kernel(_old_stub_kernel, 1, 32, x, poison(64))
    assert not isinstance(info.value, ExerciseNotWritten)
    assert "NotImplementedError" in str(info.value)


def test_run_student_kernel_emulation_error_keeps_message_and_original():
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(CheckFailed, match="out-of-bounds") as info:
        run_student_kernel(_unguarded_kernel, 1, 128, x, poison(64))
    assert isinstance(info.value.original, simtlab.OutOfBoundsError)


@cuda.jit
def _spinning_kernel(x, out):
    i = cuda.grid(1)
    j = 0
    while j < x.size:              # j never grows
        out[i] = x[j]


def test_a_runaway_exercise_kernel_is_not_told_to_raise_a_limit_it_cannot_reach():
    """The check makes the launch: the fix points at the loop, not at max_iterations."""
    x = np.arange(32, dtype=np.float32)
    with pytest.raises(CheckFailed, match="runaway kernel") as info:
        run_student_kernel(_spinning_kernel, 1, 32, x, poison(32), max_iterations=1000)
    err = info.value.original
    assert isinstance(err, simtlab.RunawayKernelError) and err.count == 1000
    assert err.fix.startswith("look for a loop whose condition never becomes false")
    assert "max_iterations=" not in err.fix and "far fewer times" in err.fix
    assert "max_iterations=" not in str(info.value).split("fix:")[1]


def test_run_student_kernel_launch_error_is_a_check_failure():
    with pytest.raises(CheckFailed, match="takes 2 arguments, the launch passes 0") as info:
        run_student_kernel(_unguarded_kernel, 1, 32)
    assert isinstance(info.value.original, simtlab.LaunchError)


def test_call_student():
    def stub(a):
        raise NotWrittenYet("ch09.plain")

    def broken(a):
        return a / 0

    assert call_student(lambda a: a + 1, "f", 1) == 2
    with pytest.raises(ExerciseNotWritten, match="ch09.plain is not written yet"):
        call_student(stub, "stub", 1)
    with pytest.raises(CheckFailed, match=r"^broken\(1,\) raised ZeroDivisionError"):
        call_student(broken, "broken", 1)


def test_failing_in_adds_context_and_hint_but_not_to_not_written():
    with pytest.raises(CheckFailed) as info:
        with failing_in("Launch: 2 blocks", hint="write out[i]"):
            raise CheckFailed("out: 3 of 8 elements wrong")
    assert str(info.value) == "Launch: 2 blocks\nout: 3 of 8 elements wrong\nwrite out[i]"
    with pytest.raises(CheckFailed) as info:                  # a hint computed from the failure
        with failing_in("ctx", hint=lambda e: f"saw {str(e)[:3]!r}"):
            raise CheckFailed("out wrong")
    assert str(info.value) == "ctx\nout wrong\nsaw 'out'"
    with pytest.raises(ExerciseNotWritten) as info:
        with failing_in("ctx", hint="never shown"):
            call_student(lambda: (_ for _ in ()).throw(NotWrittenYet("ch09.x")), "f")
    assert "ctx" not in str(info.value) and "never shown" not in str(info.value)
    with failing_in("ctx"):                                   # nothing raised: nothing added
        pass


def test_by_error_type_picks_the_hint_of_the_emulator_error():
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(CheckFailed) as info:
        with failing_in("ctx", by_error_type({"OutOfBoundsError": "guard i", "BarrierError": "no"})):
            run_student_kernel(_unguarded_kernel, 1, 128, x, poison(64))
    assert str(info.value).startswith("ctx\n") and str(info.value).endswith("\nguard i")
