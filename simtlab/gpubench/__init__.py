"""Kernel versions against the best library, on the GPU: measured here, or recorded on an H100.

    results("reduction")        # live on a GPU, else the figures recorded in data/h100_timings.json
    plot_bandwidth(results("reduction"))
    plot_sweep(results("reduction"))
    runner("reduction", "v6 grid-stride, second pass", "cuda-c", x)   # (run, out) of one version

The recorded figures live in the one store of GPU figures, ``simtlab/data/h100_timings.json``
(key ``topics``), written by ``python benchmarks/gpu_bandwidth.py`` (see its docstring).
Each topic's versions are the table ``kernels/<topic>.py: VERSIONS``; ``simtlab/gpubench/<topic>.py``
adds its inputs, its check and the library reference.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path

from ..backend import TIMINGS_PATH
from .harness import CHECK_N, DEFAULT_N, SWEEP_SIZES, Case, run_topic, stamp, time_launches

__all__ = ["TOPICS", "Case", "results", "recorded", "measure", "plot_bandwidth", "plot_sweep",
           "summary_table", "RESULTS_PATH", "DEFAULT_N", "SWEEP_SIZES", "CHECK_N", "time_launches",
           "run_topic", "topic_module", "runner", "sizes", "stored", "store"]

#: topics in chapter order; each has a module simtlab/gpubench/<topic>.py
TOPICS = ("patterns", "scan", "reduction", "gemm")
#: the one store of recorded GPU figures (chapter measurements under ``results``, topics under ``topics``)
RESULTS_PATH = TIMINGS_PATH


def _known(topic: str) -> None:
    if topic not in TOPICS:
        raise ValueError(f"unknown topic {topic!r}: the benchmarked topics are {', '.join(TOPICS)}")


def topic_module(topic: str):
    _known(topic)
    return importlib.import_module(f"{__name__}.{topic}")


def _load(path: Path | str = RESULTS_PATH) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return {"topics": {}}


def stored(topic: str, path: Path | str = RESULTS_PATH) -> dict | None:
    """A topic's raw entry in the one store of recorded GPU figures (None if not recorded).
    Chapters 7 and 8 keep their own shapes of results (per layer, per batch) under their topic."""
    return _load(path).get("topics", {}).get(topic)


def store(topic: str, entry: dict, path: Path | str = RESULTS_PATH) -> None:
    """Write ``entry`` as ``topic``'s figures into the store, keeping every other topic."""
    data = _load(path)
    data.setdefault("topics", {})[topic] = entry
    Path(path).write_text(json.dumps(data, indent=1) + "\n")


def recorded(topic: str, path: Path | str = RESULTS_PATH) -> dict:
    """What the benchmark recorded for ``topic`` (``source``: 'recorded', or 'none' if nothing)."""
    _known(topic)
    data = _load(path)
    entry = data.get("topics", {}).get(topic)
    if entry is None:
        return {"source": "none", "topic": topic,
                "message": f"No GPU timings recorded for {topic!r} yet: run benchmarks/gpu_bandwidth.py on a GPU."}
    return {**entry, "source": "recorded", "topic": topic, "device": entry.get("device", data.get("device")),
            "date": entry.get("date", data.get("date")), "versions": entry.get("versions", data.get("versions"))}


def runner(topic: str, label: str, impl: str, *inputs, **options):
    """``(run, out)``: ``run()`` enqueues one whole run of version ``label`` of ``topic`` in
    ``impl`` ("numba" or "cuda-c") on CuPy ``inputs``, with the launch plan of its table."""
    from .harness import runner as _runner

    return _runner(topic_module(topic), label, impl, *inputs, **options)


def sizes(topic: str) -> dict:
    """A topic's benchmark sizes: ``n``, ``check_n``, ``sweep`` (chapters 3-5: element counts;
    gemm: the side of the matrices). A topic module overrides the defaults with ``DEFAULT_N``,
    ``CHECK_N`` and ``SWEEP_SIZES``."""
    module = topic_module(topic)
    return {"n": getattr(module, "DEFAULT_N", DEFAULT_N), "check_n": getattr(module, "CHECK_N", CHECK_N),
            "sweep": getattr(module, "SWEEP_SIZES", SWEEP_SIZES)}


def measure(topic: str, *, n: int | None = None, sweep=None, log=print) -> dict:
    """Check and time every version of ``topic`` on this GPU now (``n``: the topic's default)."""
    size = sizes(topic)
    n = size["n"] if n is None else n
    log(f"Timing every {topic} version at n = {n:,} on this GPU ...")
    out = run_topic(topic_module(topic), n=n, sweep=sweep, check_n=size["check_n"], log=log)
    return {**out, **stamp(), "source": "measured", "topic": topic}


def results(topic: str, *, live: bool | None = None, n: int | None = None, log=print) -> dict:
    """Live measurements on a GPU (``live=None``: when one is usable), else the recorded ones.

    Recorded results also carry the size sweep; live ones skip it to stay quick.
    """
    from .. import backend

    if live is None:
        live = backend.gpu_available()
    if live:
        return measure(topic, n=n, log=log)
    res = recorded(topic)
    if res["source"] == "recorded":
        log(f"No GPU here: showing {topic} timings recorded on {res.get('device')} on {res.get('date')}.")
    else:
        log(res["message"])
    return res


def summary_table(res: dict) -> str:
    """The results as a plain-text table: version, ms, GB/s, TFLOP/s (where the table gives
    FLOPs), ratio to the reference."""
    if res.get("source") == "none":
        return res["message"]
    ref = next(r["name"] for r in res["rows"] if r["reference"])
    flops = any("tflops" in r for r in res["rows"])
    lines = [f"{'version':<48} {'ms':>9} {'GB/s':>8}" + (f" {'TFLOP/s':>8}" if flops else "")
             + f" {'vs ' + ref[:20]:>24}"]
    for r in res["rows"]:
        tf = (f" {r['tflops']:8.3f}" if "tflops" in r else f" {'':>8}") if flops else ""
        lines.append(f"{r['name']:<48} {r['median_ms']:9.3f} {r['gbps']:8.1f}{tf} {r['ratio']:23.0%}")
    for e in res.get("errors") or []:
        lines.append(f"{e['name']:<48} FAILED: {e['error']}")
    return "\n".join(lines)


def plot_bandwidth(res: dict):
    from .plots import plot_bandwidth as _plot

    return _plot(res)


def plot_sweep(res: dict):
    from .plots import plot_sweep as _plot

    return _plot(res)
