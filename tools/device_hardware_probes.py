"""Issue 14's GPU measurements, in one run on the device (H100): each explains one recorded figure.

    python3 tools/device_hardware_probes.py --out DIR            # timings: DIR/hardware_probes.json + a printed log
    ncu --profile-from-start off --metrics ... python3 tools/device_hardware_probes.py --profile
                                                         # the kernels ncu profiles (tools/device_hardware_probes.sh)

Sections (each isolates one cause; results under its key in hardware_probes.json):

- ``l2``: a device copy and the coalesced copy kernel over sizes, timed L2-warm (batches, what
  the benchmark did) and L2-cold (4x the L2 of junk written before each run): where the knee is.
- ``vecmat``: the grid-stride vector-matrix product at 2^28 weights with blocks per row swept,
  the kernel's registers and resident blocks per SM (the occupancy API), against cuBLAS gemv.
- ``copy_width``: the device-to-device copy against copy kernels that move 4 and 16 bytes per
  thread and access; ``d2d_engine``: does a device-to-device copy run while every SM is busy?
- ``cumsum``: cupy.cumsum against a copy, CUB's scan in place, and copy + CUB.
- ``atomics``: one address per thread (int and float) against hand warp-aggregated, with the
  SASS of each (cuobjdump), ``modulo``: numba's v1 with ``%`` against the same kernel with ``&``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

N = 2**28

ATOMICS_CU = r"""
extern "C" __global__ void count_one_address(int* counter, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(counter, 1);
}
extern "C" __global__ void add_int_one_address(const int* x, int* sum, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(sum, x[i]);
}
extern "C" __global__ void add_float_one_address(const float* x, float* sum, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(sum, x[i]);
}
extern "C" __global__ void add_float_warp_aggregated(const float* x, float* sum, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xffffffffu, v, d);
    if ((threadIdx.x & 31) == 0) atomicAdd(sum, v);
}
extern "C" __global__ void count_hand_aggregated(int* counter, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned active = __activemask();
        if ((threadIdx.x & 31) == __ffs(active) - 1) atomicAdd(counter, __popc(active));
    }
}
extern "C" __global__ void copy_float(const float* __restrict__ x, float* __restrict__ out, long long n)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i];
}
extern "C" __global__ void copy_float4(const float4* __restrict__ x, float4* __restrict__ out, long long n4)
{
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n4) out[i] = x[i];
}
extern "C" __global__ void spin(long long cycles, int* sink)
{
    long long start = clock64();
    while (clock64() - start < cycles) { }
    if (threadIdx.x == 0 && cycles < 0) sink[blockIdx.x] = 1;
}
"""


def log(*a):
    print(*a, flush=True)


def _time(run, **kw):
    from simtlab.gpubench.harness import time_launches

    return time_launches(run, **kw)


def _atomics_module():
    import cupy

    return cupy.RawModule(code=ATOMICS_CU, options=("-std=c++17",))


# ------------------------------------------------------------------------------------------
def section_l2(res):
    import cupy

    from simtlab.cuda_source import cu_kernel

    copy = cu_kernel("patterns", "copy_v2_coalesced")
    rows = []
    for k in list(range(16, 29, 2)) + [21, 23]:
        n = 2**k
        x = cupy.random.random(n, dtype=cupy.float32)
        y = cupy.empty_like(x)
        grid = (n + 255) // 256
        runs = {"device copy": lambda: y.data.copy_from_device_async(x.data, x.nbytes),
                "copy v2 kernel": lambda: copy((grid,), (256,), (x, y, np.int32(n)))}
        for name, run in runs.items():
            warm = _time(run, repeat=15)["median_ms"]
            cold = _time(run, repeat=15, l2="cold")["median_ms"]
            rows.append({"n": n, "log2n": k, "what": name, "warm_ms": warm, "cold_ms": cold,
                         "warm_gbps": 8 * n / warm / 1e6, "cold_gbps": 8 * n / cold / 1e6})
            log(f"  l2 2^{k:<2} {name:<15} warm {warm * 1e3:9.1f} us {8 * n / warm / 1e6:7.0f} GB/s   "
                f"cold {cold * 1e3:9.1f} us {8 * n / cold / 1e6:7.0f} GB/s")
        del x, y
    res["l2"] = sorted(rows, key=lambda r: (r["what"], r["n"]))


def _occupancy(raw_kernel, block, shared=0):
    import cupy

    try:
        return int(cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(raw_kernel.kernel.ptr, block, shared))
    except Exception as e:                                 # report, do not guess
        return f"unavailable: {type(e).__name__}: {e}"


def section_vecmat(res):
    import cupy

    from simtlab.cuda_source import cu_kernel
    from simtlab.gpubench import runner
    from simtlab.kernels import reduction as R

    rows, cols = R.vecmat_shape(N)
    v = cupy.random.random(cols, dtype=cupy.float32) + 0.5
    w = cupy.random.random((rows, cols), dtype=cupy.float32) + 0.5
    want = cupy.asnumpy(w.astype(cupy.float64) @ v.astype(cupy.float64))
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    k = cu_kernel("reduction", "vecmat_v2_grid_stride")
    out = {"sms": sms, "rows": rows, "cols": cols, "cuda_c_regs": k.attributes.get("num_regs"),
           "cuda_c_blocks_per_sm": _occupancy(k, R.BLOCK), "sweep": []}
    gemv = _time(lambda: w @ v)["median_ms"]
    nbytes = R.vecmat_bytes(rows, cols)
    out["gemv_ms"] = gemv
    log(f"  vecmat {rows} x {cols}: cuBLAS gemv {gemv:.3f} ms ({nbytes / gemv / 1e6:.0f} GB/s of the napkin bytes); "
        f"CUDA C kernel {out['cuda_c_regs']} registers, {out['cuda_c_blocks_per_sm']} blocks/SM resident")
    for per_row in (13, 26, 39, 52, 66, 79, 92, 104, 105, 106, 132, 211, 212, 264):
        row = {"blocks_per_row": per_row, "blocks": per_row * rows}
        for impl in ("cuda-c", "numba"):
            run, o = runner("reduction", "vecmat v2 grid-stride", impl, v, w, blocks_per_row=per_row)
            run()
            cupy.cuda.runtime.deviceSynchronize()
            ok = bool(np.allclose(cupy.asnumpy(o), want, rtol=1e-4))
            t = _time(run)["median_ms"]
            row[impl] = {"ms": t, "vs_gemv": gemv / t, "right": ok}
        out["sweep"].append(row)
        log(f"  vecmat {per_row:>3} x {rows} = {per_row * rows:>5} blocks: CUDA C {row['cuda-c']['ms']:.3f} ms "
            f"({row['cuda-c']['vs_gemv']:.0%} of gemv), numba {row['numba']['ms']:.3f} ms ({row['numba']['vs_gemv']:.0%})"
            + ("" if row["cuda-c"]["right"] and row["numba"]["right"] else "  WRONG RESULT"))
    try:
        from numba import cuda  # noqa: F401

        regs = R.vecmat_v2_grid_stride.get_regs_per_thread()
        out["numba_regs"] = regs if isinstance(regs, int) else list(regs.values())
    except Exception as e:
        out["numba_regs"] = f"unavailable: {e}"
    res["vecmat"] = out


def section_copy_width(res):
    import cupy

    m = _atomics_module()
    x = cupy.random.random(N, dtype=cupy.float32)
    y = cupy.empty_like(x)
    f1, f4 = m.get_function("copy_float"), m.get_function("copy_float4")
    from simtlab.cuda_source import cu_kernel

    v2 = cu_kernel("patterns", "copy_v2_coalesced")
    runs = {
        "cudaMemcpyAsync device to device": lambda: y.data.copy_from_device_async(x.data, x.nbytes),
        "copy kernel, 4 bytes per thread (course v2)": lambda: v2(((N + 255) // 256,), (256,), (x, y, np.int32(N))),
        "copy kernel, 4 bytes per thread (64-bit index)": lambda: f1(((N + 255) // 256,), (256,), (x, y, np.int64(N))),
        "copy kernel, 16 bytes per thread (float4)": lambda: f4(((N // 4 + 255) // 256,), (256,), (x, y, np.int64(N // 4))),
        "cupy.copyto (elementwise kernel)": lambda: cupy.copyto(y, x),
    }
    out = {}
    for name, run in runs.items():
        t = _time(run)["median_ms"]
        out[name] = {"ms": t, "gbps": 8 * N / t / 1e6}
        log(f"  copy width: {name:<48} {t:.3f} ms {8 * N / t / 1e6:7.0f} GB/s")
    res["copy_width"] = out

    # does the device-to-device copy need SMs? fill every SM with a spinning kernel on one stream,
    # then time the copy on another: a copy engine runs beside it, SM work has to wait
    spin = m.get_function("spin")
    sink = cupy.zeros(1024, cupy.int32)
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    rate = cupy.cuda.Device().attributes["ClockRate"] * 1e3           # Hz
    cycles = np.int64(rate * 0.05)                                     # about 50 ms
    busy, other = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    d2d = {}
    for name in ("cudaMemcpyAsync device to device", "copy kernel, 16 bytes per thread (float4)"):
        s0, s1, e = cupy.cuda.Event(), cupy.cuda.Event(), cupy.cuda.Event()
        with busy:
            spin((2 * sms,), (1024,), (cycles, sink))                  # 2048 threads on every SM
            e.record()
        with other:
            s0.record()
            runs[name]()
            s1.record()
        s1.synchronize()
        e.synchronize()
        d2d[name] = {"ms_while_every_sm_spins": float(cupy.cuda.get_elapsed_time(s0, s1)),
                     "alone_ms": out[name]["ms"], "spin_ms": float(cupy.cuda.get_elapsed_time(s0, e))}
        log(f"  while all SMs spin ~50 ms: {name:<44} took {d2d[name]['ms_while_every_sm_spins']:.2f} ms "
            f"(alone {out[name]['ms']:.2f} ms)")
        cupy.cuda.runtime.deviceSynchronize()
    res["d2d_engine"] = d2d


def section_cumsum(res):
    import cupy
    from cupy.cuda import cub

    x = cupy.random.random(N, dtype=cupy.float32)
    y = cupy.empty_like(x)
    z = x.copy()
    runs = {
        "cupy.cumsum(x, out=y)": lambda: cupy.cumsum(x, out=y),
        "copy x into y (device copy)": lambda: y.data.copy_from_device_async(x.data, x.nbytes),
        "CUB scan in place (cub_scan)": lambda: cub.cub_scan(z, cub.CUPY_CUB_CUMSUM),
        "device copy, then CUB scan in place": lambda: (y.data.copy_from_device_async(x.data, x.nbytes),
                                                        cub.cub_scan(y, cub.CUPY_CUB_CUMSUM)),
    }
    out = {}
    for name, run in runs.items():
        t = _time(run)["median_ms"]
        out[name] = {"ms": t, "gbps_of_8_bytes_per_element": 8 * N / t / 1e6}
        log(f"  cumsum: {name:<40} {t:.3f} ms  ({8 * N / t / 1e6:.0f} GB/s of 8 bytes per element)")
    out["cupy_backends"] = os.environ.get("CUPY_ACCELERATORS", "(default)")
    res["cumsum"] = out


def section_atomics(res):
    import cupy

    m = _atomics_module()
    n = 2**26
    xi = cupy.ones(n, cupy.int32)
    xf = cupy.random.random(n, dtype=cupy.float32)
    acc_i, acc_f = cupy.zeros(1, cupy.int32), cupy.zeros(1, cupy.float32)
    grid = ((n + 255) // 256,)
    runs = {
        "count_one_address": (lambda: m.get_function("count_one_address")(grid, (256,), (acc_i, np.int32(n)))),
        "count_hand_aggregated": (lambda: m.get_function("count_hand_aggregated")(grid, (256,), (acc_i, np.int32(n)))),
        "add_int_one_address": (lambda: m.get_function("add_int_one_address")(grid, (256,), (xi, acc_i, np.int32(n)))),
        "add_float_one_address": (lambda: m.get_function("add_float_one_address")(grid, (256,), (xf, acc_f, np.int32(n)))),
        "add_float_warp_aggregated": (lambda: m.get_function("add_float_warp_aggregated")(grid, (256,), (xf, acc_f, np.int32(n)))),
    }
    out = {"n": n}
    for name, run in runs.items():
        t = _time(run)["median_ms"]
        out[name] = {"ms": t, "g_updates_per_s": n / t / 1e6}
        log(f"  atomics: {name:<28} {t:.3f} ms for 2^26 threads ({n / t / 1e6:.1f} G thread-updates/s)")
    # the SASS: does the compiler aggregate a warp's same-address atomics by itself?
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "atomics.cu"
        src.write_text(ATOMICS_CU)
        cubin = Path(d) / "atomics.cubin"
        try:
            subprocess.run(["nvcc", "-arch=sm_90", "-O3", "-cubin", "-o", str(cubin), str(src)], check=True,
                           capture_output=True, text=True, timeout=120)
            sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True, timeout=60).stdout
        except Exception as e:
            sass = f"unavailable: {e}"
    out["sass"] = sass
    counts = {}
    for fn in re.split(r"\n\s*Function : ", sass)[1:]:
        name = fn.split("\n", 1)[0].strip()
        ops = re.findall(r"\b(ATOMG|ATOM|RED|REDG|VOTE|VOTEU|POPC|UPOPC|FLO|UFLO|REDUX|MATCH|SHFL)\.?[A-Z0-9_.]*", fn)
        counts[name] = {op: ops.count(op) for op in sorted(set(ops))}
        log(f"  SASS {name:<28} {counts[name]}")
    out["sass_counts"] = counts
    res["atomics"] = out


def section_modulo(res):
    import cupy
    from numba import cuda, float32

    from simtlab.kernels import reduction as R

    BLOCK = R.BLOCK

    @cuda.jit
    def reduce_v1_mask(x, partial):
        s = cuda.shared.array(BLOCK, float32)
        t = cuda.threadIdx.x
        i = cuda.blockIdx.x * cuda.blockDim.x + t
        s[t] = x[i] if i < x.size else 0.0
        cuda.syncthreads()
        stride = 1
        while stride < cuda.blockDim.x:
            if t & (2 * stride - 1) == 0:             # t % (2*stride) for a power of two, no division
                s[t] += s[t + stride]
            cuda.syncthreads()
            stride *= 2
        if t == 0:
            partial[cuda.blockIdx.x] = s[0]

    x = cupy.random.random(N, dtype=cupy.float32)
    p = cupy.zeros(N // BLOCK, cupy.float32)
    xv, pv = cuda.as_cuda_array(x), cuda.as_cuda_array(p)
    from simtlab.cuda_source import cu_kernel

    ck = cu_kernel("reduction", "reduce_v1_interleaved")
    grid = N // BLOCK
    runs = {"numba v1, t % (2*stride)": lambda: R.reduce_v1_interleaved[grid, BLOCK](xv, pv),
            "numba v1, t & (2*stride - 1)": lambda: reduce_v1_mask[grid, BLOCK](xv, pv),
            "CUDA C v1, t % (2*stride)": lambda: ck((grid,), (BLOCK,), (x, p, np.int64(N)))}
    out = {}
    for name, run in runs.items():
        t = _time(run)["median_ms"]
        out[name] = {"ms": t, "gbps": 4 * N / t / 1e6}
        log(f"  modulo: {name:<32} first pass {t:.3f} ms ({4 * N / t / 1e6:.0f} GB/s)")
    for name, kern in (("numba v1 %", R.reduce_v1_interleaved), ("numba v1 &", reduce_v1_mask)):
        try:
            ptx = kern.inspect_asm()
            ptx = ptx if isinstance(ptx, str) else "\n".join(ptx.values())
            body = [l for l in ptx.splitlines() if l.strip() and not l.strip().startswith(("//", ".", "{", "}", "$"))]
            out[name + " ptx"] = {"instructions": len(body),
                                  "rem/div": sum(bool(re.search(r"\b(rem|div)\.", l)) for l in body),
                                  "64-bit integer ops": sum(bool(re.search(r"\.(s64|u64)\b", l)) for l in body)}
            log(f"  PTX {name}: {out[name + ' ptx']}")
        except Exception as e:
            out[name + " ptx"] = f"unavailable: {e}"
    res["modulo"] = out


# ------------------------------------------------------------------------------------------
def profile_targets():
    """Launch each kernel ncu should profile once, inside cudaProfilerStart/Stop (after warm-up)."""
    import cupy

    from simtlab.gpubench import runner
    from simtlab.kernels import patterns as P

    n = 2**26
    targets = []
    x = cupy.random.random(n, dtype=cupy.float32) + 0.5
    for label in ("copy v1 strided (32 apart)", "copy v2 coalesced"):
        targets.append(runner("patterns", label, "cuda-c", x)[0])
    a = cupy.random.random(P.matrix_shape(n), dtype=cupy.float32)
    for label in ("transpose v1 naive", "transpose v2 shared tile", "transpose v3 padded tile"):
        targets.append(runner("patterns", label, "cuda-c", a)[0])
    w1 = cupy.full(2 * P.RADIUS + 1, 1 / 7, cupy.float32)
    w2 = cupy.full((3, 3), 1 / 9, cupy.float32)
    for impl in ("cuda-c", "numba"):
        for label in ("stencil 1-D (7 points) v1 global reads", "stencil 1-D (7 points) v2 shared halo"):
            targets.append(runner("patterns", label, impl, x, w1)[0])
        for label in ("stencil 2-D (3x3) v1 global reads", "stencil 2-D (3x3) v2 shared halo"):
            targets.append(runner("patterns", label, impl, a, w2)[0])
    from simtlab.kernels import reduction as R

    rows, cols = R.vecmat_shape(N)
    v = cupy.random.random(cols, dtype=cupy.float32)
    w = cupy.random.random((rows, cols), dtype=cupy.float32)
    for per_row in (106, 105, 52):
        targets.append(runner("reduction", "vecmat v2 grid-stride", "cuda-c", v, w, blocks_per_row=per_row)[0])
    targets.append(lambda: w @ v)
    y = cupy.empty_like(x)
    targets.append(lambda: cupy.cumsum(x, out=y))
    targets.append(lambda: y.data.copy_from_device_async(x.data, x.nbytes))
    for t in targets:                      # warm-up: compile, load modules
        t()
    cupy.cuda.runtime.deviceSynchronize()
    cupy.cuda.profiler.start()
    for t in targets:
        t()
        cupy.cuda.runtime.deviceSynchronize()
    cupy.cuda.profiler.stop()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp")))
    p.add_argument("--profile", action="store_true", help="launch the kernels ncu profiles, nothing else")
    p.add_argument("--sections", nargs="+", default=["l2", "vecmat", "copy_width", "cumsum", "atomics", "modulo"])
    args = p.parse_args(argv)
    if args.profile:
        profile_targets()
        return 0
    from simtlab.gpubench.harness import stamp

    res = {**stamp()}
    t0 = time.perf_counter()
    for name in args.sections:
        log(f"== {name} ({time.perf_counter() - t0:.0f} s)")
        try:
            globals()[f"section_{name}"](res)
        except Exception as e:                  # one broken section must not cost the others
            import traceback

            traceback.print_exc()
            res[name] = {"error": f"{type(e).__name__}: {e}"}
        (args.out / "hardware_probes.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    log(f"done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
