"""SM clock and board power while chapter 9's TF32 kernels (or cuBLAS) run back to back, as the
benchmark times them: does a kernel that keeps the tensor pipe busier get a lower clock?

    python benchmarks/tensor_cores_power.py tc_v6w_tf32_256x128_s4 cublas:tf32:bt [--seconds 3] [--out F]

Each argument is a kernel of kernels/tensor_cores.py or ``cublas:<precision>[:bt]`` (as in
benchmarks/ncu_tensor_cores.py), or ``mma:<variant>`` of benchmarks/mma_operands.py (warps of nothing but
MMAs: what mma.sync alone draws). Each runs back to back at 4096^3 for ``--seconds``; nvidia-smi is
sampled every 50 ms meanwhile (SM clock, power draw, its power limit, the GPU's and the memory's
temperature, and the reasons the driver gives for holding the clock down) and the samples of the
second half are kept (the first half warms the board up). TFLOP/s come from CUDA events over the
same launches. ``--rounds R`` runs the list R times, every other round in reverse order, so that each
kernel's run has one of the reference's (the first name) beside it at about the same temperature.
Writes JSON (``--out``; default ``$OUT/tensor_cores_power.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("CUPY_TF32", "0")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

QUERY = "clocks.sm,power.draw,power.limit,temperature.gpu,temperature.memory"
#: NVML's clock event reasons (nvmlClocksEventReason*): the bits of nvidia-smi's clocks_event_reasons.active
CLOCK_REASONS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
                 0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
                 0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting"}


def reasons_field() -> str:
    """The name this nvidia-smi gives the active clock-event reasons (older drivers call them throttle reasons)."""
    helptext = subprocess.run(["nvidia-smi", "--help-query-gpu"], capture_output=True, text=True).stdout
    return "clocks_event_reasons.active" if "clocks_event_reasons.active" in helptext else "clocks_throttle_reasons.active"


def sample() -> subprocess.Popen:
    """nvidia-smi printing QUERY and the active clock-event reasons every 50 ms until terminated."""
    return subprocess.Popen(["nvidia-smi", f"--query-gpu={QUERY},{reasons_field()}", "--format=csv,noheader,nounits",
                             "-lms", "50"], stdout=subprocess.PIPE, text=True)


def parse_samples(text: str) -> list[tuple[list[float], int]]:
    """nvidia-smi's lines: the numbers of QUERY (a field it cannot read, "[N/A]", is NaN) and the reasons' bit mask."""
    width = QUERY.count(",") + 2
    rows = []
    for line in text.strip().splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != width:
            continue
        try:
            numbers = [float(f) if not f.startswith("[") else float("nan") for f in fields[:-1]]
            rows.append((numbers, int(fields[-1], 16)))
        except ValueError:
            continue
    return rows


def limiters(masks: list[int]) -> list[str]:
    """The clock-event reasons active in at least half of the samples' masks."""
    return [name for bit, name in CLOCK_REASONS.items() if 2 * sum(bool(m & bit) for m in masks) >= len(masks) > 0]


def median(values):
    values = sorted(values)
    return values[len(values) // 2] if values else None


def measure(name: str, seconds: float, n: int = 4096) -> dict:
    """``name`` back to back for ``seconds``: a kernel of kernels/tensor_cores.py or ``cublas:...`` at n^3, or
    ``mma:<variant>``, warps of nothing but MMAs (benchmarks/mma_operands.py)."""
    if name.startswith("mma:"):
        from mma_operands import launcher

        return back_to_back(name, *launcher(name[len("mma:"):]), seconds)
    from ncu_tensor_cores import make_run

    return back_to_back(name, make_run(name, n=n), 2 * n ** 3, seconds)


def back_to_back(name: str, run, flops: float, seconds: float) -> dict:
    """``run()`` (one launch of ``flops``) back to back for ``seconds``: TFLOP/s from CUDA events over the second
    half's launches, and the medians of nvidia-smi's samples over the same half."""
    import cupy

    run()
    cupy.cuda.runtime.deviceSynchronize()
    smi = sample()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    t0 = time.perf_counter()
    launches = 0
    half = None
    while time.perf_counter() - t0 < seconds:
        if half is None and time.perf_counter() - t0 > seconds / 2:
            cupy.cuda.runtime.deviceSynchronize()
            half, start_launches = time.perf_counter() - t0, launches
            start.record()
        for _ in range(20):
            run()
        launches += 20
        cupy.cuda.runtime.deviceSynchronize()
    end.record()
    end.synchronize()
    elapsed_ms = cupy.cuda.get_elapsed_time(start, end)
    total = time.perf_counter() - t0
    smi.terminate()
    try:
        out, _ = smi.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        smi.kill()
        out, _ = smi.communicate()
    rows = parse_samples(out)
    rows = rows[len(rows) * int(100 * half / total) // 100:] if rows else rows     # the second half's samples
    per_launch = elapsed_ms / (launches - start_launches)
    column = lambda i: median([r[0][i] for r in rows if r[0][i] == r[0][i]])      # NaN (not read) left out
    return {"name": name, "launches": launches - start_launches, "ms": per_launch,
            "tflops": flops / (per_launch * 1e-3) / 1e12, "samples": len(rows),
            "sm_clock_mhz": column(0), "power_w": column(1), "power_limit_w": column(2),
            "gpu_temp_c": column(3), "memory_temp_c": column(4), "limiters": limiters([r[1] for r in rows])}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("kernels", nargs="+")
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--rounds", type=int, default=1, help="run the list this many times, every other round reversed")
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT") or "/tmp") / "tensor_cores_power.json")
    args = p.parse_args(argv)
    from simtlab.gpubench.harness import stamp

    result = {**stamp(), "rows": []}
    for r in range(args.rounds):
        for name in args.kernels[::-1] if r % 2 else args.kernels:
            row = {**measure(name, args.seconds), "round": r}
            print(f"{r} {name:<45} {row['tflops']:7.1f} TFLOP/s  {row['sm_clock_mhz']} MHz  {row['power_w']} W "
                  f"(limit {row['power_limit_w']} W) {row['gpu_temp_c']}/{row['memory_temp_c']} C "
                  f"{','.join(row['limiters']) or '-'} ({row['samples']} samples)", flush=True)
            result["rows"].append(row)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
