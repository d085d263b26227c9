"""Chapter 9's figures and tables as data: tensor-core peaks, the recorded H100 benchmark, the
fragment layouts of ``mma.sync``, the ``ldmatrix`` phases with and without the XOR swizzle, the
``cp.async`` ring traced on the PTX engine, and the numerics of TF32 / FP16 / BF16 inputs.

The kernels are ``kernels/tensor_cores.cu`` (GPU only: the PTX engine has no tensor-core
instructions yet) and ``kernels/tensor_cores_smem.cu`` (their shared-memory side, which the PTX
engine runs). The drawings are in :mod:`simtlab.plots.tensor_cores`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .kernels import tensor_cores as T

__all__ = ["PEAK_TFLOPS", "PEAK_SOURCE", "HBM_TBS", "FragmentLayout", "fragment_layout", "layout_from_entries",
           "MMA_SHAPES", "store_entry", "recorded", "results", "cublas_tflops", "version_table", "CHANGES",
           "goals", "stage_figures", "numba_row", "LDMATRIX_CASES", "phase_offsets", "phase_wavefronts",
           "trace_ldmatrix_phase", "trace_pipeline", "pipeline_events", "pipeline_schedule",
           "tile_flops_per_byte", "numerics_errors", "STORE_TOPIC", "BENCH_JSON", "TOP_JSON",
           "merged_entry"]

# ------------------------------------------------------------------------------------------
# peaks (NVIDIA H100 SXM5 datasheet: the dense figures, half the "with sparsity" ones)
# ------------------------------------------------------------------------------------------
#: TFLOP/s: FP32 on the SIMT lanes (132 SMs x 128 lanes x 2 x 1.98 GHz = 66.9, as chapter 6
#: computes it; the datasheet says 67), dense tensor-core TF32 and FP16/BF16 with FP32 accumulate
PEAK_TFLOPS = {"fp32": 66.9, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4}
PEAK_SOURCE = ("NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: TF32 989 and FP16/BF16 1,979 TFLOP/s "
               "with sparsity, half of that dense (494.7 and 989.4); FP32 67")
HBM_TBS = 3.35


# ------------------------------------------------------------------------------------------
# fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k8" and "... mma.m16n8k16")
# ------------------------------------------------------------------------------------------
#: mma shape -> (M, N, K) and the precisions that use it in this course
MMA_SHAPES = {"m16n8k8": ((16, 8, 8), ("tf32",)), "m16n8k16": ((16, 8, 16), ("fp16", "bf16"))}


@dataclass(frozen=True)
class FragmentLayout:
    """Which lane of the warp holds each element of one operand, and in which of its fragment
    elements: ``lane[row, col]`` and ``element[row, col]`` (a_i, b_i, c_i; for FP16/BF16 two
    elements share one 32-bit register: element i is in register i // 2)."""

    shape: str                      # "m16n8k8"
    precision: str                  # "tf32", "fp16", "bf16"
    operand: str                    # "a", "b", "c"
    lane: np.ndarray                # rows x cols, int
    element: np.ndarray             # rows x cols, int

    @property
    def rows(self) -> int:
        return self.lane.shape[0]

    @property
    def cols(self) -> int:
        return self.lane.shape[1]

    def elements_of(self, lane: int) -> list:
        """``[(element, row, col), ...]`` of one lane, in element order."""
        rows, cols = np.nonzero(self.lane == lane)
        return sorted((int(self.element[r, c]), int(r), int(c)) for r, c in zip(rows, cols))

    def same_as(self, other: "FragmentLayout") -> bool:
        return (self.lane.shape == other.lane.shape and np.array_equal(self.lane, other.lane)
                and np.array_equal(self.element, other.element))


def _operand_shape(shape: str, operand: str) -> tuple:
    (m, n, k), _ = MMA_SHAPES[shape]
    return {"a": (m, k), "b": (k, n), "c": (m, n)}[operand]


def layout_from_entries(shape: str, precision: str, operand: str, entries) -> FragmentLayout:
    """A layout table from ``(lane, element, row, col)`` entries (the formula's, or a map read
    from a traced run); every element of the operand must appear exactly once."""
    rows, cols = _operand_shape(shape, operand)
    lane = np.full((rows, cols), -1, np.int64)
    element = np.full((rows, cols), -1, np.int64)
    for ln, el, r, c in entries:
        if lane[r, c] != -1:
            raise ValueError(f"{operand.upper()}[{r}, {c}] is held twice (lanes {lane[r, c]} and {ln})")
        lane[r, c], element[r, c] = ln, el
    if (lane < 0).any():
        r, c = np.argwhere(lane < 0)[0]
        raise ValueError(f"no lane holds {operand.upper()}[{r}, {c}]")
    return FragmentLayout(shape, precision, operand, lane, element)


def traced_layouts(precision: str) -> list:
    """A, B and C's layout tables of ``precision``'s mma.sync ("tf32", "fp16", "bf16") as the
    PTX engine's run of a probe kernel shows them (``simtlab.analysis.fragments.fragment_map``:
    the codes each lane's registers hold after ``ldmatrix`` and ``mma.sync``), not the formulas."""
    from .analysis.fragments import fragment_map

    fm = fragment_map({"fp16": "f16"}.get(precision, precision))
    return [layout_from_entries(fm.shape, precision, operand,
                                [(lane, el, int(r), int(c)) for lane in range(32)
                                 for el, (r, c) in enumerate(getattr(fm, operand)[lane])])
            for operand in "abc"]


def _formula_entries(shape: str, operand: str):
    """The PTX ISA's formulas, with groupID = lane >> 2 and threadID_in_group = lane % 4."""
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        if operand == "c":                     # f32 accumulators of m16n8: c0..c3
            for i in range(4):
                yield lane, i, g + 8 * (i >= 2), 2 * t + (i & 1)
        elif shape == "m16n8k8":               # .tf32: one element per register
            if operand == "a":                 # a0..a3
                for i in range(4):
                    yield lane, i, g + 8 * (i % 2), t + 4 * (i >= 2)
            else:                              # b0, b1
                for i in range(2):
                    yield lane, i, t + 4 * i, g
        else:                                  # m16n8k16 .f16 / .bf16: two elements per register
            if operand == "a":                 # a0..a7
                for i in range(8):
                    yield lane, i, g + 8 * ((i // 2) % 2), 2 * t + (i & 1) + 8 * (i >= 4)
            else:                              # b0..b3
                for i in range(4):
                    yield lane, i, 2 * t + (i & 1) + 8 * (i >= 2), g


def fragment_layout(shape: str, precision: str, operand: str) -> FragmentLayout:
    """The lane and fragment element of each element of ``operand`` ("a", "b" or "c") of an
    ``mma.sync.aligned.<shape>`` in ``precision``, from the PTX ISA's formulas."""
    if shape not in MMA_SHAPES:
        raise ValueError(f"shape must be one of {', '.join(MMA_SHAPES)}, not {shape!r}")
    if precision not in MMA_SHAPES[shape][1]:
        raise ValueError(f"{shape} takes {' or '.join(MMA_SHAPES[shape][1])} inputs, not {precision!r}")
    if operand not in ("a", "b", "c"):
        raise ValueError(f"operand must be 'a', 'b' or 'c', not {operand!r}")
    return layout_from_entries(shape, precision, operand, _formula_entries(shape, operand))


# ------------------------------------------------------------------------------------------
# the recorded H100 benchmark (benchmarks/tensor_cores_bench.py) in the one store
# ------------------------------------------------------------------------------------------
STORE_TOPIC = "tensor_cores"
BENCH_JSON = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "tensor_cores_h100.json"
COMMAND = "bash tools/device_tensor_cores.sh"
_ROW_KEYS = ("name", "precision", "impl", "reference", "median_ms", "tflops", "vs_cublas", "kernel", "note")


def store_entry(bench: dict) -> dict:
    """The part of a benchmark JSON the chapter reads (no per-shape error checks), as it goes
    into ``simtlab/data/h100_timings.json`` under ``topics.tensor_cores``."""
    rows = []
    for r in bench["rows"]:
        row = {k: r[k] for k in _ROW_KEYS if k in r}
        regs = (r.get("attributes") or {}).get("num_regs")
        if regs is not None:
            row["registers"] = regs
        if "errors" not in r:                               # a row that failed has no figures to record
            continue
        row["error_vs_fp64"] = r["errors"]["vs_inputs"]
        rows.append(row)
    return {"device": bench["device"], "date": bench["date"], "shape": bench["shape"], "versions": bench["versions"],
            "benchmark": bench["command"], "command": COMMAND, "rows": rows, "best": bench["best"]}


#: the run of the top versions (v7 TF32, v8 wgmma + TMA) and the references, on the same card
TOP_JSON = BENCH_JSON.with_name("tensor_cores_top_h100.json")
TOP_COMMAND = "bash tools/device_tensor_cores_top.sh"


def merged_entry(bench: dict, top: dict | None = None) -> dict:
    """``store_entry(bench)`` with the rows of a run of the top versions (``top``, e.g.
    ``TOP_JSON``) that the full run lacks; each row's fraction of cuBLAS is against the cuBLAS
    of its own run. ``best_wgmma`` (the fastest v7/v8 per precision) comes from ``top``."""
    entry = store_entry(bench)
    if top is None:
        return entry
    have = {r["name"] for r in entry["rows"]}
    extra = store_entry({**top, "best": top.get("best", {})})["rows"]
    entry["rows"] += [{**r, "run": "top"} for r in extra if r["name"] not in have]
    entry["best_wgmma"] = top.get("best_wgmma", {})
    entry["top_run"] = {"device": top["device"], "date": top["date"], "command": TOP_COMMAND}
    return entry


def recorded() -> dict:
    """The recorded H100 figures (``source``: 'recorded')."""
    from . import gpubench

    entry = gpubench.stored(STORE_TOPIC)
    if entry is None:
        raise LookupError("no tensor-core figures in simtlab/data/h100_timings.json")
    return {**entry, "source": "recorded"}


def results(live: bool = False, log=print) -> dict:
    """The recorded H100 figures; ``live=True`` on a GPU measures the chapter's versions now
    (4096^3, no sweep, no numba row: about a minute) in the same shape of result."""
    from . import backend

    if live and backend.gpu_available():
        from .gpubench import tensor_cores as G

        out = G.run(repeat=5, numba=False, sweep=False, log=log)
        return {**store_entry({**out, "command": "simtlab.tensorcores.results(live=True)"}), "source": "measured"}
    res = recorded()
    log(f"Showing the tensor-core figures recorded on {res['device']} on {res['date']} ({res['command']}).")
    return res


def _row(res: dict, name: str) -> dict | None:
    return next((r for r in res["rows"] if r["name"] == name), None)


def cublas_tflops(res: dict) -> dict:
    """precision -> cuBLAS's TFLOP/s in the same run (FP32 SGEMM, TF32, FP16 and BF16 in, FP32 out)."""
    return {r["precision"]: r["tflops"] for r in res["rows"] if r["impl"] == "cublas"}


#: what each version changes (kernels/tensor_cores.cu)
CHANGES = {
    "v1 WMMA naive": "one warp per 16x16 tile of C, fragments loaded straight from global memory (TF32)",
    "v2 WMMA naive": "the same in FP16 / BF16 (m16n16k16)",
    "v3 WMMA tiled": "128x128x32 block tiles staged in shared memory, 8 warps reuse them",
    "v4 mma.sync + ldmatrix": "PTX mma.sync (m16n8k8 / m16n8k16) fed by ldmatrix from shared memory",
    "v5 + swizzle": "XOR swizzle of the shared tiles: ldmatrix without bank conflicts",
    "v6 + cp.async pipeline": "cp.async ring of 3-4 stages: the next tiles load while this one is computed",
    "v6 best of the sweep": "the fastest of the v6 configurations the benchmark timed (tile, stages, epilogue)",
    "v7 wgmma": "Hopper's wgmma: each warpgroup (4 warps) issues asynchronous m64n256k16 MMAs straight from shared memory (tiles by cp.async, not TMA); TF32 (m64n256k8) computes C^T = B^T A^T with B^T's fragments in registers, since wgmma reads TF32 only K-major",
    "v7 wgmma, B^T given": "TF32 wgmma with both operands K-major in shared memory: the caller passes B^T",
    "v7 wgmma + B transpose kernel": "the same, B^T made by a transpose kernel inside the timed run",
    "v8 wgmma + TMA": "v7 fed by the TMA: one producer thread copies whole swizzled tiles (cp.async.bulk.tensor), mbarriers hand stages to the wgmma warpgroups",
}


def version_table(res: dict) -> list:
    """One row per version: ``{"version", "changes", "<precision>": (TFLOP/s, fraction of cuBLAS)
    or None}`` for tf32, fp16, bf16, with the sweep's best v6 per precision as its own row."""
    out = []
    for label, changes in CHANGES.items():
        row = {"version": label, "changes": changes}
        for p in T.PRECISIONS:
            r = None
            if label == "v6 best of the sweep":
                best = res["best"].get(p)
                r = best and {"tflops": best["tflops"], "vs_cublas": best["vs_cublas"], "note": best["note"]}
            elif label in ("v1 WMMA naive", "v2 WMMA naive"):
                r = _row(res, f"{label} {p.upper()}")
            else:
                r = _row(res, f"{label} {p.upper()}")
            row[p] = None if r is None else (r["tflops"], r["vs_cublas"])
        if any(row[p] for p in T.PRECISIONS):
            out.append(row)
    return out


def goals(res: dict) -> list:
    """The issue's goals against the recorded run: ``(goal, measured fraction, reached)``. TF32's is the best the
    recorded runs measured: the sweep's fastest kernel, or the TF32-tensor-map pair's median over its rounds at the
    power limit (tf32_tma_rounding), each against cuBLAS in the same run."""
    best = res["best"]
    tf32 = best["tf32"]["vs_cublas"]
    if res.get("source") == "recorded":          # the later TF32 runs (v6t, v6w), where it went further
        try:
            tf32 = max(tf32, tf32_best()["vs_cublas"])
        except KeyError:
            pass
        try:                                     # TF32 tensor maps at 700 W: the median of its rounds against cuBLAS's
            tf32 = max(tf32, tf32_tma_rounding()["run"]["rows"]["clusters of 2, TF32 maps"]["median"])
        except KeyError:
            pass
    out = [("TF32 mma.sync >= 70% of cuBLAS TF32", tf32, 0.70)]
    out += [(f"{p.upper()} mma.sync + ldmatrix + cp.async >= 60% of cuBLAS {p.upper()}", best[p]["vs_cublas"], 0.60)
            for p in ("fp16", "bf16")]
    for p in ("fp16", "bf16"):                   # the course's top: wgmma + TMA where it was measured
        v8, v7 = _row(res, f"v8 wgmma + TMA {p.upper()}"), _row(res, f"v7 wgmma {p.upper()}")
        if v8 or v7:
            what = "wgmma + TMA" if v8 else "wgmma"
            out.append((f"{p.upper()} {what} >= 80% of cuBLAS {p.upper()}", (v8 or v7)["vs_cublas"], 0.80))
    return [(goal, frac, frac >= need) for goal, frac, need in out]


def mma_ceiling(entry: dict | None = None, res: dict | None = None) -> list:
    """mma.sync's own ceiling against cuBLAS (``benchmarks/mma_peak.py``: warps doing nothing but
    register-to-register ``mma.sync``; store entry ``results.mma_peak``) beside the course's best
    ``mma.sync`` GEMM per precision (the recorded chapter run's best v6): one dict per precision
    with ``ceiling``, ``cublas`` (TFLOP/s, the same run), ``ceiling_of_cublas``, ``best_v6`` and
    ``best_v6_of_ceiling``. ``KeyError`` while nothing is recorded."""
    from . import backend

    entry = entry or backend.recorded("mma_peak")
    res = res or recorded()
    out = []
    for row in entry["rows"]:
        p = row["precision"]
        best = res["best"].get(p)
        out.append({"precision": p, "ceiling": row["ceiling"]["tflops"], "cublas": row["cublas_4096"]["tflops"],
                    "ceiling_of_cublas": row["ceiling_of_cublas"], "launch": (row["ceiling"]["blocks_per_sm"],
                                                                             row["ceiling"]["threads"]),
                    "best_v6": best and best["tflops"],
                    "best_v6_of_ceiling": best and best["tflops"] / row["ceiling"]["tflops"]})
    return out


def mma_ceiling_summary(entry: dict | None = None, res: dict | None = None, goal: float = 0.70) -> str:
    """The TF32 goal against mma.sync's measured ceiling, in one sentence per precision."""
    from . import backend

    entry = entry or backend.recorded("mma_peak")
    lines = [f"{entry['device']}, {entry['date']}:"]
    for r in mma_ceiling(entry, res):
        verdict = ("so at its own clock no mma.sync GEMM can reach " if r["ceiling_of_cublas"] < goal
                   else "so at its own clock an mma.sync GEMM could reach ")
        lines.append(f"- {r['precision'].upper()}: mma.sync alone {r['ceiling']:.0f} TFLOP/s, cuBLAS {r['cublas']:.0f}: "
                     f"{100 * r['ceiling_of_cublas']:.0f} % of cuBLAS, {verdict}{100 * goal:.0f} %"
                     + (f"; the course's best v6 runs at {100 * r['best_v6_of_ceiling']:.0f} % of the ceiling"
                        if r["best_v6"] else ""))
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------
# the TF32 goal, measured: the sweep (v6, v6t, v6w) and Nsight Compute's view of it
# (tools/store_tensor_cores_tf32.py: store entry results.tensor_cores_tf32)
# ------------------------------------------------------------------------------------------
def _profile(entry: dict, prefix: str) -> dict | None:
    return next((p for k, p in entry["ncu"].items() if k.startswith(prefix)), None)


def _full_pipe_per_ghz(p: dict) -> float:
    """TFLOP/s per GHz of SM clock that ``p``'s instructions would give with the tensor pipe always busy."""
    return p["flops"] / (p["duration_us"] * 1e-6) / 1e12 / (p["pipe_pct"] / 100) / p["clock_ghz"]


def tf32_gap(entry: dict | None = None, goal: float = 0.70) -> dict:
    """What the TF32 goal asks of an mma.sync GEMM, from one Nsight Compute run (clock unlocked):
    ``cublas`` (cuBLAS TF32 on B^T: TFLOP/s, clock, pipe %), ``best`` (the fastest under the profiler of the
    sweep's kernels that were profiled: the profile's median of 4 launches ranks kernels a point apart, which the
    sweep's one row each cannot), ``ceiling`` (mma_peak_tf32: warps doing nothing but MMAs, one per
    scheduler), ``mma_full_per_ghz`` (mma.sync TF32's rate with its pipe always busy, from the best
    kernel's profile) and ``needed_pipe_pct``: the pipe use at the best kernel's clock that ``goal``
    of cuBLAS's rate takes."""
    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    # of the sweep's kernels that were profiled too (the profile takes a few, not all), the fastest under the profiler
    profiled = [r["kernel"] for r in entry["rows"] if r.get("impl") == "cuda-c" and r.get("kernel") in entry["ncu"]
                and "transpose" not in r["name"]]
    if not profiled:
        raise KeyError("no kernel of the recorded sweep has a Nsight Compute profile")
    best_kernel = max(profiled, key=lambda k: entry["ncu"][k]["flops"] / entry["ncu"][k]["duration_us"])
    out = {}
    for key, prefix in (("cublas", "sm90_xmma_gemm_f32f32_tf32f32_f32_tn"), ("best", best_kernel),
                        ("ceiling", "mma_peak_tf32")):
        p = _profile(entry, prefix)
        if p is None:
            raise KeyError(f"no Nsight Compute profile of {prefix} in the recorded entry")
        out[key] = {"kernel": p["kernel"], "duration_us": p["duration_us"], "clock_ghz": p["clock_ghz"],
                    "pipe_pct": p["pipe_pct"], "tflops": p["flops"] / (p["duration_us"] * 1e-6) / 1e12,
                    "stalls": p["stalls"], "launches": p.get("launches", 1)}
    # warps of nothing but MMAs, two a scheduler as in the GEMMs, with a 64 x 64 warp's fragments (mma_operands.py)
    two = entry.get("operands", {}).get("a4b8")
    out["two_warps"] = None if two is None else {"clock_ghz": two["clock_ghz"], "pipe_pct": two["tensor_pipe_pct"]}
    out["mma_full_per_ghz"] = _full_pipe_per_ghz(_profile(entry, best_kernel))
    out["ceiling_full_per_ghz"] = _full_pipe_per_ghz(_profile(entry, "mma_peak_tf32"))
    out["needed_pipe_pct"] = 100 * goal * out["cublas"]["tflops"] / (out["mma_full_per_ghz"] * out["best"]["clock_ghz"])
    out["best_of_cublas"] = out["best"]["tflops"] / out["cublas"]["tflops"]
    out["goal"] = goal
    return out


def tf32_sweep_lines(entry: dict | None = None) -> list:
    """``(row name, TFLOP/s, fraction of its reference, reference)`` of the recorded TF32 sweep:
    cuBLAS on A @ B and on B^T, v6's best, every v6t and v6w (B^T kernels against cuBLAS on B^T;
    with the transpose kernel timed, against A @ B's)."""
    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    return [(r["name"], r["tflops"], r.get("vs_cublas"), r.get("reference")) for r in entry["rows"]
            if r["precision"] == "tf32"]


def tf32_power(entry: dict | None = None) -> dict:
    """The TF32 kernels run back to back for 3 s (the board at its power limit) and for 1 s (below
    it), benchmarks/tensor_cores_power.py: ``rows``, one per kernel with ``long`` and ``short``
    (TFLOP/s, SM clock in MHz, watts, the limit), and the largest relative change between the two
    runs of any kernel's rate (``rate_change``) and clock (``clock_change``); ``clock_lower_long``
    (every clock lower in the 3-s run) and ``faster_long`` (how many kernels run faster in it)."""
    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    short = {r["name"]: r for r in entry["power_short"]["rows"]}
    rows = []
    for r in entry["power"]["rows"]:
        s = short.get(r["name"])
        if s is None:
            continue
        rows.append({"name": r["name"], **{key: {"tflops": x["tflops"], "clock_mhz": x["sm_clock_mhz"],
                                                 "watts": x["power_w"], "limit_w": x["power_limit_w"]}
                                           for key, x in (("long", r), ("short", s))}})
    change = lambda key: max(abs(r["short"][key] / r["long"][key] - 1) for r in rows)  # noqa: E731
    return {"device": entry["power"]["device"], "date": entry["power"]["date"], "rows": rows,
            "rate_change": change("tflops"), "clock_change": change("clock_mhz"),
            "clock_lower_long": all(r["long"]["clock_mhz"] < r["short"]["clock_mhz"] for r in rows),
            "faster_long": sum(r["long"]["tflops"] > r["short"]["tflops"] for r in rows),
            "long_at_limit": all(r["long"]["watts"] >= 0.98 * r["long"]["limit_w"] for r in rows),
            "short_below_limit": all(r["short"]["watts"] < 0.95 * r["short"]["limit_w"] for r in rows)}


def tf32_power_summary(entry: dict | None = None) -> str:
    """tf32_power as the chapter prints it: each kernel in both runs, then what changed."""
    w = tf32_power(entry)
    lines = [f"Back to back, nvidia-smi every 50 ms ({w['device']}, {w['date']}); 3 s a kernel | 1 s a kernel:"]
    for r in w["rows"]:
        a, b = r["long"], r["short"]
        lines.append(f"- {r['name']:<40} {a['tflops']:6.1f} TFLOP/s {a['clock_mhz']:5.0f} MHz {a['watts']:4.0f} W | "
                     f"{b['tflops']:6.1f} TFLOP/s {b['clock_mhz']:5.0f} MHz {b['watts']:4.0f} W")
    lines.append(f"3 s: {'every kernel at' if w['long_at_limit'] else 'not every kernel at'} the {w['rows'][0]['long']['limit_w']:.0f} W "
                 f"limit; 1 s: {'every kernel below it' if w['short_below_limit'] else 'not every kernel below it'}. "
                 f"Clocks differ by up to {100 * w['clock_change']:.0f} % between the runs, rates by at most "
                 f"{100 * w['rate_change']:.0f} %; {'every' if w['clock_lower_long'] else 'not every'} kernel's clock is lower "
                 f"in the 3-s run, and {w['faster_long']} of {len(w['rows'])} run faster there.")
    return "\n".join(lines)


def tf32_best(entry: dict | None = None) -> dict:
    """The recorded TF32 sweep's fastest mma.sync kernel: ``kernel``, ``name``, ``tflops``,
    ``vs_cublas`` (against cuBLAS on the same layout), ``note``."""
    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    return entry["best"]


def tf32_sweep_text(entry: dict | None = None) -> str:
    """The recorded TF32 sweep as a table: TFLOP/s and the fraction of the cuBLAS row each is
    measured against (cuBLAS on A @ B, or on B^T for the kernels that read B^T)."""
    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    lines = [f"{entry['device']}, {entry['date']}, {' x '.join(map(str, entry['shape']))} ({entry['command']})",
             f"{'version':<70} {'TFLOP/s':>8} {'of':>6}  against"]
    for name, tflops, frac, ref in tf32_sweep_lines(entry):
        lines.append(f"{name:<70} {tflops:8.1f} " + (f"{100 * frac:5.1f}%  {ref}" if frac else ""))
    return "\n".join(lines)


def tf32_gap_summary(entry: dict | None = None, goal: float = 0.70) -> str:
    """The TF32 goal against Nsight Compute's measurements, as the chapter prints it."""
    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    g = tf32_gap(entry, goal)
    c, b, top = g["cublas"], g["best"], g["ceiling"]
    launches = b.get("launches", 1)
    return "\n".join([
        f"Nsight Compute, clocks unlocked, one launch each" + (f" (the best kernel: the median of {launches})" if launches > 1 else "")
        + f" ({entry['device']}, {entry['date']}):",
        f"- cuBLAS TF32 on B^T: {c['duration_us']:.0f} us at {c['clock_ghz']:.2f} GHz, tensor pipe {c['pipe_pct']:.0f} % "
        f"busy: {c['tflops']:.0f} TFLOP/s",
        f"- {b['kernel']}: {b['duration_us']:.0f} us at {b['clock_ghz']:.2f} GHz, tensor pipe {b['pipe_pct']:.0f} % busy: "
        f"{b['tflops']:.0f} TFLOP/s, {100 * g['best_of_cublas']:.0f} % of cuBLAS",
        f"- mma_peak_tf32 (one warp per scheduler, nothing but mma.sync): {top['clock_ghz']:.2f} GHz, "
        f"tensor pipe {top['pipe_pct']:.0f} % busy",
        *([f"- two warps per scheduler, nothing but mma.sync on a 64 x 64 warp's 4 A and 8 B fragments "
           f"(benchmarks/mma_operands.py): {g['two_warps']['clock_ghz']:.2f} GHz, tensor pipe "
           f"{g['two_warps']['pipe_pct']:.0f} % busy"] if g["two_warps"] else []),
        f"mma.sync TF32 with the pipe always busy: {g['mma_full_per_ghz']:.0f} TFLOP/s per GHz "
        f"({g['ceiling_full_per_ghz']:.0f} from mma_peak's profile). At {b['clock_ghz']:.2f} GHz, "
        f"{100 * goal:.0f} % of cuBLAS ({goal * c['tflops']:.0f} TFLOP/s) needs the pipe "
        f"{g['needed_pipe_pct']:.0f} % busy; {b['kernel']} keeps it {b['pipe_pct']:.0f} % busy.",
    ])


#: benchmarks/tensor_cores_tf32_feed.py's two designs of the persistent 128 x 256 kernel, as the chapter names them
FEED_DESIGNS = {"thread0": "thread 0 of warp 0 asks", "feed": "a producer warpgroup asks"}
#: its variants, the parts of the work each keeps, in the order they add up
FEED_PARTS = {"no_data_ldsm": "MMAs alone (no tiles, no ldmatrix)", "no_data": "+ ldmatrix (no tiles)",
              "no_store": "+ the tiles (TMA, waits), no store", "all": "+ the store: the kernel",
              "full_waves": "the kernel on {rows} rows (4 whole waves)", "data_only": "the tiles alone"}


def tf32_feed(entry: dict | None = None) -> dict:
    """What each part of feeding the MMAs costs the persistent kernels, from one Nsight Compute launch
    of each variant (benchmarks/tensor_cores_tf32_feed.py; the median of its launches): per design of
    :data:`FEED_DESIGNS`, ``rows`` (variant -> cycles, tensor-pipe %) and ``costs``, each part's extra
    cycles as a share of those before it: ``ldmatrix`` (no_data over no_data_ldsm), ``tiles`` (no_store
    over no_data), ``store`` (all over no_store) and ``last_wave`` (all over the whole-waves run scaled to
    the same work: the SMs idle in 4096^3's fourth round, and what else differs between the two shapes)."""
    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    feed, shapes = entry.get("feed") or {}, entry.get("feed_shapes") or {}
    out = {}
    for design, label in FEED_DESIGNS.items():
        rows = {}
        for part in FEED_PARTS:
            p = feed.get(f"{design}_{part}")
            if p is None:
                raise KeyError(f"no profile of {design}_{part}: run bash tools/device_tensor_cores_ncu.sh feed")
            rows[part] = {"cycles": p["cycles"], "pipe_pct": p["tensor_pipe_pct"], "clock_ghz": p["clock_ghz"]}
        work = np.prod(shapes["full_waves"]) / np.prod(shapes["all"])
        c = {k: r["cycles"] for k, r in rows.items()}
        out[design] = {"label": label, "rows": rows,
                       "costs": {"ldmatrix": c["no_data"] / c["no_data_ldsm"] - 1, "tiles": c["no_store"] / c["no_data"] - 1,
                                 "store": c["all"] / c["no_store"] - 1, "last_wave": c["all"] * work / c["full_waves"] - 1}}
    return {"device": entry["device"], "date": entry["date"], "designs": out,
            "full_waves_shape": shapes["full_waves"]}


def tf32_feed_summary(entry: dict | None = None) -> str:
    """tf32_feed as the chapter prints it: cycles and pipe use of each variant in both designs, then each
    part's cost."""
    w = tf32_feed(entry)
    d = w["designs"]
    lines = [f"Nsight Compute, one launch each, 4096^3 ({w['device']}, {w['date']}); "
             f"thousands of cycles and tensor-pipe use:",
             f"{'':<42}" + "".join(f"{x['label']:>28}" for x in d.values())]
    for part, label in FEED_PARTS.items():
        label = label.format(rows=w["full_waves_shape"][0])
        cells = "".join(f"{x['rows'][part]['cycles'] / 1e3:>19,.0f}k" + (f" {x['rows'][part]['pipe_pct']:5.1f} %"
                        if part != "data_only" else " " * 8) for x in d.values())
        lines.append(f"{label:<42}{cells}")
    names = {"ldmatrix": "ldmatrix", "tiles": "the tiles", "store": "the store", "last_wave": "the last wave"}
    for key, name in names.items():
        lines.append(f"{'cost of ' + name:<42}" + "".join(f"{100 * x['costs'][key]:>26.1f} %" for x in d.values()))
    return "\n".join(lines)


def wave_quantization(m: int, n: int, bm: int, bn: int, sms: int = T.H100_SMS) -> dict:
    """How whole BM x BN tiles of an M x N product fill ``sms`` SMs, one tile an SM at a time:
    ``tiles``, ``waves`` (tiles / sms), ``rounds`` (the whole waves the SMs run, the last maybe part
    full), ``last_fill`` (the share of SMs busy in the last round) and ``ideal_saving``: the share of
    the time a perfect split of the work over the SMs would save (1 - waves / rounds)."""
    if min(m, n, bm, bn, sms) <= 0 or m % bm or n % bn:
        raise ValueError(f"{m} x {n} does not split into whole {bm} x {bn} tiles (or a size is not positive)")
    tiles = (m // bm) * (n // bn)
    rounds = -(-tiles // sms)
    return {"tiles": tiles, "sms": sms, "waves": tiles / sms, "rounds": rounds, "last_fill": (tiles - (rounds - 1) * sms) / sms,
            "ideal_saving": 1 - tiles / sms / rounds}


#: the stream-K kernels and the persistent one they extend, as the chapter names them
STREAM_K_KERNELS = {"tc_v6w_tf32_128x256_s4_persistent": "persistent, whole tiles",
                    "tc_v6w_tf32_128x256_s4_streamk": "stream-K, each share's second tile first",
                    "tc_v6w_tf32_128x256_s4_streamk_in_order": "stream-K, each share in order"}


def _producer_profile(entry: dict, kernel: str, needs: str) -> dict:
    """``kernel``'s profile from ``bash tools/device_tensor_cores_ncu.sh producer`` (the median of its launches);
    KeyError naming the command when it is missing or older than the metric ``needs``."""
    p = entry["ncu"].get(kernel)
    if p is None or needs not in p:
        raise KeyError(f"no producer profile of {kernel} with its {needs} in the recorded entry: "
                       "bash tools/device_tensor_cores_ncu.sh producer")
    return p


#: per tile shape, the producer kernel storing C from the fragments, the same staging C through shared memory,
#: that one releasing each slot as soon as its last fragments are loaded, and that one issuing a k-tile's last
#: MMAs before it waits for a next k-tile that has not landed: each changes one thing
PRODUCER_STEPS = {shape: {"direct": f"tc_v6w_tf32_{shape}_s4_producer_persistent",
                          "staged": f"tc_v6w_tf32_{shape}_s4_producer_persistent_staged",
                          "early": f"tc_v6w_tf32_{shape}_s4_producer_persistent_staged_early",
                          "mma_first": f"tc_v6w_tf32_{shape}_s4_producer_persistent_staged_early_mmafirst"}
                  for shape in ("128x256", "256x128")}
_STEP_LABELS = {"direct": "C from the fragments (float2)", "staged": "C through shared memory (float4)",
                "early": "+ slots released early", "mma_first": "+ last MMAs before a late wait"}


def tf32_producer_steps(entry: dict | None = None) -> dict:
    """The producer kernel's steps of PRODUCER_STEPS under Nsight Compute (``bash tools/device_tensor_cores_ncu.sh
    producer``, the median of each kernel's launches): ``rows`` (shape -> step -> ``kernel``, ``cycles``,
    ``tensor_pipe_pct``, ``global_stores`` (warp-level store instructions), ``lg_throttle`` (cycles per issued
    instruction stalled on the load/store unit's queue), ``launches`` and the sweep row's ``vs_cublas``) and
    ``saving`` (shape -> step -> 1 - its cycles / the previous step's; none for the first)."""
    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    sweep = {r["kernel"]: r for r in entry["rows"] if r.get("kernel") and "transpose" not in r["name"]}
    rows, saving = {}, {}
    for shape, steps in PRODUCER_STEPS.items():
        rows[shape], saving[shape] = {}, {}
        previous = None
        for step, kernel in steps.items():
            p = _producer_profile(entry, kernel, "global_stores")
            if kernel not in sweep:
                raise KeyError(f"no sweep row of {kernel} in the recorded entry: bash tools/device_tensor_cores_tf32.sh")
            rows[shape][step] = {"kernel": kernel, "cycles": p["cycles"], "tensor_pipe_pct": p["tensor_pipe_pct"],
                                 "global_stores": p["global_stores"], "lg_throttle": p["stalls"].get("lg_throttle", 0.0),
                                 "launches": p.get("launches", 1), "vs_cublas": sweep[kernel]["vs_cublas"]}
            if previous:
                saving[shape][step] = 1 - p["cycles"] / previous["cycles"]
            previous = rows[shape][step]
    return {"device": entry["device"], "date": entry["date"], "rows": rows, "saving": saving}


def tf32_producer_steps_summary(entry: dict | None = None) -> str:
    """tf32_producer_steps as the chapter prints it."""
    w = tf32_producer_steps(entry)
    launches = next(iter(next(iter(w["rows"].values())).values()))["launches"]
    lines = [f"Nsight Compute, clocks unlocked, median of {launches} launches ({w['device']}, {w['date']}):",
             f"{'':<42}{'cycles':>8}{'saved':>8}{'tensor pipe':>13}{'store instr.':>14}{'LSU queue stall':>17}{'sweep':>8}"]
    for shape, steps in w["rows"].items():
        for step, r in steps.items():
            saved = w["saving"][shape].get(step)
            lines.append(f"{shape + ' ' + _STEP_LABELS[step]:<42}{r['cycles'] / 1e3:>7.0f}k"
                         + (f"{100 * saved:>7.1f}%" if saved is not None else f"{'':>8}")
                         + f"{r['tensor_pipe_pct']:>11.1f} %{r['global_stores'] / 1e3:>13.0f}k{r['lg_throttle']:>17.2f}"
                         f"{100 * r['vs_cublas']:>7.1f}%")
    lines.append("(saved: fewer cycles than the row above; LSU queue stall: cycles per issued instruction a warp waits "
                 "for the load/store unit's queue, stall_lg_throttle; sweep: % of cuBLAS TF32 on B^T in the benchmark run)")
    return "\n".join(lines)


def tf32_head_to_head(entry: dict | None = None) -> dict:
    """The best kernels and cuBLAS on B^T timed in turns (benchmarks/tensor_cores_head_to_head.py, kept in the
    entry's ``head_to_head``): ``reference``, ``rounds`` (how many) and ``rows``, one per kernel in the order run
    (the reference first): ``name``, ``tflops`` (its median over the rounds), ``ratio`` (the median of its
    per-round rate over the reference's), ``ratio_min``, ``ratio_max``; ``best``: the row of the highest ratio."""
    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    h = entry.get("head_to_head")
    if not h:
        raise KeyError("no head-to-head run in the recorded entry: bash tools/device_tensor_cores_tf32.sh")
    rows = [{"name": name, **h["per_kernel"][name]} for name in h["rounds"][0]]
    return {"device": h["device"], "date": h["date"], "reference": h["reference"], "rounds": len(h["rounds"]),
            "rows": rows, "best": max(rows[1:], key=lambda r: r["ratio"])}


def tf32_head_to_head_summary(entry: dict | None = None) -> str:
    """tf32_head_to_head as the chapter prints it."""
    w = tf32_head_to_head(entry)
    lines = [f"In turns, {w['rounds']} rounds, 4096^3 ({w['device']}, {w['date']}); each kernel's median rate and its "
             f"rate over {w['reference']}'s in the same round:",
             f"{'':<64}{'TFLOP/s':>8}{'median':>8}{'rounds':>16}"]
    for r in w["rows"][1:]:
        lines.append(f"{r['name']:<64}{r['tflops']:>8.1f}{100 * r['ratio']:>7.1f}%"
                     f"{100 * r['ratio_min']:>9.1f}-{100 * r['ratio_max']:.1f}%")
    ref = w["rows"][0]
    lines.append(f"{w['reference']:<64}{ref['tflops']:>8.1f}")
    return "\n".join(lines)


#: the best producer kernel at 128 x 256 and the same kernel in clusters of 2 that share B^T's tile (TMA multicast)
L2_KERNELS = {"alone": "tc_v6w_tf32_128x256_s4_producer_persistent_staged",
              "clusters of 2": "tc_v6w_tf32_128x256_s4_cluster2_producer_persistent_staged"}


def _pair_costs(alone: dict, pair: dict) -> dict:
    """What a cluster of 2 saves and costs against the kernel alone: ``fewer_reads`` (1 - its L2 read sectors /
    the lone kernel's) and ``more_cycles`` (its cycles / the lone kernel's - 1)."""
    return {"fewer_reads": 1 - pair["l2_read_sectors"] / alone["l2_read_sectors"],
            "more_cycles": pair["cycles"] / alone["cycles"] - 1}


def tf32_l2(entry: dict | None = None) -> dict:
    """Is L2 what is left? The kernels of L2_KERNELS under Nsight Compute (``bash
    tools/device_tensor_cores_ncu.sh producer``, the median of their launches): ``rows`` (label -> ``kernel``,
    ``cycles``, ``l2_read_sectors``, ``l2_throughput_pct``, ``tensor_pipe_pct``, ``launches``), ``fewer_reads`` (1 - the
    cluster's L2 read sectors / the lone kernel's) and ``more_cycles`` (the cluster's cycles / the lone kernel's - 1)."""
    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    rows = {}
    for label, kernel in L2_KERNELS.items():
        p = _producer_profile(entry, kernel, "l2_read_sectors")
        rows[label] = {"kernel": kernel, "launches": p.get("launches", 1),
                       **{k: p[k] for k in ("cycles", "l2_read_sectors", "l2_throughput_pct", "tensor_pipe_pct")}}
    return {"device": entry["device"], "date": entry["date"], "rows": rows,
            **_pair_costs(rows["alone"], rows["clusters of 2"])}


def tf32_l2_summary(entry: dict | None = None) -> str:
    """tf32_l2 as the chapter prints it."""
    w = tf32_l2(entry)
    launches = w["rows"]["alone"]["launches"]
    lines = [f"Nsight Compute, clocks unlocked, median of {launches} launches ({w['device']}, {w['date']}), 128 x 256 tiles:",
             f"{'':<16}{'cycles':>10}{'L2 reads (32-B sectors)':>26}{'L2 busy':>10}{'tensor pipe':>13}"]
    for label, r in w["rows"].items():
        lines.append(f"{label:<16}{r['cycles'] / 1e3:>9.0f}k{r['l2_read_sectors'] / 1e6:>25.1f}M"
                     f"{r['l2_throughput_pct']:>8.1f} %{r['tensor_pipe_pct']:>11.1f} %")
    lines.append(f"clusters of 2: {100 * w['fewer_reads']:.0f} % fewer L2 reads, {100 * w['more_cycles']:+.1f} % cycles")
    return "\n".join(lines)


#: per tile shape, the kernel alone and in clusters of 2 that share a tile by TMA multicast (bash
#: tools/device_tensor_cores_clusters.sh), all with C staged and the last MMAs first: alone and "early" release each
#: slot once its last fragments are loaded; "clusters of 2" after the MMAs, by remote arrives in both blocks;
#: "clusters, early" early, each block's producer relaying its consumers' release to both (MmaTf32Tma's RELAY)
CLUSTER_KERNELS = {
    "256x128": {"alone": "tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst",
                "clusters of 2": "tc_v6w_tf32_256x128_s4_cluster2_producer_persistent_staged_mmafirst",
                "clusters, early": "tc_v6w_tf32_256x128_s4_cluster2_producer_persistent_staged_early_mmafirst"},
    "128x256": {"alone": "tc_v6w_tf32_128x256_s4_producer_persistent_staged_early_mmafirst",
                "clusters of 2": "tc_v6w_tf32_128x256_s4_cluster2_producer_persistent_staged_mmafirst",
                "clusters, early": "tc_v6w_tf32_128x256_s4_cluster2_producer_persistent_staged_early_mmafirst"}}


def tf32_clusters(entry: dict | None = None) -> dict:
    """Do fewer bytes from L2 buy time? Per shape of CLUSTER_KERNELS, the kernel alone and in clusters of 2: under
    Nsight Compute (clocks unlocked, median of its launches: ``cycles``, ``l2_read_sectors``, ``tensor_pipe_pct``,
    ``clock_ghz``) and back to back for 3 s at the board's power limit, twice in opposite orders (``tflops`` and
    ``sm_clock_mhz`` of each run, and ``vs_cublas``: the rate over cuBLAS TF32 on B^T's of the same run) and in
    turns with cuBLAS (``turns``: the head-to-head ratio, 20 rounds, when recorded). Per shape also ``against``:
    per cluster kernel, ``fewer_reads``, ``more_cycles``, ``clock_gain`` (its clock at the power limit over the
    lone kernel's, each run's, - 1) and ``rate_gain`` (the same for TFLOP/s)."""
    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    c = entry.get("clusters")
    if not c:
        raise KeyError("no cluster measurements recorded: run bash tools/device_tensor_cores_clusters.sh, then "
                       "python tools/store_tensor_cores_tf32.py")
    runs = [{r["name"]: r for r in run["rows"]} for run in c["power"]]
    turns = (c.get("head_to_head") or {}).get("per_kernel", {})
    shapes = {}
    for shape, kernels in CLUSTER_KERNELS.items():
        rows = {}
        for label, kernel in kernels.items():
            p = c["ncu"][kernel]
            rows[label] = {"kernel": kernel, "launches": p.get("launches", 1),
                           **{k: p[k] for k in ("cycles", "l2_read_sectors", "tensor_pipe_pct", "clock_ghz")},
                           **_power_columns(runs, kernel, "cublas:tf32:bt"), "turns": turns.get(kernel, {}).get("ratio")}
        alone = rows["alone"]
        shapes[shape] = {"rows": rows, "against": {
            label: {**_pair_costs(alone, pair),
                    "clock_gain": [b / a - 1 for a, b in zip(alone["sm_clock_mhz"], pair["sm_clock_mhz"])],
                    "rate_gain": [b / a - 1 for a, b in zip(alone["tflops"], pair["tflops"])]}
            for label, pair in rows.items() if label != "alone"}}
    return {"device": c["power"][0]["device"], "date": c["power"][0]["date"], "shapes": shapes,
            "cublas_tflops": [run["cublas:tf32:bt"]["tflops"] for run in runs], "command": c["command"]}


def tf32_clusters_summary(entry: dict | None = None) -> str:
    """tf32_clusters as the chapter prints it: per shape, the kernels' cycles and L2 reads under the profiler, their
    clock and rate at the power limit in both runs and in turns, then each cluster kernel against the one alone."""
    w = tf32_clusters(entry)
    first = next(iter(w["shapes"].values()))["rows"]["alone"]
    lines = [f"{w['device']}, {w['date']} ({w['command']}). Nsight Compute, clocks unlocked, median of "
             f"{first['launches']} launches; then each kernel back to back for 3 s at the board's 700 W, twice "
             f"(cuBLAS TF32 on B^T: {' and '.join(f'{t:.1f}' for t in w['cublas_tflops'])} TFLOP/s):",
             f"{'':<24}{'cycles':>9}{'L2 reads':>10}{'clock (MHz)':>17}{'TFLOP/s':>16}{'of cuBLAS':>16}{'in turns':>10}"]
    for shape, x in w["shapes"].items():
        for label, r in x["rows"].items():
            lines.append(f"{shape + ' ' + label:<24}{r['cycles'] / 1e3:>8.0f}k{r['l2_read_sectors'] / 1e6:>9.1f}M"
                         f"{' / '.join(f'{v:.0f}' for v in r['sm_clock_mhz']):>17}"
                         f"{' / '.join(f'{v:.1f}' for v in r['tflops']):>16}"
                         f"{' / '.join(f'{100 * v:.1f}' for v in r['vs_cublas']):>14} %"
                         + (f"{100 * r['turns']:>8.1f} %" if r["turns"] is not None else ""))
        for label, g in x["against"].items():
            lines.append(f"{'':<4}{label}: {100 * g['fewer_reads']:.0f} % fewer L2 reads, {100 * g['more_cycles']:+.1f} % "
                         f"cycles; at 700 W the clock {' / '.join(f'{100 * v:+.1f}' for v in g['clock_gain'])} %, "
                         f"the rate {' / '.join(f'{100 * v:+.1f}' for v in g['rate_gain'])} %")
    return "\n".join(lines)


#: what tools/device_tensor_cores_power_rounds.sh runs in rounds beside cuBLAS, as the chapter names them
POWER_ROUNDS = {"clusters of 2, early release": "tc_v6w_tf32_256x128_s4_cluster2_producer_persistent_staged_early_mmafirst",
                "the same, snake": "tc_v6w_tf32_256x128_s4_cluster2_producer_persistent_staged_early_mmafirst_snake",
                "alone": "tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst",
                "alone, snake": "tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst_snake",
                "MMAs alone": "mma:a4b8_rand", "cuBLAS TF32 on B^T": "cublas:tf32:bt"}


def _span(values, fmt: str = ".0f") -> str:
    """The range of ``values`` as the chapter's tables print it: "lo-hi", or one number when they agree."""
    lo, hi = min(values), max(values)
    return format(lo, fmt) if lo == hi else f"{lo:{fmt}}-{hi:{fmt}}"


def _of_cublas(label: str, row: dict) -> str:
    """A _rounds_of row's rate as the tables print it: "median % (low-high)" of cuBLAS's, or cuBLAS's own TFLOP/s."""
    if label == "cuBLAS TF32 on B^T":
        return f"{_span(row['tflops'], '.1f')} TFLOP/s"
    return f"{100 * row['median']:.1f} % ({100 * row['low']:.1f}-{100 * row['high']:.1f})"


def _ncu_by_label(ncu: dict, kernels: dict, keys) -> dict:
    """Nsight Compute's ``keys`` for each label of ``kernels`` that was profiled; cuBLAS (``cublas:...``) under the name of
    the kernel it ran (``sm90_xmma_...``)."""
    out = {}
    for label, name in kernels.items():
        kernel = name if name in ncu else next((k for k in ncu if name.startswith("cublas") and "xmma" in k), None)
        if kernel:
            out[label] = {k: ncu[kernel][k] for k in keys}
    return out


def _rounds_of(run: dict, kernels: dict = POWER_ROUNDS) -> dict:
    """One tensor_cores_power.py --rounds run: per label of ``kernels`` it ran, _power_columns' lists over its
    rounds (``vs_cublas``: each round's rate over cuBLAS's of the same round) with the median, ``low`` and ``high`` of
    that ratio, both temperatures' lists (``gpu_temp_c``, ``memory_temp_c``) and ``limiters``: each clock-event reason
    named in at least half of a run's samples, with the number of rounds it held in."""
    import statistics

    rounds = sorted({r["round"] for r in run["rows"]})
    by_round = [{r["name"]: r for r in run["rows"] if r["round"] == k} for k in rounds]
    rows = {}
    for label, name in kernels.items():
        if name not in by_round[0]:
            continue
        columns = _power_columns(by_round, name, kernels["cuBLAS TF32 on B^T"])
        limiters: dict = {}
        for rnd in by_round:
            for reason in rnd[name]["limiters"]:
                limiters[reason] = limiters.get(reason, 0) + 1
        temperatures = {k: [rnd[name][k] for rnd in by_round] for k in ("gpu_temp_c", "memory_temp_c")}
        rows[label] = {"kernel": name, **columns, **temperatures,
                       "median": statistics.median(columns["vs_cublas"]), "low": min(columns["vs_cublas"]),
                       "high": max(columns["vs_cublas"]), "limiters": limiters}
    return {"device": run["device"], "date": run["date"], "rounds": len(rounds), "rows": rows}


def tf32_power_rounds(entry: dict | None = None) -> dict:
    """The best kernels at the power limit in rounds (``bash tools/device_tensor_cores_power_rounds.sh``): each of
    POWER_ROUNDS back to back for 3 s, the list again and again, every other time reversed, on each board recorded
    (``runs``: _rounds_of each); and ``snake``: Nsight Compute's figures (clocks unlocked, median of 4 launches: DRAM
    bytes read, L2 read sectors, cycles, tensor-pipe use) of the kernels with and without SNAKE's order."""
    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    w = entry.get("power_rounds")
    if not w:
        raise KeyError("no power rounds recorded: run bash tools/device_tensor_cores_power_rounds.sh, then "
                       "python tools/store_tensor_cores_tf32.py")
    snake = _ncu_by_label(w["ncu"], POWER_ROUNDS, ("dram_read_mb", "l2_read_sectors", "cycles", "tensor_pipe_pct"))
    return {"command": w["command"], "runs": [_rounds_of(run) for run in w["runs"]], "snake": snake}


def tf32_power_rounds_summary(entry: dict | None = None) -> str:
    """tf32_power_rounds as the chapter prints it: per board, each kernel's ratio to cuBLAS over the rounds (median,
    lowest, highest), the ranges of clock, power and temperature and what held the clock down; then the snake
    order's bytes and cycles under the profiler."""
    w = tf32_power_rounds(entry)
    lines = [f"Each back to back for 3 s, in rounds, every other one reversed ({w['command']}); of cuBLAS: each round's "
             "rate over cuBLAS's in the same round."]
    for run in w["runs"]:
        lines += [f"{run['device']}, {run['date']}, {run['rounds']} rounds:",
                  f"{'':<30}{'of cuBLAS: median (low-high)':>30}{'clock (MHz)':>14}{'power (W)':>12}"
                  f"{'GPU/memory (C)':>16}  held down by"]
        for label, r in run["rows"].items():
            ratio = _of_cublas(label, r)
            held = ", ".join(f"{reason} ({n} of {run['rounds']})" for reason, n in r["limiters"].items()) or "nothing named"
            lines.append(f"{label:<30}{ratio:>30}{_span(r['sm_clock_mhz']):>14}{_span(r['power_w']):>12}"
                         f"{_span(r['gpu_temp_c']) + ' / ' + _span(r['memory_temp_c']):>16}  {held}")
    lines.append("Under Nsight Compute (clocks unlocked, median of 4 launches; L2 cold at each launch):")
    lines.append(f"{'':<30}{'DRAM read (MB)':>16}{'L2 reads':>10}{'cycles':>9}{'tensor pipe':>13}")
    for label, p in w["snake"].items():
        lines.append(f"{label:<30}{p['dram_read_mb']:>16.0f}{p['l2_read_sectors'] / 1e6:>9.1f}M{p['cycles'] / 1e3:>8.0f}k"
                     f"{p['tensor_pipe_pct']:>11.1f} %")
    return "\n".join(lines)


#: what tools/device_tensor_cores_power_instructions.sh runs in rounds beside cuBLAS: the TF32 wgmma kernel (v7, B^T
#: given) and the best mma.sync kernels, as the chapter names them
POWER_INSTRUCTIONS = {"wgmma (v7, B^T given)": "tc_v7_wgmma_tf32_bt",
                      "mma.sync, clusters of 2": POWER_ROUNDS["clusters of 2, early release"],
                      "mma.sync, alone": POWER_ROUNDS["alone"], "MMAs alone": POWER_ROUNDS["MMAs alone"],
                      "cuBLAS TF32 on B^T": POWER_ROUNDS["cuBLAS TF32 on B^T"]}


def tf32_power_instructions(entry: dict | None = None) -> dict:
    """Which instruction spends the joules? The TF32 wgmma kernel beside the best mma.sync kernels, warps of nothing but
    MMAs and cuBLAS on B^T at the power limit in rounds (``bash tools/device_tensor_cores_power_instructions.sh``):
    ``run`` (_rounds_of over POWER_INSTRUCTIONS, with ``mj_median`` per row: the median of its rounds' millijoules
    for one GEMM) and ``ncu``: per label, Nsight Compute's DRAM bytes read, L2 read sectors and cycles (clocks
    unlocked, the median of 4 launches; cuBLAS's under its own kernel's name)."""
    import statistics

    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    w = entry.get("power_instructions")
    if not w:
        raise KeyError("no wgmma-against-mma.sync rounds recorded: run bash tools/device_tensor_cores_power_instructions.sh, "
                       "then python tools/store_tensor_cores_tf32.py")
    run = _rounds_of(w["run"], POWER_INSTRUCTIONS)
    for row in run["rows"].values():
        row["mj_median"] = statistics.median(row["mj"])
    return {"command": w["command"], "run": run,
            "ncu": _ncu_by_label(w["ncu"], POWER_INSTRUCTIONS, ("dram_read_mb", "l2_read_sectors", "cycles"))}


def tf32_power_instructions_summary(entry: dict | None = None) -> str:
    """tf32_power_instructions as the chapter prints it: per kernel its rate over cuBLAS's of the same round (median,
    lowest, highest), its clock and power, the median millijoules of one GEMM, and what Nsight Compute counted."""
    w = tf32_power_instructions(entry)
    run = w["run"]
    lines = [f"{run['device']}, {run['date']}, {run['rounds']} rounds, each kernel back to back for 3 s, every other "
             f"round reversed ({w['command']}); of cuBLAS: each round's rate over cuBLAS's in the same round; mJ: the "
             "board's energy for one 4096^3 GEMM (median of the rounds); DRAM, L2 reads, cycles: Nsight Compute, "
             "clocks unlocked, median of 4 launches.",
             f"{'':<26}{'of cuBLAS: median (low-high)':>30}{'clock (MHz)':>13}{'power (W)':>11}{'mJ':>6}"
             f"{'DRAM (MB)':>11}{'L2 reads':>10}{'cycles':>9}"]
    for label, r in run["rows"].items():
        ratio = _of_cublas(label, r)
        p = w["ncu"].get(label)
        profile = (f"{p['dram_read_mb']:>11.0f}{p['l2_read_sectors'] / 1e6:>9.1f}M{p['cycles'] / 1e3:>8.0f}k" if p else "")
        lines.append(f"{label:<26}{ratio:>30}{_span(r['sm_clock_mhz']):>13}{_span(r['power_w']):>11}{r['mj_median']:>6.0f}"
                     f"{profile}")
    return "\n".join(lines)


#: what tools/device_tensor_cores_tma_rounding.sh runs in rounds beside cuBLAS, as the chapter names them: the best
#: mma.sync kernels with FP32 tensor maps (the MMAs truncate the raw bits) and with TF32 maps (the _rn kernels: the TMA
#: rounds on the way into shared memory), the FP32-map pair and cuBLAS on inputs rounded to TF32 in memory
#: (``@rounded``), and warps of nothing but MMAs on random and on 10-bit mantissas
TMA_ROUNDING = {"cuBLAS TF32 on B^T": "cublas:tf32:bt",
                "cuBLAS, inputs rounded in memory": "cublas:tf32:bt@rounded",
                "clusters of 2, FP32 maps": POWER_ROUNDS["clusters of 2, early release"],
                "clusters of 2, TF32 maps": POWER_ROUNDS["clusters of 2, early release"] + "_rn",
                "clusters of 2, FP32 maps, inputs rounded in memory": POWER_ROUNDS["clusters of 2, early release"] + "@rounded",
                "alone, FP32 maps": POWER_ROUNDS["alone"], "alone, TF32 maps": POWER_ROUNDS["alone"] + "_rn",
                "MMAs alone, random mantissas": "mma:a4b8_rand", "MMAs alone, 10-bit mantissas": "mma:a4b8"}
#: the three ways to round a float32 to TF32 benchmarks/tensor_cores_tma_rounding.py compares each GEMM's reading with
TF32_ROUNDINGS = ("truncated", "nearest even", "nearest, ties away")


def tf32_tma_rounding(entry: dict | None = None) -> dict:
    """Does the TMA round? (``bash tools/device_tensor_cores_tma_rounding.sh``) ``rounding``: per GEMM label (cuBLAS, the
    kernels with either map), the fraction of C = A @ I equal to A rounded each way of TF32_ROUNDINGS, over all of A
    (``all``) and over its rows of ties (``ties``); ``accuracy``: per label the largest error against float64 in the
    course's unit (``relative_error``: kernels/tensor_cores.py) and the mean absolute error; ``run``: _rounds_of over
    TMA_ROUNDING at the power limit, with ``mj_median`` per row (millijoules of one GEMM, median of the rounds);
    ``ncu``: per kernel label, Nsight Compute's instructions, DRAM bytes, L2 read sectors and cycles (clocks unlocked,
    median of 4 launches)."""
    import statistics

    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    w = entry.get("tma_rounding")
    if not w:
        raise KeyError("no TF32 tensor-map measurements recorded: run bash tools/device_tensor_cores_tma_rounding.sh, "
                       "then python tools/store_tensor_cores_tf32.py")
    by_name = {name: label for label, name in TMA_ROUNDING.items()}
    run = _rounds_of(w["run"], TMA_ROUNDING)
    for row in run["rows"].values():
        row["mj_median"] = statistics.median(row["mj"])
    return {"command": w["command"], "run": run,
            "rounding": {by_name[k]: v for k, v in w["rounding"].items()},
            "accuracy": {by_name[k]: v for k, v in w["accuracy"].items()},
            "ncu": _ncu_by_label(w["ncu"], TMA_ROUNDING, ("instructions", "dram_read_mb", "l2_read_sectors", "cycles"))}


def tf32_tma_rounding_summary(entry: dict | None = None) -> str:
    """tf32_tma_rounding as the chapter prints it: what each GEMM read, how close it came to float64, then each run's
    rate over cuBLAS's of the same round, clock, power and millijoules, and the profiler's counts."""
    w = tf32_tma_rounding(entry)
    run = w["run"]
    lines = [f"{run['device']}, {run['date']} ({w['command']}).",
             "What the tensor cores read: C = A @ I (512^3), the share of C equal to A rounded to TF32 each way "
             "(all of A | its rows of exact ties):",
             f"{'':<26}" + "".join(f"{rule:>22}" for rule in TF32_ROUNDINGS) + f"{'error vs float64':>19}{'mean |error|':>14}"]
    for label, r in w["rounding"].items():
        a = w["accuracy"][label]
        lines.append(f"{label:<26}" + "".join(f"{100 * r[rule]['all']:>12.1f} | {100 * r[rule]['ties']:>5.1f} %"
                                              for rule in TF32_ROUNDINGS)
                     + f"{a['relative_error']:>19.2e}{a['mean_abs_error']:>14.4f}")
    lines += [f"At the power limit: {run['rounds']} rounds, each back to back for 3 s, every other round reversed; of "
              "cuBLAS: each round's rate over cuBLAS's (raw inputs) in the same round; mJ: the board's energy for one "
              "4096^3 GEMM's FLOPs (median of the rounds):",
              f"{'':<52}{'of cuBLAS: median (low-high)':>30}{'clock (MHz)':>13}{'power (W)':>11}{'mJ':>6}"]
    for label, r in run["rows"].items():
        ratio = _of_cublas(label, r)
        lines.append(f"{label:<52}{ratio:>30}{_span(r['sm_clock_mhz']):>13}{_span(r['power_w']):>11}"
                     f"{r['mj_median']:>6.0f}")
    lines.append("Under Nsight Compute (clocks unlocked, median of 4 launches):")
    lines.append(f"{'':<52}{'instructions':>13}{'DRAM read (MB)':>16}{'L2 reads':>10}{'cycles':>9}")
    for label, p in w["ncu"].items():
        lines.append(f"{label:<52}{p['instructions'] / 1e6:>12.1f}M{p['dram_read_mb']:>16.0f}"
                     f"{p['l2_read_sectors'] / 1e6:>9.1f}M{p['cycles'] / 1e3:>8.0f}k")
    return "\n".join(lines)


#: benchmarks/tensor_cores_tf32_feed.py's variants of the best kernel (``--designs best``), as the chapter names them
POWER_PARTS = {"the kernel": "all", "no store of C": "no_store", "no tiles (ldmatrix, MMAs)": "no_data",
               "no tiles, no ldmatrix (MMAs)": "no_data_ldsm", "tiles only (no MMAs)": "data_only",
               "on 4 whole waves": "full_waves"}
#: benchmarks/mma_operands.py's warps of nothing but MMAs (a 64 x 64 warp's fragments, two warps a scheduler)
POWER_MMA = {"MMAs alone, random mantissas": "mma:a4b8_rand", "MMAs alone, 10-bit mantissas": "mma:a4b8"}


def _power_columns(runs: list, name: str, reference: str) -> dict:
    """Kernel ``name``'s figures in each of ``runs`` (dicts of tensor_cores_power.back_to_back rows by name): one list
    per figure, ``vs_cublas`` (its rate over ``reference``'s of the same run) and ``mj`` (the board's energy for the
    FLOPs of one 4096^3 GEMM at that rate and power, in millijoules)."""
    out = {k: [run[name][k] for run in runs] for k in ("tflops", "ms", "sm_clock_mhz", "power_w", "power_limit_w")}
    return {**out, "vs_cublas": [run[name]["tflops"] / run[reference]["tflops"] for run in runs],
            "mj": [w * 2 * 4096 ** 3 / (t * 1e9) for w, t in zip(out["power_w"], out["tflops"])]}


def tf32_power_parts(entry: dict | None = None) -> dict:
    """Where does the power go? The best kernel with parts of its work switched off (POWER_PARTS) and warps of nothing
    but MMAs (POWER_MMA), each back to back for 3 s, twice in opposite orders (``bash
    tools/device_tensor_cores_power_parts.sh``): per row _power_columns' lists over cuBLAS TF32 on B^T and, for the
    kernel's variants, ``cycles`` and ``tensor_pipe_pct`` (Nsight Compute, clocks unlocked, the median of its
    launches)."""
    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    w = entry.get("power_parts")
    if not w:
        raise KeyError("no power measurements of the kernel's parts recorded: run bash "
                       "tools/device_tensor_cores_power_parts.sh, then python tools/store_tensor_cores_tf32.py")
    prefix = next(iter(w["parts"]["designs"]))
    parts = [{r["name"]: r for r in run} for run in w["parts"]["power_runs"]]
    rows = {}
    for label, variant in POWER_PARTS.items():
        name = f"{prefix}_{variant}"
        p = w["ncu"].get(name, {})
        rows[label] = {"kernel": name, **_power_columns(parts, name, "cublas_bt"),
                       "cycles": p.get("cycles"), "tensor_pipe_pct": p.get("tensor_pipe_pct")}
    rows["cuBLAS TF32 on B^T"] = {"kernel": "cublas_bt", **_power_columns(parts, "cublas_bt", "cublas_bt"),
                                  "cycles": None, "tensor_pipe_pct": None}
    mma_runs = [{r["name"]: r for r in run["rows"]} for run in w["mma"]]
    mma = {}
    for label, name in {**POWER_MMA, "the course's kernel": None, "cuBLAS TF32 on B^T": "cublas:tf32:bt"}.items():
        name = name or next(n for n in mma_runs[0] if n.startswith("tc_"))
        mma[label] = {"kernel": name, **_power_columns(mma_runs, name, "cublas:tf32:bt")}
    return {"device": w["parts"]["device"], "date": w["parts"]["date"], "command": w["command"],
            "kernel": w["parts"]["designs"][prefix], "rows": rows, "mma": mma}


def tf32_power_parts_summary(entry: dict | None = None) -> str:
    """tf32_power_parts as the chapter prints it: the kernel's variants, then MMAs alone; each run's figures."""
    w = tf32_power_parts(entry)

    def both(values, fmt):
        return " / ".join(format(v, fmt) for v in values)

    def line(label, r, cycles=True):
        rate = (f"{both(r['tflops'], '.1f'):>15}{both([100 * v for v in r['vs_cublas']], '.1f'):>14} %"
                if label != "tiles only (no MMAs)" else f"{'(in ' + both(r['ms'], '.3f') + ' ms)':>30}")
        profile = (f"{r['cycles'] / 1e3:>8.0f}k{r['tensor_pipe_pct']:>7.1f} %" if cycles and r.get("cycles") else "")
        return (f"{label:<32}{rate}{both(r['sm_clock_mhz'], '.0f'):>14}{both(r['power_w'], '.0f'):>12}"
                f"{both(r['mj'], '.0f'):>12}{profile}")

    head = f"{'':<32}{'TFLOP/s':>15}{'of cuBLAS':>16}{'clock (MHz)':>14}{'power (W)':>12}{'mJ a GEMM':>12}"
    lines = [f"{w['device']}, {w['date']} ({w['command']}); each back to back for 3 s, twice in opposite orders; "
             f"the board's limit {w['rows']['the kernel']['power_limit_w'][0]:.0f} W.",
             f"The best kernel ({w['kernel']}) with parts switched off (TFLOP/s of the GEMM each stands for; mJ: "
             "the board's energy for a 4096^3 GEMM's FLOPs at that rate and power; cycles and tensor pipe: Nsight "
             "Compute, clocks unlocked):", head + f"{'cycles':>9}{'pipe':>9}"]
    lines += [line(label, r) for label, r in w["rows"].items()]
    lines += ["Warps of nothing but MMAs (benchmarks/mma_operands.py: a 64 x 64 warp's fragments, two warps a scheduler), "
              "in a run of their own:", head]
    lines += [line(label, r, cycles=False) for label, r in w["mma"].items()]
    return "\n".join(lines)


def tf32_stream_k(entry: dict | None = None) -> dict:
    """Stream-K against the persistent kernel: ``quantization`` (wave_quantization of the sweep's
    shape in the persistent kernel's tiles, over the blocks its profile ran: one an SM) and ``rows``,
    one per kernel of STREAM_K_KERNELS: its
    Nsight Compute profile (``duration_us``, ``dram_read_mb``, ``l2_hit_pct``, ``tensor_pipe_pct``,
    clocks unlocked) and its sweep row (``tflops``, ``vs_cublas``)."""
    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    sweep = {r["kernel"]: r for r in entry["rows"] if r.get("kernel") and "transpose" not in r["name"]}
    rows = []
    for kernel, label in STREAM_K_KERNELS.items():
        p = entry.get("stream_k", {}).get(kernel)
        if p is None or kernel not in sweep:
            raise KeyError(f"no stream-K profile or sweep row of {kernel} in the recorded entry")
        rows.append({"kernel": kernel, "label": label, **{k: p[k] for k in ("duration_us", "dram_read_mb", "l2_hit_pct",
                                                                         "tensor_pipe_pct", "clock_ghz")},
                     "tflops": sweep[kernel]["tflops"], "vs_cublas": sweep[kernel]["vs_cublas"]})
    m, n, _ = entry["shape"]
    persistent = next(iter(STREAM_K_KERNELS))
    bm, bn = T.find(persistent).tile
    quantization = {**wave_quantization(m, n, bm, bn, entry["stream_k"][persistent]["grid"][0]), "tile": (bm, bn)}
    sampled = entry.get("stream_k_sampled", {})
    base, sk = (sampled.get(k) for k in list(STREAM_K_KERNELS)[:2])
    return {"device": entry["device"], "date": entry["date"], "quantization": quantization,
            "rows": rows,
            # stall samples per instruction (ncu's source page): stream-K's against the persistent kernel's,
            # and the share of stream-K's at its fix-up's additions (FADD: only the fix-up adds in FP32)
            "samples_ratio": sk["samples"] / base["samples"] if base and sk else None,
            "fix_up_add_share": sk["opcodes"].get("FADD", 0.0) if sk else None}


def tf32_stream_k_summary(entry: dict | None = None) -> str:
    """tf32_stream_k as the chapter prints it."""
    w = tf32_stream_k(entry)
    q = w["quantization"]
    lines = [f"{q['tiles']} tiles of {q['tile'][0]} x {q['tile'][1]} on {q['sms']} SMs: {q['waves']:.2f} waves in "
             f"{q['rounds']} rounds, the last "
             f"{100 * q['last_fill']:.0f} % full; a perfect split would save {100 * q['ideal_saving']:.1f} % of the time.",
             f"Nsight Compute, clocks unlocked, one launch each ({w['device']}, {w['date']}); the sweep's TFLOP/s:"]
    for r in w["rows"]:
        lines.append(f"- {r['label']:<42} {r['duration_us']:4.0f} us  DRAM read {r['dram_read_mb']:4.0f} MB  "
                     f"L2 hits {r['l2_hit_pct']:3.0f} %  tensor pipe {r['tensor_pipe_pct']:3.0f} %  | "
                     f"{r['tflops']:5.1f} TFLOP/s, {100 * r['vs_cublas']:.1f} % of cuBLAS")
    if w["samples_ratio"] is not None:
        lines.append(f"Stall samples per instruction: stream-K {w['samples_ratio']:.2f}x the persistent kernel's; "
                     f"{100 * w['fix_up_add_share']:.1f} % of them at the fix-up's additions, waiting for partial sums from L2.")
    return "\n".join(lines)


def tf32_shared_memory(entry: dict | None = None) -> list:
    """How busy shared memory is in the TF32 kernels and cuBLAS (Nsight Compute, clocks unlocked), one
    dict a kernel: ``kernel``, ``tensor_pipe_pct``, ``bank_reads_pct`` / ``bank_writes_pct`` (the SM's
    shared-memory banks: ldmatrix's reads; the TMA's or cp.async's writes), ``shared_lsu_pct`` (the
    load/store unit's shared-memory wavefronts), each against its peak over the whole run."""
    from . import backend

    entry = entry or backend.recorded("tensor_cores_tf32")
    if not entry.get("shared_memory"):
        raise KeyError("no shared-memory profile in the recorded entry (tools/device_tensor_cores_ncu.sh smem)")
    keys = ("tensor_pipe_pct", "bank_reads_pct", "bank_writes_pct", "shared_lsu_pct", "duration_us")
    return [{"kernel": k, **{x: p[x] for x in keys}} for k, p in entry["shared_memory"].items()]


def tf32_shared_memory_summary(entry: dict | None = None) -> str:
    """tf32_shared_memory as the chapter prints it (cuBLAS's long kernel name cut to its first words)."""
    lines = [f"{'kernel':<42} {'tensor pipe':>11} {'bank reads':>10} {'bank writes':>11} {'LSU shared':>10}"]
    for r in tf32_shared_memory(entry):
        name = r["kernel"] if len(r["kernel"]) <= 42 else r["kernel"][:39] + "..."
        lines.append(f"{name:<42} {r['tensor_pipe_pct']:9.0f} % {r['bank_reads_pct']:8.0f} % {r['bank_writes_pct']:9.0f} % "
                     f"{r['shared_lsu_pct']:8.0f} %")
    return "\n".join(lines)


def stage_figures(res: dict) -> dict:
    """stages -> TFLOP/s of v6 FP16 at the chapter's tile (128x256x32) with 2, 3 and 4 stages."""
    out = {}
    for r in res["rows"]:
        if r["precision"] == "fp16" and r.get("kernel", "").startswith("tc_v6_pipeline_f16"):
            stages = next(c.stages for c in T.V6_CONFIGS if c.kernel == r["kernel"])
            out[stages] = r["tflops"]
    return dict(sorted(out.items()))


def numba_row(res: dict, precision: str = "fp16") -> dict:
    return _row(res, f"numba + linked CUDA C mma.sync {precision.upper()}")


def tile_flops_per_byte(bm: int, bn: int, bk: int, precision: str) -> float:
    """FLOPs per byte of one k-step of a bm x bn block tile: 2 bm bn bk FLOPs for the
    (bm + bn) bk input elements it brings into shared memory."""
    return 2 * bm * bn * bk / ((bm + bn) * bk * T.INPUT_BYTES[precision])


# ------------------------------------------------------------------------------------------
# ldmatrix phases: 8 lanes, one 16-byte row address each (kernels/tensor_cores_smem.cu)
# ------------------------------------------------------------------------------------------
#: operand -> (16-byte chunks per shared row, swizzle kind of tensor_cores_smem.cu, what it is)
LDMATRIX_CASES = {
    "TF32 A": (8, 1, "A tile of 128 x 32 floats: rows of 128 bytes, 8 chunks; swizzle chunk ^ (row & 7)"),
    "FP16 A": (4, 2, "A tile of 128 x 32 halves: rows of 64 bytes, 4 chunks; swizzle chunk ^ ((row >> 1) & 3)"),
    "FP16 B": (32, 1, "B tile of 32 x 256 halves: rows of 512 bytes, 32 chunks; swizzle chunk ^ (k & 7)"),
}


def _swizzle_of(kind: int):
    if kind == 0:
        return lambda row, chunk: chunk
    if kind == 1:                       # tensor_cores.py swizzle_a for >= 8 chunks == swizzle_b (16-bit)
        return lambda row, chunk: T.swizzle_b(row, chunk, False)
    return lambda row, chunk: T.swizzle_a(row, chunk, 4)


def phase_offsets(row_chunks: int, swizzle=None, chunk: int = 0) -> np.ndarray:
    """Byte offsets of the 8 row addresses of one ldmatrix phase: lane l reads chunk ``chunk`` of
    row l, stored at ``swizzle(row, chunk)`` (None: unswizzled) in rows of ``row_chunks`` chunks."""
    swizzle = swizzle or (lambda row, c: c)
    return np.array([(row * row_chunks + int(swizzle(row, chunk))) * 16 for row in range(8)], np.int64)


def phase_wavefronts(offsets) -> int:
    """Wavefronts of one shared request of 16-byte loads at ``offsets``, counted by the course's
    bank model (:func:`simtlab.analysis.bank_conflicts.wavefront_counts`)."""
    from .analysis.bank_conflicts import wavefront_counts

    offsets = np.asarray(offsets, np.int64)
    zeros = np.zeros(len(offsets), np.int64)
    wavefronts, _ = wavefront_counts(zeros, zeros, zeros, offsets, np.full(len(offsets), 16, np.int64))
    return int(wavefronts[0])


def model_wavefronts(case: str, swizzled: bool) -> int:
    row_chunks, kind, _ = LDMATRIX_CASES[case]
    return phase_wavefronts(phase_offsets(row_chunks, _swizzle_of(kind) if swizzled else None))


SMEM_CU = T.CU_PATH.with_name("tensor_cores_smem.cu")


def trace_ldmatrix_phase(case: str, swizzled: bool, chunk: int = 0):
    """``(run, out)``: tensor_cores_smem.cu's ``ldmatrix_rows`` traced on the PTX engine for one
    of :data:`LDMATRIX_CASES` (needs NVRTC, the cuda-c extra)."""
    from . import cuda_c, emulate

    row_chunks, kind, _ = LDMATRIX_CASES[case]
    out = np.zeros(32, np.float32)
    run = emulate(cuda_c(SMEM_CU, "ldmatrix_rows"), 1, 32, out, np.int32(row_chunks),
                  np.int32(kind if swizzled else 0), np.int32(chunk))
    return run, out


def phase_request(run) -> dict:
    """The traced phase's shared read: its line, wavefronts and lanes."""
    from .analysis.bank_conflicts import requests

    req = requests(run.memory_columns)
    reads = req[req.kind == 0]
    return {"line": int(reads.line[0]), "wavefronts": int(reads.wavefronts[0]), "lanes": int(reads.lanes[0])}


# ------------------------------------------------------------------------------------------
# the cp.async ring (kernels/tensor_cores_smem.cu: pipeline_stagesN)
# ------------------------------------------------------------------------------------------
TILE_FLOATS = 128                     # one tile: 32 float4


def trace_pipeline(stages: int, tiles: int = 6):
    """``(run, out, tiles_array)``: ``pipeline_stages<stages>`` traced on the PTX engine, one block of 32."""
    from . import cuda_c, emulate

    data = np.arange(tiles * TILE_FLOATS, dtype=np.float32) % 7
    out = np.zeros(32, np.float32)
    run = emulate(cuda_c(SMEM_CU, f"pipeline_stages{stages}"), 1, 32, data, out, np.int32(tiles))
    return run, out, data


def pipeline_reference(data: np.ndarray, tiles: int) -> np.ndarray:
    """What ``pipeline_stagesN`` computes: out[t] = sum over tiles of float4 (t + 1) % 32, in float32."""
    quads = data.reshape(tiles, 32, 4)
    acc = np.zeros(32, np.float32)
    for k in range(tiles):
        v = quads[k, (np.arange(32) + 1) % 32]
        acc = acc + ((v[:, 0] + v[:, 1]) + (v[:, 2] + v[:, 3]))
    return acc


def pipeline_events(run, thread: int = 0) -> list:
    """One thread's trace read as the ring's events, in the order they happened:
    ``("issue", tile, slot)`` a cp.async read its tile from global memory, ``("land", tile, slot)``
    its bytes were written into shared memory (at a wait_group), ``("compute", tile, slot)`` the
    thread read the tile from its slot. A slot is 512 bytes of the ring."""
    mem = run.memory_columns
    mine = mem[(mem.block == 0) & (mem.thread == thread)]
    tiles_id = run.array("tiles").id
    slot_bytes = 32 * 16
    events, in_flight, computed = [], [], 0
    for space, kind, array, index, address in zip(mine.space, mine.kind, mine.array, mine.index, mine.address):
        if space == 0 and kind == 0 and array == tiles_id:
            in_flight.append(int(index) // TILE_FLOATS)
            events.append(("issue", in_flight[-1], None))
        elif space == 1 and kind == 1:
            tile = in_flight.pop(0)                    # copies land in the order they were issued
            events.append(("land", tile, int(address) // slot_bytes))
        elif space == 1 and kind == 0:
            events.append(("compute", computed, int(address) // slot_bytes))
            computed += 1
    slot_of = {tile: slot for what, tile, slot in events if what == "land"}
    return [(what, tile, slot_of.get(tile) if slot is None else slot) for what, tile, slot in events]


def pipeline_schedule(stages: int, tiles: int) -> list:
    """The same events from the loop's formulas: tiles 0..S-2 issued first; then for each tile t:
    wait_group S-2 lands tile t, tile t+S-1 is issued into slot (t+S-1) % S, tile t is computed
    from slot t % S."""
    events = [("issue", s, s % stages) for s in range(min(stages - 1, tiles))]
    for t in range(tiles):
        events.append(("land", t, t % stages))
        if t + stages - 1 < tiles:
            events.append(("issue", t + stages - 1, (t + stages - 1) % stages))
        events.append(("compute", t, t % stages))
    return events


# ------------------------------------------------------------------------------------------
# numerics: the same inputs in FP32, TF32, FP16, BF16 against FP64
# ------------------------------------------------------------------------------------------
def numerics_errors(ks=(64, 256, 1024, 4096), m: int = 32, n: int = 32, seed: int = 0) -> dict:
    """precision -> list of (median, max) errors relative to sum |a||b| for each K, against the
    float64 product of the same float32 inputs. Each precision rounds the inputs (TF32 as
    mma.sync does: truncated to 10 mantissa bits; FP16 and BF16 to nearest even) and
    multiplies in float32, as a tensor core accumulating in FP32 does (the products are exact
    in FP32; only the order of the additions differs from the GPU's)."""
    rng = np.random.default_rng(seed)
    out = {p: [] for p in ("fp32", "tf32", "fp16", "bf16")}
    for k in ks:
        a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        exact = a.astype(np.float64) @ b.astype(np.float64)
        scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
        for p in out:
            if p == "fp32":
                ra, rb = a, b
            else:
                mode = {"tf32": {"tf32": "truncate"}}.get(p, {})
                ra = T.round_to(a, p, **mode).astype(np.float32)
                rb = T.round_to(b, p, **mode).astype(np.float32)
            c = (ra @ rb).astype(np.float64)
            err = np.abs(c - exact) / scale
            out[p].append((float(np.median(err)), float(err.max())))
    return {"k": list(ks), "errors": out}


def tf32_defaults() -> dict:
    """PyTorch's TF32 switches (documented defaults since 1.12): matmul off, cuDNN on."""
    return {"torch.backends.cuda.matmul.allow_tf32": False, "torch.backends.cudnn.allow_tf32": True}


def load_bench(path: Path | str = BENCH_JSON) -> dict:
    return json.loads(Path(path).read_text())


def version_table_text(res: dict) -> str:
    """:func:`version_table` as plain text: TFLOP/s and % of cuBLAS per precision, then what
    each version changes; the card, date and command under it."""
    cublas = cublas_tflops(res)
    rows = version_table(res)
    w = max(24, *(len(r["version"]) + 2 for r in rows))
    head = f"{'version':<{w}}" + "".join(f"{p.upper() + ' TFLOP/s (% cuBLAS)':>26}" for p in T.PRECISIONS)
    lines = [head, f"{'cuBLAS, same precision':<{w}}" + "".join(f"{cublas[p]:>26.1f}" for p in T.PRECISIONS)]
    for row in rows:
        cells = "".join(f"{'-':>26}" if row[p] is None else f"{row[p][0]:>17.1f} ({row[p][1]:6.1%})"
                        for p in T.PRECISIONS)
        lines.append(f"{row['version']:<{w}}{cells}")
    lines.append("")
    lines += [f"{row['version']:<{w}}{row['changes']}" for row in rows]
    lines.append("")
    lines += [f"best v6 {p.upper()}: {b['note']}" for p, b in res["best"].items()]
    m, n, k = res["shape"]
    lines.append(f"{res['source']} on {res['device']}, {res['date']}, {m}x{n}x{k}, FP32 C; command: {res['command']}")
    if res.get("top_run"):
        top = res["top_run"]
        lines.append(f"v7 TF32 and v8 rows: a second run on {top['device']}, {top['date']}, each against its own "
                     f"run's cuBLAS; command: {top['command']}")
    return "\n".join(lines)
