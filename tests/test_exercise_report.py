"""simtlab.exercises.report: the messages checks give students."""

from __future__ import annotations

import numpy as np
import pytest

import simtlab
from simtlab.exercises.report import (
    CheckFailed,
    compare_arrays,
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
# run_student_kernel, against a stand-in for simtlab.emulate


class FakeEmulationError(Exception):
    pass


@pytest.fixture
def fake_emulator(monkeypatch):
    def emulate(kernel, griddim, blockdim, *args, **opts):
        try:
            kernel(*args)
        except Exception as e:
            raise FakeEmulationError(f"block (0, 0, 0), thread (0, 0, 0), line 3: {type(e).__name__}: {e}") from e
        return ("run", griddim, blockdim, opts)

    monkeypatch.setattr(simtlab, "emulate", emulate, raising=False)
    monkeypatch.setattr(simtlab, "EmulationError", FakeEmulationError, raising=False)


def test_run_student_kernel_returns_the_run(fake_emulator):
    out = np.zeros(2)

    def kernel(a):
        a[0] = 1

    assert run_student_kernel(kernel, 1, 32, out, trace=False) == ("run", 1, 32, {"trace": False})
    assert out[0] == 1


def test_run_student_kernel_stub_becomes_not_written_yet(fake_emulator):
    def kernel(a):
        raise NotImplementedError("Exercise 1.2: replace this line with your code")

    with pytest.raises(CheckFailed, match=r"^You have not written this exercise yet: Exercise 1\.2: replace"):
        run_student_kernel(kernel, 1, 32, np.zeros(1))


def test_run_student_kernel_plain_not_implemented(monkeypatch):
    def emulate(kernel, *a, **k):
        raise NotImplementedError("Exercise 3: hint")

    monkeypatch.setattr(simtlab, "emulate", emulate, raising=False)
    with pytest.raises(CheckFailed, match="You have not written this exercise yet: Exercise 3: hint"):
        run_student_kernel(None, 1, 1)


def test_run_student_kernel_emulation_error_keeps_message(fake_emulator):
    def kernel(a):
        a[5] = 1

    with pytest.raises(CheckFailed, match=r"line 3: IndexError") as info:
        run_student_kernel(kernel, 1, 32, np.zeros(1))
    assert isinstance(info.value.original, FakeEmulationError)


def test_run_student_kernel_other_errors_propagate(monkeypatch):
    def emulate(kernel, *a, **k):
        raise TypeError("bad launch")

    monkeypatch.setattr(simtlab, "emulate", emulate, raising=False)
    monkeypatch.setattr(simtlab, "EmulationError", FakeEmulationError, raising=False)
    with pytest.raises(TypeError, match="bad launch"):
        run_student_kernel(None, 1, 1)


def test_run_student_kernel_stub_reported_without_cause(monkeypatch):
    class KernelException(FakeEmulationError):
        def __init__(self, problem):
            self.problem = problem
            super().__init__(f"exception in kernel: {problem}\n  line 8 in k()")

    def emulate(kernel, *a, **k):
        raise KernelException("NotImplementedError: Exercise 4: use cuda.grid(1)")

    monkeypatch.setattr(simtlab, "emulate", emulate, raising=False)
    monkeypatch.setattr(simtlab, "EmulationError", FakeEmulationError, raising=False)
    with pytest.raises(CheckFailed) as info:
        run_student_kernel(None, 1, 1)
    assert str(info.value) == "You have not written this exercise yet: Exercise 4: use cuda.grid(1)"


try:
    from numba import cuda as _cuda
except ImportError:  # pragma: no cover
    _cuda = None

if _cuda is not None:

    @_cuda.jit
    def _stub_kernel(x, out):
        i = _cuda.grid(1)
        raise NotImplementedError("Exercise 1.1: replace this line with your code")

    @_cuda.jit
    def _unguarded_kernel(x, out):
        i = _cuda.grid(1)
        out[i] = 2 * x[i]


def test_run_student_kernel_with_the_real_emulator():
    if _cuda is None or not callable(getattr(simtlab, "emulate", None)):
        pytest.skip("numba-cuda or simtlab.emulate is not there")
    x = np.arange(64, dtype=np.float32)
    with pytest.raises(CheckFailed, match=r"^You have not written this exercise yet: Exercise 1\.1: replace"):
        run_student_kernel(_stub_kernel, 1, 64, x, poison(64))
    with pytest.raises(CheckFailed, match="out-of-bounds") as info:
        run_student_kernel(_unguarded_kernel, 1, 128, x, poison(64))
    assert isinstance(info.value.original, simtlab.EmulationError)
