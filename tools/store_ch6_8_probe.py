"""Copy the chapter 6-8 probe's H100 figures into the package's store of recorded GPU figures.

    python tools/store_ch6_8_probe.py            # after bash tools/device_ch6_8_probe.sh

Reads ``benchmarks/results/probe_ch6_8_h100.json`` (``benchmarks/probe_ch6_8.py``: cuDNN in every
layout and precision, PyTorch eager / channels_last / torch.compile, the GEMM register-cap
ablation, the batch-1 forward) and ``benchmarks/results/ncu_ch6_8_h100.txt`` (Nsight Compute on
the same kernels), and writes the entry ``results["ch6_8_probe"]`` of
``simtlab/data/h100_timings.json``: what chapters 6-8 show without a GPU
(``simtlab.backend.recorded("ch6_8_probe")``, read by ``gpubench.conv.cudnn_table``,
``gpubench.gemm.register_cap_ablation`` and ``gpubench.cnn.batch1_kernels``). The benchmark
files stay the measurement; this entry is a copy with the ncu report reduced to the metrics the
chapters quote, per kernel.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROBE = REPO / "benchmarks/results/probe_ch6_8_h100.json"
NCU = REPO / "benchmarks/results/ncu_ch6_8_h100.txt"
STORE = REPO / "simtlab/data/h100_timings.json"
KEY = "ch6_8_probe"

#: ncu's section rows the chapters quote (name as ncu prints it -> key in the store)
NCU_ROWS = {
    "Duration": "duration", "Compute (SM) Throughput": "sm_pct", "DRAM Throughput": "dram_pct",
    "L1/TEX Cache Throughput": "l1_pct", "Issued Warp Per Scheduler": "issued_per_scheduler",
    "One or More Eligible": "eligible_pct", "Issue Slots Busy": "issue_slots_busy_pct",
    "Registers Per Thread": "registers", "Grid Size": "grid", "Block Size": "block",
    "Waves Per SM": "waves", "Theoretical Occupancy": "theoretical_occupancy_pct",
    "Achieved Occupancy": "achieved_occupancy_pct", "Warp Cycles Per Issued Instruction": "cycles_per_issue",
    "gpu__time_duration.sum": "duration",
}
_HEADER = re.compile(r"^  (\S.*?) \((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\), Context")
_STALL = re.compile(r"smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio\s+inst\s+([\d.]+)")
_ROW = re.compile(r"^    (\S.*?)\s{2,}(\S+)?\s+([\d,.]+)\s*$")


def parse_ncu(text: str) -> list[dict]:
    """One dict per profiled kernel, in the report's order: ``kernel``, the metrics of
    :data:`NCU_ROWS` (durations in microseconds) and ``stalls`` (reason -> cycles per issued
    instruction, the reasons above 0.1)."""
    kernels = []
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            kernels.append({"kernel": header.group(1), "stalls": {}})
            continue
        if not kernels:
            continue
        stall = _STALL.search(line)
        if stall:
            if float(stall.group(2)) > 0.1 and stall.group(1) != "selected":
                kernels[-1]["stalls"][stall.group(1)] = float(stall.group(2))
            continue
        row = _ROW.match(line)
        if row and row.group(1) in NCU_ROWS:
            value = float(row.group(3).replace(",", ""))
            if row.group(1) in ("Duration", "gpu__time_duration.sum"):
                value *= {"ms": 1000.0, "us": 1.0, "ns": 0.001}.get(row.group(2), 1.0)
            kernels[-1][NCU_ROWS[row.group(1)]] = value
    return kernels


def entry(probe: dict, ncu_text: str) -> dict:
    return {"device": probe["device"], "date": probe["date"],
            "files": ["benchmarks/results/probe_ch6_8_h100.json", "benchmarks/results/ncu_ch6_8_h100.txt"],
            "command": "bash tools/device_ch6_8_probe.sh (benchmarks/probe_ch6_8.py, ncu)",
            "cudnn": probe["cudnn"], "compile": probe["compile"], "gemm": probe["gemm"],
            "batch1": probe["batch1"], "ncu": parse_ncu(ncu_text)}


def main() -> int:
    probe = json.loads(PROBE.read_text(encoding="utf-8"))
    data = json.loads(STORE.read_text(encoding="utf-8"))
    data.setdefault("results", {})[KEY] = entry(probe, NCU.read_text(encoding="utf-8"))
    STORE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"stored {KEY} ({len(data['results'][KEY]['ncu'])} ncu kernels) in {STORE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
