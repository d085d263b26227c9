"""Launch one convolution version of chapter 7 a few times so Nsight Compute can profile it.

    ncu --kernel-name regex:conv_v6 --launch-skip 2 --launch-count 1 \\
        --section SpeedOfLight --section WarpStateStats --section SchedulerStats \\
        python benchmarks/ncu_conv.py "v6 image per block" [--layer C1] [--batch 1000]

``version`` is a label of ``kernels/conv.py``'s VERSIONS (CUDA C), or ``cudnn``. What ncu
reports (issue slots used, why warps stall: the constant cache, the instruction cache, ...)
is what chapter 7 quotes for v5 and v6: benchmarks/results/ncu_conv_h100.txt.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv=None) -> int:
    import cupy

    from simtlab.gpubench import conv as G

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("version", help='e.g. "v6 image per block", "v5 tuned", or "cudnn"')
    p.add_argument("--layer", default="C1", choices=G.LAYERS)
    p.add_argument("--batch", type=int, default=1000)
    p.add_argument("--launches", type=int, default=4)
    args = p.parse_args(argv)
    x, w = G._inputs(args.layer, args.batch)
    run, _ = G.torch_runner(x, w) if args.version == "cudnn" else G.conv_runner(args.version, "cuda-c", x, w)
    for _ in range(args.launches):
        run()
    cupy.cuda.runtime.deviceSynchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
