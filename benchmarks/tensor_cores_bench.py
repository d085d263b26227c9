"""Chapter 9 on a GPU: every tensor-core version (kernels/tensor_cores.cu) and the numba path
against cuBLAS with the same precision, at 4096^3 by default.

    python benchmarks/tensor_cores_bench.py --out $OUT/tensor_cores_h100.json

The v6 sweep (every tc_v6s_* configuration of tensor_cores.cu: block and warp tile, stages,
__launch_bounds__ blocks per SM, L2 group, shared-memory epilogue) is timed as well, and the
fastest correct v6 per precision is printed last (``best`` in the JSON): the version table's v6,
and the fastest wgmma version (v7, v8) per precision (``best_wgmma``).

Versions marked ``isolate`` in kernels/tensor_cores.py (TF32 wgmma, v8's TMA + mbarriers) are
checked and timed in a child process each, with a timeout: a fault, a trap (v8's mbarrier waits
trap after 2 s) or a hang ends that child and its row says so; the other rows still run.

Each version is first checked at two small shapes (rounded up to its tile) against a float64 product (the bound of
kernels/tensor_cores.py: tolerance), then timed (CUDA events, warm-up, median of --repeat),
and its error at the full shape is measured against float64 of the inputs it read and of the
FP32 sources. One failing version is reported and the others still run. Also recorded: ptxas's
registers and spills per kernel, and the compiler used (see simtlab/gpubench/tensor_cores.py).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simtlab.gpubench import tensor_cores as bench  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="tensor_cores.json", help="JSON file to write (a table goes beside it, .txt)")
    parser.add_argument("--shape", default="4096,4096,4096", help="M,N,K (default 4096,4096,4096)")
    parser.add_argument("--repeat", type=int, default=10, help="timed batches per version (median)")
    parser.add_argument("--only", nargs="*", help="versions whose name or kernel contains one of these")
    parser.add_argument("--no-numba", action="store_true", help="skip the numba + linked CUDA C rows")
    parser.add_argument("--no-sweep", action="store_true", help="skip the v6 sweep (tc_v6s_* configurations)")
    parser.add_argument("--no-torch", action="store_true", help="skip the torch.matmul rows (cuBLAS stays)")
    parser.add_argument("--budget", type=float, default=None,
                        help="seconds after which no further version is started (listed as skipped)")
    args = parser.parse_args(argv)
    shape = tuple(int(s) for s in args.shape.split(","))
    result = bench.run(shape, repeat=args.repeat, numba=not args.no_numba, sweep=not args.no_sweep, only=args.only,
                       budget_s=args.budget, torch=not args.no_torch)
    result["command"] = "python benchmarks/tensor_cores_bench.py " + " ".join(argv if argv is not None else sys.argv[1:])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    text = bench.table(result)
    out.with_suffix(".txt").write_text(text + "\n\n" + result.get("compile", {}).get("tool", "") + "\n")
    print(text)
    failed = [r["name"] for r in result["rows"] if "error" in r]
    print(f"\n{len(result['rows']) - len(failed)} rows measured, {len(failed)} failed" + (f": {failed}" if failed else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
