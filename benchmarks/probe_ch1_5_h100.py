"""Measurements behind chapters 1, 2 and 5's statements about real hardware, one run:

  python benchmarks/probe_ch1_5_h100.py [--out FILE]

1. device memory as the driver reports it (the device panel's figure);
2. the pre-Volta unrolled last warp without volatile/syncwarp (reduction.py / reduction.cu):
   how many block sums come out wrong, against the syncwarp version;
3. __syncthreads() in divergent code: does the kernel finish, and is its result right?
   (each case in its own process, stopped after a time limit if it hangs);
4. a cooperative launch with a grid-wide barrier (numba-cuda) and a thread-block cluster (CUDA C);
5. predication: the SASS of an if/else and of a ternary version of chapter 2's branch_by_parity;
6. streams and pinned memory: copies overlapped with compute, against one stream.
Prints one section per measurement; every figure is measured in this run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap
import time

import numpy as np

RESULTS = {}


def section(title):
    print(f"\n== {title}", flush=True)


def device_memory():
    import cupy
    props = cupy.cuda.runtime.getDeviceProperties(0)
    free, total = cupy.cuda.runtime.memGetInfo()
    name = props["name"].decode()
    RESULTS["memory"] = dict(name=name, totalGlobalMem=int(props["totalGlobalMem"]), memGetInfo_total=int(total))
    print(f"{name}: totalGlobalMem {props['totalGlobalMem']} bytes = {props['totalGlobalMem'] / 2**30:.2f} GiB "
          f"= {props['totalGlobalMem'] / 1e9:.2f} GB; cudaMemGetInfo total {total} bytes")


def last_warp():
    import cupy
    from numba import cuda
    from simtlab.cuda_source import cu_kernel
    from simtlab.kernels import reduction as R

    blocks = 4096
    x = np.random.default_rng(0).integers(0, 16, blocks * 2 * R.BLOCK).astype(np.float32)
    want = x.reshape(blocks, -1).astype(np.int64).sum(axis=1).astype(np.float32)
    dx, cx = cuda.to_device(x), cupy.asarray(x)
    out = {}
    for name in ("reduce_last_warp_unsafe", "reduce_last_warp_syncwarp"):
        for impl in ("numba", "cuda-c"):
            wrong = []
            for rep in range(5):
                if impl == "numba":
                    p = cuda.device_array(blocks, np.float32)
                    getattr(R, name)[blocks, R.BLOCK](dx, p)
                    got = p.copy_to_host()
                else:
                    p = cupy.zeros(blocks, cupy.float32)
                    cu_kernel("reduction", name)((blocks,), (R.BLOCK,), (cx, p, np.int64(x.size)))
                    got = cupy.asnumpy(p)
                wrong.append(int((got != want).sum()))
            out[f"{name} {impl}"] = wrong
            print(f"{name:28s} {impl:7s}: wrong block sums in 5 runs of {blocks} blocks: {wrong}")
    RESULTS["last_warp"] = out


DIVERGENT = {
    # the emulator's test case: threads past the data return before the barrier
    "early return before the barrier": '''
@cuda.jit
def k(x, out):
    s = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    if t >= x.size:
        return
    s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[x.size - 1 - t]
x = np.arange(40, dtype=np.float32); out = np.full(40, -1, np.float32)
args = (x, out); want = x[::-1]; grid, block = 1, 64
''',
    # a barrier in each branch: two different barriers, each reached by half the block
    "a barrier in each branch, data exchanged": '''
@cuda.jit
def k(x, out):
    s = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    if t < 128:
        s[t] = x[t]
        cuda.syncthreads()
        out[t] = s[t + 128]
    else:
        s[t] = x[t]
        cuda.syncthreads()
        out[t] = s[t - 128]
x = np.arange(256, dtype=np.float32); out = np.full(256, -1, np.float32)
args = (x, out); want = np.concatenate([x[128:], x[:128]]); grid, block = 1, 256
''',
    # only half the block reaches the barrier, the other half keeps running and then writes
    "barrier reached by half the block": '''
@cuda.jit
def k(x, out):
    s = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    if t < 128:
        cuda.syncthreads()
        out[t] = s[t + 128]
    else:
        for j in range(2000):
            x[t] = x[t] * 1.0000001
        s[t] = x[t]
x = np.ones(256, dtype=np.float32); out = np.full(256, -1, np.float32)
args = (x, out); want = None; grid, block = 1, 256
''',
}

RUNNER = '''
import numpy as np, sys, json
from numba import cuda, float32
{src}
dev = [cuda.to_device(a) for a in args]
k[grid, block](*dev)
cuda.synchronize()
got = dev[1].copy_to_host()
res = dict(finished=True)
if want is not None:
    res["right"] = int((got == want).sum()); res["of"] = int(got.size)
res["sample"] = got[:4].tolist() + got[-4:].tolist()
print(json.dumps(res))
'''


def divergent_barriers():
    out = {}
    for name, src in DIVERGENT.items():
        t0 = time.time()
        try:
            p = subprocess.run([sys.executable, "-c", RUNNER.format(src=textwrap.dedent(src))],
                               capture_output=True, text=True, timeout=40)
            line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr[-400:]
            out[name] = line
        except subprocess.TimeoutExpired:
            out[name] = "did not finish in 40 s (hang)"
        print(f"{name}: {out[name]}  [{time.time() - t0:.1f} s]")
    RESULTS["divergent_barriers"] = out


def cooperation():
    import cupy
    from numba import cuda
    from simtlab.kernels import cooperation as C

    x = np.random.default_rng(2).integers(0, 16, 2**24 + 3).astype(np.float32)
    want = np.float32(x.astype(np.int64).sum())
    total, blocks = C.grid_sync_sum(cuda.to_device(x))
    print(f"grid sync: {blocks} blocks of {C.BLOCK} (cooperative limit), sum right: {total == want}")
    try:
        d = cuda.to_device(x[:1000])
        C.reduce_grid_sync[blocks + 1, C.BLOCK](d, cuda.device_array(blocks + 1, np.float32),
                                                cuda.device_array(1, np.float32))
        cuda.synchronize()
        refused = "no error"
    except Exception as e:      # what a too-large cooperative launch says
        refused = f"{type(e).__name__}: {e}"
    print(f"grid sync with {blocks + 1} blocks: {refused}")
    try:
        ctotal, cblocks = C.cluster_sum(cupy.asarray(x))
        cl = f"{cblocks} blocks in clusters of 2, sum right: {ctotal == want}"
    except Exception as e:
        cl = f"failed: {type(e).__name__}: {e}"
    print(f"cluster pairs: {cl}")
    RESULTS["cooperation"] = dict(grid_sync_blocks=blocks, grid_sync_right=bool(total == want),
                                  too_many=refused, cluster=cl)


def predication():
    from numba import cuda, float32

    @cuda.jit
    def branch_if(x, out):
        i = cuda.grid(1)
        if i < x.size:
            if i % 2 == 0:
                out[i] = 2 * x[i]
            else:
                out[i] = -x[i]

    @cuda.jit
    def branch_ternary(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = 2 * x[i] if i % 2 == 0 else -x[i]

    x = cuda.to_device(np.ones(1024, np.float32))
    o = cuda.device_array(1024, np.float32)
    res = {}
    for k in (branch_if, branch_ternary):
        k[4, 256](x, o)
        sass = k.inspect_sass()
        text = next(iter(sass.values())) if isinstance(sass, dict) else sass
        lines = [ln for ln in text.splitlines() if "/*" in ln and ";" in ln]
        bra = [ln for ln in lines if " BRA " in ln or "BSSY" in ln or "BSYNC" in ln]
        sel = [ln for ln in lines if "SEL " in ln or "FSEL" in ln]
        pred = [ln for ln in lines if "@P" in ln or "@!P" in ln]
        res[k.__name__] = dict(instructions=len(lines), branch_lines=len(bra), select=len(sel), predicated=len(pred))
        print(f"{k.__name__}: {len(lines)} SASS lines, {len(bra)} BRA/BSSY/BSYNC, {len(sel)} SEL/FSEL, "
              f"{len(pred)} predicated")
        for ln in bra + sel:
            print("   ", ln.strip()[:110])
    RESULTS["predication"] = res


def streams():
    import cupy

    n = 2**26
    chunks = 8
    host_in = cupyx_pinned(n)
    host_out = cupyx_pinned(n)
    host_in[:] = 1.0
    pageable = np.ones(n, np.float32)
    dev_in = cupy.empty(n, cupy.float32)
    dev_out = cupy.empty(n, cupy.float32)
    work = cupy.ElementwiseKernel("float32 x", "float32 y",
                                  "float v = x; for (int k = 0; k < 64; ++k) v = v * 1.0001f + 0.5f; y = v;",
                                  "busy_map")
    work(dev_in, dev_out)
    cupy.cuda.Device().synchronize()

    def timed(fn, reps=3):
        best = []
        for _ in range(reps):
            s, e = cupy.cuda.Event(), cupy.cuda.Event()
            s.record(cupy.cuda.Stream.null)
            fn()
            e.record(cupy.cuda.Stream.null)
            cupy.cuda.Device().synchronize()
            best.append(cupy.cuda.get_elapsed_time(s, e))
        return float(np.median(best))

    def h2d_pageable():
        dev_in.set(pageable)

    def h2d_pinned():
        dev_in.set(host_in)

    def kernel_only():
        work(dev_in, dev_out)

    def serial():
        dev_in.set(host_in)
        work(dev_in, dev_out)
        dev_out.get(out=host_out)

    streams_ = [cupy.cuda.Stream(non_blocking=True) for _ in range(4)]
    m = n // chunks

    def overlapped():
        for c in range(chunks):
            st = streams_[c % len(streams_)]
            sl = slice(c * m, (c + 1) * m)
            dev_in[sl].set(host_in[sl], stream=st)
            with st:
                work(dev_in[sl], dev_out[sl])
            dev_out[sl].get(stream=st, out=host_out[sl])
        for st in streams_:
            st.synchronize()

    res = {name: timed(fn) for name, fn in [("h2d pageable", h2d_pageable), ("h2d pinned", h2d_pinned),
                                            ("kernel", kernel_only), ("copy in, kernel, copy out: one stream", serial),
                                            (f"the same in {chunks} chunks over 4 streams", overlapped)]}
    gb = n * 4 / 1e9
    for k, v in res.items():
        extra = f", {gb / (v / 1e3):.1f} GB/s" if k.startswith("h2d") else ""
        print(f"{k}: {v:.2f} ms{extra}")
    ok = bool(np.allclose(host_out[:10], cupy.asnumpy(dev_out[:10])))
    print(f"results agree: {ok}")
    RESULTS["streams"] = dict(n=n, chunks=chunks, ms=res)


def cupyx_pinned(n):
    import cupyx
    return cupyx.empty_pinned(n, np.float32)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--only", default=None, help="run one section, e.g. predication (for ncu)")
    args = ap.parse_args()
    for title, fn in [("device memory", device_memory), ("unrolled last warp", last_warp),
                      ("__syncthreads() in divergent code", divergent_barriers),
                      ("cooperative launch and clusters", cooperation), ("predication", predication),
                      ("streams and pinned memory", streams)]:
        if args.only and args.only != fn.__name__:
            continue
        section(title)
        try:
            fn()
        except Exception as e:
            print(f"FAILED: {type(e).__name__}: {e}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(RESULTS, f, indent=1)
