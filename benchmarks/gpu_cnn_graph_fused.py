"""Chapter 8 on one GPU: the batch-1 forward as CUDA graphs in numba-cuda and CUDA C, and cuDNN's
fused convolution + bias + ReLU beside the course's fused kernels, every ratio from this one run.

    python benchmarks/gpu_cnn_graph_fused.py --out benchmarks/results/cnn_graph_fused_h100.json --store

1. ``graphs`` (simtlab.gpubench.cnn.batch1_graphs): the fused batch-1 forward (5 kernels),
   numba-cuda and CUDA C, launched kernel by kernel and as one CUDA graph (CuPy's stream
   capture records numba's launches too: they go to CuPy's current stream), all on one stream,
   CUDA events on that stream around up to 1000 back-to-back forwards; each graph is checked
   against its eager launches (the same bits) and the NumPy reference.
2. ``fused`` (cudnn_fused_rows): conv1 and conv2 with bias + ReLU (+ max-pool) at batch 10,000:
   PyTorch's separate layers, ``torch.cudnn_convolution_relu``, ``torch.compile`` and the course's
   CUDA C kernels (FP32, TF32 off), with the kernels cuDNN's fused call ran.

Sections run in that order (PyTorch is imported only by the second); one that fails is recorded
under ``errors`` and the other still runs. ``--store`` also writes the result as
topics.cnn_graph_fused of simtlab/data/h100_timings.json (what chapter 8 shows without a GPU).
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simtlab.gpubench import cnn as G  # noqa: E402

SECTIONS = ("graphs", "fused")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cnn_graph_fused.json")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--batch", type=int, default=10_000, help="batch of the fused-baseline section")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile rows (minutes)")
    parser.add_argument("--store", action="store_true",
                        help=f"also write the result as topics.{G.GRAPH_FUSED_TOPIC} of simtlab/data/h100_timings.json")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    log = lambda s: print(s, flush=True)                                  # noqa: E731
    result = {}
    bodies = {"graphs": lambda: G.batch1_graphs(log=log),
              "fused": lambda: G.cudnn_fused_rows(args.batch, compile=not args.no_compile, log=log)}
    for name in args.only:
        try:
            result[name] = bodies[name]()
        except Exception:                                # noqa: BLE001 (one section fails, the other runs)
            result.setdefault("errors", {})[name] = traceback.format_exc()
            log(result["errors"][name])
        args.out.write_text(json.dumps(result, indent=1, default=str))
    if args.store and not result.get("errors"):
        from simtlab import gpubench
        entry = gpubench.stored(G.GRAPH_FUSED_TOPIC) or {}            # a run of one section keeps the other
        gpubench.store(G.GRAPH_FUSED_TOPIC, {**entry, **json.loads(json.dumps(result, default=str))})
    print(f"wrote {args.out}" + (" and the store" if args.store and not result.get("errors") else ""))
    return 1 if result.get("errors") else 0


if __name__ == "__main__":
    sys.exit(main())
