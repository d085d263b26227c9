"""What does numba-cuda refuse to compile in a kernel? Run on a GPU machine:
    PYTHONPATH=/tmp/site python3 tools/probe_numba_refusals.py
Each probe is a kernel body over a float32 array ``a`` (and an int32 ``n``); the answers decide
what simtlab/emulator/static_checks.py refuses before a kernel runs, and are recorded in
benchmarks/results/numba_refusals_h100.txt. tests/test_static_checks_gpu.py keeps the rules
that came out of them in step with numba.
"""
import math

import numpy as np
from numba import cuda, float32

TILE = 16

PROBES = {
    # shared-array shapes
    "shared: kernel argument n": "s = cuda.shared.array(n, float32); s[0] = 1.0; a[0] = s[0]",
    "shared: local copy T = TILE": "T = TILE; s = cuda.shared.array(T, float32); s[0] = 1.0; a[0] = s[0]",
    "shared: TILE * 2": "s = cuda.shared.array(TILE * 2, float32); s[0] = 1.0; a[0] = s[0]",
    "shared: TILE // 2": "s = cuda.shared.array(TILE // 2, float32); s[0] = 1.0; a[0] = s[0]",
    "shared: (TILE, TILE + 1)": "s = cuda.shared.array((TILE, TILE + 1), float32); s[0, 0] = 1.0; a[0] = s[0, 0]",
    "shared: cuda.warpsize": "s = cuda.shared.array(cuda.warpsize, float32); s[0] = 1.0; a[0] = s[0]",
    "local array, constant": "t = cuda.local.array(4, float32); t[0] = a[0]; a[0] = t[0]",
    # returns, allocation, containers, strings
    "return a value": "a[0] = 1.0; return a[0]",
    "bare return": "if a.size == 0: return\na[0] = 1.0",
    "np.zeros": "t = np.zeros(4, np.float32); a[0] = t[0]",
    "np.empty_like": "t = np.empty_like(a); a[0] = t[0]",
    "np.array": "t = np.array([1.0, 2.0]); a[0] = t[0]",
    "np.arange": "t = np.arange(4); a[0] = t[0]",
    "slice .copy()": "t = a[0:4].copy(); a[0] = t[0]",
    "list literal": "t = [1.0, 2.0]; a[0] = t[0]",
    "list comprehension": "t = [a[j] for j in range(4)]; a[0] = t[0]",
    "tuple literal": "t = (1.0, 2.0); a[0] = t[0]",
    "dict literal": "t = {0: 1.0}; a[0] = t[0]",
    "print f-string": 'print(f"{a[0]}")',
    "print plain": 'print("value", a[0])',
    "string length": 's = "abc"; a[0] = len(s)',
    "raise": 'if a[0] < 0: raise ValueError("negative")',
    "assert": "assert a[0] >= 0",
    "while loop": "i = 0\nwhile i < 4:\n    a[i] = 1.0\n    i += 1",
    # math
    "math.sqrt": "a[0] = math.sqrt(a[1])",
    "built-in sum / max / abs": "a[0] = sum(a) + max(a[0], a[1]) + abs(a[1])",
    "a.sum()": "a[0] = a.sum()",
    "np.float32(x), np.int32(x)": "a[0] = np.float32(a[1]) + np.int32(a[2])",
    "np.sqrt": "a[0] = np.sqrt(a[1])",
    "np.exp": "a[0] = np.exp(a[1])",
    "np.log": "a[0] = np.log(a[1])",
    "np.tanh": "a[0] = np.tanh(a[1])",
    "np.abs": "a[0] = np.abs(a[1])",
    "np.floor": "a[0] = np.floor(a[1])",
    "np.maximum / np.minimum": "a[0] = np.maximum(a[1], a[2]) + np.minimum(a[1], a[2])",
    "np.isnan": "a[0] = 1.0 if np.isnan(a[1]) else 0.0",
    "np.sum": "a[0] = np.sum(a)",
    "np.max": "a[0] = np.max(a)",
    "np.dot": "a[0] = np.dot(a, a)",
}


def kernel(body: str):
    """``def k(a, n): <body>`` compiled in a namespace with the names a course kernel has."""
    ns = {"cuda": cuda, "float32": float32, "np": np, "math": math, "TILE": TILE}
    indented = "\n".join("    " + line for line in body.splitlines())
    exec(f"def k(a, n):\n{indented}\n", ns)
    return ns["k"]


if __name__ == "__main__":
    for label, body in PROBES.items():
        try:
            cuda.jit("void(float32[:], int32)")(kernel(body))
            print(f"{label:30s} COMPILES")
        except Exception as e:
            first = next((line for line in str(e).splitlines() if line.strip()), "")
            print(f"{label:30s} REFUSED {type(e).__name__}: {first[:110]}")
