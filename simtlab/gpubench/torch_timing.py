"""Timing PyTorch (cuDNN, cuBLAS, torch.compile) on the GPU for the course's benchmarks: CUDA
events on PyTorch's current stream around back-to-back calls, and the kernels a call ran with
their own GPU time (torch.profiler). torch is imported inside each function: it is not a course
dependency, and the benchmarks that use it import it only when they run."""

from __future__ import annotations

import statistics

__all__ = ["events_ms", "kernel_times"]


def events_ms(fn, repeat: int = 15, inner: int = 20) -> float:
    """Median ms of one ``fn()``: CUDA events on PyTorch's current stream (the legacy default
    stream, where CuPy's default launches go too) around ``inner`` back-to-back calls."""
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(inner):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / inner)
    return statistics.median(times)


def kernel_times(fn) -> list:
    """``[(kernel name, µs), ...]`` of the CUDA kernels one ``fn()`` ran (torch.profiler: each
    kernel's own GPU time, no launch gaps), longest first."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    rows = [(e.key, float(getattr(e, "device_time_total", 0) or getattr(e, "cuda_time_total", 0)))
            for e in prof.key_averages()]
    return [(name, t) for name, t in sorted(rows, key=lambda r: -r[1]) if t]
