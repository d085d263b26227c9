"""Launch one GEMM version a few times at n^3 so Nsight Compute can profile it.

    ncu --kernel-name regex:gemm_v7 --launch-skip 2 --launch-count 1 \\
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \\
        python benchmarks/ncu_gemm.py "v7 warp tiling" numba [--size 4096]

The first launches compile and warm up; profile a later one (--launch-skip). What ncu reports
(FMA pipe use, achieved occupancy, why warps stall) is what chapter 6 quotes for the gap to
cuBLAS: benchmarks/results/gemm_ncu_h100.txt.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("CUPY_TF32", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv=None) -> int:
    import cupy

    from simtlab.gpubench import gemm as bench
    from simtlab.gpubench.harness import nonzero_random

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("version", help='a version of kernels/gemm.py, e.g. "v7 warp tiling", or "cublas"')
    p.add_argument("impl", nargs="?", default="cuda-c", choices=["numba", "cuda-c"])
    p.add_argument("--size", type=int, default=bench.DEFAULT_N)
    p.add_argument("--launches", type=int, default=4)
    args = p.parse_args(argv)
    n = args.size
    a, b = nonzero_random((n, n), 1), nonzero_random((n, n), 2)
    c = cupy.empty((n, n), cupy.float32)
    run = bench.cublas_runner(a, b, c) if args.version == "cublas" else bench.gemm_runner(args.version, args.impl, a, b, c)
    for _ in range(args.launches):
        run()
    cupy.cuda.runtime.deviceSynchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
