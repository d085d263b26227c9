"""Where the emulator still types integers as NumPy does, not as numba-cuda does: how often the
stored results differ from the GPU's (run on a GPU machine; without one, the emulator only).

numba types an int literal as int64 and widens int32 arithmetic to int64. When this probe was
written the emulator kept Python ints and NumPy's int32 arithmetic; its H100 output from then is
benchmarks/results/numba_typing_gaps_h100.txt. numba_types.py now types them as numba does, and
the kernels here are the ones tests/numba_typing_cases.py checks (imported, not copied).
Usage: python benchmarks/probe_numba_typing_gaps.py
"""

import sys
from pathlib import Path

import numpy as np
from numba import cuda

import simtlab
from simtlab import backend

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from numba_typing_cases import int32_product, int_literal_accumulator, int_true_division  # noqa: E402

N = 4096


def rng(seed):
    return np.random.default_rng(seed)


CASES = [
    ("int_literal_accumulator", int_literal_accumulator,
     lambda: (rng(0).uniform(-1, 1, (N, 97)).astype(np.float32),
              rng(1).uniform(-1, 1, 97).astype(np.float32), np.zeros(N, np.float32))),
    ("int_true_division", int_true_division,
     lambda: (rng(2).uniform(-100, 100, N).astype(np.float32), np.zeros(N, np.float32))),
    ("int32_product", int32_product,
     lambda: (rng(3).integers(-2**31, 2**31 - 1, N, dtype=np.int32),
              rng(4).integers(-2**31, 2**31 - 1, N, dtype=np.int32), np.zeros(N, np.int64))),
]


def main():
    gpu = backend.gpu_available()
    for name, kernel, inputs in CASES:
        results = {}
        for engine in ("greenlet", "vector"):
            args = inputs()
            simtlab.emulate(kernel, (N + 127) // 128, 128, *args, engine=engine, trace=False)
            results[engine] = args[-1]
        line = f"{name}: engines agree {np.array_equal(results['greenlet'], results['vector'])}"
        if gpu:
            args = inputs()
            dev = [cuda.to_device(a) for a in args]
            kernel[(N + 127) // 128, 128](*dev)
            out = dev[-1].copy_to_host()
            line += f"; differs from the GPU in {(results['greenlet'] != out).sum()} of {N}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
