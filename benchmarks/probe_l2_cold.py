"""Probe for tests/test_gpubench_gpu.py's L2 test (it failed once on the H100: cold/warm 0.85 at
2^21 floats): cold/warm ratios of a copy done by the copy engine's memcpy and by a CuPy kernel,
five rounds each, so the test can use the copy whose L2 reuse is stable."""
import cupy

from simtlab.gpubench.harness import time_launches

for name in ("memcpy D2D", "cupy.copyto kernel"):
    for n in (2**21, 2**22, 2**26):
        a = cupy.random.random(n, dtype=cupy.float32)
        b = cupy.empty_like(a)
        if name == "memcpy D2D":
            run = lambda: b.data.copy_from_device_async(a.data, a.nbytes)   # noqa: E731
        else:
            run = lambda: cupy.copyto(b, a)   # noqa: E731
        ratios = []
        for _ in range(5):
            warm = time_launches(run)["median_ms"]
            cold = time_launches(run, l2="cold", repeat=9)["median_ms"]
            ratios.append(round(cold / warm, 2))
        print(f"{name:20s} n=2^{n.bit_length() - 1}: cold/warm {ratios}", flush=True)

# The host's side: microseconds to enqueue one async memcpy (no sync inside the loop) against
# the GPU's time for one warm copy; where they are close, a warm batch times the host.
import time  # noqa: E402

for n in (2**21, 2**22):
    a = cupy.random.random(n, dtype=cupy.float32)
    b = cupy.empty_like(a)
    cupy.cuda.runtime.deviceSynchronize()
    t0 = time.perf_counter()
    for _ in range(500):       # fewer than the launch queue holds
        b.data.copy_from_device_async(a.data, a.nbytes)
    host_us = (time.perf_counter() - t0) / 500 * 1e6
    cupy.cuda.runtime.deviceSynchronize()
    gpu_us = time_launches(lambda: b.data.copy_from_device_async(a.data, a.nbytes))["median_ms"] * 1e3
    print(f"memcpy D2D n=2^{n.bit_length() - 1}: host enqueue {host_us:.1f} us, GPU warm copy {gpu_us:.1f} us")
