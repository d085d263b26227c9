"""Which CuPy routines go through CUB here? Times cupy.sum / cupy.cumsum with the default
routine accelerators and with CUB switched on, at 2^28 float32 (run on the GPU machine)."""
import cupy
from cupy._core import _accelerator
from simtlab.gpubench.harness import time_launches

n = 2**28
x = cupy.random.random(n, dtype=cupy.float32)
print("routine accelerators:", _accelerator.get_routine_accelerators(),
      "reduction accelerators:", _accelerator.get_reduction_accelerators())
for label, acc in [("default", None), ("cub", ["cub"]), ("none", [])]:
    if acc is not None:
        _accelerator.set_routine_accelerators(acc)
        _accelerator.set_reduction_accelerators(acc)
    s = time_launches(lambda: cupy.sum(x))["median_ms"]
    c = time_launches(lambda: cupy.cumsum(x))["median_ms"]
    print(f"{label:8s} sum {s:.3f} ms = {4*n/s/1e6:.0f} GB/s   cumsum {c:.3f} ms = {8*n/c/1e6:.0f} GB/s")
y = cupy.empty_like(x)
t = time_launches(lambda: cupy.copyto(y, x))["median_ms"]
print(f"copy {t:.3f} ms = {8*n/t/1e6:.0f} GB/s")

# CUB's DeviceScan without cupy.cumsum's copy: cupy.cuda.cub.cub_scan scans its argument in place
from cupy.cuda import cub
z = cupy.asarray(cupy.random.default_rng(0).integers(-2, 3, 10_000_019), dtype=cupy.float32)
expect = cupy.cumsum(z.astype(cupy.float64))
r = cub.cub_scan(z, cub.CUPY_CUB_CUMSUM)
print("cub_scan returned", type(r), "in place:", r is z if r is not None else None,
      "max error", float(cupy.abs((r if r is not None else z) - expect).max()))
w = cupy.random.random(n, dtype=cupy.float32)
t = time_launches(lambda: cub.cub_scan(w, cub.CUPY_CUB_CUMSUM))["median_ms"]
print(f"cub_scan in place {t:.3f} ms = {8*n/t/1e6:.0f} GB/s")
