"""Draw docs/playground.png: three tabs of the playground on chapter 0's bank-conflict kernel,
rendered headless from the same plot functions the tabs use (not a browser screenshot: the
browser test saves those, artifacts/browser/00_playground.tab-*.png).

    python tools/playground_figure.py [--out docs/playground.png]
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "docs" / "playground.png"))
    out = Path(parser.parse_args(argv).out)
    import matplotlib.image as mpimg
    from matplotlib.figure import Figure
    from numba import cuda

    import simtlab
    from simtlab.plots.mapping import plot_run_mapping
    from simtlab.plots.memory_requests import plot_bank_access, worst_request

    @cuda.jit
    def row_sums(m, out):
        tile = cuda.shared.array((32, 32), np.float32)
        t = cuda.threadIdx.x
        for r in range(32):
            tile[r, t] = m[r, t]
        cuda.syncthreads()
        total = 0.0
        for r in range(32):
            total += tile[t, r]
        out[t] = total

    m = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    pg = simtlab.playground(row_sums, 1, 32, m, np.zeros(32, np.float32), gpu=False)
    name, line, gwarp, seq = worst_request(pg.run, "shared")
    figures = [plot_run_mapping(pg.run, "m", kind="read", color_by="thread"),
               plot_bank_access(pg.run, name, line=line, gwarp=gwarp, seq=seq)]
    images = []
    for fig in figures:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=70)
        buf.seek(0)
        images.append(mpimg.imread(buf))
    canvas = Figure(figsize=(12, 4.4), layout="constrained")
    axes = canvas.subplots(1, 2)
    for ax, img, title in zip(axes, images, ("mapping tab: who read each element of m",
                                             "memory tab: 32 lanes, one bank, 32 wavefronts")):
        ax.imshow(img)
        ax.set_axis_off()
        ax.set_title(title)
    canvas.suptitle("simtlab.playground(row_sums, 1, 32, m, out): two of its eight tabs")
    out.parent.mkdir(parents=True, exist_ok=True)
    canvas.savefig(out, dpi=80)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
