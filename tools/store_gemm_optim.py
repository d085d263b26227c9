"""Copy chapter 6's optimisation measurements into the package's store of recorded GPU figures.

    python tools/store_gemm_optim.py      # after bash tools/device_sgemm_sweep.sh / device_gemm_splitk.sh

Reads ``benchmarks/results/gemm_v8_sweep_h100.json`` (``benchmarks/gemm_v8_sweep.py``: every v8
configuration of the autotuning sweep, cuBLAS in the same run) and, once measured,
``benchmarks/results/gemm_splitk_h100.json`` (``benchmarks/gpu_gemm.py --split-k``), and writes
the entries ``results["gemm_v8_sweep"]``, ``results["gemm_v9_sweep"]`` (and the v9 run before its
fetch was made unconditional, ``gemm_v9_sweep_conditional_fetch``) and ``results["gemm_splitk"]`` of
``simtlab/data/h100_timings.json``: what chapter 6 shows without a GPU (the tuning table
``plots.gemm.tuning_table``, the split-K figure ``plots.gemm.plot_split_k``). The benchmark files
stay the measurement; the v8 entry keeps only the columns the chapter shows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
V8_SWEEP = REPO / "benchmarks/results/gemm_v8_sweep_h100.json"
SPLIT_K = REPO / "benchmarks/results/gemm_splitk_h100.json"
#: the v9 sweep (benchmarks/gemm_v8_sweep.py --v8 champion) and the run before the fetch was made unconditional
V9_SWEEPS = {"gemm_v9_sweep": REPO / "benchmarks/results/gemm_v9_sweep_h100.json",
             "gemm_v9_sweep_conditional_fetch": REPO / "benchmarks/results/gemm_v9_sweep_conditional_fetch_h100.json"}
STORE = REPO / "simtlab/data/h100_timings.json"
#: the columns of a v8 sweep row the chapter's tuning table reads
V8_ROW_KEYS = ("name", "impl", "kernel", "config", "reason", "registers", "local_bytes", "shared_bytes", "median_ms",
               "tflops", "of_cublas")


def v8_entry(sweep: dict) -> dict:
    return {"device": sweep["device"], "date": sweep["date"], "n": sweep["n"],
            "cublas_tflops": sweep["cublas_tflops"], "best": sweep["best"],
            "file": "benchmarks/results/gemm_v8_sweep_h100.json", "command": "bash tools/device_sgemm_sweep.sh",
            "rows": [{k: r[k] for k in V8_ROW_KEYS if k in r} for r in sweep["rows"]]}


def v9_entry(sweep: dict, path: Path) -> dict:
    return {"device": sweep["device"], "date": sweep["date"], "n": sweep["n"],
            "cublas_tflops": sweep["cublas_tflops"], "best": sweep.get("best_v9"),
            "file": str(path.relative_to(REPO)), "command": "python benchmarks/gemm_v8_sweep.py --v8 champion",
            "rows": [{k: r[k] for k in V8_ROW_KEYS if k in r} for r in sweep["rows"]]}


def split_k_entry(result: dict) -> dict:
    return {**result, "file": "benchmarks/results/gemm_splitk_h100.json",
            "command": "bash tools/device_gemm_splitk.sh (python benchmarks/gpu_gemm.py --split-k)"}


def main() -> int:
    data = json.loads(STORE.read_text(encoding="utf-8"))
    results = data.setdefault("results", {})
    results["gemm_v8_sweep"] = v8_entry(json.loads(V8_SWEEP.read_text(encoding="utf-8")))
    print(f"stored gemm_v8_sweep ({len(results['gemm_v8_sweep']['rows'])} rows)")
    for key, path in V9_SWEEPS.items():
        results[key] = v9_entry(json.loads(path.read_text(encoding="utf-8")), path)
        print(f"stored {key} ({len(results[key]['rows'])} rows)")
    if SPLIT_K.exists():
        results["gemm_splitk"] = split_k_entry(json.loads(SPLIT_K.read_text(encoding="utf-8")))
        print(f"stored gemm_splitk ({len(results['gemm_splitk']['rows'])} rows)")
    else:
        print(f"{SPLIT_K.relative_to(REPO)} is missing: run bash tools/device_gemm_splitk.sh on an H100 first")
    STORE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
