"""Answers read as data (simtlab/grading/interpret.py): what the grader interprets, what it refuses,
and that nothing of an answer is ever executed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numba import cuda

from simtlab import emulate
from simtlab.grading.interpret import HostError, NotInterpretable, bind_answer, static_problems

SETUP = {"cuda": cuda, "np": np}


def _bind(source, env=None):
    return bind_answer(textwrap.dedent(source), "<answer test>", dict(SETUP, **(env or {})))


def test_a_kernel_runs_on_the_interpreter_and_its_python_never_runs(tmp_path):
    bound = _bind("""
        @cuda.jit
        def scale(x, out):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = 2 * x[i]
        """)
    kernel = bound["scale"]
    x = np.arange(100, dtype=np.float32)
    out = np.zeros_like(x)
    emulate(kernel, 4, 32, x, out, engine="vector", trace=False)
    np.testing.assert_array_equal(out, 2 * x)     # NumPy reference
    with pytest.raises(Exception) as info:
        kernel.py_func(x, out)                     # the stand-in: its body only raises
    assert type(info.value).__name__ == "_InterpretedOnly"


@pytest.mark.parametrize("source, construct", [
    ("@cuda.jit\ndef k(x):\n    exec('open(\"/tmp/simtlab-pwned\", \"w\")')\n", "exec"),
    ("@cuda.jit\ndef k(x):\n    x[0] = np.lib.npyio.DataSource\n", "np.lib"),
    ("@cuda.jit\ndef k(x):\n    intro.vector_add_v2(x, x, x)\n", "module intro"),
    ("@cuda.jit\ndef k(x):\n    x[0] = ().__class__\n", "__class__"),
    ("from numba.cloudpickle import loads\n", "numba.cloudpickle"),
    ("from simtlab.kernels.patterns import transpose_v3_padded as k\n", "course kernel"),
    ("k = intro.vector_add_v2\n", "not a constant"),
    ("@some.decorator\ndef k(x):\n    pass\n", "decorator"),
    ("def k(x, y=print('hi')):\n    return x\n", "default"),
    ("print('x' * 500_000_000)\n", "Expr"),
])
def test_what_reaches_beyond_the_allowlist_is_refused_with_its_line(source, construct, tmp_path):
    from simtlab.kernels import intro

    with pytest.raises(NotInterpretable) as info:
        _bind(source, {"intro": intro})
    assert construct in str(info.value) and str(info.value).startswith("line "), str(info.value)
    assert not (tmp_path / "simtlab-pwned").exists()


def test_host_functions_are_interpreted_within_bounds():
    bound = _bind("""
        def blocks(n, tpb):
            return (n + tpb - 1) // tpb, min(n, tpb), max((1, 2, 3))
        def spin(n):
            while True:
                n += 1
        def huge(n):
            return 10 ** 10 ** n
        """)
    assert bound["blocks"](1000, 256) == (4, 256, 3)               # Python's own arithmetic
    assert bound["blocks"](np.int64(5), np.int32(2)) == (3, 2, 3)
    with pytest.raises(HostError):
        bound["spin"](0)
    with pytest.raises(HostError):
        bound["huge"](5)
    with pytest.raises(TypeError):
        bound["blocks"](object(), 2)


def test_every_course_answer_is_within_the_subset():
    import glob

    import nbformat

    for path in sorted(glob.glob("solutions/*.ipynb")):
        for cell in nbformat.read(path, 4).cells:
            meta = cell.metadata.get("simtlab") or {}
            if meta.get("role") == "answer":
                assert static_problems(cell.source) is None, (meta["id"], static_problems(cell.source))


def test_a_tuple_loop_runs_on_the_vector_engine_as_on_the_greenlet_engine():
    """``for offset in (16, 8, 4, 2, 1)`` (chapter 5's shuffle reduction) was outside the vector
    engine's subset; both engines now give the same sums, and the vector engine runs it itself."""
    @cuda.jit
    def fold(x, out):
        t = cuda.threadIdx.x
        v = x[t]
        for offset in (16, 8, 4, 2, 1):
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        if t == 0:
            out[0] = v

    x = np.arange(32, dtype=np.int64)
    runs = {}
    for engine in ("vector", "greenlet"):
        out = np.zeros(1, np.int64)
        runs[engine] = emulate(fold, 1, 32, x, out, engine=engine)
        assert out[0] == x.sum()                   # NumPy reference
    assert not runs["vector"].engine_reason, runs["vector"].engine_reason   # no fallback


def test_interpretation_only_never_falls_back_to_the_greenlet_engine():
    """In the scoring process, a kernel the vector engine cannot run stops with a reason; the
    greenlet engine (which executes the kernel's Python) cannot even start."""
    script = textwrap.dedent("""
        import numpy as np
        from numba import cuda
        from simtlab import emulate
        from simtlab.emulator.errors import InterpretationStopped
        from simtlab.emulator.launch import interpret_only
        from simtlab.emulator.scheduler import Scheduler

        @cuda.jit
        def outside(x):
            with open("/tmp/simtlab-greenlet-ran", "w"):
                pass

        interpret_only()
        try:
            emulate(outside, 1, 1, np.zeros(1))
        except InterpretationStopped as e:
            assert e.manual, e
            print("stopped:", e.problem)
        try:
            Scheduler(None)
        except RuntimeError as e:
            print("greenlet off:", e)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "stopped:" in r.stdout and "greenlet off:" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("notebook, answer, check, names", [
    ("06_gemm", "ch06.predict", "ch06.check_shared_ceiling", ["predicted_tflops"]),
    ("07_im2col", "ch07.predict", "ch07.check_layer_intensity", ["layer_intensity"]),
    ("08_cnn", "ch08.predict", "ch08.check_fusion_bytes", ["bytes_written"]),
    ("08_cnn", "ch08.fusedpool", "ch08.check_fused_conv_pool", ["conv_pool"]),
])
def test_the_optimisation_and_prediction_answers_pass_their_checks_when_interpreted(notebook, answer, check, names):
    """The master's answer, read as data as the grader reads it (host functions on the
    HostInterpreter, kernels on the vector engine's interpreter: a fallback to the greenlet
    engine would run the stand-in and fail), passes its check."""
    import importlib

    import nbformat
    from numba import float32

    cells = nbformat.read(f"solutions/{notebook}.ipynb", 4).cells
    source = next(c.source for c in cells if (c.metadata.get("simtlab") or {}).get("id") == answer)
    assert static_problems(source) is None
    bound = bind_answer(source, "<master answer>", dict(SETUP, float32=float32))
    module, function = check.split(".")
    getattr(importlib.import_module(f"simtlab.exercises.{module}"), function)(*(bound[n] for n in names))
