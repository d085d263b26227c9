"""How every check talks to the student.

A check function either returns quietly after calling :func:`passed`, or
raises :class:`CheckFailed` with a message that says exactly what is wrong::

    from simtlab.exercises.report import (CheckFailed, passed, poison,
                                          compare_arrays, run_student_kernel)

    def check_scale(scale_kernel):
        x = np.arange(1000, dtype=np.float32)
        out = poison(1000, np.float32)             # NaN: unwritten elements show up
        with failing_in("Launch: 4 blocks of 256 threads", hint="out[i] = 2 * x[i]"):
            run_student_kernel(scale_kernel, 4, 256, x, out)
            compare_arrays(out, 2 * x, "out", index_names=("i",))
        passed("scale_kernel doubles every element")

A stub (``raise NotWrittenYet("ch01.scale")``) makes the check raise
:class:`ExerciseNotWritten`, a :class:`CheckFailed` that ``failing_in`` passes on unchanged.
"""

from __future__ import annotations

import html
import sys
from contextlib import contextmanager
from typing import Any, Sequence

import numpy as np

from ..html_theme import SUCCESS

__all__ = [
    "CheckFailed",
    "ExerciseNotWritten",
    "NotWrittenYet",
    "failing_in",
    "by_error_type",
    "with_context",
    "call_student",
    "passed",
    "poison",
    "poison_value",
    "compare_arrays",
    "run_student_kernel",
]

#: how many wrong elements a message lists
MAX_LISTED = 5


class CheckFailed(AssertionError):
    """The student's answer is wrong; the message says what, and where.

    Its text is the launch or input (``context``), what is wrong (``problem``) and what to
    change (``fix``), in that order; :func:`with_context` fills the three parts, which the
    student's card (:mod:`.card`) and the grader's feedback (:meth:`feedback`) lay out each
    their own way. A failure raised without them has its whole text as ``problem``.
    """

    context: str | None = None
    fix: str | None = None

    @property
    def problem(self) -> str:
        return self.__dict__.get("_problem", str(self))

    def feedback(self) -> str:
        """One paragraph for the grader's feedback, the fix first: a length cap then cuts the
        description of the problem, never the advice."""
        parts = [f"Fix: {self.fix.strip()}" if self.fix else None, self.problem.strip(),
                 f"({self.context.strip()})" if self.context else None]
        return " ".join(_sentence(" ".join(p.split())) for p in parts if p)


def _sentence(text: str) -> str:
    """``text`` ending with a full stop, so that parts joined into one line stay sentences."""
    return text if text.endswith((".", "!", "?", ")", ":")) else text + "."


class ExerciseNotWritten(CheckFailed):
    """The check found the exercise's stub (:class:`NotWrittenYet`): nothing to check yet.

    ``exercise`` is the exercise's id.
    """

    exercise: str | None = None


class NotWrittenYet(NotImplementedError):
    """What the stub of an exercise raises until the student replaces it.

    ``simtlab build`` writes ``raise NotWrittenYet("ch05.sequential")`` in place of the
    answer; the checks recognise it by its type (also inside the emulator, which chains it
    as the cause of its own error) and say "not written yet" instead of reporting a crash.
    """

    def __init__(self, exercise: str, message: str | None = None):
        self.exercise = exercise
        super().__init__(message or (
            f"Exercise {exercise} is not written yet: replace the line `raise NotWrittenYet(...)` with your "
            f"code. Stuck? hint(\"{exercise}\") gives a first hint, hint(\"{exercise}\", 2) a stronger one."))


# ---------------------------------------------------------------------------
# success


def _in_ipython() -> bool:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        return ipython.get_ipython() is not None
    except Exception:  # pragma: no cover - broken IPython install
        return False


def passed(message: str) -> None:
    """Tell the student a check passed: a green "✔ message" line."""
    from .card import OUTPUT_KEY, PASSED, current_exercise

    text = f"\u2714 {message}"
    if _in_ipython():
        from IPython.display import display

        exercise = current_exercise()
        # marked as a pass of its exercise: `simtlab progress` reads it back from the saved notebook
        metadata = {OUTPUT_KEY: {"exercise": exercise, "passed": True, "status": PASSED}} if exercise else None
        bundle = {
            "text/plain": text,
            "text/html": (
                f'<div style="color:{SUCCESS};font-weight:600;font-family:var(--jp-ui-font-family,sans-serif)">'
                f"{html.escape(text)}</div>"
            ),
        }
        display(bundle, metadata=metadata, raw=True)
    else:
        print(text)


# ---------------------------------------------------------------------------
# poisoned outputs


def poison_value(dtype) -> Any:
    """The value :func:`poison` fills an array of ``dtype`` with.

    NaN for floating and complex types, the most negative value for signed
    integers, the largest value for unsigned integers.
    """
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return dt.type(np.nan)
    if dt.kind == "c":
        return dt.type(complex(np.nan, np.nan))
    if dt.kind == "i":
        return dt.type(np.iinfo(dt).min)
    if dt.kind == "u":
        return dt.type(np.iinfo(dt).max)
    raise TypeError(f"poison: no fill value that can be told apart from a result for dtype {dt}")


def poison(shape, dtype=np.float32) -> np.ndarray:
    """An output array filled with a value no correct kernel writes.

    :func:`compare_arrays` reports elements still holding it as "never written".
    """
    return np.full(shape, poison_value(dtype), dtype=dtype)


def _is_poisoned(got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Elements of ``got`` still holding the poison value (where ``expected`` does not)."""
    kind = got.dtype.kind
    if kind in "fc":
        return np.isnan(got) & ~np.isnan(expected) if expected.dtype.kind in "fc" else np.isnan(got)
    if kind in "iu":
        value = poison_value(got.dtype)
        return (got == value) & (expected != value)
    return np.zeros(got.shape, dtype=bool)


# ---------------------------------------------------------------------------
# comparing arrays


def _to_numpy(a) -> np.ndarray:
    if hasattr(a, "copy_to_host"):  # numba device array
        a = a.copy_to_host()
    elif hasattr(a, "get") and type(a).__module__.startswith("cupy"):
        a = a.get()
    return np.asarray(a)


def _format_index(idx: tuple[int, ...], index_names: Sequence[str] | None) -> str:
    if index_names is not None and len(index_names) == len(idx):
        return "(" + ", ".join(f"{n}={int(i)}" for n, i in zip(index_names, idx)) + ")"
    return "(" + ", ".join(str(int(i)) for i in idx) + ")"


def _format_value(v) -> str:
    if isinstance(v, (np.floating, float)):
        return "NaN" if np.isnan(v) else f"{float(v):.7g}"
    if isinstance(v, (np.complexfloating, complex)):
        return f"{complex(v):.7g}"
    if isinstance(v, np.generic):
        return str(v.item())
    return str(v)


def _is_run(flat: np.ndarray) -> bool:
    """True when the sorted indices ``flat`` are one contiguous run."""
    return flat.size > 1 and int(flat[-1] - flat[0]) + 1 == flat.size


def compare_arrays(
    got,
    expected,
    name: str,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    index_names: Sequence[str] | None = None,
) -> None:
    """Raise :class:`CheckFailed` unless ``got`` matches ``expected``.

    Floats are compared with ``np.isclose(got, expected, rtol, atol)`` (NaN
    equals NaN only where ``expected`` is NaN), integers and booleans exactly.
    The message names the array, how many elements are wrong, and the first
    few with their index, expected and got values; elements still holding the
    :func:`poison` value are reported as "never written" first.
    ``index_names`` (e.g. ``("row", "col")``) labels the index components.
    """
    got = _to_numpy(got)
    expected = _to_numpy(expected)

    if got.shape != expected.shape:
        raise CheckFailed(f"{name} has shape {got.shape}, expected shape {expected.shape}")

    if got.dtype.kind in "fc" or expected.dtype.kind in "fc":
        try:
            wrong = ~np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
        except TypeError as e:
            raise CheckFailed(f"{name} holds {got.dtype} values that cannot be compared with {expected.dtype}") from e
    else:
        wrong = got != expected
        wrong = np.asarray(wrong, dtype=bool)
        if wrong.shape != got.shape:  # comparison fell back to a scalar
            wrong = np.ones(got.shape, dtype=bool)
    if not wrong.any():
        return

    unwritten = _is_poisoned(got, expected) & wrong
    miscomputed = wrong & ~unwritten
    total = got.size
    parts: list[str] = []

    n_unwritten = int(unwritten.sum())
    if n_unwritten:
        where = np.argwhere(unwritten)
        fill = _format_value(poison_value(got.dtype)) if got.dtype.kind in "fciu" else "?"
        held = f"it still holds {fill}, the value {name} was filled with before the launch"
        if n_unwritten == 1:
            idx = _format_index(tuple(where[0]), index_names)
            parts.append(f"{name}: element {idx} was never written ({held})")
        else:
            if got.ndim == 1 and _is_run(where[:, 0]):
                which = (
                    f"elements {_format_index(tuple(where[0]), index_names)} to "
                    f"{_format_index(tuple(where[-1]), index_names)}"
                )
            else:
                which = "elements " + ", ".join(_format_index(tuple(i), index_names) for i in where[:MAX_LISTED])
                if n_unwritten > MAX_LISTED:
                    which += ", ..."
            parts.append(
                f"{name}: {n_unwritten} of {total} elements were never written ({held.replace('it still holds', 'they still hold')}): "
                f"{which}"
            )

    n_wrong = int(miscomputed.sum())
    if n_wrong:
        where = np.argwhere(miscomputed)
        lines = []
        for i in where[:MAX_LISTED]:
            idx = tuple(i)
            lines.append(
                f"  element {_format_index(idx, index_names)}: expected {_format_value(expected[idx])}, "
                f"got {_format_value(got[idx])}"
            )
        if n_wrong > MAX_LISTED:
            lines.append(f"  ... and {n_wrong - MAX_LISTED} more")
        span = ""
        if got.ndim == 1 and n_wrong > 1 and _is_run(where[:, 0]):
            span = (
                f", all of elements {_format_index(tuple(where[0]), index_names)} to "
                f"{_format_index(tuple(where[-1]), index_names)}"
            )
        tol = f" (tolerance rtol={rtol:g}, atol={atol:g})" if got.dtype.kind in "fc" else ""
        verb = "has" if n_wrong == 1 else "have"
        parts.append(f"{name}: {n_wrong} of {total} elements {verb} the wrong value{span}{tol}:\n" + "\n".join(lines))

    raise CheckFailed("\n".join(parts))


# ---------------------------------------------------------------------------
# running the student's code


def _stub_in_chain(exc: BaseException) -> NotWrittenYet | None:
    """The :class:`NotWrittenYet` that ``exc`` is or was caused by (the emulator chains it)."""
    seen = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, NotWrittenYet):
            return e
        seen.add(id(e))
        e = e.__cause__
    return None


def _not_written(stub: NotWrittenYet, cause: BaseException) -> ExerciseNotWritten:
    failure = ExerciseNotWritten(str(stub))
    failure.exercise = stub.exercise
    failure.original = cause
    return failure


def run_student_kernel(kernel, griddim, blockdim, *args, **opts):
    """Run the student's kernel on the emulator (``simtlab.emulate``) and return the run.

    A kernel still holding its ``raise NotWrittenYet(...)`` stub becomes
    :class:`ExerciseNotWritten`; any other emulation error (out-of-bounds access,
    a barrier in divergent code, ...) becomes a :class:`CheckFailed` carrying the
    emulator's message, with the emulator's error as ``.original``.
    """
    from simtlab import emulate
    from simtlab.emulator.errors import EmulationError, RunawayKernelError

    try:
        return emulate(kernel, griddim, blockdim, *args, **opts)
    except CheckFailed:
        raise
    except EmulationError as e:
        stub = _stub_in_chain(e)
        if stub is not None:
            raise _not_written(stub, e) from None
        if isinstance(e, RunawayKernelError) and e.limit == "max_iterations":
            # the check makes the launch: the limit is not the student's to raise
            e.advise(instead="the check's launch is small, and a correct kernel loops far "
                             "fewer times than that")
        failure = CheckFailed(str(e))
        failure.original = e
        raise failure from None


def call_student(fn, name: str, *args):
    """``fn(*args)`` for an exercise that is a plain Python function.

    The stub becomes :class:`ExerciseNotWritten`; any other exception a :class:`CheckFailed`
    naming the call (``name(args) raised TypeError: ...``).
    """
    try:
        return fn(*args)
    except Exception as e:
        stub = _stub_in_chain(e)
        if stub is not None:
            raise _not_written(stub, e) from None
        failure = CheckFailed(f"{name}{args} raised {type(e).__name__}: {e}")
        failure.original = e   # the student's own traceback, for the card's details
        raise failure from None


@contextmanager
def failing_in(context: str, hint=None, instead=None):
    """The skeleton of every check step: a :class:`CheckFailed` raised inside gets the launch or
    input ``context`` first and ``hint`` last.

    ``hint`` is a string, or a function of the failure returning one (or None), so that the
    hint can depend on what went wrong (``failure.original`` is the emulator's error, when
    there is one). ``instead``, a function of the failure, may return a message that replaces
    the failure's own (when the check knows the cause better than the emulator's generic
    advice); None keeps it. :class:`ExerciseNotWritten` passes through unchanged: there is
    nothing to add to "not written yet"::

        with failing_in(f"Launch: {grid} blocks of {block}", hint="out[i] = 2 * x[i]"):
            run_student_kernel(kernel, grid, block, x, out)
            compare_arrays(out, 2 * x, "out")
    """
    try:
        yield
    except ExerciseNotWritten:
        raise
    except CheckFailed as e:
        better = instead(e) if instead is not None else None
        if better is not None:
            replaced = CheckFailed(better)
            replaced.original = getattr(e, "original", None)
            e = replaced
        text = hint(e) if callable(hint) else hint
        raise with_context(e, context, text) from None


def with_context(failure: CheckFailed, context: str, hint: str | None = None) -> CheckFailed:
    """A new CheckFailed: ``context`` first, then the original message, then ``hint``."""
    text = f"{context}\n{failure}" if context else str(failure)
    if hint:
        text += f"\n{hint}"
    new = CheckFailed(text)
    new.original = getattr(failure, "original", None)
    new._problem = failure.problem
    new.context = "\n".join(c for c in (context, failure.context) if c) or None
    new.fix = "\n".join(f for f in (failure.fix, hint) if f) or None
    return new


def by_error_type(hints: dict[str, str], default: str | None = None):
    """A ``hint`` for :func:`failing_in` chosen by the emulator error's class name
    (``{"OutOfBoundsError": "guard the index", ...}``)."""
    def pick(failure: CheckFailed) -> str | None:
        return hints.get(type(getattr(failure, "original", None)).__name__, default)
    return pick
