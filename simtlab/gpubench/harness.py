"""Time every version of a topic's kernels against the library reference, in one run.

A topic module (``simtlab/gpubench/<topic>.py``) lists its versions as :class:`Case` objects.
:func:`run_topic` checks each version's output once, then times it with CUDA events: warm-up
launches first (compilation, module load), then batches of launches between two events, long
enough that the launch overhead of the host hides behind the GPU's work; the median batch gives
the time per run. Bandwidth is the version's napkin-math bytes over that time, and the ratio is
taken against the reference case timed in the same run.
"""

from __future__ import annotations

import datetime
import gc
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable

__all__ = ["Case", "nonzero_random", "time_launches", "run_topic", "DEFAULT_N", "SWEEP_SIZES", "CHECK_N"]

#: the size every version is compared at: 2^28 float32 elements (1 GiB)
DEFAULT_N = 2**28
#: the size sweep (elements): small sizes fit in the 50 MB L2 cache, large ones do not
SWEEP_SIZES = tuple(2**k for k in range(16, 29, 2))
#: the size each version's output is checked at before it is timed: odd, not a power of two
CHECK_N = 1_000_003


@dataclass(frozen=True)
class Case:
    """One version of a kernel, ready to be timed.

    ``prepare(n)`` allocates random inputs for ``n`` float32 elements on the GPU, compiles,
    and returns a function that enqueues one full run of the version (every kernel it needs)
    without synchronising. ``bytes_moved(n)`` is the napkin math: the fewest bytes the
    version has to move through device memory. ``check(n)`` runs the version at size ``n``
    and compares it with the CPU reference (AssertionError when wrong).
    """

    name: str
    impl: str                                   # "numba", "cuda-c" or "library"
    prepare: Callable[[int], Callable[[], object]]
    bytes_moved: Callable[[int], int]
    check: Callable[[int], None] | None = None
    reference: bool = False
    flops: Callable[[int], int] | None = None


def nonzero_random(shape, seed: int = 0):
    """Random float32 in [0.5, 1.5) on the GPU (CuPy): never zero, so an output element a
    kernel skipped or never wrote shows in the check."""
    import cupy

    return cupy.random.default_rng(seed).random(shape, dtype=cupy.float32) + cupy.float32(0.5)


def time_launches(run: Callable[[], object], *, warmup: int = 3, repeat: int = 15,
                  batch_ms: float = 5.0) -> dict:
    """Median time of one ``run()`` in ms, timed in batches between CUDA events.

    The batch size is chosen so that one batch takes about ``batch_ms`` on the GPU: a single
    short kernel timed alone would include the host's launch latency (tens of microseconds
    for numba), which the GPU would otherwise hide by queueing launches.
    """
    import cupy

    for _ in range(warmup):
        run()
    cupy.cuda.runtime.deviceSynchronize()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    run()
    end.record()
    end.synchronize()
    one = max(float(cupy.cuda.get_elapsed_time(start, end)), 1e-3)
    batch = max(1, min(1000, int(batch_ms / one)))
    per_run = []
    for _ in range(repeat):
        start.record()
        for _ in range(batch):
            run()
        end.record()
        end.synchronize()
        per_run.append(float(cupy.cuda.get_elapsed_time(start, end)) / batch)
    return {"median_ms": statistics.median(per_run), "min_ms": min(per_run),
            "spread": (max(per_run) - min(per_run)) / statistics.median(per_run), "batch": batch}


def _free_gpu_memory() -> None:
    import cupy

    gc.collect()
    cupy.cuda.runtime.deviceSynchronize()
    cupy.get_default_memory_pool().free_all_blocks()


def _time_case(case: Case, n: int, **timing) -> dict:
    run = case.prepare(n)
    try:
        t = time_launches(run, **timing)
    finally:
        del run
        _free_gpu_memory()
    nbytes = case.bytes_moved(n)
    t["gbps"] = nbytes / (t["median_ms"] * 1e-3) / 1e9
    t["bytes"] = int(nbytes)
    return t


def run_topic(module, *, n: int = DEFAULT_N, sweep: tuple[int, ...] | None = SWEEP_SIZES,
              check_n: int | None = CHECK_N, only: list[str] | None = None, log=print) -> dict:
    """Check and time every case of a topic module; returns the topic's results (JSON-ready).

    ``rows``: one per case at size ``n`` (GB/s and the ratio to the reference's GB/s);
    ``sweep``: GB/s of every case at each size of ``sweep`` (None: skip the sweep).
    """
    cases = module.cases()
    if only:
        cases = [c for c in cases if c.reference or any(key in c.name for key in only)]
    references = [c for c in cases if c.reference]
    if len(references) != 1:
        raise ValueError(f"{module.__name__}: need exactly one reference case, found {len(references)}")
    rows, errors = [], []
    t0 = time.perf_counter()
    for k, case in enumerate(cases, 1):
        try:
            if check_n and case.check is not None:
                case.check(check_n)
            t = _time_case(case, n)
        except Exception as e:
            if case.reference:
                raise
            # one broken version must not cost the whole run: report it and go on
            errors.append({"name": case.name, "impl": case.impl, "error": f"{type(e).__name__}: {e}"})
            log(f"  [{k}/{len(cases)}] {case.name:<48} FAILED: {type(e).__name__}: {e}")
            continue
        rows.append({"name": case.name, "impl": case.impl, "reference": case.reference,
                     "median_ms": t["median_ms"], "min_ms": t["min_ms"], "spread": t["spread"],
                     "gbps": t["gbps"], "bytes": t["bytes"]})
        log(f"  [{k}/{len(cases)}] {case.name:<48} {t['median_ms']:9.4f} ms {t['gbps']:8.1f} GB/s "
            f"(spread {t['spread']:.1%}, {time.perf_counter() - t0:.0f} s)")
    ref_gbps = next(r["gbps"] for r in rows if r["reference"])
    for r in rows:
        r["ratio"] = r["gbps"] / ref_gbps
    result = {"n": n, "reference": module.REFERENCE, "rows": rows, "errors": errors}
    if sweep:
        timed = [c for c in cases if any(r["name"] == c.name for r in rows)]
        series = {c.name: [] for c in timed}
        for size in sweep:
            for case in timed:
                series[case.name].append(_time_case(case, size, repeat=7)["gbps"])
            log(f"  sweep n = 2^{size.bit_length() - 1}: done ({time.perf_counter() - t0:.0f} s)")
        result["sweep"] = {"sizes": list(sweep), "gbps": series}
    return result


def stamp() -> dict:
    """Where and when: the GPU, today's date and the software versions."""
    from .. import backend

    return {"device": backend._gpu_name(), "date": datetime.date.today().isoformat(),
            "versions": backend.gpu_versions(), "python": sys.version.split()[0]}
