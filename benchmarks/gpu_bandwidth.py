"""Time every kernel version of chapters 3-5 against CUB / device copy, on this GPU.

    python benchmarks/gpu_bandwidth.py [--topics patterns scan reduction] [--n 268435456]
                                       [--no-sweep] [--only NAME ...] [--out FILE]

For each topic (``simtlab/gpubench/<topic>.py``) every version is first checked against the
CPU reference at an odd size, then timed at n = 2^28 float32 elements with CUDA events
(warm-up, batches of launches, median of 15), and over a size sweep (2^16 .. 2^28) timed
L2-cold (4x the L2 of junk written before each timed run). The
bandwidth is the version's napkin-math bytes over its median time (TFLOP/s its FLOPs, where the topic's table gives them); the ratio is against the
library reference timed in the same run (``cupy.sum`` = CUB DeviceReduce, ``cupy.cumsum`` =
CUB DeviceScan, a device-to-device copy).

Results are merged into the key ``topics`` of ``simtlab/data/h100_timings.json`` (or ``--out``), the one store of recorded GPU figures,, which the chapters
plot when there is no GPU. Prints a table at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    from simtlab import backend, gpubench

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--topics", nargs="+", default=list(gpubench.TOPICS), choices=gpubench.TOPICS)
    p.add_argument("--n", type=int, default=None, help="size (default: each topic's, gpubench.sizes)")
    p.add_argument("--no-sweep", action="store_true")
    p.add_argument("--only", nargs="+", help="time only versions whose name contains one of these")
    p.add_argument("--out", type=Path, default=gpubench.RESULTS_PATH)
    args = p.parse_args(argv)
    if not backend.gpu_available():
        print(f"gpu_bandwidth: no usable GPU ({backend.unavailable_reason()})", file=sys.stderr)
        return 1
    data = json.loads(args.out.read_text()) if args.out.exists() else {"topics": {}}
    where = gpubench.harness.stamp()           # each topic carries its own device, date, versions
    t0 = time.perf_counter()
    for topic in args.topics:
        print(f"== {topic} ==", flush=True)
        size = gpubench.sizes(topic)
        res = gpubench.run_topic(gpubench.topic_module(topic), n=args.n or size["n"], check_n=size["check_n"],
                                 sweep=None if args.no_sweep else size["sweep"], only=args.only,
                                 log=lambda s: print(s, flush=True))
        data.setdefault("topics", {})[topic] = {**res, **where}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(data, indent=1) + "\n")      # after each topic: keep partial work
    print(f"\n{where['device']}, {where['date']}; {time.perf_counter() - t0:.0f} s in all; written to {args.out}")
    for topic in args.topics:
        print(f"\n{topic} (n = {data['topics'][topic]['n']:,}, reference: {data['topics'][topic]['reference']})")
        print(gpubench.summary_table({**data["topics"][topic], "source": "recorded"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
