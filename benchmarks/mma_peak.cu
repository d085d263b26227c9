// The ceiling of mma.sync on this GPU: warps that do nothing but tensor-core MMAs from registers
// (no loads, no shared memory), CHAINS independent accumulators each, so the only limit is how fast
// the SM issues and retires mma.sync. What a GEMM built on mma.sync can reach at best (chapter 9:
// the TF32 goal of 70 % of cuBLAS TF32, which uses wgmma). benchmarks/mma_peak.py times it.
//   FLOPs: warps x iterations x CHAINS x 2*16*8*8 (TF32 m16n8k8) or 2*16*8*16 (FP16/BF16 m16n8k16)
#define CHAINS 8

extern "C" __global__ void mma_peak_tf32(float* __restrict__ out, int iterations, unsigned seed)
{
    unsigned a[4], b[2];
    float d[CHAINS][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = 0x3f800000u ^ ((seed + threadIdx.x + i) & 0x3ff) << 13;   // TF32 values near 1
#pragma unroll
    for (int i = 0; i < 2; ++i) b[i] = 0x3f000000u ^ ((seed * 3 + threadIdx.x + i) & 0x3ff) << 13;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c)
#pragma unroll
        for (int i = 0; i < 4; ++i) d[c][i] = 0.0f;
    for (int it = 0; it < iterations; ++it) {
#pragma unroll
        for (int c = 0; c < CHAINS; ++c)
            asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                         "{%0,%1,%2,%3};\n"
                         : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) s += d[c][0] + d[c][1] + d[c][2] + d[c][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;     // keeps every MMA live
}

#define MMA_PEAK_16(name, type)                                                                               \
    extern "C" __global__ void name(float* __restrict__ out, int iterations, unsigned seed)                  \
    {                                                                                                         \
        unsigned a[4], b[2];                                                                                  \
        float d[CHAINS][4];                                                                                   \
        for (int i = 0; i < 4; ++i) a[i] = 0x3c003c00u ^ ((seed + threadIdx.x + i) & 0xff);                   \
        for (int i = 0; i < 2; ++i) b[i] = 0x38003800u ^ ((seed * 3 + threadIdx.x + i) & 0xff);               \
        for (int c = 0; c < CHAINS; ++c)                                                                      \
            for (int i = 0; i < 4; ++i) d[c][i] = 0.0f;                                                       \
        for (int it = 0; it < iterations; ++it) {                                                             \
            _Pragma("unroll") for (int c = 0; c < CHAINS; ++c)                                                \
                asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." type "." type ".f32 {%0,%1,%2,%3}, "     \
                             "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"                                       \
                             : "+f"(d[c][0]), "+f"(d[c][1]), "+f"(d[c][2]), "+f"(d[c][3])                      \
                             : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));              \
        }                                                                                                     \
        float s = 0.0f;                                                                                       \
        for (int c = 0; c < CHAINS; ++c) s += d[c][0] + d[c][1] + d[c][2] + d[c][3];                          \
        out[blockIdx.x * blockDim.x + threadIdx.x] = s;                                                       \
    }

MMA_PEAK_16(mma_peak_f16, "f16")
MMA_PEAK_16(mma_peak_bf16, "bf16")
