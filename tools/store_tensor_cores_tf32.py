"""Copy chapter 9's TF32 mma.sync measurements into the package's store of recorded GPU figures.

    python tools/store_tensor_cores_tf32.py      # after bash tools/device_tensor_cores_tf32.sh
                                                 # and bash tools/device_tensor_cores_ncu.sh

Reads ``benchmarks/results/tensor_cores_tf32_h100.json`` (the TF32 sweep: v6, v6t, v6w against
cuBLAS TF32 on A @ B and on B^T), ``benchmarks/results/ncu_tensor_cores_h100.txt`` and
``ncu_mma_peak_h100.txt`` (Nsight Compute, ``--clock-control none``: time, SM clock, the busiest
pipe's use, stall reasons) and writes ``results["tensor_cores_tf32"]`` of
``simtlab/data/h100_timings.json``, which ``simtlab.tensorcores.tf32_gap`` reads. The benchmark
files stay the measurement; this entry is a copy reduced to what the chapter quotes.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "benchmarks/results/tensor_cores_tf32_h100.json"
NCU = (REPO / "benchmarks/results/ncu_tensor_cores_h100.txt", REPO / "benchmarks/results/ncu_mma_peak_h100.txt")
STORE = REPO / "simtlab/data/h100_timings.json"
KEY = "tensor_cores_tf32"

_HEADER = re.compile(r"^  (\S+?) \((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\), Context")
_METRIC = re.compile(r"^    (\S+)\s+(\S+)?\s+([\d,.]+)\s*$")
_PIPE = re.compile(r"(\w+) is the highest-utilized pipeline \(([\d.]+)%\)")
_METRICS = {"gpu__time_duration.sum": "duration_us", "sm__cycles_elapsed.avg.per_second": "clock_ghz",
            "smsp__inst_executed.sum": "instructions",
            "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue_active_pct"}
_STALL = re.compile(r"smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio")


def parse_ncu(text: str) -> list[dict]:
    """One dict per profiled launch: ``kernel``, ``grid``, ``block``, :data:`_METRICS`, ``pipe`` and
    ``pipe_pct`` (ncu's busiest pipe: the tensor pipe for these kernels, which ncu names "Tensor"
    or "Shared", the FP16 + tensor pipe it is part of) and ``stalls`` (reason -> cycles per issued
    instruction)."""
    out = []
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            out.append({"kernel": header.group(1), "grid": [int(header.group(i)) for i in (2, 3, 4)],
                        "block": [int(header.group(i)) for i in (5, 6, 7)], "stalls": {}})
            continue
        if not out:
            continue
        pipe = _PIPE.search(line)
        if pipe:
            out[-1].update(pipe=pipe.group(1), pipe_pct=float(pipe.group(2)))
            continue
        row = _METRIC.match(line)
        if not row:
            continue
        value = float(row.group(3).replace(",", ""))
        stall = _STALL.match(row.group(1))
        if stall:
            out[-1]["stalls"][stall.group(1)] = value
        elif row.group(1) in _METRICS:
            if row.group(1) == "gpu__time_duration.sum":
                value *= {"ms": 1000.0, "us": 1.0, "ns": 0.001}.get(row.group(2), 1.0)
            out[-1][_METRICS[row.group(1)]] = value
    return out


def first_per_kernel(launches: list[dict]) -> dict:
    """kernel -> its first profiled launch (the script launches each twice; the two agree within 1 %)."""
    out = {}
    for launch in launches:
        out.setdefault(launch["kernel"], launch)
    return out


def flops_of(profile: dict, shape) -> float:
    """The FLOPs of one profiled launch: a GEMM's 2 M N K, or benchmarks/mma_peak.cu's warps x
    ITERATIONS x CHAINS m16n8k8 MMAs (2 * 16 * 8 * 8 FLOPs each)."""
    if profile["kernel"].startswith("mma_peak_tf32"):
        sys.path.insert(0, str(REPO / "benchmarks"))
        from mma_peak import CHAINS, ITERATIONS

        warps = profile["grid"][0] * profile["block"][0] // 32
        return float(warps * ITERATIONS * CHAINS * 2 * 16 * 8 * 8)
    m, n, k = shape
    return 2.0 * m * n * k


def entry(bench: dict, ncu_texts: list[str]) -> dict:
    rows = [{k: r[k] for k in ("name", "kernel", "precision", "impl", "reference", "tflops", "median_ms", "vs_cublas")
             if k in r} for r in bench["rows"] if "tflops" in r]
    profiles = {}
    for text in ncu_texts:
        profiles.update(first_per_kernel(parse_ncu(text)))
    for profile in profiles.values():
        profile["flops"] = flops_of(profile, bench["shape"])
    return {"device": bench["device"], "date": bench["date"], "shape": bench["shape"],
            "files": ["benchmarks/results/tensor_cores_tf32_h100.json", "benchmarks/results/ncu_tensor_cores_h100.txt",
                      "benchmarks/results/ncu_mma_peak_h100.txt"],
            "command": "bash tools/device_tensor_cores_tf32.sh; bash tools/device_tensor_cores_ncu.sh",
            "rows": rows, "best": bench["best"].get("tf32"), "ncu": profiles}


def main() -> int:
    bench = json.loads(BENCH.read_text(encoding="utf-8"))
    data = json.loads(STORE.read_text(encoding="utf-8"))
    data.setdefault("results", {})[KEY] = entry(bench, [p.read_text(encoding="utf-8") for p in NCU])
    STORE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    stored = data["results"][KEY]
    print(f"stored {KEY} ({len(stored['rows'])} rows, {len(stored['ncu'])} profiled kernels) in {STORE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
