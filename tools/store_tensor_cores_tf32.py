"""Copy chapter 9's TF32 mma.sync measurements into the package's store of recorded GPU figures.

    python tools/store_tensor_cores_tf32.py      # after bash tools/device_tensor_cores_tf32.sh
                                                 # and bash tools/device_tensor_cores_ncu.sh

Reads ``benchmarks/results/tensor_cores_tf32_h100.json`` (the TF32 sweep: v6, v6t, v6w against
cuBLAS TF32 on A @ B and on B^T), ``benchmarks/results/ncu_tensor_cores_h100.txt`` and
``ncu_mma_peak_h100.txt`` (Nsight Compute, ``--clock-control none``: time, SM clock, the busiest
pipe's use, stall reasons), ``ncu_source_v6w_h100.csv`` (v6w's stall samples per instruction) and
``tensor_cores_power_h100.json`` and ``tensor_cores_power_short_h100.json`` (SM clock and board
power while each kernel runs back to back for 3 s and for 1 s) and ``ncu_streamk_h100.txt`` (stream-K
beside the persistent kernel: time, DRAM bytes, L2 hit rate, tensor-pipe use), ``ncu_source_streamk_h100.csv``
(their stall samples per instruction), ``ncu_shared_memory_h100.txt`` (how busy the shared-memory banks
are), ``ncu_producer_h100.txt`` (the kernels with a producer warpgroup: time, tensor-pipe use, stall reasons),
``ncu_feed_h100.txt`` (benchmarks/tensor_cores_tf32_feed.py: the persistent kernels with parts of their work
switched off, cycles and pipe use, the median of each variant's launches) and ``ncu_mma_operands_h100.txt``
(benchmarks/mma_operands.py: warps of nothing but MMAs, two a scheduler), and from ``bash
tools/device_tensor_cores_clusters.sh`` ``ncu_clusters_h100.txt``, ``tensor_cores_power_clusters_h100.json``,
``tensor_cores_power_clusters_reversed_h100.json`` and ``tensor_cores_head_to_head_clusters_h100.json`` (clusters of 2
sharing a tile beside the same kernels alone: cycles, L2 reads, and TFLOP/s and clock at the board's power limit), and
from ``bash tools/device_tensor_cores_power_parts.sh`` ``tensor_cores_power_parts_h100.json``,
``tensor_cores_power_mma_h100.json``, ``tensor_cores_power_mma_reversed_h100.json`` and ``ncu_power_parts_h100.txt`` (the
best kernel with parts switched off, and warps of nothing but MMAs, at the power limit), and from ``bash
tools/device_tensor_cores_power_rounds.sh`` ``tensor_cores_power_rounds_h100.json`` (the best kernels, with and without
the snake order, MMAs alone and cuBLAS at the power limit in 6 rounds, with temperatures and what held the clock down),
``tensor_cores_power_rounds_first_h100.json`` and ``_second_h100.json`` (earlier runs of the same script the same day,
the first before the snake kernels joined it) and ``ncu_snake_h100.txt`` (their DRAM bytes, L2 reads and cycles; the
second run's files of the script carry ``_second`` in their names and are kept, not stored), and from ``bash
tools/device_tensor_cores_power_instructions.sh`` ``tensor_cores_power_instructions_h100.json`` (the TF32 wgmma kernel
beside the best mma.sync kernels, MMAs alone and cuBLAS at the power limit in 6 rounds) and ``ncu_instructions_h100.txt``
(their DRAM bytes, L2 reads and cycles), and from ``bash tools/device_tensor_cores_tma_rounding.sh``
``tensor_cores_tma_rounding_h100.json`` (what the best kernels read with FP32 and with TF32 tensor maps, and cuBLAS,
their errors against float64, and their power rounds) and ``ncu_tma_rounding_h100.txt`` (the pair's instructions,
bytes and cycles with either map), and writes ``results["tensor_cores_tf32"]`` of
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
SOURCE = REPO / "benchmarks/results/ncu_source_v6w_h100.csv"
STREAM_K = REPO / "benchmarks/results/ncu_streamk_h100.txt"                  # stream-K beside the persistent kernel
STREAM_K_SOURCE = REPO / "benchmarks/results/ncu_source_streamk_h100.csv"     # their stall samples per instruction
SHARED = REPO / "benchmarks/results/ncu_shared_memory_h100.txt"               # shared-memory banks' use
PRODUCER = REPO / "benchmarks/results/ncu_producer_h100.txt"                  # the producer-warpgroup kernels
FEED = REPO / "benchmarks/results/ncu_feed_h100.txt"                          # their parts switched off, and thread 0's
OPERANDS = REPO / "benchmarks/results/ncu_mma_operands_h100.txt"              # MMAs alone, 2 warps a scheduler
POWER = REPO / "benchmarks/results/tensor_cores_power_h100.json"              # 3 s a kernel: the board at its limit
POWER_SHORT = REPO / "benchmarks/results/tensor_cores_power_short_h100.json"  # 1 s: below it
HEAD_TO_HEAD = REPO / "benchmarks/results/tensor_cores_head_to_head_h100.json"  # the best kernels and cuBLAS in turns
CLUSTERS = {"ncu": REPO / "benchmarks/results/ncu_clusters_h100.txt",                 # clusters of 2 beside the same
            "power": REPO / "benchmarks/results/tensor_cores_power_clusters_h100.json",  # kernels alone
            "power_reversed": REPO / "benchmarks/results/tensor_cores_power_clusters_reversed_h100.json",
            "head_to_head": REPO / "benchmarks/results/tensor_cores_head_to_head_clusters_h100.json"}
POWER_PARTS = {"parts": REPO / "benchmarks/results/tensor_cores_power_parts_h100.json",    # the best kernel's parts
               "mma": REPO / "benchmarks/results/tensor_cores_power_mma_h100.json",        # and MMAs alone, at 700 W
               "mma_reversed": REPO / "benchmarks/results/tensor_cores_power_mma_reversed_h100.json",
               "ncu": REPO / "benchmarks/results/ncu_power_parts_h100.txt"}
POWER_ROUNDS = {"runs": [REPO / f"benchmarks/results/tensor_cores_power_rounds{run}_h100.json"    # the best kernels
                         for run in ("_first", "_second", "")],                                   # and cuBLAS in rounds
                "ncu": REPO / "benchmarks/results/ncu_snake_h100.txt"}
POWER_INSTRUCTIONS = {"run": REPO / "benchmarks/results/tensor_cores_power_instructions_h100.json",   # wgmma beside
                      "ncu": REPO / "benchmarks/results/ncu_instructions_h100.txt"}                 # mma.sync at 700 W
TMA_ROUNDING = {"run": REPO / "benchmarks/results/tensor_cores_tma_rounding_h100.json",   # TF32 tensor maps: the TMA
                "ncu": REPO / "benchmarks/results/ncu_tma_rounding_h100.txt"}            # rounds; at 700 W
STORE = REPO / "simtlab/data/h100_timings.json"
KEY = "tensor_cores_tf32"

_HEADER = re.compile(r"^  (\S+?) \((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\), Context")
_METRIC = re.compile(r"^    (\S+)\s+(\S+)?\s+([\d,.]+)\s*$")
_PIPE = re.compile(r"(\w+) is the highest-utilized pipeline \(([\d.]+)%\)")
_METRICS = {"gpu__time_duration.sum": "duration_us", "sm__cycles_elapsed.avg.per_second": "clock_ghz",
            "smsp__inst_executed.sum": "instructions", "sm__cycles_elapsed.max": "cycles",
            "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue_active_pct",
            "dram__bytes_read.sum": "dram_read_mb", "lts__t_sector_hit_rate.pct": "l2_hit_pct",
            "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed": "tensor_pipe_pct",
            "l1tex__data_bank_reads.avg.pct_of_peak_sustained_elapsed": "bank_reads_pct",
            "l1tex__data_bank_writes.avg.pct_of_peak_sustained_elapsed": "bank_writes_pct",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_elapsed": "shared_lsu_pct",
            "l1tex__throughput.avg.pct_of_peak_sustained_elapsed": "l1_pct",
            "smsp__inst_executed_op_global_st.sum": "global_stores", "lts__t_sectors_op_read.sum": "l2_read_sectors",
            "lts__throughput.avg.pct_of_peak_sustained_elapsed": "l2_throughput_pct"}
_TIME_UNITS = {"ms": 1000.0, "us": 1.0, "ns": 0.001}                          # -> us
_BYTE_UNITS = {"Gbyte": 1000.0, "Mbyte": 1.0, "Kbyte": 0.001, "byte": 1e-6}   # -> MB
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
                value *= _TIME_UNITS.get(row.group(2), 1.0)
            elif row.group(1) == "dram__bytes_read.sum":
                value *= _BYTE_UNITS[row.group(2)]
            out[-1][_METRICS[row.group(1)]] = value
    return out


def parse_source(text: str) -> dict:
    """kernel -> its warp-stall samples from ncu's source page (``--page source --csv``, one table
    per kernel): ``samples`` (all), ``reasons`` (reason -> share of the samples), ``opcodes`` (SASS
    opcode -> share of the samples at its instructions, those of at least 0.5 %) and ``tile_wait``:
    the share of samples stalled on the branch right after an ``mbarrier.try_wait``
    (SYNCS.PHASECHK...TRYWAIT), i.e. warps waiting for a tile to land or a slot to empty."""
    import csv

    out, kernel, header, rows = {}, None, None, []

    def close():
        if kernel is None or header is None:
            return
        col = {n: i for i, n in enumerate(header)}

        def value(r, name):
            try:
                return float(r[col[name]])
            except (ValueError, IndexError):
                return 0.0
        total = sum(value(r, "Warp Stall Sampling (All Samples)") for r in rows)
        reasons = {n[len("stall_"):]: sum(value(r, n) for r in rows) / total for n in header
                   if n.startswith("stall_") and "Not Issued" not in n}
        waits = sum(value(rows[i + 1], "Warp Stall Sampling (All Samples)") for i, r in enumerate(rows[:-1])
                    if "TRYWAIT" in r[col["Source"]])
        opcodes = {}
        for r in rows:
            words = r[col["Source"]].split()
            if words:
                op = (words[1] if words[0].startswith("@") and len(words) > 1 else words[0]).split(".")[0]
                opcodes[op] = opcodes.get(op, 0.0) + value(r, "Warp Stall Sampling (All Samples)") / total
        out[kernel] = {"samples": total, "reasons": {k: round(v, 4) for k, v in reasons.items() if v >= 0.001},
                       "opcodes": {k: round(v, 4) for k, v in sorted(opcodes.items()) if v >= 0.005},
                       "tile_wait": waits / total}

    for row in csv.reader(text.splitlines()):
        if row[:1] == ["Kernel Name"]:
            close()
            kernel, header, rows = row[1], None, []
        elif row[:2] == ["Address", "Source"]:
            header = row
        elif header is not None and len(row) == len(header):
            rows.append(row)
    close()
    return out


def median_per_kernel(launches: list[dict]) -> dict:
    """kernel -> its launches' median of every number and stall reason (each variant of
    benchmarks/tensor_cores_tf32_feed.py is launched 2 or 3 times, each producer kernel 4), with ``launches``
    (how many)."""
    import statistics

    by_kernel: dict = {}
    for launch in launches:
        by_kernel.setdefault(launch["kernel"], []).append(launch)
    out = {}
    for kernel, group in by_kernel.items():
        keys = [k for k, v in group[0].items() if isinstance(v, float)]
        out[kernel] = {"kernel": kernel, "grid": group[0]["grid"], "block": group[0]["block"], "launches": len(group),
                       **{k: statistics.median(g[k] for g in group if k in g) for k in keys}}
        if group[0].get("stalls"):
            out[kernel]["stalls"] = {r: statistics.median(g["stalls"][r] for g in group if r in g.get("stalls", {}))
                                     for r in group[0]["stalls"]}
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


def feed_shapes() -> dict:
    """The shape of each variant of benchmarks/tensor_cores_tf32_feed.py's "feed" design (ncu_feed_h100.txt's):
    4096^3, full_waves 4 whole waves of its tiles."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from tensor_cores_tf32_feed import DESIGNS, VARIANTS

    return {name: list(DESIGNS["feed"][3]) if name == "full_waves" else [4096, 4096, 4096] for name in VARIANTS}


_TURNS_KEYS = ("device", "date", "reference", "rounds", "per_kernel", "command")   # of a head-to-head run's JSON


def _pick(d: dict, keys) -> dict:
    return {k: d[k] for k in keys}


#: what the entry keeps of each row of a tensor_cores_power.py --rounds run (what simtlab.tensorcores reads)
_ROUNDS_ROW_KEYS = ("name", "round", "tflops", "ms", "sm_clock_mhz", "power_w", "power_limit_w", "gpu_temp_c",
                    "memory_temp_c", "limiters")


def _rounds_run(run: dict) -> dict:
    """What the entry keeps of a benchmarks/tensor_cores_power.py --rounds run."""
    return {**_pick(run, ("device", "date")), "rows": [_pick(r, _ROUNDS_ROW_KEYS) for r in run["rows"]]}


def _power_run(power: dict | None) -> dict | None:
    """What the entry keeps of a benchmarks/tensor_cores_power.py run."""
    return None if power is None else _pick(power, ("device", "date", "rows"))


def entry(bench: dict, ncu_texts: list[str], source_text: str = "", power: dict | None = None,
          power_short: dict | None = None, stream_k_text: str = "", stream_k_source: str = "",
          shared_text: str = "", producer_text: str = "", feed_text: str = "", operands_text: str = "",
          head_to_head: dict | None = None, clusters: dict | None = None, power_parts: dict | None = None,
          power_rounds: dict | None = None, power_instructions: dict | None = None,
          tma_rounding: dict | None = None) -> dict:
    """The stored entry; ``clusters``, ``power_parts``, ``power_instructions`` and ``tma_rounding``: the texts and JSON
    of CLUSTERS, POWER_PARTS, POWER_INSTRUCTIONS and TMA_ROUNDING (by their keys), or None; ``power_rounds``:
    POWER_ROUNDS' runs' JSON and its Nsight Compute text."""
    rows = [{k: r[k] for k in ("name", "kernel", "precision", "impl", "reference", "tflops", "median_ms", "vs_cublas")
             if k in r} for r in bench["rows"] if "tflops" in r]
    profiles = {}
    for text in ncu_texts:
        profiles.update(first_per_kernel(parse_ncu(text)))
    for kernel, p in median_per_kernel(parse_ncu(producer_text)).items() if producer_text else ():
        if kernel.startswith("tc_"):                       # the producer-warpgroup kernels' stall profile
            profiles[kernel] = {**p, "pipe": "Tensor", "pipe_pct": p["tensor_pipe_pct"]}
    for profile in profiles.values():
        profile["flops"] = flops_of(profile, bench["shape"])
    for kernel, sampled in parse_source(source_text).items() if source_text else ():
        profiles.setdefault(kernel, {"kernel": kernel})["sampled"] = sampled
    return {"device": bench["device"], "date": bench["date"], "shape": bench["shape"],
            "files": ["benchmarks/results/tensor_cores_tf32_h100.json", "benchmarks/results/ncu_tensor_cores_h100.txt",
                      "benchmarks/results/ncu_mma_peak_h100.txt", "benchmarks/results/ncu_source_v6w_h100.csv",
                      "benchmarks/results/tensor_cores_power_h100.json",
                      "benchmarks/results/tensor_cores_power_short_h100.json",
                      "benchmarks/results/ncu_streamk_h100.txt", "benchmarks/results/ncu_source_streamk_h100.csv",
                      "benchmarks/results/ncu_shared_memory_h100.txt", "benchmarks/results/ncu_producer_h100.txt",
                      "benchmarks/results/ncu_feed_h100.txt", "benchmarks/results/ncu_mma_operands_h100.txt",
                      "benchmarks/results/tensor_cores_head_to_head_h100.json"]
                     + [str(p.relative_to(REPO)) for p in (*CLUSTERS.values(), *POWER_PARTS.values(),
                                                            *POWER_ROUNDS["runs"], POWER_ROUNDS["ncu"],
                                                            *POWER_INSTRUCTIONS.values(), *TMA_ROUNDING.values())],
            "command": "bash tools/device_tensor_cores_tf32.sh; bash tools/device_tensor_cores_ncu.sh",
            "rows": rows, "best": bench["best"].get("tf32"), "ncu": profiles,
            "power": _power_run(power), "power_short": _power_run(power_short),
            "head_to_head": None if head_to_head is None else _pick(head_to_head, _TURNS_KEYS),
            "stream_k": first_per_kernel(parse_ncu(stream_k_text)) if stream_k_text else {},
            "stream_k_sampled": parse_source(stream_k_source) if stream_k_source else {},
            "shared_memory": first_per_kernel(parse_ncu(shared_text)) if shared_text else {},
            "feed": median_per_kernel(parse_ncu(feed_text)) if feed_text else {},
            "feed_shapes": feed_shapes(),
            # the last launch of each (the first, a warm-up, may be shorter)
            "operands": {p["kernel"]: p for p in parse_ncu(operands_text)} if operands_text else {},
            "clusters": None if clusters is None else {
                "ncu": median_per_kernel(parse_ncu(clusters["ncu"])),
                "power": [_power_run(clusters[key]) for key in ("power", "power_reversed")],
                "head_to_head": _pick(clusters["head_to_head"], [k for k in _TURNS_KEYS if k != "rounds"]),
                "command": "bash tools/device_tensor_cores_clusters.sh"},
            "power_parts": None if power_parts is None else {
                "parts": _pick(power_parts["parts"], ("device", "date", "designs", "command", "power_runs")),
                "mma": [_power_run(power_parts[key]) for key in ("mma", "mma_reversed")],
                "ncu": median_per_kernel(parse_ncu(power_parts["ncu"])),
                "command": "bash tools/device_tensor_cores_power_parts.sh"},
            "power_rounds": None if power_rounds is None else {
                "runs": [_rounds_run(run) for run in power_rounds["runs"]],
                "ncu": median_per_kernel(parse_ncu(power_rounds["ncu"])),
                "command": "bash tools/device_tensor_cores_power_rounds.sh"},
            "power_instructions": None if power_instructions is None else {
                "run": _rounds_run(power_instructions["run"]),
                "ncu": median_per_kernel(parse_ncu(power_instructions["ncu"])),
                "command": "bash tools/device_tensor_cores_power_instructions.sh"},
            "tma_rounding": None if tma_rounding is None else {
                **_pick(tma_rounding["run"], ("rounding", "accuracy", "command")),
                "run": _rounds_run(tma_rounding["run"]),
                "ncu": median_per_kernel(parse_ncu(tma_rounding["ncu"]))}}


def read_files(files: dict) -> dict:
    """CLUSTERS', POWER_PARTS', POWER_INSTRUCTIONS' or TMA_ROUNDING's files: Nsight Compute's texts, the JSON of the
    others."""
    return {k: p.read_text(encoding="utf-8") if p.suffix == ".txt" else json.loads(p.read_text(encoding="utf-8"))
            for k, p in files.items()}


def entry_from_files() -> dict:
    """The entry from the result files this tool names."""
    bench = json.loads(BENCH.read_text(encoding="utf-8"))
    return entry(bench, [p.read_text(encoding="utf-8") for p in NCU], SOURCE.read_text(encoding="utf-8"),
                 json.loads(POWER.read_text(encoding="utf-8")), json.loads(POWER_SHORT.read_text(encoding="utf-8")),
                 STREAM_K.read_text(encoding="utf-8"), STREAM_K_SOURCE.read_text(encoding="utf-8"),
                 SHARED.read_text(encoding="utf-8"), PRODUCER.read_text(encoding="utf-8"), FEED.read_text(encoding="utf-8"),
                 OPERANDS.read_text(encoding="utf-8"), json.loads(HEAD_TO_HEAD.read_text(encoding="utf-8")),
                 read_files(CLUSTERS), read_files(POWER_PARTS),
                 {"runs": [json.loads(p.read_text(encoding="utf-8")) for p in POWER_ROUNDS["runs"]],
                  "ncu": POWER_ROUNDS["ncu"].read_text(encoding="utf-8")},
                 read_files(POWER_INSTRUCTIONS), read_files(TMA_ROUNDING))


def main() -> int:
    data = json.loads(STORE.read_text(encoding="utf-8"))
    data.setdefault("results", {})[KEY] = entry_from_files()
    STORE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    stored = data["results"][KEY]
    print(f"stored {KEY} ({len(stored['rows'])} rows, {len(stored['ncu'])} profiled kernels) in {STORE.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
