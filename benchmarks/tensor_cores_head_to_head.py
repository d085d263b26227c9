"""Chapter 9's best TF32 kernels and their reference (cuBLAS on B^T) timed in turns, so that the board's
drift over a run (its clock follows the power limit and the temperature) falls on every kernel alike.

    python benchmarks/tensor_cores_head_to_head.py cublas:tf32:bt tc_v6w_tf32_256x128_s4_producer_persistent \\
        [--rounds 20] [--out F]

The first name is the reference; every name is a kernel of kernels/tensor_cores.py or ``cublas:<precision>[:bt]``
(as in benchmarks/ncu_tensor_cores.py), run at 4096^3 on chapter 9's benchmark inputs. Each round times every
kernel once with the course's GPU timer (``gpubench.harness.time_launches``: warm-up launches, then batches of
about 10 ms, their median), in an order that rotates by one place each round. A kernel's rate in a round is
compared with the reference's in the same round; the JSON keeps every round's rates, and per kernel the median
rate and the median, lowest and highest of its per-round ratios. The single-row sweep
(benchmarks/tensor_cores_bench.py) times each kernel once, seconds apart from its reference: runs of it differ by
1-3 points for the same kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("CUPY_TF32", "0")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

SIZE = 4096


def ratios(rounds: list[dict], reference: str) -> dict:
    """Per kernel of ``rounds`` (each: name -> TFLOP/s): its median rate and, against ``reference`` in the
    same round, the median, lowest and highest ratio."""
    out = {}
    for name in rounds[0]:
        per_round = [r[name] / r[reference] for r in rounds]
        out[name] = {"tflops": statistics.median(r[name] for r in rounds), "ratio": statistics.median(per_round),
                     "ratio_min": min(per_round), "ratio_max": max(per_round)}
    return out


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="+", help="the reference first, then the kernels")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if len(args.names) < 2:
        ap.error("name a reference and at least one kernel")

    import cupy

    from ncu_tensor_cores import make_run
    from simtlab.gpubench.harness import time_launches

    runs = {name: make_run(name, n=SIZE) for name in args.names}
    flops = 2.0 * SIZE ** 3
    rounds = []
    t0 = time.time()
    for i in range(args.rounds):
        order = args.names[i % len(args.names):] + args.names[:i % len(args.names)]
        rates = {}
        for name in order:
            t = time_launches(runs[name], warmup=2, repeat=7, batch_ms=10.0)
            rates[name] = flops / (t["median_ms"] * 1e-3) / 1e12
        rounds.append({name: rates[name] for name in args.names})
        print(f"round {i + 1}/{args.rounds}: " + ", ".join(f"{n} {rates[n]:.1f}" for n in args.names), flush=True)
    cupy.cuda.runtime.deviceSynchronize()
    props = cupy.cuda.runtime.getDeviceProperties(0)
    result = {"device": props["name"].decode(), "date": time.strftime("%Y-%m-%d"), "shape": [SIZE] * 3,
              "reference": args.names[0], "rounds": rounds, "per_kernel": ratios(rounds, args.names[0]),
              "seconds": round(time.time() - t0, 1),
              "command": "python benchmarks/tensor_cores_head_to_head.py " + " ".join(args.names)
                         + f" --rounds {args.rounds}"}
    for name, r in result["per_kernel"].items():
        print(f"{name:<64} {r['tflops']:6.1f} TFLOP/s  {100 * r['ratio']:5.1f} % of {args.names[0]} "
              f"(rounds: {100 * r['ratio_min']:.1f}-{100 * r['ratio_max']:.1f} %)")
    out = args.out or Path(os.environ.get("OUT", "/tmp")) / "tensor_cores_head_to_head_h100.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
