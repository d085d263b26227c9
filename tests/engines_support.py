"""Both engines on one launch, compared: outputs, trace rows, metrics, races and errors.

``compare_launch`` is what tests/test_engines_agree.py asserts with. With the environment
variable SIMTLAB_ENGINES_AGREE set to a file path, tests/conftest.py routes *every*
``engine="auto"`` launch of a test session through it (and appends one line per launch to
that file), so the course's kernel and exercise tests double as agreement tests.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from simtlab.emulator import launch as launch_module
from simtlab.emulator.run import Run


def _outcome(engine_fn, launch, engine):
    try:
        return engine_fn(launch, engine), None
    except Exception as exc:            # noqa: BLE001 - compared below
        return None, exc


def _same_table(a, b, what):
    assert a.dtype.names == b.dtype.names, what
    for name in a.dtype.names:
        np.testing.assert_array_equal(np.asarray(a[name]), np.asarray(b[name]),
                                      err_msg=f"{what}.{name} differs between engines")


def compare_launch(run_engines, launch, engine="auto"):
    """Run ``launch`` on the greenlet engine (on copies of its arrays) and as ``engine``
    asks; assert that everything agrees; return the second trace (or raise its error)."""
    copies = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in launch.args)
    ref_launch = dataclasses.replace(launch, args=copies)
    ref, ref_err = _outcome(run_engines, ref_launch, "greenlet")
    got, got_err = _outcome(run_engines, launch, engine)
    for a, b in zip(copies, launch.args):        # outputs, also up to a fault
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(b, a, err_msg="outputs differ between engines")
    if ref_err is not None or got_err is not None:
        assert type(got_err) is type(ref_err), (ref_err, got_err)
        assert str(got_err) == str(ref_err)
        ref_run, got_run = getattr(ref_err, "run", None), getattr(got_err, "run", None)
        assert (ref_run is None) == (got_run is None), "only one error carries a partial run"
        if ref_run is not None:
            _same_runs(ref_run, got_run)
        raise got_err
    name = launch.func.__name__
    _same_runs(Run(ref, name), Run(got, name))
    return got


def _same_runs(r1, r2):
    assert r1.arrays == r2.arrays
    if r1.traced:
        _same_table(r1.memory, r2.memory, "run.memory")
        _same_table(r1.lines, r2.lines, "run.lines")
        assert r1.races == r2.races
        assert r1.metrics == r2.metrics
    assert r1.traced_blocks == r2.traced_blocks


def agreeing_run_engines(log_path):
    """A stand-in for launch._run_engines that compares the engines on every launch."""
    original = launch_module._run_engines

    def run_engines(launch, engine):
        if engine != "auto":
            return original(launch, engine)
        try:
            got = compare_launch(original, launch, engine)
        except Exception as exc:
            with open(log_path, "a") as log:
                log.write(f"{launch.func.__name__}\terror\t{type(exc).__name__}\n")
            raise
        with open(log_path, "a") as log:
            log.write(f"{launch.func.__name__}\t{got.engine}\t{got.engine_reason}\n")
        return got

    return run_engines
