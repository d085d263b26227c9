"""How close the course comes to the emulator's limit on loop iterations per thread.

    python benchmarks/loop_iterations_in_course.py [--out benchmarks/results/loop_iterations_in_course.json]
        [--no-tests] [--no-notebooks] [--vector-speed]

Runs every course launch the way CI does -- the kernel and exercise tests
(tests/test_kernels_*.py, tests/test_exercises_ch0*.py, which launch kernels/*.py and the
exercises' masters and stubs) and the chapters' master notebooks (solutions/*.ipynb) -- with
each engine's iteration count recorded per launch: on the greenlet engine the exact count of
the thread that looped most, on the vector engine its chunk's count (an upper bound on each
lane's, which it hands over at). Each launch's margin is its limit
(``Launch.iteration_limit``, the default scaled to the launch) over that count.

``--vector-speed`` measures how long each engine takes to reach the default limit on a
``while True`` spin and on a divergent loop (one lane never leaves), the launches a student's
runaway kernel makes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

# kernel name -> {"greenlet": most iterations, "vector": most in a chunk, "lane_iterations":
# most iterations x lanes of a chunk, "line_rows": most rows of run.lines the vector engine
# recorded in a launch, "margin": least limit / count}
_RECORDS: dict = {}
_FIELDS = ("greenlet", "vector", "lane_iterations", "line_rows")


def _entry(name):
    return _RECORDS.setdefault(name, {**dict.fromkeys(_FIELDS, 0), "margin": None})


def _note(name, engine, count, limit, line_rows=0, lanes=0):
    entry = _entry(name)
    entry[engine] = max(entry[engine], count)
    entry["line_rows"] = max(entry["line_rows"], line_rows)
    entry["lane_iterations"] = max(entry["lane_iterations"], lanes * count)
    if count:
        margin = limit / count
        entry["margin"] = margin if entry["margin"] is None else min(entry["margin"], margin)


def install(dump_to: str | None = None) -> None:
    """Count every launch of this process (and write the counts to ``dump_to`` at exit)."""
    from simtlab.emulator import scheduler
    from simtlab.emulator.vector import interpreter

    body = scheduler.Scheduler._thread_body

    def thread_body(self, th):
        body(self, th)
        _note(self.launch.func.__name__, "greenlet", self.iterations(th), self.iteration_limit)

    run_kernel = interpreter.Interpreter.run_kernel

    def run_chunk(self, fn, args):
        try:
            run_kernel(self, fn, args)
        finally:
            _note(self.engine.launch.func.__name__, "vector", self.iterations,
                  self.engine.launch.iteration_limit, self.engine.line_rows, self.n)

    scheduler.Scheduler._thread_body = thread_body
    interpreter.Interpreter.run_kernel = run_chunk
    if dump_to:
        import atexit
        atexit.register(lambda: Path(dump_to).write_text(json.dumps(_RECORDS)))


def _merge(found: dict) -> None:
    for name, entry in found.items():
        mine = _entry(name)
        for field in _FIELDS:
            mine[field] = max(mine[field], entry[field])
        if entry["margin"] is not None:
            mine["margin"] = entry["margin"] if mine["margin"] is None else \
                min(mine["margin"], entry["margin"])


def run_tests() -> None:
    files = sorted(str(p) for p in (REPO / "tests").glob("test_kernels_*.py")) + \
        sorted(str(p) for p in (REPO / "tests").glob("test_exercises_ch0*.py"))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "counts.json"
        code = (f"import sys; sys.path.insert(0, {str(REPO / 'benchmarks')!r}); "
                f"import loop_iterations_in_course as m; m.install({str(out)!r}); "
                "import pytest; sys.exit(pytest.main(['-q', '-p', 'no:randomly', '-p', "
                f"'no:cacheprovider', '-x', *{files!r}]))")
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO)
        if done.returncode:
            raise SystemExit(f"the course's tests failed (exit {done.returncode})")
        _merge(json.loads(out.read_text()))


def run_notebooks() -> None:
    import nbformat
    from nbclient import NotebookClient

    for path in sorted((REPO / "solutions").glob("*.ipynb")):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "counts.json"
            nb = nbformat.read(path, as_version=4)
            nb.cells.insert(0, nbformat.v4.new_code_cell(
                f"import sys; sys.path.insert(0, {str(REPO / 'benchmarks')!r})\n"
                f"import loop_iterations_in_course as _m; _m.install({str(out)!r})"))
            t0 = time.perf_counter()
            NotebookClient(nb, timeout=1800, kernel_name="python3", allow_errors=True,
                           resources={"metadata": {"path": str(path.parent)}}).execute()
            print(f"{path.name}: {time.perf_counter() - t0:.0f} s", flush=True)
            if out.exists():
                _merge(json.loads(out.read_text()))


def vector_speed() -> dict:
    """Seconds each engine takes to stop a runaway kernel at the default limit."""
    import numpy as np
    from numba import cuda

    import simtlab

    @cuda.jit
    def spin(x):
        i = 0
        while True:
            i += 1

    @cuda.jit
    def waits_for_a_write(x):
        i = cuda.grid(1)
        while x[i] < 1:                # nothing writes x
            pass

    @cuda.jit
    def divergent(x):
        t = cuda.threadIdx.x
        n = 0
        while n != t or t == 5:        # lane 5 never leaves
            n += 1
        x[t] = n

    out = {}
    for kernel, blocks, threads in ((spin, 1, 32), (spin, 64, 1024), (waits_for_a_write, 1, 32),
                                    (waits_for_a_write, 64, 1024), (divergent, 1, 32),
                                    (divergent, 64, 1024)):
        for engine in ("greenlet", "auto"):
            for trace in (False, True):
                x = np.zeros(blocks * threads, np.float32)
                t0 = time.perf_counter()
                try:
                    simtlab.emulate(kernel, blocks, threads, x, trace=trace, engine=engine)
                except simtlab.RunawayKernelError:
                    pass
                key = f"{kernel.py_func.__name__} {blocks}x{threads} {engine} trace={trace}"
                out[key] = round(time.perf_counter() - t0, 2)
                print(f"{key}: {out[key]} s", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(REPO / "benchmarks/results/loop_iterations_in_course.json"))
    ap.add_argument("--no-tests", action="store_true")
    ap.add_argument("--no-notebooks", action="store_true")
    ap.add_argument("--vector-speed", action="store_true")
    a = ap.parse_args()
    result = {"load_average": os.getloadavg()}
    if a.vector_speed:
        result["seconds_to_stop_a_runaway"] = vector_speed()
    if not a.no_tests:
        run_tests()
    if not a.no_notebooks:
        run_notebooks()
    if _RECORDS:
        worst = max(_RECORDS.items(), key=lambda kv: max(kv[1]["greenlet"], kv[1]["vector"]))
        tightest = min((kv for kv in _RECORDS.items() if kv[1]["margin"]),
                       key=lambda kv: kv[1]["margin"])
        result.update(kernels=_RECORDS, most_iterations=worst[0], tightest_margin=tightest[0])
        print(f"most iterations: {worst[0]} {worst[1]}; tightest margin: {tightest[0]} "
              f"{tightest[1]}")
        for field in ("lane_iterations", "line_rows"):
            most = max(_RECORDS.items(), key=lambda kv: kv[1][field])
            result[f"most_{field}"] = most[0]
            print(f"most {field}: {most[0]} {most[1]}")
    Path(a.out).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
