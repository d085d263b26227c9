"""Latencies of the memory hierarchy and copy/compute overlap, on the GPU in hand (chapters 1, 3):

  python benchmarks/probe_latency_streams_h100.py [--out FILE]

Latency: one thread follows a chain of dependent loads (j = a[j], each address known only when
the previous load returns) through a random cycle of 128-byte-apart slots; time per load =
kernel time / loads, after a warm-up pass, minus nothing (the launch is < 1 % of 2^20 loads).
The working set picks the level: 16 KiB stays in L1, 8 MiB in L2 (50 MiB), 1 GiB goes to HBM.
Shared memory and the constant cache are chased the same way; registers by a chain of
dependent FMAs. Overlap: copy in, compute, copy out on pinned memory, one stream against
chunks over 4 streams, with a kernel about as long as the copies.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from numba import cuda, float32, int32

STEPS = 1 << 20
RESULTS = {}


@cuda.jit
def chase_global(a, steps, out):
    j = 0
    for _ in range(steps):
        j = a[j]
    out[0] = j


SHARED_SLOTS = 4096


@cuda.jit
def chase_shared(a, steps, out):
    s = cuda.shared.array(SHARED_SLOTS, int32)
    for k in range(SHARED_SLOTS):
        s[k] = a[k]
    j = 0
    for _ in range(steps):
        j = s[j]
    out[0] = j


CONST_CHAIN = np.zeros(1024, np.int32)


@cuda.jit
def chase_const(steps, out):
    c = cuda.const.array_like(CONST_CHAIN)
    j = 0
    for _ in range(steps):
        j = c[j]
    out[0] = j


@cuda.jit
def fma_chain(x, steps, out):
    v = x[0]
    for _ in range(steps):
        v = v * float32(1.0000001) + float32(1e-7)
    out[0] = v


def random_cycle(slots, stride_elems, rng):
    """An int32 array where following a[j] visits `slots` slots, stride_elems apart, in random order."""
    order = rng.permutation(slots)
    a = np.zeros(slots * stride_elems, np.int32)
    nxt = np.roll(order, -1)
    a[order * stride_elems] = (nxt * stride_elems).astype(np.int32)
    return a


def timed_ms(fn, reps=3):
    fn()
    cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = cuda.event(), cuda.event()
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(cuda.event_elapsed_time(s, e))
    return float(np.median(times))


def latencies():
    rng = np.random.default_rng(0)
    out = cuda.device_array(1, np.int32)
    res = {}
    for label, nbytes in [("L1 (16 KiB chain)", 16 << 10), ("L2 (8 MiB chain)", 8 << 20), ("HBM (1 GiB chain)", 1 << 30)]:
        a = cuda.to_device(random_cycle(nbytes // 128, 32, rng))
        ms = timed_ms(lambda: chase_global[1, 1](a, STEPS, out))
        res[label] = ms * 1e6 / STEPS
        del a
    sa = cuda.to_device(random_cycle(SHARED_SLOTS, 1, rng))
    res["shared memory"] = timed_ms(lambda: chase_shared[1, 1](sa, STEPS, out)) * 1e6 / STEPS
    CONST_CHAIN[:] = random_cycle(1024, 1, rng)
    res["constant cache"] = timed_ms(lambda: chase_const[1, 1](STEPS, out)) * 1e6 / STEPS
    fo = cuda.device_array(1, np.float32)
    x = cuda.to_device(np.ones(1, np.float32))
    res["register (dependent FMA)"] = timed_ms(lambda: fma_chain[1, 1](x, STEPS, fo)) * 1e6 / STEPS
    clock_mhz = cuda.get_current_device().CLOCK_RATE / 1e3
    for k, ns in res.items():
        print(f"{k:26s}: {ns:7.2f} ns per dependent access = {ns * clock_mhz / 1e3:6.0f} cycles at {clock_mhz:.0f} MHz")
    RESULTS["latency_ns"] = res
    RESULTS["clock_mhz"] = clock_mhz


def overlap():
    import cupy

    n = 2**26
    chunks = 8
    nbytes = n * 4
    pinned_in = cupy.cuda.alloc_pinned_memory(nbytes)
    pinned_out = cupy.cuda.alloc_pinned_memory(nbytes)
    host_in = np.frombuffer(pinned_in, np.float32, n)
    host_out = np.frombuffer(pinned_out, np.float32, n)
    host_in[:] = 1.0
    dev_in = cupy.empty(n, cupy.float32)
    dev_out = cupy.empty(n, cupy.float32)
    iters = 1
    work = cupy.ElementwiseKernel("float32 x, int32 iters", "float32 y",
                                  "float v = x; for (int k = 0; k < iters; ++k) v = v * 1.0001f + 0.5f; y = v;",
                                  "busy_map")
    H2D, D2H = cupy.cuda.runtime.memcpyHostToDevice, cupy.cuda.runtime.memcpyDeviceToHost

    def copy_in(lo, hi, st):
        cupy.cuda.runtime.memcpyAsync(dev_in.data.ptr + lo * 4, host_in.ctypes.data + lo * 4, (hi - lo) * 4, H2D, st.ptr)

    def copy_out(lo, hi, st):
        cupy.cuda.runtime.memcpyAsync(host_out.ctypes.data + lo * 4, dev_out.data.ptr + lo * 4, (hi - lo) * 4, D2H, st.ptr)

    def ms(fn, reps=3):
        fn()
        cupy.cuda.Device().synchronize()
        t = []
        for _ in range(reps):
            s, e = cupy.cuda.Event(), cupy.cuda.Event()
            s.record()
            fn()
            cupy.cuda.Device().synchronize()
            e.record()
            e.synchronize()
            t.append(cupy.cuda.get_elapsed_time(s, e))
        return float(np.median(t))

    one = cupy.cuda.Stream(non_blocking=True)
    many = [cupy.cuda.Stream(non_blocking=True) for _ in range(4)]

    def kernel_only():
        with one:
            work(dev_in, np.int32(iters), dev_out)

    # a kernel about as long as one copy: scale its loop until it is
    copy_ms = ms(lambda: copy_in(0, n, one))
    while ms(kernel_only) < copy_ms and iters < 1 << 16:
        iters *= 2

    def serial():
        copy_in(0, n, one)
        with one:
            work(dev_in, np.int32(iters), dev_out)
        copy_out(0, n, one)

    def overlapped():
        m = n // chunks
        for c in range(chunks):
            st = many[c % 4]
            copy_in(c * m, (c + 1) * m, st)
            with st:
                work(dev_in[c * m:(c + 1) * m], np.int32(iters), dev_out[c * m:(c + 1) * m])
            copy_out(c * m, (c + 1) * m, st)

    res = {"copy in (pinned)": copy_ms, "kernel": ms(kernel_only),
           "copy out (pinned)": ms(lambda: copy_out(0, n, one)),
           "one stream: in, kernel, out": ms(serial), f"{chunks} chunks over 4 streams": ms(overlapped)}
    for k, v in res.items():
        print(f"{k:30s}: {v:7.2f} ms")
    ref = (host_in[:4] * 0 + 1)
    for _ in range(iters):
        ref = ref * np.float32(1.0001) + np.float32(0.5)
    print(f"kernel loop iterations: {iters}; result right: {np.allclose(host_out[-4:], ref, rtol=1e-3)}")
    RESULTS["overlap"] = dict(n=n, chunks=chunks, iters=iters, ms=res)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    print(cuda.get_current_device().name)
    for fn in (latencies, overlap):
        print(f"\n== {fn.__name__}", flush=True)
        try:
            fn()
        except Exception as e:
            print(f"FAILED: {type(e).__name__}: {e}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(RESULTS, f, indent=1)
