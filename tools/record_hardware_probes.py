"""Store the hardware probes' device measurements in the one store of recorded GPU figures.

    python tools/record_hardware_probes.py [--results benchmarks/results] [--store simtlab/data/h100_timings.json]

Reads what ``tools/device_hardware_probes.sh`` brought back (``hardware_probes_h100.json``, ``ncu_metrics_h100.csv``)
and writes the keys the chapters show (``backend.recorded(key)``): ``l2_warm_cold``,
``copy_width``, ``ncu_profile``, ``cumsum``, ``vecmat_grid``, ``atomics``, ``modulo``.
Runs on any machine (no GPU): it only reformats files.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: ncu's kernel names -> the course's labels (numba kernels carry a mangled name)
NCU_LABELS = {
    "copy_v1_strided": "copy v1 strided (CUDA C)", "copy_v2_coalesced": "copy v2 coalesced (CUDA C)",
    "transpose_v1_naive": "transpose v1 naive (CUDA C)", "transpose_v2_tile": "transpose v2 shared tile (CUDA C)",
    "transpose_v3_padded": "transpose v3 padded tile (CUDA C)",
    "stencil1d_v1_global": "stencil 1-D v1 global reads", "stencil1d_v2_shared": "stencil 1-D v2 shared halo",
    "stencil2d_v1_global": "stencil 2-D v1 global reads", "stencil2d_v2_shared": "stencil 2-D v2 shared halo",
    "vecmat_v2_grid_stride": "vecmat v2 grid-stride (CUDA C)", "cupy_copy__float32_float32": "cupy.cumsum: copy kernel",
    "DeviceScanInitKernel": "cupy.cumsum: CUB DeviceScanInitKernel", "DeviceScanKernel": "cupy.cumsum: CUB DeviceScanKernel",
    "cublasGemvParamsEx": "cuBLAS gemv (w @ v)",
}
METRICS = {
    "gpu__time_duration.sum": "time_ms", "dram__bytes_read.sum": "dram_read_gb", "dram__bytes_write.sum": "dram_write_gb",
    "lts__t_sectors_srcunit_tex_op_read.sum": "l2_read_sectors", "lts__t_sectors_srcunit_tex_op_write.sum": "l2_write_sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": "load_requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": "load_sectors",
    "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum": "store_requests",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum": "store_sectors",
    "l1tex__t_sector_hit_rate.pct": "l1_hit_pct", "lts__t_sector_hit_rate.pct": "l2_hit_pct",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared_load_bank_conflicts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "shared_store_bank_conflicts",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct_of_peak",
    "l1tex__throughput.avg.pct_of_peak_sustained_active": "l1_pct_of_peak",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy_pct",
    "launch__registers_per_thread": "registers", "launch__grid_size": "blocks",
}


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def ncu_rows(path: Path) -> list[dict]:
    rows = list(csv.reader(path.open()))
    header = rows[0]
    out = []
    for r in rows[2:]:
        name = r[header.index("Kernel Name")]
        label = next((v for k, v in NCU_LABELS.items() if k in name), name[:60])
        if name.startswith("simtlab::"):
            label += " (numba)"
        elif "stencil" in name:
            label += " (CUDA C)"
        row = {"kernel": label}
        for metric, key in METRICS.items():
            row[key] = _number(r[header.index(metric)])
        if "vecmat" in label or "gemv" in label:
            row["kernel"] += f", {int(row['blocks'])} blocks"
        out.append(row)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results")
    p.add_argument("--store", type=Path, default=ROOT / "simtlab" / "data" / "h100_timings.json")
    args = p.parse_args(argv)
    res = json.loads((args.results / "hardware_probes_h100.json").read_text())
    where = {k: res[k] for k in ("device", "date", "versions")}
    source = "tools/device_hardware_probes.sh (benchmarks/results/hardware_probes_h100.log)"
    keys = {}
    l2 = {}
    for r in res["l2"]:
        e = l2.setdefault(r["what"], {"sizes": [], "warm_gbps": [], "cold_gbps": []})
        e["sizes"].append(r["n"])
        e["warm_gbps"].append(r["warm_gbps"])
        e["cold_gbps"].append(r["cold_gbps"])
    keys["l2_warm_cold"] = {"series": l2, "bytes_per_element": 8}
    keys["copy_width"] = {"copies": res["copy_width"], "while_every_sm_is_busy": res["d2d_engine"]}
    ncu = ncu_rows(args.results / "ncu_metrics_h100.csv")
    keys["ncu_profile"] = {"n": 2**26, "rows": [r for r in ncu if not r["kernel"].startswith("vecmat_rows")
                                                and "splitKreduce" not in r["kernel"]],
                           "tool": "ncu 2025.3 --set detailed (clocks locked by ncu)"}
    keys["cumsum"] = {k: v for k, v in res["cumsum"].items() if isinstance(v, dict)} | {"n": 2**28}
    vm = res["vecmat"]
    keys["vecmat_grid"] = {"rows": vm["rows"], "cols": vm["cols"], "sms": vm["sms"], "gemv_ms": vm["gemv_ms"],
                           "cuda_c_registers": vm["cuda_c_regs"], "numba_registers": vm["numba_regs"],
                           "cuda_c_blocks_per_sm": vm["cuda_c_blocks_per_sm"],
                           "blocks_per_row": [r["blocks_per_row"] for r in vm["sweep"]],
                           "cuda_c_ms": [r["cuda-c"]["ms"] for r in vm["sweep"]],
                           "numba_ms": [r["numba"]["ms"] for r in vm["sweep"]]}
    at = res["atomics"]
    keys["atomics"] = {"n": at["n"], "timings": {k: v for k, v in at.items() if isinstance(v, dict) and "ms" in v},
                       "sass_counts": at["sass_counts"]}
    keys["modulo"] = res["modulo"] | {"n": 2**28}
    store = json.loads(args.store.read_text())
    for key, value in keys.items():
        store.setdefault("results", {})[key] = {**value, **where, "source": source}
    args.store.write_text(json.dumps(store, indent=1) + "\n")
    print(f"wrote {', '.join(keys)} into {args.store}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
