"""Chapter 8's benchmark: the LeNet-5-like network from the course's kernels vs PyTorch (cuDNN,
FP32, TF32 off) vs NumPy on the CPU, on one GPU, every ratio from this one run.

    python benchmarks/gpu_cnn.py --out benchmarks/results/cnn_gpu_h100.json

1. batch 1 latency: host wall-clock from the first launch to the end of a synchronize, median
   of 300 forward passes: course kernels (CUDA C via CuPy, and numba-cuda) launched one by one
   and replayed as a CUDA graph, against PyTorch eager and PyTorch with a CUDA graph;
2. batch 10,000 throughput: GPU time between CUDA events (simtlab.gpubench.harness.time_launches,
   runs queued back to back, L2-warm) of the whole forward pass;
3. per layer, at batch 10,000 and at batch 1: each layer alone on the previous layer's real
   output; NumPy's reference (kernels/cnn.py, float64 sums) timed on the CPU at batch 1,000.

The weights are the trained ones (simtlab/data/cnn_weights.npz); the images are the shipped
sample (repeated to 10,000). With ``--store`` the results also go to topics.cnn of
simtlab/data/h100_timings.json, the one store of recorded GPU figures (the chapter's tables).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simtlab.gpubench.cnn import measure  # noqa: E402

BIG = 10_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cnn_gpu.json")
    parser.add_argument("--store", action="store_true",
                        help="also write the result as topics.cnn of simtlab/data/h100_timings.json, "
                             "the one store of recorded GPU figures the chapter plots")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)

    def save(result):
        args.out.write_text(json.dumps(result, indent=1, default=str))
        if args.store:
            from simtlab import gpubench
            gpubench.store("cnn", json.loads(json.dumps(result, default=str)))

    result = measure(big=BIG, log=lambda s: print(s, flush=True), on_progress=save)
    save(result)
    cpu = result.get("per_layer_numpy_cpu_batch1000_ms", {})
    print(json.dumps({k: result.get(k) for k in ("batch1_latency_ms", "batch1_ratios", "batch_big_ms",
                                             "batch_big_ratio_pytorch_over_course", "agreement")}, indent=1))
    print("per layer, batch 10,000 (ms):")
    for layer, row in result.get("per_layer_big_ms", {}).items():
        print(f"  {layer:12s} " + "  ".join(f"{k} {v:.4f}" for k, v in row.items()) +
              (f"  NumPy(b=1000) {cpu[layer]:.1f}" if layer in cpu else ""))
    print("per layer, batch 1 (ms):")
    for layer, row in result.get("per_layer_1_ms", {}).items():
        print(f"  {layer:12s} " + "  ".join(f"{k} {v:.4f}" for k, v in row.items()))


if __name__ == "__main__":
    main()
