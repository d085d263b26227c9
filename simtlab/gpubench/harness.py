"""Time every version of a topic's kernels against the library reference, in one run.

A topic's versions are its table ``kernels/<topic>.py: VERSIONS`` (see ``simtlab/versions.py``);
its benchmark module (``simtlab/gpubench/<topic>.py``) turns each row into a :class:`Case` with
:func:`version_cases` and adds the library reference. :func:`run_topic` checks each version's
output once, then times it with :func:`time_launches` (the one GPU timer: CUDA events, warm-up,
median). Bandwidth is the version's napkin-math bytes over the median time, TFLOP/s its FLOPs
over it (where the table gives FLOPs), and the ratio is taken against the reference case timed
in the same run.
"""

from __future__ import annotations

import datetime
import gc
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable

__all__ = ["Case", "nonzero_random", "time_launches", "run_topic", "version_cases", "runner", "flush_l2",
           "DEFAULT_N", "SWEEP_SIZES", "CHECK_N", "L2_FLUSH_BYTES"]

#: the size every version is compared at: 2^28 float32 elements (1 GiB)
DEFAULT_N = 2**28
#: the size sweep (elements): input + output of 2^22 floats (32 MiB) fit in the H100's 50 MB L2,
#: 2^23 (64 MiB) do not

SWEEP_SIZES = tuple(2**k for k in range(16, 29, 2))
#: the size each version's output is checked at before it is timed: odd, not a power of two
CHECK_N = 1_000_003


@dataclass(frozen=True)
class Case:
    """One version of a kernel, ready to be timed.

    ``prepare(n)`` allocates random inputs for ``n`` float32 elements on the GPU, compiles,
    and returns a function that enqueues one full run of the version (every kernel it needs)
    without synchronising. ``bytes_moved(n)`` and ``flops(n)`` are the napkin math: the fewest
    bytes the version has to move through device memory, and its floating-point operations
    (None: the results give no TFLOP/s). ``check(n)`` runs the version at size ``n`` and
    compares it with the CPU reference (AssertionError when wrong).
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


#: bytes written to evict the L2 before an L2-cold timing: 4x the H100's 50 MB L2
L2_FLUSH_BYTES = 4 * 50 * 10**6
_flush_buffer = None


def flush_l2(nbytes: int = L2_FLUSH_BYTES) -> None:
    """Enqueue a memset of ``nbytes`` of junk: what the timed kernel left in L2 is evicted."""
    import cupy

    global _flush_buffer
    if _flush_buffer is None or _flush_buffer.nbytes != nbytes:
        _flush_buffer = cupy.empty(nbytes, cupy.uint8)
    _flush_buffer.data.memset_async(1, nbytes)


def time_launches(run: Callable[[], object], *, warmup: int = 3, repeat: int = 15,
                  batch_ms: float = 5.0, l2: str = "warm") -> dict:
    """Median time of one ``run()`` in ms, timed between CUDA events; the course's one GPU timer.

    ``warmup`` runs first (compilation, module load, clocks). ``l2="warm"``: runs are timed in
    batches of about ``batch_ms`` on the GPU, so the host's launch latency (tens of microseconds
    for numba) hides behind queued work; a run finds in L2 whatever the previous one left there,
    so data that fits in the 50 MB L2 (input + output up to 2^22 floats) is timed L2-warm.
    ``l2="cold"``: each run is timed alone, right after :func:`flush_l2` wrote 4x the L2 of junk;
    the flush is queued first, so the host enqueues the run while the GPU is still flushing.
    """
    import cupy

    if l2 not in ("warm", "cold"):
        raise ValueError(f"l2 must be 'warm' or 'cold', not {l2!r}")
    if warmup < 0 or repeat < 1:
        raise ValueError(f"warmup={warmup}, repeat={repeat}: need warmup >= 0 and repeat >= 1")
    for _ in range(warmup):
        run()
    cupy.cuda.runtime.deviceSynchronize()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    if l2 == "cold":
        batch = 1
    else:
        start.record()
        run()
        end.record()
        end.synchronize()
        one = max(float(cupy.cuda.get_elapsed_time(start, end)), 1e-3)
        batch = max(1, min(1000, int(batch_ms / one))) if batch_ms else 1
    per_run = []
    for _ in range(repeat):
        if l2 == "cold":
            flush_l2()
        start.record()
        for _ in range(batch):
            run()
        end.record()
        end.synchronize()
        per_run.append(float(cupy.cuda.get_elapsed_time(start, end)) / batch)
    median = statistics.median(per_run)
    return {"median_ms": median, "min_ms": min(per_run), "times_ms": per_run,
            "spread": (max(per_run) - min(per_run)) / median if median else 0.0, "batch": batch, "l2": l2}


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
    if case.flops is not None:
        t["flops"] = int(case.flops(n))
        t["tflops"] = t["flops"] / (t["median_ms"] * 1e-3) / 1e12
    return t


def run_topic(module, *, n: int = DEFAULT_N, sweep: tuple[int, ...] | None = SWEEP_SIZES,
              check_n: int | None = CHECK_N, only: list[str] | None = None, log=print,
              sweep_l2: str = "cold") -> dict:
    """Check and time every case of a topic module; returns the topic's results (JSON-ready).

    ``rows``: one per case at size ``n`` (GB/s, TFLOP/s where FLOPs are known, and the ratio to
    the reference's GB/s), timed in batches: at 2^28 elements (2 GiB in + out) L2 holds nothing
    a run can reuse. ``sweep``: GB/s of every case at each size of ``sweep`` (None: skip it),
    timed L2-cold by default (``sweep_l2``): timed warm, a copy of 2^22 floats ran at 3.8 TB/s
    from L2 against 2.1 TB/s cold, and the batches of small kernels measured the host's launch
    rate instead of the GPU (benchmarks/results/hardware_probes_h100.log).
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
                     **{k: t[k] for k in ("median_ms", "min_ms", "spread", "gbps", "bytes", "flops", "tflops")
                        if k in t}})
        tflops = f" {t['tflops']:7.3f} TFLOP/s" if "tflops" in t else ""
        log(f"  [{k}/{len(cases)}] {case.name:<48} {t['median_ms']:9.4f} ms {t['gbps']:8.1f} GB/s{tflops} "
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
                series[case.name].append(_time_case(case, size, repeat=7, l2=sweep_l2)["gbps"])
            log(f"  sweep n = 2^{size.bit_length() - 1}: done ({time.perf_counter() - t0:.0f} s)")
        result["sweep"] = {"sizes": list(sweep), "gbps": series, "l2": sweep_l2}
    return result


def runner(module, label: str, impl: str, *inputs, **options):
    """``(run, out)``: one whole run of the version ``label`` of a benchmark module's topic on
    CuPy ``inputs`` (``options`` override the plan's sizes for this GPU)."""
    from .. import versions
    from importlib import import_module

    table = import_module(f"simtlab.kernels.{module.TOPIC}").VERSIONS
    version = versions.find(table, label)
    options = {**module.plan_options(version), **options}
    return versions.gpu_runner(module.TOPIC, version, impl, *inputs, **options)


def version_cases(module, versions) -> list[Case]:
    """One Case per row of a topic's table and implementation (CUDA C first, then numba).

    ``module`` is the topic's benchmark module: ``TOPIC``; ``inputs(version, n, seed)``, CuPy
    inputs for size n; ``check(version, out, *host_inputs)``, None or what is wrong;
    ``plan_options(version)``, the plan's sizes on this GPU.
    """
    from .. import versions as V

    def prepare(version, impl):
        def prepare_n(n):
            run, _ = V.gpu_runner(module.TOPIC, version, impl, *module.inputs(version, n),
                                  **module.plan_options(version))
            return run
        return prepare_n

    def check(version, impl):
        def check_n(n):
            import cupy

            ins = module.inputs(version, n, seed=3)
            run, out = V.gpu_runner(module.TOPIC, version, impl, *ins, **module.plan_options(version))
            run()
            cupy.cuda.runtime.deviceSynchronize()
            problem = module.check(version, cupy.asnumpy(out), *[cupy.asnumpy(a) for a in ins])
            if problem:
                raise AssertionError(f"{version.label} ({impl}) at n = {n:,}: {problem}")
        return check_n

    out = []
    for version in versions:
        for impl, label in (("cuda-c", "CUDA C"), ("numba", "numba")):
            if impl in version.impls:
                out.append(Case(name=f"{version.label} ({label})", impl=impl, prepare=prepare(version, impl),
                                bytes_moved=version.bytes, check=check(version, impl), flops=version.flops))
    return out


def stamp() -> dict:
    """Where and when: the GPU, today's date and the software versions."""
    from .. import backend

    return {"device": backend._gpu_name(), "date": datetime.date.today().isoformat(),
            "versions": backend.gpu_versions(), "python": sys.version.split()[0]}
