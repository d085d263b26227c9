"""Which NumPy calls compile inside a numba-cuda kernel? Run on a GPU machine:
    PYTHONPATH=/tmp/site python3 tools/probe_numpy_in_kernels.py
(the answers decide what simtlab/emulator/static_checks.py says about np.* in kernels)."""
import numpy as np
from numba import cuda

CALLS = {
    "np.float32(x)": lambda: _make("a[0] = np.float32(a[1])"),
    "np.int32(x)": lambda: _make("a[0] = np.int32(a[1])"),
    "np.sqrt(x)": lambda: _make("a[0] = np.sqrt(a[1])"),
    "np.exp(x)": lambda: _make("a[0] = np.exp(a[1])"),
    "np.log(x)": lambda: _make("a[0] = np.log(a[1])"),
    "np.tanh(x)": lambda: _make("a[0] = np.tanh(a[1])"),
    "np.abs(x)": lambda: _make("a[0] = np.abs(a[1])"),
    "np.floor(x)": lambda: _make("a[0] = np.floor(a[1])"),
    "np.maximum(x, y)": lambda: _make("a[0] = np.maximum(a[1], a[2])"),
    "np.minimum(x, y)": lambda: _make("a[0] = np.minimum(a[1], a[2])"),
    "np.isnan(x)": lambda: _make("a[0] = 1.0 if np.isnan(a[1]) else 0.0"),
    "np.sum(a)": lambda: _make("a[0] = np.sum(a)"),
    "np.max(a)": lambda: _make("a[0] = np.max(a)"),
    "np.dot(a, a)": lambda: _make("a[0] = np.dot(a, a)"),
}


def _make(body):
    ns = {"np": np}
    exec(f"def k(a):\n    {body}\n", ns)
    return ns["k"]


for label, make in CALLS.items():
    try:
        cuda.jit("void(float32[:])")(make())
        print(f"{label:18s} COMPILES")
    except Exception as e:
        first = next((line for line in str(e).splitlines() if line.strip()), "")
        print(f"{label:18s} REFUSED {type(e).__name__}: {first[:120]}")
