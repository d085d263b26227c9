"""Run chapter 8's course forward pass a few times so Nsight Compute can time each kernel.

    ncu --metrics gpu__time_duration.sum python benchmarks/ncu_cnn.py [--batch 1]

Each kernel's own GPU time (``gpu__time_duration``) at batch 1 is what chapter 8 quotes for
the floor of one image's latency: benchmarks/results/ncu_ch6_8_h100.txt.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv=None) -> int:
    import cupy
    import numpy as np

    from simtlab.cnn_data import load_weights
    from simtlab.gpubench import cnn as GC

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--passes", type=int, default=3)
    args = p.parse_args(argv)
    x = cupy.asarray(np.random.default_rng(0).random((args.batch, 1, 28, 28), dtype=np.float32))
    run, _, _ = GC.course_forward(GC.to_gpu_params(load_weights()), x)
    for _ in range(args.passes):
        run()
    cupy.cuda.runtime.deviceSynchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
