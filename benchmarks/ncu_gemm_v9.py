"""Launch v9 configurations of kernels/gemm.cu a few times at n^3 so Nsight Compute can profile them.

    ncu --kernel-name regex:gemm_v9 --launch-skip 2 --launch-count 1 --section SpeedOfLight ... \\
        python benchmarks/ncu_gemm_v9.py gemm_v9_128x128x8_w2x4_t8x8_g8_b2 [--size 4096]

Each configuration is compiled alone (kernels/gemm.py v9_source) as the sweep does
(benchmarks/gemm_v8_sweep.py); ``--launches`` launches of each, in the order given.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("CUPY_TF32", "0")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main(argv=None) -> int:
    import cupy

    from gemm_v8_sweep import v9_launch
    from simtlab.gpubench.harness import nonzero_random
    from simtlab.kernels import gemm as G

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("kernels", nargs="+", help="V9_KERNEL names of kernels/gemm.cu")
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--launches", type=int, default=4)
    args = p.parse_args(argv)
    n = args.size
    a, b = nonzero_random((n, n), 1), nonzero_random((n, n), 2)
    c = cupy.empty((n, n), cupy.float32)
    for name in args.kernels:
        run = v9_launch(G.v9_config(name))[0](a, b, c)
        for _ in range(args.launches):
            run()
    cupy.cuda.runtime.deviceSynchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
