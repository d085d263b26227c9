"""Chapter 8's convolutions on the tensor cores: the course's WMMA kernels (TF32 and BF16 inputs,
FP32 accumulate) against cuDNN in the same precision and the course's FP32 kernels, one run.

    python benchmarks/gpu_cnn_tensor_cores.py --out benchmarks/results/cnn_tensor_cores_h100.json --store

conv1 (1 -> 6 maps, 28 x 28) and conv2 (6 -> 16 maps, 12 x 12), 5 x 5 filters, bias + ReLU, at
batch 10,000 (simtlab.gpubench.cnn.tensor_core_rows: the shipped sample repeated, trained weights,
conv2 on pool1's real output):

- course: conv_wmma_tf32_bias_relu, conv_wmma_bf16_bias_relu (kernels/cnn.cu), conv_bias_relu
  (FP32 implicit GEMM) and conv_bias_relu_direct (FP32 direct), each checked on the first 300
  images against the float64 reference within its precision's bound;
- cuDNN (PyTorch conv2d + bias, then ReLU, algorithm search on) in FP32 (TF32 off), TF32 and
  BF16, NCHW and channels_last, in a child process, with the kernels it ran (its algorithm).

Under 90 s on an H100 (most of it PyTorch's start and cuDNN's algorithm search). ``--store`` also
writes the result as topics.cnn_tensor_cores of simtlab/data/h100_timings.json (what chapter 8
shows without a GPU), only when no part failed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simtlab.gpubench import cnn as G  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "cnn_tensor_cores.json")
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15, help="timed repetitions per row (median)")
    parser.add_argument("--no-cudnn", action="store_true", help="the course's rows only (no PyTorch)")
    parser.add_argument("--store", action="store_true",
                        help=f"also write the result as topics.{G.TENSOR_CORES_TOPIC} of simtlab/data/h100_timings.json")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    result = G.tensor_core_rows(args.batch, repeat=args.repeat, cudnn=not args.no_cudnn,
                                log=lambda s: print(s, flush=True))
    text = json.dumps(result, indent=1, default=str)
    args.out.write_text(text)
    stored = args.store and not result.get("errors")
    if stored:
        from simtlab import gpubench
        gpubench.store(G.TENSOR_CORES_TOPIC, json.loads(text))
    print(f"wrote {args.out}" + (" and the store" if stored else "") + f" in {result['seconds']} s"
          + (f"; ERRORS: {list(result['errors'])}" if result.get("errors") else ""))
    return 1 if result.get("errors") else 0


if __name__ == "__main__":
    sys.exit(main())
