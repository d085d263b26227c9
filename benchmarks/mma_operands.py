"""Does mma.sync's rate depend on which registers the MMAs read? (chapter 9, beside mma_peak.py)

Warps that do nothing but MMAs from registers, 8 warps a block (two per scheduler, as in the course's
GEMMs), one block an SM: MT A fragments x NT B fragments with MT*NT accumulators, in either loop order,
with values of few or all mantissa bits, against mma_peak's pattern (every MMA reads the same A and B).
A GEMM's warp of 64 x 64 reads 4 A and 8 B fragments per k-step (a4b8). FP16's m16n8k16 for comparison.

    python benchmarks/mma_operands.py [OUT.json]        (NAMES=a4b8,same8 ROUNDS=1 REPS=1 for a profile)

``launcher(name)`` gives one variant's launch and its FLOPs to other benchmarks (tensor_cores_power.py's
``mma:<variant>``: the same warps at the board's power limit).
"""
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SRC = r'''
typedef unsigned int u32;
template <bool F16> __device__ __forceinline__ void mma(float* d, const u32* a, const u32* b) {
    if (F16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// a value near 1 (A) or 1/2 (B) whose low mantissa bits come from h: 10 of them (8 for FP16), or all (RANDOM)
template <bool F16, bool RANDOM> __device__ __forceinline__ u32 value(u32 h, bool is_a) {
    if (F16) return (is_a ? 0x3c003c00u : 0x38003800u) ^ (h & (RANDOM ? 0x03ff03ffu : 0xffu));
    return (is_a ? 0x3f800000u : 0x3f000000u) ^ (RANDOM ? h & 0x7fffffu : (h & 0x3ffu) << 13);
}
// MT x NT accumulators; SAME: every MMA reads a[0], b[0]; B_OUTER: the loop over B fragments outside
template <int MT, int NT, bool SAME, bool B_OUTER, bool F16, bool RANDOM>
__device__ void body(float* out, int iterations, u32 seed) {
    u32 a[MT][4], b[NT][2];
    float d[MT][NT][4];
    const u32 t = threadIdx.x * 2654435761u + seed;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            u32 h = (t + i * 77 + e * 13) * 2246822519u;
            a[i][e] = value<F16, RANDOM>(h ^ (h >> 15), true);
        }
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            u32 h = (t + j * 91 + e * 7 + 5) * 3266489917u;
            b[j][e] = value<F16, RANDOM>(h ^ (h >> 13), false);
        }
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) d[i][j][e] = 0.f;
    for (int it = 0; it < iterations; ++it) {
#pragma unroll
        for (int x = 0; x < MT * NT; ++x) {
            const int i = B_OUTER ? x % MT : x / NT, j = B_OUTER ? x / MT : x % NT;
            mma<F16>(d[i][j], a[SAME ? 0 : i], b[SAME ? 0 : j]);
        }
    }
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j) s += d[i][j][0] + d[i][j][1] + d[i][j][2] + d[i][j][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;     // keeps every MMA live
}
'''
#: name -> (MT, NT, SAME, B_OUTER, F16, RANDOM)
VARIANTS = {"same8": (1, 8, True, False, False, False), "same32": (4, 8, True, False, False, False),
            "a4b8": (4, 8, False, False, False, False), "a4b8_rand": (4, 8, False, False, False, True),
            "b8a4": (4, 8, False, True, False, False), "a2b8": (2, 8, False, False, False, False),
            "a4b4": (4, 4, False, False, False, False), "a1b8": (1, 8, False, False, False, False),
            "a8b1": (8, 1, False, False, False, False), "a2b4": (2, 4, False, False, False, False),
            "f16_same8": (1, 8, True, False, True, False), "f16_a4b8": (4, 8, False, False, True, False),
            "f16_a4b8_rand": (4, 8, False, False, True, True)}
SRC += "".join(f'extern "C" __global__ void __launch_bounds__(256, 1) {name}(float* out, int it, u32 seed) '
               f'{{ body<{", ".join(str(x).lower() for x in params)}>(out, it, seed); }}\n'
               for name, params in VARIANTS.items())
SMEM = 160 * 1024                                          # one block an SM


def launcher(name: str):
    """``(run, flops)``: one launch of variant ``name`` on every SM (one block of 8 warps an SM, about 2 ms) and
    the FLOPs of its MMAs."""
    import cupy

    mt, nt, *_rest = VARIANTS[name]
    iters = 40000 // (mt * nt) * 8                         # about 2 ms a launch
    if not hasattr(launcher, "module"):
        launcher.module = cupy.RawModule(code=SRC, options=("-arch=sm_90a",))
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    out = cupy.zeros(sms * 256, cupy.float32)
    kernel = launcher.module.get_function(name)
    kernel.max_dynamic_shared_size_bytes = SMEM
    flops = sms * 8 * iters * mt * nt * 2 * 16 * 8 * (16 if name.startswith("f16") else 8)
    return (lambda: kernel((sms,), (256,), (out, np.int32(iters), np.uint32(1)), shared_mem=SMEM)), flops


def main() -> None:
    import cupy

    from simtlab.gpubench.harness import time_launches

    names = os.environ["NAMES"].split(",") if os.environ.get("NAMES") else list(VARIANTS)
    res = {}
    for _ in range(int(os.environ.get("ROUNDS", 2))):
        for name in names:
            run, flops = launcher(name)
            t = time_launches(run, warmup=0, repeat=int(os.environ.get("REPS", 5)), batch_ms=0)
            res.setdefault(name, []).append(flops / t["median_ms"] / 1e9)
    for name in names:
        print(f"{name:14s} {max(res[name]):7.1f} TFLOP/s  {res[name]}")
    if len(sys.argv) > 1:
        props = cupy.cuda.runtime.getDeviceProperties(0)
        Path(sys.argv[1]).write_text(json.dumps({"device": props["name"].decode(), "date": time.strftime("%Y-%m-%d"),
                                                 "command": "python benchmarks/mma_operands.py",
                                                 "tflops_per_round": res}, indent=1))


if __name__ == "__main__":
    main()
