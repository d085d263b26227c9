"""What the vector engine's order check costs on untraced, race-free launches.

    python benchmarks/order_check_cost.py [--rounds 4] [--launches 20] [--cases reduction,conv]

The order check (simtlab/emulator/vector/order.py) runs on every untraced vector launch so
that trace=False never changes a result. This measures its cost: the same launches with the
check on and off (``order.ENABLED``, a switch for this measurement only), each side in its
own child process, the two sides alternating round after round (the machine may be shared:
the load average is recorded). Reported: CPU time (``time.process_time``) per launch, the
median over the launches of a child after three warm-up launches, then the median over the
rounds; and the ratio on / off.

Cases: the kernels of benchmarks/emulator_vs_simulator.py (tree and warp-shuffle reductions
over 2^14 floats, tiled GEMM 64 and 128, the shared-memory 5x5 convolution) and chapter 8's
network (kernels/cnn.py, a batch of 8 images, every layer untraced: ``cnn.emulate_forward``,
implicit-GEMM and fused convolutions). Results: benchmarks/results/order_check_cost.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
KERNELS = ["reduction", "shuffle", "gemm64", "conv", "gemm128"]
NETWORK = ["cnn-implicit", "cnn-fused"]


def child(cases, launches, check_on):
    """CPU ms per launch for each case, in this process."""
    import numpy as np

    import simtlab
    from simtlab.emulator.vector import order
    sys.path.insert(0, str(HERE))
    from emulator_vs_simulator import make_case

    order.ENABLED = check_on
    out = {}
    for name in cases:
        cpu = []
        if name.startswith("cnn-"):
            from simtlab.kernels import cnn
            params = cnn.init_params(1)
            x = np.random.default_rng(0).random((8, 1, 28, 28), dtype=np.float32)
            for _ in range(3 + max(3, launches // 4)):
                c0 = time.process_time()
                cnn.emulate_forward(params, x, conv=name[4:])
                cpu.append(time.process_time() - c0)
        else:
            for _ in range(3 + launches):
                kernel, grid, block, args, check, _ = make_case(name)
                c0 = time.process_time()
                run = simtlab.emulate(kernel, grid, block, *args, trace=False)
                cpu.append(time.process_time() - c0)
                if not check() or run.engine != "vector":
                    raise SystemExit(f"{name}: wrong result or not on the vector engine")
        out[name] = statistics.median(cpu[3:]) * 1e3
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--launches", type=int, default=20)
    ap.add_argument("--cases", default=",".join(KERNELS + NETWORK))
    ap.add_argument("--child", choices=["on", "off"])
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args()
    cases = args.cases.split(",")
    if args.child:
        print(json.dumps(child(cases, args.launches, args.child == "on")))
        return
    runs = {"on": {c: [] for c in cases}, "off": {c: [] for c in cases}}
    loads = []
    for r in range(args.rounds):
        for side in ("off", "on") if r % 2 == 0 else ("on", "off"):
            loads.append(os.getloadavg()[0])
            got = subprocess.run([sys.executable, __file__, "--child", side, "--cases", args.cases,
                                  "--launches", str(args.launches)], check=True,
                                 capture_output=True, text=True, cwd=HERE.parent)
            for case, ms in json.loads(got.stdout.splitlines()[-1]).items():
                runs[side][case].append(ms)
    rows = []
    for case in cases:
        off, on = (statistics.median(runs[s][case]) for s in ("off", "on"))
        rows.append({"case": case, "off_ms": round(off, 3), "on_ms": round(on, 3),
                     "ratio": round(on / off, 3)})
    load = {"min": min(loads), "median": statistics.median(loads), "max": max(loads)}
    lines = [f"# Order check cost (untraced, race-free; CPU ms per launch)", "",
             f"load average during the run: min {load['min']:.2f}, median "
             f"{load['median']:.2f}, max {load['max']:.2f}; {args.rounds} rounds x "
             f"{args.launches} launches", "",
             "| case | check off | check on | on / off |", "|---|---:|---:|---:|"]
    lines += [f"| {r['case']} | {r['off_ms']:.2f} | {r['on_ms']:.2f} | {r['ratio']:.2f} |"
              for r in rows]
    print("\n".join(lines))
    if not args.no_save:
        results = HERE / "results"
        results.mkdir(exist_ok=True)
        (results / "order_check_cost.json").write_text(json.dumps(
            {"rows": rows, "load_average": load, "rounds": args.rounds,
             "launches": args.launches, "runs": runs}, indent=1))
        (results / "order_check_cost.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
