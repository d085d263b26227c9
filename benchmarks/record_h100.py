"""Record the chapters' GPU timings, for students who have no GPU.

    python benchmarks/record_h100.py [--only KEY ...] [--list] [--path FILE]

Runs every measure function in ``simtlab.measure.MEASUREMENTS`` on this machine's GPU and
stores each result with ``simtlab.backend.save_recorded`` in
``simtlab/data/h100_timings.json`` (or ``--path``), which also stamps the file with the GPU's
name, today's date and the versions of numba-cuda, numba, NumPy and CuPy. Chapters show these
figures through ``backend.gpu_or_recorded`` when no GPU is usable.

Run it on the reference H100 (the chapters say "recorded on an H100"); on another GPU it asks
for ``--any-gpu``. Exits 1 without a usable GPU.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from simtlab import backend, measure

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", metavar="KEY", help="record only these keys")
    parser.add_argument("--list", action="store_true", help="list the keys and exit")
    parser.add_argument("--path", type=Path, default=backend.TIMINGS_PATH, help="the JSON file to update")
    parser.add_argument("--any-gpu", action="store_true", help="record even if this GPU is not an H100")
    args = parser.parse_args(argv)

    if args.list:
        for key, fn in measure.MEASUREMENTS.items():
            print(f"{key}: {fn.__module__}.{fn.__name__}")
        return 0
    keys = args.only or list(measure.MEASUREMENTS)
    unknown = [k for k in keys if k not in measure.MEASUREMENTS]
    if unknown:
        print(f"record_h100: unknown key(s) {unknown}; known: {sorted(measure.MEASUREMENTS)}", file=sys.stderr)
        return 2
    if not backend.gpu_available():
        print(f"record_h100: no usable GPU here ({backend.unavailable_reason()})", file=sys.stderr)
        return 1
    name = backend._gpu_name()
    if "H100" not in name and not args.any_gpu:
        print(f"record_h100: this GPU is {name!r}, not an H100; pass --any-gpu to record it anyway",
              file=sys.stderr)
        return 1

    print(f"recording on {name} with {backend.gpu_versions()} into {args.path}")
    for key in keys:
        t0 = time.perf_counter()
        result = measure.MEASUREMENTS[key]()
        backend.save_recorded(key, result, path=args.path)
        print(f"  {key}: done in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
