"""Tune the CUDA C single-pass scan (v6) on the GPU: tile shape against CUB, one run.

    python tools/scan_tune.py          (on the GPU machine, from the repository root)

Compiles kernels/scan.cu with several TILE_THREADS x TILE_VECS, checks each v6 exactly on
integer-valued input, and times it at 2^28 float32 next to CUB's scan (cupy.cuda.cub, in
place) and a device-to-device copy.
"""
import itertools
from pathlib import Path

import cupy
import numpy as np
from cupy.cuda import cub

from simtlab.gpubench.harness import time_launches

n = 2**28
src = Path("kernels/scan.cu").read_text()
x = cupy.asarray(cupy.random.default_rng(0).integers(-2, 3, n), dtype=cupy.float32)
want = np.cumsum(cupy.asnumpy(x).astype(np.int64))
out = cupy.empty_like(x)
y = cupy.empty_like(x)
copy_ms = time_launches(lambda: cupy.copyto(y, x))["median_ms"]
w = x.copy()
cub_ms = time_launches(lambda: cub.cub_scan(w, cub.CUPY_CUB_CUMSUM))["median_ms"]
cumsum_ms = time_launches(lambda: cupy.cumsum(x, out=out))["median_ms"]
gb = lambda ms: 8 * n / ms / 1e6
print(f"copy {gb(copy_ms):.0f} GB/s; CUB in place {gb(cub_ms):.0f} GB/s; cupy.cumsum {gb(cumsum_ms):.0f} GB/s")
for threads, vecs in itertools.product((128, 256, 512), (2, 4, 6, 8)):
    try:
        mod = cupy.RawModule(code=src, options=("-std=c++17", f"-DTILE_THREADS={threads}", f"-DTILE_VECS={vecs}"))
        k = mod.get_function("scan_v6_lookback")
    except Exception as e:
        print(threads, vecs, "compile failed", str(e)[:200])
        continue
    per = threads * 4 * vecs
    tiles = -(-n // per)
    state = cupy.zeros(tiles + 1, cupy.uint64)
    status, ticket = state[:tiles], state[tiles:].view(cupy.uint32)

    def run():
        state.data.memset_async(0, state.nbytes)
        k((tiles,), (threads,), (x, out, status, ticket, np.int32(n)))
    run()
    cupy.cuda.runtime.deviceSynchronize()
    ok = np.array_equal(cupy.asnumpy(out).astype(np.int64), want)
    ms = time_launches(run)["median_ms"]
    print(f"threads {threads:4d} vecs {vecs}: {'ok ' if ok else 'WRONG'} {ms:.3f} ms {gb(ms):6.0f} GB/s "
          f"= {cub_ms / ms:.0%} of CUB, {cumsum_ms / ms:.0%} of cupy.cumsum, {copy_ms / ms:.0%} of copy; "
          f"regs {k.num_regs}")
