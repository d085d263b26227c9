"""Launch chapter 9's tensor-core kernels (and cuBLAS) a few times at 4096^3 so Nsight Compute can
profile them: what a stall profile of the mma.sync versions needs (the TF32 goal: which part of
feeding the MMAs costs most, against mma.sync's measured ceiling, benchmarks/mma_peak.py).

    ncu --kernel-name regex:"tc_v6|xmma|gemm" --launch-skip 1 --launch-count 1 --metrics ... \\
        python benchmarks/ncu_tensor_cores.py tc_v6s_tf32_128x256x32_w64x64_s3_b1 cublas:tf32 [--launches 2]

Each argument is a kernel of kernels/tensor_cores.py (VERSIONS or SWEEP: its precision is the
version's) or ``cublas:<precision>`` (``cublas:tf32:bt``: B^T given, both operands K-major, the
layout of the v6t ``_bt`` kernels); every one is launched ``--launches`` times, in the order
given, on the inputs chapter 9's benchmark uses (``gpubench.tensor_cores.device_inputs``).
``tools/device_tensor_cores_ncu.sh`` runs the profile this course keeps.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("CUPY_TF32", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def version_of(kernel: str):
    """The VERSIONS/SWEEP entry of chapter 9 whose kernel is ``kernel`` (KeyError naming the options)."""
    from simtlab.kernels import tensor_cores as T

    for v in T.VERSIONS + T.SWEEP:
        if v.kernel == kernel:
            return v
    raise KeyError(f"no tensor-core version runs {kernel!r}; e.g. {', '.join(v.kernel for v in T.SWEEP[:3])}")


def make_run(name: str, version=None, n: int = 4096):
    """``run()`` of ``name`` (a version's kernel, or ``cublas:<precision>[:bt]``) on chapter 9's
    benchmark inputs at n^3 (``gpubench.tensor_cores.device_inputs``), C an n x n float32 array."""
    import cupy

    from simtlab.gpubench import tensor_cores as TC

    parts = name.split(":")
    if version is None and not name.startswith("cublas:"):
        version = version_of(name)
    precision = parts[1] if version is None else version.precision
    _, _, a, b = TC.device_inputs((n, n, n), precision)
    c = cupy.empty((n, n), cupy.float32)
    if version is not None:
        return TC.runner(version, a, b, c)
    if parts[2:] == ["bt"]:
        return TC.cublas_runner(precision, a, cupy.ascontiguousarray(b.T), c, b_transposed=True)
    return TC.cublas_runner(precision, a, b, c)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("kernels", nargs="+", help="tensor_cores.cu kernels, or cublas:tf32|fp16|bf16|fp32[:bt]")
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--launches", type=int, default=2)
    args = p.parse_args(argv)
    plans = [(name, None if name.startswith("cublas:") else version_of(name)) for name in args.kernels]

    import cupy

    for name, version in plans:
        run = make_run(name, version, args.size)
        for _ in range(args.launches):
            run()
        cupy.cuda.runtime.deviceSynchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
