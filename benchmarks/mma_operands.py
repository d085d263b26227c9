"""Does mma.sync's rate depend on which registers the MMAs read? (chapter 9, beside mma_peak.py)

Warps that do nothing but MMAs from registers, 8 warps a block (two per scheduler, as in the course's
GEMMs), one block an SM: MT A fragments x NT B fragments with MT*NT accumulators, in either loop order,
with values of few or all mantissa bits, against mma_peak's pattern (every MMA reads the same A and B).
A GEMM's warp of 64 x 64 reads 4 A and 8 B fragments per k-step (a4b8). FP16's m16n8k16 for comparison.

    python benchmarks/mma_operands.py [OUT.json]        (NAMES=a4b8,same8 ROUNDS=1 REPS=1 for a profile)
"""
import json
import os
import sys
import time

import numpy as np

import cupy

SRC = r'''
typedef unsigned int u32;
__device__ __forceinline__ void mma(float* d, const u32* a, const u32* b) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
__device__ __forceinline__ void mma16(float* d, const u32* a, const u32* b) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// MT x NT accumulators; SAME: every MMA reads a[0], b[0]; B_OUTER: loop order; F16: m16n8k16 f16
template <int MT, int NT, bool SAME, bool B_OUTER, bool F16, bool RANDOM>
__device__ void body(float* out, int iterations, u32 seed) {
    u32 a[MT][4], b[NT][2];
    float d[MT][NT][4];
    const u32 t = threadIdx.x * 2654435761u + seed;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            u32 h = (t + i * 77 + e * 13) * 2246822519u; h ^= h >> 15;
            a[i][e] = F16 ? (0x3c003c00u ^ (h & (RANDOM ? 0x03ff03ffu : 0xffu))) : (0x3f800000u ^ ((h & (RANDOM ? 0x7fffffu : 0x3ffu)) << (RANDOM ? 0 : 13)));
        }
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            u32 h = (t + j * 91 + e * 7 + 5) * 3266489917u; h ^= h >> 13;
            b[j][e] = F16 ? (0x38003800u ^ (h & (RANDOM ? 0x03ff03ffu : 0xffu))) : (0x3f000000u ^ ((h & (RANDOM ? 0x7fffffu : 0x3ffu)) << (RANDOM ? 0 : 13)));
        }
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) d[i][j][e] = 0.f;
    for (int it = 0; it < iterations; ++it) {
        if (B_OUTER) {
#pragma unroll
            for (int j = 0; j < NT; ++j)
#pragma unroll
                for (int i = 0; i < MT; ++i) { if (F16) mma16(d[i][j], a[SAME ? 0 : i], b[SAME ? 0 : j]); else mma(d[i][j], a[SAME ? 0 : i], b[SAME ? 0 : j]); }
        } else {
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j) { if (F16) mma16(d[i][j], a[SAME ? 0 : i], b[SAME ? 0 : j]); else mma(d[i][j], a[SAME ? 0 : i], b[SAME ? 0 : j]); }
        }
    }
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) s += d[i][j][0] + d[i][j][1] + d[i][j][2] + d[i][j][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
#define K(name, MT, NT, SAME, BO, F16, RND) extern "C" __global__ void __launch_bounds__(256, 1) name(float* out, int it, u32 seed) { body<MT, NT, SAME, BO, F16, RND>(out, it, seed); }
K(same8, 1, 8, true, false, false, false)
K(same32, 4, 8, true, false, false, false)
K(a4b8, 4, 8, false, false, false, false)
K(a4b8_rand, 4, 8, false, false, false, true)
K(b8a4, 4, 8, false, true, false, false)
K(a2b8, 2, 8, false, false, false, false)
K(a4b4, 4, 4, false, false, false, false)
K(a1b8, 1, 8, false, false, false, false)
K(a8b1, 8, 1, false, false, false, false)
K(a2b4, 2, 4, false, false, false, false)
K(f16_same8, 1, 8, true, false, true, false)
K(f16_a4b8, 4, 8, false, false, true, false)
K(f16_a4b8_rand, 4, 8, false, false, true, true)
'''
NAMES = os.environ.get("NAMES", "").split(",") if os.environ.get("NAMES") else ["same8", "same32", "a4b8", "a4b8_rand", "b8a4", "a2b8", "a4b4", "a1b8", "a8b1", "a2b4", "f16_same8", "f16_a4b8", "f16_a4b8_rand"]
mod = cupy.RawModule(code=SRC, options=("-arch=sm_90a",), name_expressions=None)
sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
out = cupy.zeros(sms * 256, cupy.float32)
SMEM = 160 * 1024                                          # one block an SM
res = {}
def run(name, iters):
    k = mod.get_function(name)
    k.max_dynamic_shared_size_bytes = SMEM
    k((sms,), (256,), (out, np.int32(iters), np.uint32(1)), shared_mem=SMEM)
for rnd in range(int(os.environ.get('ROUNDS', 2))):
    for name in NAMES:
        mt_nt = {"same8": 8, "same32": 32, "a4b8": 32, "a4b8_rand": 32, "b8a4": 32, "a2b8": 16, "a4b4": 16, "a1b8": 8, "a8b1": 8, "a2b4": 8,
                 "f16_same8": 8, "f16_a4b8": 32, "f16_a4b8_rand": 32}[name]
        iters = 40000 // mt_nt * 8
        flop_per = 2 * 16 * 8 * (16 if name.startswith("f16") else 8)
        run(name, 10)
        cupy.cuda.Device().synchronize()
        s, e = cupy.cuda.Event(), cupy.cuda.Event()
        ts = []
        for _ in range(int(os.environ.get('REPS', 5))):
            s.record(); run(name, iters); e.record(); e.synchronize()
            ts.append(cupy.cuda.get_elapsed_time(s, e))
        ms = float(np.median(ts))
        flops = sms * 8 * iters * mt_nt * flop_per
        res.setdefault(name, []).append(flops / ms / 1e9)
for name in NAMES:
    print(f"{name:14s} {max(res[name]):7.1f} TFLOP/s  {res[name]}")
if len(sys.argv) > 1:
    props = cupy.cuda.runtime.getDeviceProperties(0)
    open(sys.argv[1], "w").write(json.dumps({"device": props["name"].decode(), "date": time.strftime("%Y-%m-%d"),
                                             "command": "python benchmarks/mma_operands.py",
                                             "tflops_per_round": res}, indent=1))
