// Chapter 9: C = A @ B on the tensor cores. A is M x K, B is K x N, both row-major, in TF32
// (float arrays; the tensor core reads the top 19 bits of each float), FP16 or BF16 (arrays of
// unsigned short holding the 16-bit pattern); products are exact and summed in FP32; C is
// float32, M x N, row-major.
//
// The CPU reference is kernels/tensor_cores.py: gemm_reference (float64 product of the very
// inputs the kernel reads, so the only error left is the tensor core's), and round_inputs, which
// shows what TF32 / FP16 / BF16 do to an FP32 input.
//
// This file needs no CUDA header: the WMMA API (mma.h) is three PTX instructions (wmma.load,
// wmma.mma, wmma.store), and mma.sync, ldmatrix, cp.async and wgmma are PTX too, so every one of
// them is written here as the inline PTX it compiles to. NVRTC compiles it for compute_90 (v7's
// body is empty there) and for sm_90a (v7 is Hopper's wgmma: only sm_90a has it).
//
// Size requirements (the launcher in kernels/tensor_cores.py checks them before a launch):
//   v1, v2 (fragments straight from global memory): M, N multiples of 16, K of the MMA's k
//   (8 for TF32, 16 for FP16/BF16); v3-v6: M, N, K multiples of the block tile (BM, BN, BK
//   below); v7: M % 128, N % 256, K % 64.
//
// Napkin math: 2*M*N*K FLOPs. Bytes: each matrix once, (M*K + K*N) * input bytes + 4*M*N.
// At 4096^3 in FP16: 137 GFLOP against 101 MB: 1365 FLOP/byte; the H100 SXM's dense peaks are
// 989 TFLOP/s FP16/BF16 and 495 TF32 against 3.35 TB/s: ridge points of 295 and 148 FLOP/byte,
// so every version here is bound by how fast it feeds the tensor cores, not by HBM.

typedef unsigned int u32;
typedef unsigned short u16;

// ============================================================================================
// numba: the warp-level MMA that kernels/tensor_cores.py links into a numba kernel
// (cuda.declare_device with link=: this section, from here to "end numba", is compiled alone)
// ============================================================================================

// one m16n8k16 (FP16 / BF16) or m16n8k8 (TF32) MMA of a warp: d += a * b. Who holds what
// (g = lane / 4, t = lane % 4; 16-bit pairs packed low half first):
//   a[0]: A[g][2t, 2t+1]  a[1]: A[g+8][2t, 2t+1]  a[2]: A[g][2t+8, 2t+9]  a[3]: A[g+8][2t+8, 2t+9]
//   b[0]: B[2t, 2t+1][g]  b[1]: B[2t+8, 2t+9][g]
//   d[0], d[1]: C[g][2t, 2t+1]   d[2], d[3]: C[g+8][2t, 2t+1]
//   (TF32 m16n8k8, one float per register: a: A[g][t], A[g+8][t], A[g][t+4], A[g+8][t+4];
//    b: B[t][g], B[t+4][g])
__device__ __forceinline__ void mma_f16_m16n8k16(float* d, const u32* a, const u32* b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void mma_bf16_m16n8k16(float* d, const u32* a, const u32* b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ void mma_tf32_m16n8k8(float* d, const u32* a, const u32* b)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// numba's calling convention: int status, then a pointer to the return value (4 floats here)
struct TcFloat4 { float v[4]; };

extern "C" __device__ int tc_mma_f16_m16n8k16(TcFloat4* out, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1,
                                              float c0, float c1, float c2, float c3)
{
    const u32 a[4] = {a0, a1, a2, a3}, b[2] = {b0, b1};
    float d[4] = {c0, c1, c2, c3};
    mma_f16_m16n8k16(d, a, b);
    for (int i = 0; i < 4; ++i) out->v[i] = d[i];
    return 0;
}

extern "C" __device__ int tc_mma_bf16_m16n8k16(TcFloat4* out, u32 a0, u32 a1, u32 a2, u32 a3, u32 b0, u32 b1,
                                               float c0, float c1, float c2, float c3)
{
    const u32 a[4] = {a0, a1, a2, a3}, b[2] = {b0, b1};
    float d[4] = {c0, c1, c2, c3};
    mma_bf16_m16n8k16(d, a, b);
    for (int i = 0; i < 4; ++i) out->v[i] = d[i];
    return 0;
}
// ==================================== end numba =============================================

// ---- the three precisions: the storage type, the k of one mma.sync, and that mma ----------
struct Tf32 {
    typedef float T;
    static constexpr int MMA_K = 8;
    static constexpr bool IS_BF16 = false;
    static __device__ __forceinline__ void mma(float* d, const u32* a, const u32* b) { mma_tf32_m16n8k8(d, a, b); }
};
struct F16 {
    typedef u16 T;
    static constexpr int MMA_K = 16;
    static constexpr bool IS_BF16 = false;
    static __device__ __forceinline__ void mma(float* d, const u32* a, const u32* b) { mma_f16_m16n8k16(d, a, b); }
};
struct Bf16 {
    typedef u16 T;
    static constexpr int MMA_K = 16;
    static constexpr bool IS_BF16 = true;
    static __device__ __forceinline__ void mma(float* d, const u32* a, const u32* b) { mma_bf16_m16n8k16(d, a, b); }
};

// ---- WMMA (nvcuda::wmma in mma.h) as the PTX it compiles to; generic addresses, so the same
// wrappers read global memory (v1, v2) and shared memory (v3). ldm is in elements.
__device__ __forceinline__ u32 tf32_round(u32 x)      // wmma::__float_to_tf32
{
    u32 r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(x)));
    return r;
}

__device__ __forceinline__ void wmma_load_a(u32 (&a)[4], const float* p, int ldm)    // TF32: 4 registers
{
    asm volatile("wmma.load.a.sync.aligned.row.m16n16k8.tf32 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "l"(p), "r"(ldm));
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = tf32_round(a[i]);
}
__device__ __forceinline__ void wmma_load_b(u32 (&b)[4], const float* p, int ldm)
{
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k8.tf32 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]) : "l"(p), "r"(ldm));
#pragma unroll
    for (int i = 0; i < 4; ++i) b[i] = tf32_round(b[i]);
}

// FP16: 8 registers per fragment (16 halves); BF16: 4 (8 bf16)
template <class P> struct WmmaFrag { u32 r[8]; };
template <> struct WmmaFrag<Bf16> { u32 r[4]; };

template <class P>
__device__ __forceinline__ void wmma_load_a16(WmmaFrag<P>& a, const u16* p, int ldm)
{
    if constexpr (!P::IS_BF16) {
        asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;\n"
                     : "=r"(a.r[0]), "=r"(a.r[1]), "=r"(a.r[2]), "=r"(a.r[3]),
                       "=r"(a.r[4]), "=r"(a.r[5]), "=r"(a.r[6]), "=r"(a.r[7]) : "l"(p), "r"(ldm));
    } else {
        asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.bf16 {%0, %1, %2, %3}, [%4], %5;\n"
                     : "=r"(a.r[0]), "=r"(a.r[1]), "=r"(a.r[2]), "=r"(a.r[3]) : "l"(p), "r"(ldm));
    }
}
template <class P>
__device__ __forceinline__ void wmma_load_b16(WmmaFrag<P>& b, const u16* p, int ldm)
{
    if constexpr (!P::IS_BF16) {
        asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.f16 {%0, %1, %2, %3, %4, %5, %6, %7}, [%8], %9;\n"
                     : "=r"(b.r[0]), "=r"(b.r[1]), "=r"(b.r[2]), "=r"(b.r[3]),
                       "=r"(b.r[4]), "=r"(b.r[5]), "=r"(b.r[6]), "=r"(b.r[7]) : "l"(p), "r"(ldm));
    } else {
        asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.bf16 {%0, %1, %2, %3}, [%4], %5;\n"
                     : "=r"(b.r[0]), "=r"(b.r[1]), "=r"(b.r[2]), "=r"(b.r[3]) : "l"(p), "r"(ldm));
    }
}

#define WMMA_C8 "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]), "+f"(c[4]), "+f"(c[5]), "+f"(c[6]), "+f"(c[7])

__device__ __forceinline__ void wmma_mma(float (&c)[8], const u32 (&a)[4], const u32 (&b)[4])      // TF32
{
    asm volatile("wmma.mma.sync.aligned.row.row.m16n16k8.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, {%12, %13, %14, %15}, "
                 "{%0, %1, %2, %3, %4, %5, %6, %7};\n"
                 : WMMA_C8 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]));
}
template <class P>
__device__ __forceinline__ void wmma_mma16(float (&c)[8], const WmmaFrag<P>& a, const WmmaFrag<P>& b)
{
    if constexpr (!P::IS_BF16) {
        asm volatile("wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11, %12, %13, %14, %15}, "
                     "{%16, %17, %18, %19, %20, %21, %22, %23}, {%0, %1, %2, %3, %4, %5, %6, %7};\n"
                     : WMMA_C8
                     : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(a.r[4]), "r"(a.r[5]), "r"(a.r[6]), "r"(a.r[7]),
                       "r"(b.r[0]), "r"(b.r[1]), "r"(b.r[2]), "r"(b.r[3]), "r"(b.r[4]), "r"(b.r[5]), "r"(b.r[6]), "r"(b.r[7]));
    } else {
        asm volatile("wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, {%12, %13, %14, %15}, "
                     "{%0, %1, %2, %3, %4, %5, %6, %7};\n"
                     : WMMA_C8 : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]),
                                 "r"(b.r[0]), "r"(b.r[1]), "r"(b.r[2]), "r"(b.r[3]));
    }
}

template <int MMA_K>
__device__ __forceinline__ void wmma_store(float* p, const float (&c)[8], int ldm)
{
    if constexpr (MMA_K == 8) {
        asm volatile("wmma.store.d.sync.aligned.row.m16n16k8.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;\n"
                     :: "l"(p), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]), "f"(c[4]), "f"(c[5]), "f"(c[6]), "f"(c[7]),
                        "r"(ldm) : "memory");
    } else {
        asm volatile("wmma.store.d.sync.aligned.row.m16n16k16.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;\n"
                     :: "l"(p), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]), "f"(c[4]), "f"(c[5]), "f"(c[6]), "f"(c[7]),
                        "r"(ldm) : "memory");
    }
}

// ---- v1: WMMA TF32 m16n16k8, one warp per 16 x 16 tile of C, fragments loaded straight from global memory: the FP32 FMA loop of chapter 6 becomes one tensor-core instruction per 16x16x8 block (4096 FMAs)
#define V1_WARPS 4
extern "C" __global__ void __launch_bounds__(V1_WARPS * 32)
tc_v1_wmma_tf32(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    const int tile_n = blockIdx.x * V1_WARPS + threadIdx.x / 32;   // the warp's 16 columns of C
    const int tile_m = blockIdx.y;                                 // and its 16 rows
    if (tile_n * 16 >= N) return;                                  // whole warps only: wmma is warp-wide
    float c[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    u32 a[4], b[4];
    for (int k = 0; k < K; k += 8) {
        wmma_load_a(a, A + (size_t)tile_m * 16 * K + k, K);
        wmma_load_b(b, B + (size_t)k * N + tile_n * 16, N);
        wmma_mma(c, a, b);
    }
    wmma_store<8>(C + (size_t)tile_m * 16 * N + tile_n * 16, c, N);
}

// v2's body: one warp per 16 x 16 tile of C, FP16 or BF16 fragments from global memory
template <class P>
__device__ __forceinline__ void wmma_naive16(const u16* __restrict__ A, const u16* __restrict__ B,
                                             float* __restrict__ C, int M, int N, int K)
{
    const int tile_n = blockIdx.x * V1_WARPS + threadIdx.x / 32;
    const int tile_m = blockIdx.y;
    if (tile_n * 16 >= N) return;
    float c[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    WmmaFrag<P> a, b;
    for (int k = 0; k < K; k += 16) {
        wmma_load_a16(a, A + (size_t)tile_m * 16 * K + k, K);
        wmma_load_b16(b, B + (size_t)k * N + tile_n * 16, N);
        wmma_mma16(c, a, b);
    }
    wmma_store<16>(C + (size_t)tile_m * 16 * N + tile_n * 16, c, N);
}

// ---- v2: WMMA FP16 / BF16 m16n16k16: half the bytes per element and twice the k per instruction; the tensor cores run 16-bit inputs at twice TF32's rate
extern "C" __global__ void __launch_bounds__(V1_WARPS * 32)
tc_v2_wmma_f16(const u16* __restrict__ A, const u16* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    wmma_naive16<F16>(A, B, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(V1_WARPS * 32)
tc_v2_wmma_bf16(const u16* __restrict__ A, const u16* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    wmma_naive16<Bf16>(A, B, C, M, N, K);
}

// ---- helpers of the tiled versions ----------------------------------------------------------
// a warp's accumulators of MT x NT mma tiles (4 floats each) set to zero
template <int MT, int NT>
__device__ __forceinline__ void zero_accumulators(float (&acc)[MT][NT][4])
{
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;
}
__device__ __forceinline__ u32 smem_u32(const void* p) { return (u32)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void st_shared_v4(u32 addr, uint4 v)
{
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" :: "r"(addr), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}
__device__ __forceinline__ u32 ld_shared_b32(u32 addr)
{
    u32 v;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr));
    return v;
}
__device__ __forceinline__ void st_shared_f2(u32 addr, float x, float y)
{
    asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" :: "r"(addr), "f"(x), "f"(y) : "memory");
}
__device__ __forceinline__ float4 ld_shared_f4(u32 addr)
{
    float4 v;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr) : "memory");
    return v;
}
// ldmatrix: the warp reads four 8 x 8 matrices of 16-bit elements; lanes 8i .. 8i+7 give the
// addresses of matrix i's rows, and lane l receives row l/4, elements 2(l%4) and 2(l%4)+1 of each
// (.trans: column l/4, rows 2(l%4) and 2(l%4)+1). One instruction fills an mma's A fragment.
__device__ __forceinline__ void ldmatrix_x4(u32* r, u32 addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(u32* r, u32 addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
// cp.async: 16 bytes from global to shared memory without passing through registers; the
// copies of one commit group are waited for together (wait_group N: all but the N newest done)
__device__ __forceinline__ void cp_async_16(u32 dst, const void* src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }

// Consecutive blocks walk down GROUP block rows before moving right: the blocks resident at
// one time share tiles of A and B in L2 (chapter 6's v7 does the same).
template <int GROUP>
__device__ __forceinline__ void grouped_tile(int bid, int tiles_m, int tiles_n, int& bm, int& bn)
{
    const int first = bid / (GROUP * tiles_n) * GROUP;
    const int rows = min(tiles_m - first, GROUP);
    const int in_group = bid % (GROUP * tiles_n);
    bm = first + in_group % rows;
    bn = in_group / rows;
}
template <int GROUP>
__device__ __forceinline__ void grouped_block(int& bm, int& bn)
{
    grouped_tile<GROUP>(blockIdx.y * gridDim.x + blockIdx.x, gridDim.y, gridDim.x, bm, bn);
}

// ---- v3: WMMA through shared memory: a 128 x 128 block tile (8 warps, 64 x 32 each: 4 x 2 fragments) is staged in padded shared memory, so each element of A and B is read from global memory once per block instead of once per warp tile
#define V3_BM 128
#define V3_BN 128
#define V3_BK 32
#define V3_THREADS 256
template <class P>
__device__ __forceinline__ void wmma_tiled(const typename P::T* __restrict__ A, const typename P::T* __restrict__ B,
                                          float* __restrict__ C, int M, int N, int K)
{
    typedef typename P::T T;
    constexpr int EPC = 16 / sizeof(T);                        // elements per 16-byte chunk
    constexpr int PAD = EPC;                                   // 16 bytes: rows stay 16-byte aligned, banks shift
    constexpr int LDA = V3_BK + PAD, LDB = V3_BN + PAD;
    __shared__ __align__(128) T sa[V3_BM * LDA];
    __shared__ __align__(128) T sb[V3_BK * LDB];
    const int t = threadIdx.x, warp = t / 32;
    const int wm = warp / 4, wn = warp % 4;                    // 2 x 4 warps, 64 x 32 outputs each
    int bm, bn;
    grouped_block<8>(bm, bn);
    const int m0 = bm * V3_BM, n0 = bn * V3_BN;
    float c[4][2][8];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
            for (int e = 0; e < 8; ++e) c[i][j][e] = 0.f;
    for (int k0 = 0; k0 < K; k0 += V3_BK) {
        __syncthreads();                                       // the previous tile is no longer read
#pragma unroll
        for (int p = 0; p < V3_BM * V3_BK / EPC / V3_THREADS; ++p) {
            const int i = t + p * V3_THREADS, r = i / (V3_BK / EPC), q = i % (V3_BK / EPC) * EPC;
            *reinterpret_cast<uint4*>(&sa[r * LDA + q]) =
                *reinterpret_cast<const uint4*>(A + (size_t)(m0 + r) * K + k0 + q);
        }
#pragma unroll
        for (int p = 0; p < V3_BK * V3_BN / EPC / V3_THREADS; ++p) {
            const int i = t + p * V3_THREADS, r = i / (V3_BN / EPC), q = i % (V3_BN / EPC) * EPC;
            *reinterpret_cast<uint4*>(&sb[r * LDB + q]) =
                *reinterpret_cast<const uint4*>(B + (size_t)(k0 + r) * N + n0 + q);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < V3_BK; kk += P::MMA_K) {
            if constexpr (P::MMA_K == 8) {
                u32 a[4][4], b[2][4];
#pragma unroll
                for (int i = 0; i < 4; ++i) wmma_load_a(a[i], &sa[(wm * 64 + i * 16) * LDA + kk], LDA);
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma_load_b(b[j], &sb[kk * LDB + wn * 32 + j * 16], LDB);
#pragma unroll
                for (int i = 0; i < 4; ++i)
#pragma unroll
                    for (int j = 0; j < 2; ++j) wmma_mma(c[i][j], a[i], b[j]);
            } else {
                WmmaFrag<P> a[4], b[2];
#pragma unroll
                for (int i = 0; i < 4; ++i) wmma_load_a16(a[i], &sa[(wm * 64 + i * 16) * LDA + kk], LDA);
#pragma unroll
                for (int j = 0; j < 2; ++j) wmma_load_b16(b[j], &sb[kk * LDB + wn * 32 + j * 16], LDB);
#pragma unroll
                for (int i = 0; i < 4; ++i)
#pragma unroll
                    for (int j = 0; j < 2; ++j) wmma_mma16(c[i][j], a[i], b[j]);
            }
        }
    }
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
            wmma_store<P::MMA_K>(C + (size_t)(m0 + wm * 64 + i * 16) * N + n0 + wn * 32 + j * 16, c[i][j], N);
}

extern "C" __global__ void __launch_bounds__(V3_THREADS)
tc_v3_wmma_tiled_tf32(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    wmma_tiled<Tf32>(A, B, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(V3_THREADS)
tc_v3_wmma_tiled_f16(const u16* __restrict__ A, const u16* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    wmma_tiled<F16>(A, B, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(V3_THREADS)
tc_v3_wmma_tiled_bf16(const u16* __restrict__ A, const u16* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    wmma_tiled<Bf16>(A, B, C, M, N, K);
}

// ============================================================================================
// v4-v6: mma.sync with fragments from shared memory. One body, three switches: SWIZZLE (v5),
// STAGES (1: load, sync, compute; >= 2: a cp.async ring of STAGES tiles, v6), the precision.
// Shared tiles are row-major, in 16-byte chunks: A is BM rows of BK elements, B is BK rows of BN.
// ============================================================================================

// Where chunk `chunk` of row `row` of A lives. ldmatrix reads 8 rows x 16 bytes at once; without
// a swizzle, rows 128 bytes apart (TF32: every row; FP16: every second row) fall into the same 4
// banks: an 8-way (4-way) conflict. XOR-ing the chunk index with the row spreads the 8 rows over
// all 32 banks, and keeps each row's chunks a permutation of themselves (cp.async writes stay whole).
template <int ROW_CHUNKS, bool SWIZZLE>
__device__ __forceinline__ int swizzle_a(int row, int chunk)
{
    static_assert(ROW_CHUNKS >= 4, "A's rows must be at least 64 bytes");
    if (!SWIZZLE) return chunk;
    if (ROW_CHUNKS >= 8) return chunk ^ (row & 7);            // 128-byte rows: the row's low 3 bits
    return chunk ^ ((row >> 1) & 3);                          // 64-byte rows: two rows share 128 bytes
}
// B: FP16 reads 8 consecutive k-rows of one chunk with ldmatrix.trans (XOR with k & 7); TF32 reads
// single words, rows k .. k+3 and 8 consecutive columns (two chunks): XOR with 2 * (k & 3) puts the
// 4 rows' chunk pairs on 8 different 16-byte bank groups
template <bool TF32, bool SWIZZLE>
__device__ __forceinline__ int swizzle_b(int row, int chunk)
{
    if (!SWIZZLE) return chunk;
    return TF32 ? chunk ^ ((row & 3) << 1) : chunk ^ (row & 7);
}

template <class P, int BM, int BN, int BK, int WM, int WN, int STAGES, bool SWIZZLE>
struct MmaTile {
    typedef typename P::T T;
    static constexpr bool TF32 = P::MMA_K == 8;
    static constexpr int THREADS = (BM / WM) * (BN / WN) * 32;
    static constexpr int EPC = 16 / sizeof(T);                  // elements per 16-byte chunk
    static constexpr int A_CHUNKS = BK / EPC, B_CHUNKS = BN / EPC;   // chunks per row
    static constexpr int A_BYTES = BM * BK * sizeof(T), B_BYTES = BK * BN * sizeof(T);
    static constexpr int BUFFERS = STAGES > 1 ? STAGES : 1;
    static constexpr int SMEM = BUFFERS * (A_BYTES + B_BYTES);
    static constexpr int MT = WM / 16, NT = WN / 8;             // mma tiles per warp (m16 x n8)
    static_assert(BM * A_CHUNKS % THREADS == 0 && BK * B_CHUNKS % THREADS == 0, "tile loads must split evenly");
    static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0 && B_CHUNKS >= 8, "tile shape");

    // one BM x BK tile of A and one BK x BN tile of B into buffer (sa, sb): cp.async or load + store
    static __device__ __forceinline__ void load(const T* __restrict__ A, const T* __restrict__ B, u32 sa, u32 sb,
                                                int m0, int n0, int k0, int N, int K)
    {
        const int t = threadIdx.x;
#pragma unroll
        for (int p = 0; p < BM * A_CHUNKS / THREADS; ++p) {
            const int i = t + p * THREADS, r = i / A_CHUNKS, c = i % A_CHUNKS;
            const T* src = A + (size_t)(m0 + r) * K + k0 + c * EPC;
            const u32 dst = sa + (r * A_CHUNKS + swizzle_a<A_CHUNKS, SWIZZLE>(r, c)) * 16;
            if (STAGES > 1) cp_async_16(dst, src);
            else st_shared_v4(dst, *reinterpret_cast<const uint4*>(src));
        }
#pragma unroll
        for (int p = 0; p < BK * B_CHUNKS / THREADS; ++p) {
            const int i = t + p * THREADS, r = i / B_CHUNKS, c = i % B_CHUNKS;
            const T* src = B + (size_t)(k0 + r) * N + n0 + c * EPC;
            const u32 dst = sb + (r * B_CHUNKS + swizzle_b<TF32, SWIZZLE>(r, c)) * 16;
            if (STAGES > 1) cp_async_16(dst, src);
            else st_shared_v4(dst, *reinterpret_cast<const uint4*>(src));
        }
    }

    // the warp's WM x WN outputs += its rows of the A tile times its columns of the B tile
    static __device__ __forceinline__ void compute(float (&acc)[MT][NT][4], u32 sa, u32 sb, int wm, int wn)
    {
        const int lane = threadIdx.x % 32;
#pragma unroll
        for (int kk = 0; kk < BK / P::MMA_K; ++kk) {
            u32 a[MT][4], b[NT][2];
#pragma unroll
            for (int i = 0; i < MT; ++i) {
                // lanes 0-15: rows 0-15 at k 0 (matrices 0, 1); lanes 16-31: the same rows 16 bytes on
                // (matrices 2, 3): a[0..3] = (g, k lo), (g+8, k lo), (g, k hi), (g+8, k hi) as mma wants
                const int row = wm * WM + i * 16 + (lane & 15), c = kk * 2 + (lane >> 4);
                ldmatrix_x4(a[i], sa + (row * A_CHUNKS + swizzle_a<A_CHUNKS, SWIZZLE>(row, c)) * 16);
            }
            if constexpr (!TF32) {
#pragma unroll
                for (int j = 0; j < NT / 2; ++j) {
                    // matrices: k 0-7 / 8-15 of columns n..n+7, then of n+8..n+15; .trans gives each
                    // lane two consecutive k of one column: b[0], b[1] of two n8 tiles
                    const int mat = lane >> 3;
                    const int k = kk * 16 + (mat & 1) * 8 + (lane & 7), n = wn * WN + j * 16 + (mat >> 1) * 8;
                    u32 r[4];
                    ldmatrix_x4_trans(r, sb + (k * B_CHUNKS + swizzle_b<TF32, SWIZZLE>(k, n / 8)) * 16);
                    b[2 * j][0] = r[0]; b[2 * j][1] = r[1]; b[2 * j + 1][0] = r[2]; b[2 * j + 1][1] = r[3];
                }
            } else {
#pragma unroll
                for (int j = 0; j < NT; ++j) {
                    // 32-bit elements: ldmatrix.trans would split them, so each lane reads B[t][g], B[t+4][g]
                    const int n = wn * WN + j * 8 + (lane >> 2), k = kk * 8 + (lane & 3);
                    b[j][0] = ld_shared_b32(sb + (k * B_CHUNKS + swizzle_b<TF32, SWIZZLE>(k, n / 4)) * 16 + (n % 4) * 4);
                    b[j][1] = ld_shared_b32(sb + ((k + 4) * B_CHUNKS + swizzle_b<TF32, SWIZZLE>(k + 4, n / 4)) * 16 + (n % 4) * 4);
                }
            }
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j) P::mma(acc[i][j], a[i], b[j]);
        }
    }

    static __device__ __forceinline__ void run(const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C,
                                               int M, int N, int K)
    {
        extern __shared__ __align__(128) unsigned char smem[];
        const u32 base = smem_u32(smem);
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        const int wm = warp / (BN / WN), wn = warp % (BN / WN);
        int bm, bn;
        grouped_block<8>(bm, bn);
        const int m0 = bm * BM, n0 = bn * BN;
        float acc[MT][NT][4];
        zero_accumulators(acc);
        const int tiles = K / BK;
        auto sa = [&](int s) { return base + s * (A_BYTES + B_BYTES); };
        auto sb = [&](int s) { return base + s * (A_BYTES + B_BYTES) + A_BYTES; };
        // v4 and v5: load, sync, compute (the pipelined v6 is MmaPipeline below, which reuses load())
        for (int kt = 0; kt < tiles; ++kt) {
            __syncthreads();                                  // everyone is done reading the last tile
            load(A, B, sa(0), sb(0), m0, n0, kt * BK, N, K);
            __syncthreads();
            compute(acc, sa(0), sb(0), wm, wn);
        }
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                const int row = m0 + wm * WM + i * 16 + (lane >> 2), col = n0 + wn * WN + j * 8 + (lane & 3) * 2;
                *reinterpret_cast<float2*>(&C[(size_t)row * N + col]) = make_float2(acc[i][j][0], acc[i][j][1]);
                *reinterpret_cast<float2*>(&C[(size_t)(row + 8) * N + col]) = make_float2(acc[i][j][2], acc[i][j][3]);
            }
    }
};

// Block tiles (kernels/tensor_cores.py: MMA_TILE has the same numbers for the launcher):
//   TF32:      128 x 128 x 32, 8 warps of 64 x 32 (64 accumulators a thread), 32 KB a stage
//   FP16/BF16: 128 x 256 x 32, 8 warps of 64 x 64 (128 accumulators a thread), 24 KB a stage
#define TF32_TILE 128, 128, 32, 64, 32
#define H16_TILE 128, 256, 32, 64, 64
#define MMA_KERNEL(name, P, TILE, STAGES, SWIZZLE, T)                                                    \
    extern "C" __global__ void __launch_bounds__(256, 1)                                                  \
    name(const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C, int M, int N, int K)    \
    {                                                                                                     \
        MmaTile<P, TILE, STAGES, SWIZZLE>::run(A, B, C, M, N, K);                                         \
    }

// ---- v4: mma.sync (m16n8k8 TF32, m16n8k16 FP16/BF16) with ldmatrix: a block tile of 128 x 128 (TF32) or 128 x 256 and warp tiles of 64 x 32 / 64 x 64, so each fragment read from shared memory feeds 4-8 MMAs; ldmatrix fills a whole A fragment in one instruction
MMA_KERNEL(tc_v4_mma_tf32, Tf32, TF32_TILE, 1, false, float)
MMA_KERNEL(tc_v4_mma_f16, F16, H16_TILE, 1, false, u16)
MMA_KERNEL(tc_v4_mma_bf16, Bf16, H16_TILE, 1, false, u16)

// ---- v5: v4 with an XOR-swizzled shared layout: the 8 rows an ldmatrix phase reads land on 8 different bank groups, no more 4-8-way conflicts
MMA_KERNEL(tc_v5_mma_swizzle_tf32, Tf32, TF32_TILE, 1, true, float)
MMA_KERNEL(tc_v5_mma_swizzle_f16, F16, H16_TILE, 1, true, u16)
MMA_KERNEL(tc_v5_mma_swizzle_bf16, Bf16, H16_TILE, 1, true, u16)

// ============================================================================================
// v6: the cp.async pipeline, a template over its tuning knobs (the benchmark sweeps them):
//   BM x BN x BK   block tile; WM x WN the warp tile ((BM/WM) * (BN/WN) warps)
//   STAGES         tiles in the shared ring; STAGES-1 of them are in flight while one is multiplied
//   MINB           __launch_bounds__' minimum blocks per SM: ptxas caps the registers at
//                  65536 / (MINB * threads), so MINB = 2 lets two blocks share an SM (their
//                  barriers and epilogues overlap the other block's MMAs) where shared memory allows
//   GROUP          block rows walked before moving right (L2 reuse of A and B tiles)
//   EPI_SMEM       the epilogue goes through shared memory: each warp's 16-row strips are
//                  written there and read back as float4, so C is stored with 16-byte,
//                  row-contiguous stores (512 bytes a warp instruction) instead of float2
// Inside a k-tile the fragments are double-buffered in registers: the ldmatrix of k-step kk+1
// are issued before the MMAs of kk, and the first k-step of the next tile is loaded right after
// the barrier that makes it visible, so the tensor cores never wait on a shared-memory load.
// One barrier per k-tile: at the last k-step it (1) publishes tile kt+1 (cp.async.wait_group
// STAGES-2: the STAGES-2 newest groups may still fly) and (2) tells every warp that tile kt-1's
// slot, which the next cp.async overwrites, is read by no one any more.
// ============================================================================================
template <class P, int BM, int BN, int BK, int WM, int WN, int STAGES, int GROUP, bool EPI_SMEM>
struct MmaPipeline {
    typedef MmaTile<P, BM, BN, BK, WM, WN, STAGES, true> Tile;   // tile loads and swizzles as v5
    typedef typename P::T T;
    static constexpr bool TF32 = Tile::TF32;
    static constexpr int MT = Tile::MT, NT = Tile::NT, A_CHUNKS = Tile::A_CHUNKS, B_CHUNKS = Tile::B_CHUNKS;
    static constexpr int KSTEPS = BK / P::MMA_K;
    static constexpr int STAGE_BYTES = Tile::A_BYTES + Tile::B_BYTES;
    static constexpr int WARPS = (BM / WM) * (BN / WN);
    static constexpr int EPI_LD = WN + 8;                       // floats per staged row: +8 keeps float2 writes conflict-free
    static constexpr int EPI_BYTES = EPI_SMEM ? WARPS * 16 * EPI_LD * 4 : 0;
    static constexpr int SMEM = STAGES * STAGE_BYTES > EPI_BYTES ? STAGES * STAGE_BYTES : EPI_BYTES;
    static_assert(STAGES >= 2, "a pipeline has at least 2 stages");
    static_assert(KSTEPS % 2 == 0, "fragments alternate between two register sets: an even number of k-steps a tile");
    static_assert(!TF32 || NT % 1 == 0, "");

    // The tile copies: each thread moves the same chunk column of rows r0, r0 + ROWS, ... of A (and of
    // B); ROWS is a multiple of the swizzle's period, so every pass has the thread's first swizzle
    // and the shared offsets are one base plus a constant. Only two global pointers stay live,
    // advanced by one tile per copy.
    static constexpr int THREADS = WARPS * 32;
    static constexpr int A_ROWS = THREADS / A_CHUNKS, B_ROWS = THREADS / B_CHUNKS;   // rows per pass
    static_assert(THREADS % A_CHUNKS == 0 && THREADS % B_CHUNKS == 0 && BM % A_ROWS == 0 && BK % B_ROWS == 0,
                  "tile copies must split evenly");
    static_assert(A_ROWS % 8 == 0 && B_ROWS % (TF32 ? 4 : 8) == 0, "a pass must keep each thread's swizzle");
    struct Copier {
        const T* a;                                           // this thread's first A chunk of the next tile
        const T* b;
        u32 a_off, b_off;                                     // and where it lands in a stage
        size_t a_pass, b_pass;                                // A_ROWS rows of A, B_ROWS rows of B, in elements
    };
    static __device__ __forceinline__ Copier copier(const T* A, const T* B, int m0, int n0, int N, int K)
    {
        const int t = threadIdx.x;
        const int ar = t / A_CHUNKS, ac = t % A_CHUNKS, br = t / B_CHUNKS, bc = t % B_CHUNKS;
        Copier c;
        c.a = A + (size_t)(m0 + ar) * K + ac * Tile::EPC;
        c.b = B + (size_t)br * N + n0 + bc * Tile::EPC;
        c.a_off = (ar * A_CHUNKS + swizzle_a<A_CHUNKS, true>(ar, ac)) * 16;
        c.b_off = (br * B_CHUNKS + swizzle_b<TF32, true>(br, bc)) * 16;
        c.a_pass = (size_t)A_ROWS * K;
        c.b_pass = (size_t)B_ROWS * N;
        return c;
    }
    // the next k-tile into the stage at (sa, sb), then the pointers move one tile on
    static __device__ __forceinline__ void copy_tile(Copier& c, u32 sa, u32 sb, int N)
    {
#pragma unroll
        for (int p = 0; p < BM / A_ROWS; ++p) cp_async_16(sa + c.a_off + p * A_ROWS * A_CHUNKS * 16, c.a + p * c.a_pass);
#pragma unroll
        for (int p = 0; p < BK / B_ROWS; ++p) cp_async_16(sb + c.b_off + p * B_ROWS * B_CHUNKS * 16, c.b + p * c.b_pass);
        c.a += BK;
        c.b += (size_t)BK * N;
    }

    struct Frags { u32 a[MT][4]; u32 b[NT][2]; };

    // Where this lane's ldmatrix / ld.shared of k-step 0, fragment 0 read, relative to a stage's
    // A or B tile, computed once: the other k-steps and fragments follow by an XOR and an add
    // (see fragment_offsets in kernels/tensor_cores.py, which checks this algebra against the
    // direct swizzle for every configuration), so a handful of registers hold all the addresses.
    //   A: chunk (2 kk + hi) ^ s(row) = (hi ^ s(row)) ^ 2 kk, since 2 kk has bit 0 clear and the
    //      swizzle depends on row mod 8 (fragments i are 16 rows apart: the same swizzle): off0 ^ 32 kk + i * 16 rows
    //   B (16-bit, .trans): chunk (c0 + 2 j + half) ^ (k & 7), k & 7 = lane & 7 for every kk: off0 ^ 32 (j & 3) + 128 (j >> 2) + kk * 16 rows
    //   B (TF32): chunk (c0 + 2 j + (g >> 1)) ^ 2 t: off0 ^ 32 (j & 3) + 128 (j >> 2) + kk * 8 rows
    struct Offsets { u32 a, b; };
    static __device__ __forceinline__ Offsets fragment_offsets(int wm, int wn)
    {
        const int lane = threadIdx.x % 32;
        Offsets o;
        const int row = wm * WM + (lane & 15);
        o.a = (row * A_CHUNKS + swizzle_a<A_CHUNKS, true>(row, lane >> 4)) * 16;
        if constexpr (!TF32) {
            const int mat = lane >> 3, k = (mat & 1) * 8 + (lane & 7), n = wn * WN + (mat >> 1) * 8;
            o.b = (k * B_CHUNKS + swizzle_b<false, true>(k, n / 8)) * 16;
        } else {
            const int n = wn * WN + (lane >> 2), k = lane & 3;
            o.b = (k * B_CHUNKS + swizzle_b<true, true>(k, n / 4)) * 16 + (n % 4) * 4;
        }
        return o;
    }

    // the warp's A and B fragments of k-step kk of the tile in (sa, sb): ldmatrix.x4 for A,
    // ldmatrix.x4.trans for 16-bit B (two n8 tiles each), two 32-bit loads per n8 tile for TF32 B
    static __device__ __forceinline__ void load_frags(Frags& f, u32 sa, u32 sb, Offsets o, int kk)
    {
        const u32 a_kk = sa + (o.a ^ (kk * 32));
#pragma unroll
        for (int i = 0; i < MT; ++i) ldmatrix_x4(f.a[i], a_kk + i * 16 * A_CHUNKS * 16);
        if constexpr (!TF32) {
#pragma unroll
            for (int j = 0; j < NT / 2; ++j) {
                u32 r[4];
                ldmatrix_x4_trans(r, sb + (o.b ^ ((j & 3) * 32)) + (j >> 2) * 128 + kk * 16 * B_CHUNKS * 16);
                f.b[2 * j][0] = r[0]; f.b[2 * j][1] = r[1]; f.b[2 * j + 1][0] = r[2]; f.b[2 * j + 1][1] = r[3];
            }
        } else {
#pragma unroll
            for (int j = 0; j < NT; ++j) {
                const u32 at = sb + (o.b ^ ((j & 3) * 32)) + (j >> 2) * 128 + kk * 8 * B_CHUNKS * 16;
                f.b[j][0] = ld_shared_b32(at);
                f.b[j][1] = ld_shared_b32(at + 4 * B_CHUNKS * 16);
            }
        }
    }

    static __device__ __forceinline__ void mma_all(float (&acc)[MT][NT][4], const Frags& f)
    {
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NT; ++j) P::mma(acc[i][j], f.a[i], f.b[j]);
    }

    // C from the accumulators: float2 stores straight from the fragments, or (EPI_SMEM) each
    // 16 x WN strip through the warp's own piece of shared memory and out as float4 rows
    static __device__ __forceinline__ void store(const float (&acc)[MT][NT][4], float* __restrict__ C, u32 base,
                                                 int row0, int col0, int N)
    {
        const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
        if constexpr (!EPI_SMEM) {
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j) {
                    const int row = row0 + i * 16 + (lane >> 2), col = col0 + j * 8 + (lane & 3) * 2;
                    *reinterpret_cast<float2*>(&C[(size_t)row * N + col]) = make_float2(acc[i][j][0], acc[i][j][1]);
                    *reinterpret_cast<float2*>(&C[(size_t)(row + 8) * N + col]) = make_float2(acc[i][j][2], acc[i][j][3]);
                }
        } else {
            const u32 strip = base + warp * 16 * EPI_LD * 4;
            constexpr int ROW_F4 = WN / 4;                       // float4 per strip row
#pragma unroll
            for (int i = 0; i < MT; ++i) {
#pragma unroll
                for (int j = 0; j < NT; ++j) {
                    const int r = lane >> 2, c = j * 8 + (lane & 3) * 2;
                    st_shared_f2(strip + (r * EPI_LD + c) * 4, acc[i][j][0], acc[i][j][1]);
                    st_shared_f2(strip + ((r + 8) * EPI_LD + c) * 4, acc[i][j][2], acc[i][j][3]);
                }
                __syncwarp();
#pragma unroll
                for (int p = 0; p < 16 * ROW_F4 / 32; ++p) {
                    const int e = lane + p * 32, r = e / ROW_F4, c4 = e % ROW_F4;
                    const float4 v = ld_shared_f4(strip + (r * EPI_LD + c4 * 4) * 4);
                    *reinterpret_cast<float4*>(&C[(size_t)(row0 + i * 16 + r) * N + col0 + c4 * 4]) = v;
                }
                __syncwarp();                                   // the strip is rewritten by the next i
            }
        }
    }

    static __device__ __forceinline__ void run(const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C,
                                               int M, int N, int K)
    {
        extern __shared__ __align__(128) unsigned char smem[];
        const u32 base = smem_u32(smem);
        const int warp = threadIdx.x / 32;
        const int wm = warp / (BN / WN), wn = warp % (BN / WN);
        int bm, bn;
        grouped_block<GROUP>(bm, bn);
        const int m0 = bm * BM, n0 = bn * BN;
        float acc[MT][NT][4];
        zero_accumulators(acc);
        const int tiles = K / BK;
        Copier cp = copier(A, B, m0, n0, N, K);
        // prologue: tiles 0 .. STAGES-2 in flight, one commit group each (empty ones too, so the
        // group count, and what wait_group N means, is the same for every thread and every tile)
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < tiles) copy_tile(cp, base + s * STAGE_BYTES, base + s * STAGE_BYTES + Tile::A_BYTES, N);
            cp_async_commit();
        }
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        Frags f[2];
        const Offsets offsets = fragment_offsets(wm, wn);
        load_frags(f[0], base, base + Tile::A_BYTES, offsets, 0);
        int read_slot = 0, write_slot = STAGES - 1;           // tile kt's slot, tile kt+STAGES-1's slot
        for (int kt = 0; kt < tiles; ++kt) {
            const u32 sa = base + read_slot * STAGE_BYTES, sb = sa + Tile::A_BYTES;
            const int next_slot = read_slot + 1 == STAGES ? 0 : read_slot + 1;
#pragma unroll
            for (int kk = 0; kk < KSTEPS; ++kk) {
                if (kk == KSTEPS - 1) {
                    cp_async_wait<STAGES - 2>();              // this thread's copies of tile kt+1 have landed
                    __syncthreads();                          // everyone's; and no one reads tile kt-1 any more
                    if (kt + 1 < tiles) {
                        const u32 na = base + next_slot * STAGE_BYTES;
                        load_frags(f[(kk + 1) & 1], na, na + Tile::A_BYTES, offsets, 0);
                    }
                } else {
                    load_frags(f[(kk + 1) & 1], sa, sb, offsets, kk + 1);
                }
                if (kk == 0) {                                // tile kt+STAGES-1 into the slot tile kt-1 left
                    const int next = kt + STAGES - 1;
                    if (next < tiles) {
                        const u32 wa = base + write_slot * STAGE_BYTES;
                        copy_tile(cp, wa, wa + Tile::A_BYTES, N);
                    }
                    cp_async_commit();
                }
                mma_all(acc, f[kk & 1]);
            }
            read_slot = next_slot;
            write_slot = write_slot + 1 == STAGES ? 0 : write_slot + 1;
        }
        cp_async_wait<0>();
        if constexpr (EPI_SMEM) __syncthreads();              // the ring's memory becomes the epilogue's
        store(acc, C, base, m0 + wm * WM, n0 + wn * WN, N);
    }
};

// One v6 configuration: (name, precision, storage type, BM, BN, BK, WM, WN, STAGES, MINB, GROUP, EPI_SMEM).
// kernels/tensor_cores.py reads these lines (and the comment after each) into its sweep table.
#define V6_KERNEL(name, P, T, BM, BN, BK, WM, WN, STAGES, MINB, GROUP, EPI)                                    \
    extern "C" __global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)                              \
    name(const T* __restrict__ A, const T* __restrict__ B, float* __restrict__ C, int M, int N, int K)          \
    {                                                                                                           \
        MmaPipeline<P, BM, BN, BK, WM, WN, STAGES, GROUP, EPI>::run(A, B, C, M, N, K);                          \
    }

// ---- v6: v5 fed by a cp.async ring of STAGES tiles (global loads go straight to shared memory, STAGES-1 tiles ahead, so the tensor cores never wait for a load and no registers hold tiles in transit), fragments double-buffered in registers across k-steps
V6_KERNEL(tc_v6_pipeline_tf32, Tf32, float, 128, 128, 32, 64, 32, 3, 1, 8, false)    // chapter 9's v6 TF32 (the first H100 run's tile)
V6_KERNEL(tc_v6_pipeline_f16, F16, u16, 128, 256, 32, 64, 64, 4, 1, 8, false)        // chapter 9's v6 FP16
V6_KERNEL(tc_v6_pipeline_bf16, Bf16, u16, 128, 256, 32, 64, 64, 4, 1, 8, false)      // chapter 9's v6 BF16
V6_KERNEL(tc_v6_pipeline_f16_2stages, F16, u16, 128, 256, 32, 64, 64, 2, 1, 8, false)   // the stage count, swept
V6_KERNEL(tc_v6_pipeline_f16_3stages, F16, u16, 128, 256, 32, 64, 64, 3, 1, 8, false)

// ---- the v6 sweep: candidates the benchmark times at 4096^3 (the best per precision is reported)
// FP16: BK = 64 halves the barriers per MMA and makes A's rows 128 bytes (the full 8-row swizzle)
V6_KERNEL(tc_v6s_f16_128x256x64_w64x64_s3_b1, F16, u16, 128, 256, 64, 64, 64, 3, 1, 8, false)    // CUTLASS's sm80 default shape: 48 KB a stage, 144 KB
V6_KERNEL(tc_v6s_f16_128x256x64_w64x64_s4_b1, F16, u16, 128, 256, 64, 64, 64, 4, 1, 8, false)    // one more tile in flight (192 KB)
V6_KERNEL(tc_v6s_f16_128x256x64_w64x64_s3_b1_epi, F16, u16, 128, 256, 64, 64, 64, 3, 1, 8, true) // + 16-byte C stores through shared memory
V6_KERNEL(tc_v6s_f16_256x128x64_w64x64_s3_b1, F16, u16, 256, 128, 64, 64, 64, 3, 1, 8, false)    // tall tile: more ldmatrix (non-trans) A per B
V6_KERNEL(tc_v6s_f16_128x256x32_w64x64_s4_b1_epi, F16, u16, 128, 256, 32, 64, 64, 4, 1, 8, true) // today's v6 tile, smem epilogue
V6_KERNEL(tc_v6s_f16_128x128x64_w64x64_s3_b2, F16, u16, 128, 128, 64, 64, 64, 3, 2, 8, false)    // 4 warps, 96 KB: 2 blocks an SM hide each other's barriers
V6_KERNEL(tc_v6s_f16_128x128x32_w64x64_s4_b2, F16, u16, 128, 128, 32, 64, 64, 4, 2, 8, false)    // 4 warps, 64 KB, 2 blocks an SM, BK 32
V6_KERNEL(tc_v6s_f16_128x128x64_w64x64_s3_b2_epi, F16, u16, 128, 128, 64, 64, 64, 3, 2, 8, true) // 2 blocks an SM + 16-byte C stores
V6_KERNEL(tc_v6s_f16_128x256x64_w64x64_s3_b1_g16, F16, u16, 128, 256, 64, 64, 64, 3, 1, 16, false) // wider L2 group
V6_KERNEL(tc_v6s_bf16_128x256x64_w64x64_s3_b1, Bf16, u16, 128, 256, 64, 64, 64, 3, 1, 8, false)  // BF16 twins of the likeliest FP16 winners
V6_KERNEL(tc_v6s_bf16_128x128x64_w64x64_s3_b2, Bf16, u16, 128, 128, 64, 64, 64, 3, 2, 8, false)  // BF16 twin: 2 blocks an SM
V6_KERNEL(tc_v6s_bf16_128x256x64_w64x64_s4_b1, Bf16, u16, 128, 256, 64, 64, 64, 4, 1, 8, false)  // BF16 twin: 4 stages
// TF32 (m16n8k8: half the FP16 rate per instruction, B read as 32-bit words)
V6_KERNEL(tc_v6s_tf32_128x128x32_w64x64_s3_b2, Tf32, float, 128, 128, 32, 64, 64, 3, 2, 8, false)   // 4 warps, 96 KB: 2 blocks an SM
V6_KERNEL(tc_v6s_tf32_128x256x32_w64x64_s4_b1, Tf32, float, 128, 256, 32, 64, 64, 4, 1, 8, false)   // 8 warps of 64 x 64, one more stage (192 KB)
V6_KERNEL(tc_v6s_tf32_128x256x32_w64x64_s3_b1, Tf32, float, 128, 256, 32, 64, 64, 3, 1, 8, false)   // 8 warps of 64 x 64: twice the MMAs per fragment byte
V6_KERNEL(tc_v6s_tf32_256x128x32_w64x64_s3_b1, Tf32, float, 256, 128, 32, 64, 64, 3, 1, 8, false)   // tall: A through ldmatrix, fewer scalar B loads per MMA
V6_KERNEL(tc_v6s_tf32_128x128x32_w64x32_s4_b1, Tf32, float, 128, 128, 32, 64, 32, 4, 1, 8, false)   // today's tile, one more stage (128 KB)
V6_KERNEL(tc_v6s_tf32_128x128x32_w64x64_s3_b2_epi, Tf32, float, 128, 128, 32, 64, 64, 3, 2, 8, true) // 2 blocks + smem epilogue

// ============================================================================================
// v6t: TF32 mma.sync with every fragment from ldmatrix. v6 reads TF32 B as two 32-bit ld.shared
// per n8 tile (ldmatrix.trans moves 16-bit elements, so it would split each float): a 64 x 64
// warp tile issues 16 of them a k-step beside 4 ldmatrix.x4 for A. ldmatrix without .trans
// gives lane l the 32-bit word at row l/4, column l%4 of each 8 x 4-float matrix: exactly the
// m16n8k8 A fragment's (g, t) and, when B is stored n-major (B^T: row n holds the k's), the B
// fragment's b0 = B[k = t][n = g], b1 = B[t + 4][g]. So B is transposed on its way into shared
// memory and one ldmatrix.x4 gives the fragments of two n8 tiles: 8 loads a k-step, not 20.
// A and B^T share one layout: rows of BK floats, 16-byte chunk c of row r at c ^ (r & 7), so
// the 8 rows an ldmatrix phase reads fall in 8 different bank groups.
// How B^T gets there (BCOPY):
//   B_CP4      4-byte cp.async (.ca: cg copies 16 bytes only), no registers: a warp instruction
//              copies 4 k-rows x 8 consecutive n (4 full 32-byte sectors), writing rows n .. n+7
//              of one chunk: 32 different banks
//   B_REGS     ld.global.v4 of 4 k-rows x 4 n into registers one tile ahead, transposed in
//              registers, st.shared.v4 of 4 rows n (4 k each); lanes l&3 = k quad, l>>2 = n quad,
//              so each 8-lane phase of a store covers 2 n quads x 4 k quads: 8 bank groups
//   B_GIVEN_T  the caller passes B^T (N x K): copied like A with 16-byte cp.async (the bound on
//              what the transposition costs; the benchmark times it with tc_transpose_f32 too)
// B_LATE: the next k-step's B fragments are loaded after this k-step's MMAs, not before: one set of
// B registers (16) instead of two (ptxas, sm_90: the 64 x 64 _rna configuration spills 16 bytes
// without it, none with it; 64 x 64 warps with B_REGS' 32 staging registers spill even with it).
// ROUND: the inputs are rounded to nearest TF32 (cvt.rna) as cuBLAS's TF32 GEMM does (its error
// is WMMA's, which rounds, not mma.sync's truncation): A's fragments after ldmatrix; B while in
// registers (B_REGS) or after ldmatrix. Without it the tensor core truncates (v6, v7 alike).
// The loop is v6's: fragments double-buffered in registers, one barrier a k-tile.
// ============================================================================================
enum BCopy { B_CP4 = 0, B_REGS = 1, B_GIVEN_T = 2 };

__device__ __forceinline__ void cp_async_4(u32 dst, const void* src)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" :: "r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ float4 ld_global_f4(const float* p)
{
    float4 v;
    asm volatile("ld.global.nc.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}
__device__ __forceinline__ float tf32_round_f(float x) { return __uint_as_float(tf32_round(__float_as_uint(x))); }

template <int BM, int BN, int BK, int WM, int WN, int STAGES, int GROUP, int BCOPY, bool ROUND, bool B_LATE>
struct MmaTf32Bt {
    static constexpr int WARPS = (BM / WM) * (BN / WN), THREADS = WARPS * 32;
    static constexpr int MT = WM / 16, NT = WN / 8, KSTEPS = BK / 8;
    static constexpr int CHUNKS = BK / 4, ROW_BYTES = BK * 4;          // A's and B^T's rows: BK floats
    static constexpr int A_BYTES = BM * ROW_BYTES, B_BYTES = BN * ROW_BYTES, STAGE_BYTES = A_BYTES + B_BYTES;
    static constexpr int SMEM = STAGES * STAGE_BYTES;
    static_assert(CHUNKS % 8 == 0, "rows of at least 128 bytes: the XOR swizzle takes the row's low 3 bits");
    static_assert(NT % 2 == 0, "one ldmatrix.x4 gives the B fragments of two n8 tiles");
    static_assert(KSTEPS % 2 == 0 && STAGES >= 2, "v6's loop: two fragment sets, a ring of at least 2");
    // v6's epilogue (float2 stores straight from the accumulators) and its grouped block order
    typedef MmaPipeline<Tf32, BM, BN, BK, WM, WN, STAGES, GROUP, false> V6;

    static __device__ __forceinline__ u32 swz(int row, int chunk) { return (row * CHUNKS + (chunk ^ (row & 7))) * 16; }

    // ---- a K-major operand (A; B^T when given) by 16-byte cp.async: thread t copies chunk t % CHUNKS
    // of rows t / CHUNKS + p * PASS_ROWS; PASS_ROWS is a multiple of 8, so every pass has the
    // thread's swizzle: one shared offset plus a constant, one pointer advanced a tile at a time
    static constexpr int PASS_ROWS = THREADS / CHUNKS;
    static_assert(THREADS % CHUNKS == 0 && PASS_ROWS % 8 == 0 && BM % PASS_ROWS == 0 && BN % PASS_ROWS == 0,
                  "K-major tile copies must split evenly");
    struct KMajor { const float* src; u32 off; };
    static __device__ __forceinline__ KMajor kmajor(const float* X, int row0, int K)
    {
        const int r = threadIdx.x / CHUNKS, c = threadIdx.x % CHUNKS;
        return {X + (size_t)(row0 + r) * K + c * 4, swz(r, c)};
    }
    template <int ROWS>
    static __device__ __forceinline__ void copy_kmajor(KMajor& x, u32 s, int K)
    {
#pragma unroll
        for (int p = 0; p < ROWS / PASS_ROWS; ++p) cp_async_16(s + x.off + p * PASS_ROWS * ROW_BYTES, x.src + (size_t)p * PASS_ROWS * K);
        x.src += BK;
    }

    // ---- B (K x N, row-major) into B^T by 4-byte cp.async: warp w's lane l copies B[k][n] with
    // k = 4 kq + l / 8, n = 8 nq + l % 8 for the (kq, nq) blocks w, w + WARPS, ... (kq fastest).
    // n % 8 = l % 8 in every block, so the swizzle is the lane's own constant, and the per-pass
    // parts of the offsets are compile-time constants (written out: the compiler does not know
    // that w < WARPS, and would otherwise keep 2 x 32 loop-invariant offsets in registers)
    static constexpr int KQ = BK / 4, CP4_PASSES = KQ * (BN / 8) / WARPS;
    static_assert(BCOPY != B_CP4 || WARPS % KQ == 0 || KQ % WARPS == 0, "4-byte copies must split evenly");
    struct Cp4 { const float* src; u32 off; };             // this lane's first element, and where it lands
    static __device__ __forceinline__ int cp4_warp_kq() { return WARPS >= KQ ? threadIdx.x / 32 % KQ : threadIdx.x / 32; }
    static __device__ __forceinline__ int cp4_warp_nq() { return WARPS >= KQ ? threadIdx.x / 32 / KQ : 0; }
    static __device__ __forceinline__ Cp4 cp4(const float* B, int n0, int N)
    {
        const int lane = threadIdx.x % 32, kq = cp4_warp_kq(), n = cp4_warp_nq() * 8 + lane % 8;
        return {B + (size_t)(kq * 4 + lane / 8) * N + n0 + n, (u32)(n * ROW_BYTES + ((kq ^ (lane % 8)) << 4) + (lane / 8) * 4)};
    }
    static __device__ __forceinline__ void copy_b_cp4(Cp4& b, u32 s, int N)
    {
#pragma unroll
        for (int p = 0; p < CP4_PASSES; ++p) {
            // pass p moves the block WARPS * p further: in n when WARPS >= KQ, else in kq first
            constexpr int KQ_STEP = WARPS >= KQ ? 0 : WARPS, KQ_PASSES = WARPS >= KQ ? 1 : KQ / WARPS;
            constexpr int NQ_STEP = WARPS >= KQ ? WARPS / KQ : 1;
            const int dkq = (p % KQ_PASSES) * KQ_STEP, dnq = (p / KQ_PASSES) * NQ_STEP;    // dkq: bits above the warp's kq
            cp_async_4(s + (b.off ^ (dkq << 4)) + dnq * 8 * ROW_BYTES, b.src + (size_t)dkq * 4 * N + dnq * 8);
        }
        b.src += (size_t)BK * N;
    }

    // ---- B through registers: warp w's lane l holds the 4 x 4 block k = 16 kg + 4 (l % 4) + 0..3,
    // n = 32 ng + 4 (l / 4) + 0..3 for the (kg, ng) groups w, w + WARPS, ... (each a 16 x 32 piece
    // of the tile; kg fastest, and WARPS >= BK / 16, so a pass moves n only)
    static constexpr int KG = BK / 16, REG_PASSES = KG * (BN / 32) / WARPS;
    static_assert(BCOPY != B_REGS || (BK % 16 == 0 && WARPS % KG == 0 && KG * (BN / 32) % WARPS == 0),
                  "register copies must split evenly");
    struct Regs {
        const float* src;                                     // this lane's first float4 of the next tile
        u32 off;                                              // where its row n, chunk k / 4 lands
        int x;                                                // the swizzle of row n: rows n + i have x ^ i
        float4 v[BCOPY == B_REGS ? REG_PASSES : 1][4];        // v[p][r] = B[k + r][n + 32 (WARPS / KG) p .. + 3]
    };
    static __device__ __forceinline__ Regs regs(const float* B, int n0, int N)
    {
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        const int k = (warp % KG) * 16 + (lane % 4) * 4, n = (warp / KG) * 32 + (lane / 4) * 4;
        Regs r;
        r.src = B + (size_t)k * N + n0 + n;
        r.x = n & 7;                                          // 0 or 4: rows n .. n+3 have x, x^1, x^2, x^3
        r.off = n * ROW_BYTES + (((k / 4) ^ r.x) << 4);
        return r;
    }
    static __device__ __forceinline__ void load_b_regs(Regs& b, int N)
    {
#pragma unroll
        for (int p = 0; p < REG_PASSES; ++p)
#pragma unroll
            for (int r = 0; r < 4; ++r) b.v[p][r] = ld_global_f4(b.src + (size_t)r * N + p * 32 * (WARPS / KG));
        b.src += (size_t)BK * N;
    }
    static __device__ __forceinline__ u32 rounded(float x) { return __float_as_uint(ROUND ? tf32_round_f(x) : x); }
    static __device__ __forceinline__ void store_b_regs(const Regs& b, u32 s)
    {
#pragma unroll
        for (int p = 0; p < REG_PASSES; ++p) {
            const float4* v = b.v[p];
            const u32 at = s + b.off + p * 32 * (WARPS / KG) * ROW_BYTES;
            // row n + i, chunk (k / 4) ^ (x ^ i) = ((k / 4) ^ x) ^ i: the offset's chunk bits XOR i
            st_shared_v4(at + 0 * ROW_BYTES, make_uint4(rounded(v[0].x), rounded(v[1].x), rounded(v[2].x), rounded(v[3].x)));
            st_shared_v4((at ^ (1 << 4)) + 1 * ROW_BYTES, make_uint4(rounded(v[0].y), rounded(v[1].y), rounded(v[2].y), rounded(v[3].y)));
            st_shared_v4((at ^ (2 << 4)) + 2 * ROW_BYTES, make_uint4(rounded(v[0].z), rounded(v[1].z), rounded(v[2].z), rounded(v[3].z)));
            st_shared_v4((at ^ (3 << 4)) + 3 * ROW_BYTES, make_uint4(rounded(v[0].w), rounded(v[1].w), rounded(v[2].w), rounded(v[3].w)));
        }
    }

    // ---- fragments: the lane's ldmatrix addresses of k-step 0, fragment 0, once; chunk 2 kk + h
    // of a row r is (h ^ (r & 7)) ^ 2 kk, and fragments 16 rows apart share the swizzle:
    // A: off_a ^ 32 kk + 16 i rows; B^T: matrices (n 0-7, k lo), (n 0-7, k hi), (n 8-15, k lo),
    // (n 8-15, k hi) of the pair j of n8 tiles: off_b ^ 32 kk + 16 j rows
    struct Offsets { u32 a, b; };
    static __device__ __forceinline__ Offsets fragment_offsets(int wm, int wn)
    {
        const int lane = threadIdx.x % 32;
        const int ra = wm * WM + (lane & 15), rb = wn * WN + (lane >> 4) * 8 + (lane & 7);
        return {swz(ra, lane >> 4), swz(rb, (lane >> 3) & 1)};
    }
    struct Frags { u32 a[MT][4]; u32 b[NT][2]; };
    // A's fragments of k-step kk (rounded to nearest with ROUND)
    static __device__ __forceinline__ void load_a_frags(Frags& f, u32 sa, Offsets o, int kk)
    {
#pragma unroll
        for (int i = 0; i < MT; ++i) {
            ldmatrix_x4(f.a[i], sa + (o.a ^ (kk * 32)) + i * 16 * ROW_BYTES);
            if constexpr (ROUND) {
#pragma unroll
                for (int e = 0; e < 4; ++e) f.a[i][e] = tf32_round(f.a[i][e]);
            }
        }
    }
    // B's: one ldmatrix.x4 per pair of n8 tiles (B_REGS stored them rounded already)
    static __device__ __forceinline__ void load_b_frags(Frags& f, u32 sb, Offsets o, int kk)
    {
#pragma unroll
        for (int j = 0; j < NT / 2; ++j) {
            u32 r[4];
            ldmatrix_x4(r, sb + (o.b ^ (kk * 32)) + j * 16 * ROW_BYTES);
            if constexpr (ROUND && BCOPY != B_REGS) {
#pragma unroll
                for (int e = 0; e < 4; ++e) r[e] = tf32_round(r[e]);
            }
            f.b[2 * j][0] = r[0]; f.b[2 * j][1] = r[1]; f.b[2 * j + 1][0] = r[2]; f.b[2 * j + 1][1] = r[3];
        }
    }

    typedef float Acc[MT][NT][4];
    // one k-step's MMAs: every (m16, n8) tile of the warp's with the fragments of f
    static __device__ __forceinline__ void mma_all(Acc& acc, const Frags& f)
    {
#pragma unroll
        for (int i = 0; i < MT; ++i)
#pragma unroll
            for (int j = 0; j < NT; ++j) mma_tf32_m16n8k8(acc[i][j], f.a[i], f.b[j]);
    }

    static __device__ __forceinline__ void run(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                               int M, int N, int K)
    {
        extern __shared__ __align__(128) unsigned char smem[];
        const u32 base = smem_u32(smem);
        const int warp = threadIdx.x / 32;
        const int wm = warp / (BN / WN), wn = warp % (BN / WN);
        int bm, bn;
        grouped_block<GROUP>(bm, bn);
        const int m0 = bm * BM, n0 = bn * BN;
        Acc acc;
        zero_accumulators(acc);
        const int tiles = K / BK;
        KMajor a = kmajor(A, m0, K);
        KMajor bt = kmajor(B, n0, K);                         // B_GIVEN_T: B is B^T, N x K
        Cp4 b4 = cp4(B, n0, N);
        Regs br = regs(B, n0, N);
        // one tile's asynchronous copies into stage s: A's, and B's unless it goes through registers
        auto copy_async = [&](int s) {
            const u32 sa = base + s * STAGE_BYTES;
            copy_kmajor<BM>(a, sa, K);
            if constexpr (BCOPY == B_GIVEN_T) copy_kmajor<BN>(bt, sa + A_BYTES, K);
            if constexpr (BCOPY == B_CP4) copy_b_cp4(b4, sa + A_BYTES, N);
        };
        // prologue: tiles 0 .. STAGES-2 in flight (one commit group each, empty ones too); B_REGS:
        // tile 0 stored, tile 1 in registers
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < tiles) copy_async(s);
            cp_async_commit();
        }
        if constexpr (BCOPY == B_REGS) {
            load_b_regs(br, N);
            store_b_regs(br, base + A_BYTES);
            if (1 < tiles) load_b_regs(br, N);
        }
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        Frags f[2];
        const Offsets offsets = fragment_offsets(wm, wn);
        load_a_frags(f[0], base, offsets, 0);
        load_b_frags(f[0], base + A_BYTES, offsets, 0);
        int read_slot = 0, write_slot = STAGES - 1;
        for (int kt = 0; kt < tiles; ++kt) {
            const u32 sa = base + read_slot * STAGE_BYTES, sb = sa + A_BYTES;
            const int next_slot = read_slot + 1 == STAGES ? 0 : read_slot + 1;
            const u32 na = base + next_slot * STAGE_BYTES, nb = na + A_BYTES;
#pragma unroll
            for (int kk = 0; kk < KSTEPS; ++kk) {
                Frags& next = f[(kk + 1) & 1];
                const bool last = kk == KSTEPS - 1;
                if (last) {
                    if constexpr (BCOPY == B_REGS) {          // tile kt+1's B into its slot (tile kt+1-STAGES left it)
                        if (kt + 1 < tiles) store_b_regs(br, nb);
                        if (kt + 2 < tiles) load_b_regs(br, N);       // and tile kt+2's on its way
                    }
                    cp_async_wait<STAGES - 2>();
                    __syncthreads();
                    if (kt + 1 < tiles) {
                        load_a_frags(next, na, offsets, 0);
                        if (!B_LATE) load_b_frags(next, nb, offsets, 0);
                    }
                } else {
                    load_a_frags(next, sa, offsets, kk + 1);
                    if (!B_LATE) load_b_frags(next, sb, offsets, kk + 1);
                }
                if (kk == 0) {
                    if (kt + STAGES - 1 < tiles) copy_async(write_slot);
                    cp_async_commit();
                }
                mma_all(acc, f[kk & 1]);
                if (B_LATE) {                                 // B's registers are free again: the next k-step's B
                    if (!last) load_b_frags(next, sb, offsets, kk + 1);
                    else if (kt + 1 < tiles) load_b_frags(next, nb, offsets, 0);
                }
            }
            read_slot = next_slot;
            write_slot = write_slot + 1 == STAGES ? 0 : write_slot + 1;
        }
        cp_async_wait<0>();
        V6::store(acc, C, base, m0 + wm * WM, n0 + wn * WN, N);
    }
};

// One v6t configuration: (name, BM, BN, BK, WM, WN, STAGES, MINB, GROUP, BCOPY, ROUND, B_LATE); kernels/tensor_cores.py
// reads these lines (and the comment after each) into the sweep. B_GIVEN_T kernels take B^T (N x K) as B.
#define V6T_KERNEL(name, BM, BN, BK, WM, WN, STAGES, MINB, GROUP, BCOPY, ROUND, B_LATE)                          \
    extern "C" __global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)                              \
    name(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)  \
    {                                                                                                           \
        MmaTf32Bt<BM, BN, BK, WM, WN, STAGES, GROUP, BCOPY, ROUND, B_LATE>::run(A, B, C, M, N, K);              \
    }

// ---- v6t: TF32 v6 with B transposed into shared memory, so ldmatrix.x4 fills B's fragments too (8 loads a k-step instead of 20)
V6T_KERNEL(tc_v6t_tf32_128x256x32_w64x64_s3_b1_cp4, 128, 256, 32, 64, 64, 3, 1, 8, B_CP4, false, false)        // v6's best tile, B^T by 4-byte cp.async: no staging registers (226, v6 needs 246), 4x the copy instructions for B
V6T_KERNEL(tc_v6t_tf32_128x256x32_w64x64_s4_b1_cp4, 128, 256, 32, 64, 64, 4, 1, 8, B_CP4, false, false)        // the 4-byte copies get one more tile (192 KB) of latency to hide
V6T_KERNEL(tc_v6t_tf32_128x128x32_w64x64_s3_b2_cp4, 128, 128, 32, 64, 64, 3, 2, 8, B_CP4, false, false)        // 4 warps, 96 KB: 2 blocks an SM hide each other's barriers
V6T_KERNEL(tc_v6t_tf32_128x128x32_w64x32_s3_b1_regs, 128, 128, 32, 64, 32, 3, 1, 8, B_REGS, false, false)     // B^T through registers (16-byte loads and stores, a quarter of cp4's copy instructions); 64 x 32 warps: 64 x 64 ones spill with 32 staging registers
V6T_KERNEL(tc_v6t_tf32_128x128x32_w64x32_s3_b1_cp4, 128, 128, 32, 64, 32, 3, 1, 8, B_CP4, false, false)       // the same tile with 4-byte copies: which B copy is cheaper, at equal warp tiles
V6T_KERNEL(tc_v6t_tf32_128x256x32_w64x64_s3_b1_bt, 128, 256, 32, 64, 64, 3, 1, 8, B_GIVEN_T, false, false)     // B^T given, copied like A: the transposition's cost taken out (also timed with tc_transpose_f32)
// B^T given, two more shapes (a third, 128 x 128 x 32 with 2 blocks an SM, ran at 57 %, and a fourth stage at 61 %)
V6T_KERNEL(tc_v6t_tf32_256x128x32_w64x64_s3_b1_bt, 256, 128, 32, 64, 64, 3, 1, 8, B_GIVEN_T, false, false)     // tall: the same warps, A and B^T swapped in size
V6T_KERNEL(tc_v6t_tf32_128x256x32_w64x64_s3_b1_bt_late, 128, 256, 32, 64, 64, 3, 1, 8, B_GIVEN_T, false, true) // one set of B registers: 16 fewer registers, B's loads after the MMAs
V6T_KERNEL(tc_v6t_tf32_128x256x32_w64x64_s3_b1_cp4_rna, 128, 256, 32, 64, 64, 3, 1, 8, B_CP4, true, true)      // rounds the inputs to nearest as cuBLAS TF32 does: every fragment after ldmatrix (32 cvt a k-step)

// ============================================================================================
// v7 (Hopper only, sm_90a): wgmma. A warpgroup (4 warps) issues one asynchronous MMA of
// 64 x 256 x 16 whose A and B come straight from shared memory, described by a 64-bit descriptor;
// the tiles are in the 128-byte swizzled layout wgmma reads. Loads are cp.async (not TMA: a tensor
// map built on the host is the next step), 4 stages. Block tile 128 x 256 x 64, 2 warpgroups.
// FP16 / BF16 only: wgmma's TF32 needs B K-major (column-major), and B here is row-major.
// ============================================================================================
#define V7_BM 128
#define V7_BN 256
#define V7_BK 64
#define V7_STAGES 4
#define V7_THREADS 256

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// descriptor of a shared-memory matrix: start address, leading and stride byte offsets (all >> 4),
// swizzle mode 1 (128 bytes) in bits 62-63
__device__ __forceinline__ unsigned long long wgmma_desc(u32 addr, u32 leading, u32 stride)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)((leading & 0x3FFFF) >> 4) << 16) |
           ((unsigned long long)((stride & 0x3FFFF) >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" :: "n"(N) : "memory"); }
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// keeps the compiler from moving accumulator reads or writes across an asynchronous wgmma
__device__ __forceinline__ void fence_accumulators(float (&d)[128])
{
#pragma unroll
    for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}

#define WGMMA_D128                                                                                      \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),          \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),    \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),  \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),  \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),  \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),  \
    "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),  \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),  \
    "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),  \
    "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),  \
    "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),  \
    "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),  \
    "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
    "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
    "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
    "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

#define WGMMA_D128_TEXT                                                                                 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                           \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "                   \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "                   \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "                   \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "                   \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "                   \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "       \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"

// d (64 x 256 of the warpgroup, FP32) += A (64 x 16, K-major) * B (16 x 256, N-major: transposed)
template <class P>
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], unsigned long long da, unsigned long long db)
{
    if constexpr (!P::IS_BF16) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " WGMMA_D128_TEXT
                     ", %128, %129, p, 1, 1, 0, 1;\n}\n"
                     : WGMMA_D128 : "l"(da), "l"(db), "r"(1));
    } else {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " WGMMA_D128_TEXT
                     ", %128, %129, p, 1, 1, 0, 1;\n}\n"
                     : WGMMA_D128 : "l"(da), "l"(db), "r"(1));
    }
}

// Shared layouts, 128-byte swizzle (16-byte chunk index XOR address bits 7-9), tiles 1024-byte aligned:
//   A tile: row m (64 elements = 128 bytes) at m * 128, chunk c (k / 8) at (c ^ (m & 7)) * 16
//   B tile: 4 column blocks of 64 (n / 64) at 8 KB each; in a block, row k at k * 128, chunk
//   c ((n % 64) / 8) at (c ^ (k & 7)) * 16.  Descriptors: A (K-major): stride 1024 (8 rows);
//   B (N-major): leading 8192 (the next 64 columns), stride 1024 (the next 8 rows of k)
template <class P>
__device__ __forceinline__ void wgmma_load_tile(const u16* __restrict__ A, const u16* __restrict__ B, u32 sa, u32 sb,
                                                int m0, int n0, int k0, int N, int K)
{
    const int t = threadIdx.x;
#pragma unroll
    for (int p = 0; p < V7_BM * 8 / V7_THREADS; ++p) {
        const int i = t + p * V7_THREADS, r = i / 8, c = i % 8;
        cp_async_16(sa + r * 128 + ((c ^ (r & 7)) << 4), A + (size_t)(m0 + r) * K + k0 + c * 8);
    }
#pragma unroll
    for (int p = 0; p < V7_BK * (V7_BN / 8) / V7_THREADS; ++p) {
        const int i = t + p * V7_THREADS, k = i / (V7_BN / 8), cn = i % (V7_BN / 8);
        const int block = cn / 8, c = cn % 8;
        cp_async_16(sb + block * (V7_BK * 128) + k * 128 + ((c ^ (k & 7)) << 4), B + (size_t)(k0 + k) * N + n0 + cn * 8);
    }
}
#endif

template <class P>
__device__ __forceinline__ void wgmma_gemm(const u16* __restrict__ A, const u16* __restrict__ B, float* __restrict__ C,
                                           int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int A_BYTES = V7_BM * V7_BK * 2, B_BYTES = V7_BK * V7_BN * 2, STAGE = A_BYTES + B_BYTES;
    extern __shared__ __align__(128) unsigned char smem[];   // aligned to 1024 below
    const u32 base = (smem_u32(smem) + 1023) & ~1023u;       // the swizzle pattern repeats every 1024 bytes
    const int warpgroup = threadIdx.x / 128, wlane = threadIdx.x % 128;
    int bm, bn;
    grouped_block<8>(bm, bn);
    const int m0 = bm * V7_BM, n0 = bn * V7_BN;
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.f;
    const int tiles = K / V7_BK;
    // ring of V7_STAGES: tile kt is multiplied while tiles up to kt + STAGES-2 load; the wgmma of
    // tile kt-1 may still run (one group in flight), so its slot is refilled only at kt+1
#pragma unroll
    for (int s = 0; s < V7_STAGES - 2; ++s) {
        if (s < tiles) wgmma_load_tile<P>(A, B, base + s * STAGE, base + s * STAGE + A_BYTES, m0, n0, s * V7_BK, N, K);
        cp_async_commit();
    }
    for (int kt = 0; kt < tiles; ++kt) {
        cp_async_wait<V7_STAGES - 3>();                       // this thread's copies of tile kt have landed
        fence_proxy_async();                                  // ... and are visible to wgmma (the async proxy)
        __syncthreads();                                      // everyone's; every wgmma of tile kt-2 is done
        const int next = kt + V7_STAGES - 2;
        if (next < tiles) {
            const u32 s = base + (next % V7_STAGES) * STAGE;
            wgmma_load_tile<P>(A, B, s, s + A_BYTES, m0, n0, next * V7_BK, N, K);
        }
        cp_async_commit();
        const u32 sa = base + (kt % V7_STAGES) * STAGE + warpgroup * 64 * 128, sb = base + (kt % V7_STAGES) * STAGE + A_BYTES;
        fence_accumulators(d);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < V7_BK / 16; ++kk)              // k16 steps: A 32 bytes along its row, B 16 rows down
            wgmma_m64n256k16<P>(d, wgmma_desc(sa + kk * 32, 16, 1024), wgmma_desc(sb + kk * 16 * 128, V7_BK * 128, 1024));
        wgmma_commit();
        fence_accumulators(d);
        wgmma_wait<1>();                                      // tile kt-1's wgmma is done
        fence_accumulators(d);
    }
    wgmma_wait<0>();
    fence_accumulators(d);
    cp_async_wait<0>();
    // accumulator layout: warp w of the warpgroup holds rows 16w .. 16w+15; per n8 block i, like mma.sync's C
    const int warp = wlane / 32, lane = wlane % 32;
    const int row = m0 + warpgroup * 64 + warp * 16 + (lane >> 2);
#pragma unroll
    for (int i = 0; i < V7_BN / 8; ++i) {
        const int col = n0 + i * 8 + (lane & 3) * 2;
        *reinterpret_cast<float2*>(&C[(size_t)row * N + col]) = make_float2(d[4 * i], d[4 * i + 1]);
        *reinterpret_cast<float2*>(&C[(size_t)(row + 8) * N + col]) = make_float2(d[4 * i + 2], d[4 * i + 3]);
    }
#endif
}

// ---- v7: Hopper's wgmma: a warpgroup multiplies 64 x 256 x 16 per instruction straight from swizzled shared memory, asynchronously, with no fragments in registers; the next tile's MMAs are issued while the last ones finish (sm_90a only)
extern "C" __global__ void __launch_bounds__(V7_THREADS, 1)
tc_v7_wgmma_f16(const u16* __restrict__ A, const u16* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    wgmma_gemm<F16>(A, B, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(V7_THREADS, 1)
tc_v7_wgmma_bf16(const u16* __restrict__ A, const u16* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    wgmma_gemm<Bf16>(A, B, C, M, N, K);
}

// ============================================================================================
// v7 TF32 (sm_90a): wgmma's TF32 reads both operands K-major (no transpose for 32-bit types),
// and B here is K x N row-major (N-major). Two ways round it:
//   tc_v7_wgmma_tf32      B as given: compute C^T = B^T A^T. wgmma's A operand (64 x 8) comes from
//                         registers, so each warp loads B^T's fragments itself with 32-bit shared
//                         loads from the row-major B tile (the mma.sync m16n8k8 A layout, which is
//                         CUTLASS's ALayout_64x8 for wgmma); wgmma's B operand is A^T, and the row-
//                         major A tile *is* A^T K-major, read by descriptor. Accumulators hold C^T.
//   tc_v7_wgmma_tf32_bt   the API takes B^T (N x K row-major): both tiles K-major in shared memory,
//                         both operands by descriptor, exactly v7's FP16 layout. The benchmark
//                         times it on a given B^T and, separately, with tc_transpose_f32 first.
// ============================================================================================
#define V7T_BM 256          // tc_v7_wgmma_tf32: rows of C (wgmma's N), A tile 256 x 32 (32 KB)
#define V7T_BN 128          // columns of C: 2 warpgroups x 64 (wgmma's M), B tile 32 x 128 (16 KB)
#define V7T_BK 32           // 128-byte rows of TF32: one swizzle row per A row
#define V7T_STAGES 4
#define V7B_BM 128          // tc_v7_wgmma_tf32_bt: v7's block tile, BK 32 of TF32 (128-byte rows)
#define V7B_BN 256
#define V7B_BK 32
#define V7B_STAGES 4

// transpose: out (cols x rows) = in (rows x cols)^T through a padded 32 x 33 shared tile, so both
// the read of in and the write of out are row-contiguous (block 32 x 8, any sizes)
extern "C" __global__ void __launch_bounds__(256)
tc_transpose_f32(const float* __restrict__ in, float* __restrict__ out, int rows, int cols)
{
    __shared__ float tile[32][33];
    const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
    for (int i = threadIdx.y; i < 32; i += 8) {
        const int r = r0 + i, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[i][threadIdx.x] = in[(size_t)r * cols + c];
    }
    __syncthreads();
    for (int i = threadIdx.y; i < 32; i += 8) {
        const int c = c0 + i, r = r0 + threadIdx.x;
        if (c < cols && r < rows) out[(size_t)c * rows + r] = tile[threadIdx.x][i];
    }
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// d (64 x 256) += A (64 x 8 TF32, in registers: per warp the mma.sync m16n8k8 A fragment of its
// 16 rows) * B (8 x 256, K-major, by descriptor)
__device__ __forceinline__ void wgmma_m64n256k8_tf32_rs(float (&d)[128], const u32 (&a)[4], unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 " WGMMA_D128_TEXT
                 ", {%128, %129, %130, %131}, %132, p, 1, 1;\n}\n"
                 : WGMMA_D128 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}
// d (64 x 256) += A (64 x 8, K-major) * B (8 x 256, K-major), both by descriptor
__device__ __forceinline__ void wgmma_m64n256k8_tf32_ss(float (&d)[128], unsigned long long da, unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 " WGMMA_D128_TEXT
                 ", %128, %129, p, 1, 1;\n}\n"
                 : WGMMA_D128 : "l"(da), "l"(db), "r"(1));
}

// ROWS rows of 32 floats (128 bytes) of a row-major matrix (row stride ld) into the K-major
// 128-byte-swizzled layout: row r at r * 128, 16-byte chunk c at (c ^ (r & 7)) * 16 (v7's A layout)
template <int ROWS, int THREADS>
__device__ __forceinline__ void load_kmajor_tf32(const float* __restrict__ X, u32 dst, int row0, int k0, int ld)
{
#pragma unroll
    for (int p = 0; p < ROWS * 8 / THREADS; ++p) {
        const int i = threadIdx.x + p * THREADS, r = i / 8, c = i % 8;
        cp_async_16(dst + r * 128 + ((c ^ (r & 7)) << 4), X + (size_t)(row0 + r) * ld + k0 + c * 4);
    }
}

// tc_v7_wgmma_tf32's B tile: 32 rows of k, 128 floats (32 chunks) each, chunk c of row k at
// (c ^ 2 (k & 3)) * 16: v6's TF32 swizzle, under which each warp's 32-bit fragment loads hit 32 banks
__device__ __forceinline__ u32 v7t_b_offset(int k, int n)
{
    return k * (V7T_BN * 4) + ((((n >> 2) ^ ((k & 3) << 1))) << 4) + (n & 3) * 4;
}
#endif

// (the bodies are C++ functions: an extern __shared__ array declared in an extern "C" function
// would have C linkage, unlike the templates' smem)
__device__ __forceinline__ void wgmma_tf32_gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                                                int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int A_BYTES = V7T_BM * V7T_BK * 4, B_BYTES = V7T_BK * V7T_BN * 4, STAGE = A_BYTES + B_BYTES;
    extern __shared__ __align__(128) unsigned char smem[];
    const u32 base = (smem_u32(smem) + 1023) & ~1023u;
    const int warpgroup = threadIdx.x / 128, warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
    const int g = lane >> 2, t = lane & 3;
    int bm, bn;
    grouped_block<8>(bm, bn);
    const int m0 = bm * V7T_BM, n0 = bn * V7T_BN;
    const int nw = warpgroup * 64 + warp * 16 + g;            // this lane's column of B (wgmma A row g)
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.f;
    const int tiles = K / V7T_BK;
#pragma unroll
    for (int s = 0; s < V7T_STAGES - 2; ++s) {
        if (s < tiles) {
            load_kmajor_tf32<V7T_BM, 256>(A, base + s * STAGE, m0, s * V7T_BK, K);
#pragma unroll
            for (int p = 0; p < V7T_BK * (V7T_BN / 4) / 256; ++p) {
                const int i = threadIdx.x + p * 256, k = i / (V7T_BN / 4), c = i % (V7T_BN / 4);
                cp_async_16(base + s * STAGE + A_BYTES + v7t_b_offset(k, c * 4), B + (size_t)(s * V7T_BK + k) * N + n0 + c * 4);
            }
        }
        cp_async_commit();
    }
    // two copies of the body per trip: the B^T fragments of tile kt and kt+1 live in different
    // registers, since tile kt's wgmma may still read its registers while tile kt+1's are loaded
#pragma unroll 2
    for (int kt = 0; kt < tiles; ++kt) {
        cp_async_wait<V7T_STAGES - 3>();
        fence_proxy_async();
        __syncthreads();                                      // tile kt is in; every wgmma of tile kt-2 is done
        const int next = kt + V7T_STAGES - 2;
        if (next < tiles) {
            const u32 s = base + (next % V7T_STAGES) * STAGE;
            load_kmajor_tf32<V7T_BM, 256>(A, s, m0, next * V7T_BK, K);
#pragma unroll
            for (int p = 0; p < V7T_BK * (V7T_BN / 4) / 256; ++p) {
                const int i = threadIdx.x + p * 256, k = i / (V7T_BN / 4), c = i % (V7T_BN / 4);
                cp_async_16(s + A_BYTES + v7t_b_offset(k, c * 4), B + (size_t)(next * V7T_BK + k) * N + n0 + c * 4);
            }
        }
        cp_async_commit();
        const u32 sa = base + (kt % V7T_STAGES) * STAGE, sb = sa + A_BYTES;
        u32 frag[V7T_BK / 8][4];
#pragma unroll
        for (int kk = 0; kk < V7T_BK / 8; ++kk) {             // B^T[nw][k] = B[k][nw]: rows g, g+8; k t, t+4
            const int k = kk * 8 + t;
            frag[kk][0] = ld_shared_b32(sb + v7t_b_offset(k, nw));
            frag[kk][1] = ld_shared_b32(sb + v7t_b_offset(k, nw + 8));
            frag[kk][2] = ld_shared_b32(sb + v7t_b_offset(k + 4, nw));
            frag[kk][3] = ld_shared_b32(sb + v7t_b_offset(k + 4, nw + 8));
        }
        fence_accumulators(d);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < V7T_BK / 8; ++kk)              // k8 steps: 32 bytes along A's 128-byte rows
            wgmma_m64n256k8_tf32_rs(d, frag[kk], wgmma_desc(sa + kk * 32, 16, 1024));
        wgmma_commit();
        fence_accumulators(d);
        wgmma_wait<1>();
        fence_accumulators(d);
    }
    wgmma_wait<0>();
    fence_accumulators(d);
    cp_async_wait<0>();
    // d[4i + v0 + 2 v1] is C^T[row 16 warp + g + 8 v1][col 8i + 2t + v0]: C[m0 + 8i + 2t + v0][n]
    const int n = n0 + nw;
#pragma unroll
    for (int i = 0; i < V7T_BM / 8; ++i) {
        const size_t m = (size_t)(m0 + i * 8 + 2 * t);
        C[m * N + n] = d[4 * i];
        C[(m + 1) * N + n] = d[4 * i + 1];
        C[m * N + n + 8] = d[4 * i + 2];
        C[(m + 1) * N + n + 8] = d[4 * i + 3];
    }
#endif
}

// Bt is B^T: N x K, row-major (K-major): the tiles of A and of Bt are copied alike
__device__ __forceinline__ void wgmma_tf32_bt_gemm(const float* __restrict__ A, const float* __restrict__ Bt, float* __restrict__ C,
                                                   int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int A_BYTES = V7B_BM * V7B_BK * 4, B_BYTES = V7B_BN * V7B_BK * 4, STAGE = A_BYTES + B_BYTES;
    extern __shared__ __align__(128) unsigned char smem[];
    const u32 base = (smem_u32(smem) + 1023) & ~1023u;
    const int warpgroup = threadIdx.x / 128, wlane = threadIdx.x % 128;
    int bm, bn;
    grouped_block<8>(bm, bn);
    const int m0 = bm * V7B_BM, n0 = bn * V7B_BN;
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.f;
    const int tiles = K / V7B_BK;
#pragma unroll
    for (int s = 0; s < V7B_STAGES - 2; ++s) {
        if (s < tiles) {
            load_kmajor_tf32<V7B_BM, 256>(A, base + s * STAGE, m0, s * V7B_BK, K);
            load_kmajor_tf32<V7B_BN, 256>(Bt, base + s * STAGE + A_BYTES, n0, s * V7B_BK, K);
        }
        cp_async_commit();
    }
    for (int kt = 0; kt < tiles; ++kt) {
        cp_async_wait<V7B_STAGES - 3>();
        fence_proxy_async();
        __syncthreads();
        const int next = kt + V7B_STAGES - 2;
        if (next < tiles) {
            const u32 s = base + (next % V7B_STAGES) * STAGE;
            load_kmajor_tf32<V7B_BM, 256>(A, s, m0, next * V7B_BK, K);
            load_kmajor_tf32<V7B_BN, 256>(Bt, s + A_BYTES, n0, next * V7B_BK, K);
        }
        cp_async_commit();
        const u32 sa = base + (kt % V7B_STAGES) * STAGE + warpgroup * 64 * 128, sb = base + (kt % V7B_STAGES) * STAGE + A_BYTES;
        fence_accumulators(d);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < V7B_BK / 8; ++kk)
            wgmma_m64n256k8_tf32_ss(d, wgmma_desc(sa + kk * 32, 16, 1024), wgmma_desc(sb + kk * 32, 16, 1024));
        wgmma_commit();
        fence_accumulators(d);
        wgmma_wait<1>();
        fence_accumulators(d);
    }
    wgmma_wait<0>();
    fence_accumulators(d);
    cp_async_wait<0>();
    const int warp = wlane / 32, lane = wlane % 32;
    const int row = m0 + warpgroup * 64 + warp * 16 + (lane >> 2);
#pragma unroll
    for (int i = 0; i < V7B_BN / 8; ++i) {
        const int col = n0 + i * 8 + (lane & 3) * 2;
        *reinterpret_cast<float2*>(&C[(size_t)row * N + col]) = make_float2(d[4 * i], d[4 * i + 1]);
        *reinterpret_cast<float2*>(&C[(size_t)(row + 8) * N + col]) = make_float2(d[4 * i + 2], d[4 * i + 3]);
    }
#endif
}

// ---- v7 TF32: wgmma in TF32 (m64n256k8); B's fragments from registers (C^T = B^T A^T), B as given
extern "C" __global__ void __launch_bounds__(256, 1)
tc_v7_wgmma_tf32(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    wgmma_tf32_gemm(A, B, C, M, N, K);
}
// ---- v7 TF32, B^T given: both operands K-major in shared memory, by descriptor (the caller passes B^T, N x K)
extern "C" __global__ void __launch_bounds__(256, 1)
tc_v7_wgmma_tf32_bt(const float* __restrict__ A, const float* __restrict__ Bt, float* __restrict__ C, int M, int N, int K)
{
    wgmma_tf32_bt_gemm(A, Bt, C, M, N, K);
}

// ============================================================================================
// v8 (sm_90a): v7 fed by the Tensor Memory Accelerator. The host describes A and B once
// (cuTensorMapEncodeTiled: sizes, strides, a box of 64 x 128 / 64 x 64 elements, 128-byte
// swizzle) in a 128-byte CUtensorMap passed by value as a __grid_constant__ parameter; one
// producer thread asks the TMA for whole tiles (cp.async.bulk.tensor: no address arithmetic,
// no registers, no copy instructions in the consumers), which land in exactly v7's swizzled
// layout. Stages are handed over with mbarriers: full[s] completes when the TMA has written the
// stage's bytes (expect_tx), empty[s] when the 8 consumer warps are done with it. Block: 2
// consumer warpgroups (v7's 128 x 256 tile) + 1 producer warp = 288 threads.
// ============================================================================================
#define V8_STAGES 4
#define V8_THREADS 288
#define V8_CONSUMERS 256
// the CUtensorMap of cuda.h (64-byte aligned, 128 bytes; opaque, filled by the driver)
struct __align__(64) TmaDescriptor { unsigned long long opaque[16]; };

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ void mbar_init(u32 bar, u32 count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(u32 bar, u32 bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(u32 bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" :: "r"(bar) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(u32 bar, u32 parity)
{
    u32 done;
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.b32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done != 0;
}
// the same question without waiting at all (try_wait may suspend the thread for a while before it says no)
__device__ __forceinline__ bool mbar_test_wait(u32 bar, u32 parity)
{
    u32 done;
    asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.b32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done != 0;
}
__device__ __forceinline__ unsigned long long global_timer_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %globaltimer;\n" : "=l"(t));
    return t;
}
// waits for the phase of parity `parity` to complete; a wait of over 2 s is a bug (a tile that
// never arrives, a slot never released): trap, which ends the launch with an error instead of
// hanging the GPU
__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity)
{
    if (mbar_try_wait(bar, parity)) return;
    const unsigned long long start = global_timer_ns();
    while (!mbar_try_wait(bar, parity))
        if (global_timer_ns() - start > 2000000000ull) asm volatile("trap;\n");
}
// the TMA copies box (c0 = column, c1 = row) of the tensor `map` describes into shared memory
// at dst and counts its bytes on the mbarrier bar
__device__ __forceinline__ void tma_load_2d(u32 dst, const TmaDescriptor* map, int c0, int c1, u32 bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
                 :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void tma_load_2d_multicast(u32 dst, const TmaDescriptor* map, int c0, int c1, u32 bar, unsigned short cta_mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n"
                 :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask) : "memory");
}
__device__ __forceinline__ void mbar_arrive_cluster(u32 bar, u32 rank)
{
    u32 remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(bar), "r"(rank));
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" :: "r"(remote) : "memory");
}
__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ u32 cluster_rank()
{
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}
#endif

// tma_a: A (M x K, 16-bit) in boxes of 64 (k) x 128 (m); tma_b: B (K x N) in boxes of 64 (n) x 64 (k)
template <class P>
__device__ __forceinline__ void tma_wgmma_gemm(const TmaDescriptor* tma_a, const TmaDescriptor* tma_b, float* __restrict__ C,
                                               int M, int N, int K)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int A_BYTES = V7_BM * V7_BK * 2, B_BYTES = V7_BK * V7_BN * 2, STAGE = A_BYTES + B_BYTES;
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ __align__(8) unsigned long long bars[2 * V8_STAGES];      // full[0..S-1], empty[0..S-1]
    const u32 base = (smem_u32(smem) + 1023) & ~1023u;       // TMA's 128-byte swizzle repeats every 1024 bytes
    const u32 full = smem_u32(&bars[0]), empty = smem_u32(&bars[V8_STAGES]);
    int bm, bn;
    grouped_block<8>(bm, bn);
    const int m0 = bm * V7_BM, n0 = bn * V7_BN;
    const int tiles = K / V7_BK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < V8_STAGES; ++s) {
            mbar_init(full + 8 * s, 1);                       // the producer's arrive.expect_tx (+ the TMA's bytes)
            mbar_init(empty + 8 * s, V8_CONSUMERS / 32);      // one arrive per consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x >= V8_CONSUMERS) {                        // the producer warp: one thread issues every copy
        if (threadIdx.x == V8_CONSUMERS) {
            for (int kt = 0; kt < tiles; ++kt) {
                const int s = kt % V8_STAGES;
                if (kt >= V8_STAGES) mbar_wait(empty + 8 * s, ((kt / V8_STAGES) & 1) ^ 1);   // tile kt-S is done with
                const u32 sa = base + s * STAGE, sb = sa + A_BYTES;
                mbar_arrive_expect_tx(full + 8 * s, STAGE);
                tma_load_2d(sa, tma_a, kt * V7_BK, m0, full + 8 * s);
#pragma unroll
                for (int j = 0; j < V7_BN / 64; ++j)          // v7's 4 column blocks of 64 x 64
                    tma_load_2d(sb + j * (V7_BK * 128), tma_b, n0 + j * 64, kt * V7_BK, full + 8 * s);
            }
        }
        return;
    }
    const int warpgroup = threadIdx.x / 128, wlane = threadIdx.x % 128, warp = wlane / 32, lane = wlane % 32;
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.f;
    for (int kt = 0; kt < tiles; ++kt) {
        const int s = kt % V8_STAGES;
        mbar_wait(full + 8 * s, (kt / V8_STAGES) & 1);        // the TMA has written tile kt
        const u32 sa = base + s * STAGE + warpgroup * 64 * 128, sb = base + s * STAGE + A_BYTES;
        fence_accumulators(d);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < V7_BK / 16; ++kk)
            wgmma_m64n256k16<P>(d, wgmma_desc(sa + kk * 32, 16, 1024), wgmma_desc(sb + kk * 16 * 128, V7_BK * 128, 1024));
        wgmma_commit();
        fence_accumulators(d);
        wgmma_wait<1>();                                      // tile kt-1's wgmma is done: its stage goes back
        fence_accumulators(d);
        if (kt > 0 && lane == 0) mbar_arrive(empty + 8 * ((kt - 1) % V8_STAGES));
    }
    wgmma_wait<0>();
    fence_accumulators(d);
    const int row = m0 + warpgroup * 64 + warp * 16 + (lane >> 2);
#pragma unroll
    for (int i = 0; i < V7_BN / 8; ++i) {
        const int col = n0 + i * 8 + (lane & 3) * 2;
        *reinterpret_cast<float2*>(&C[(size_t)row * N + col]) = make_float2(d[4 * i], d[4 * i + 1]);
        *reinterpret_cast<float2*>(&C[(size_t)(row + 8) * N + col]) = make_float2(d[4 * i + 2], d[4 * i + 3]);
    }
#endif
}

// ---- v8: wgmma fed by TMA: one thread's cp.async.bulk.tensor moves a whole swizzled tile, mbarriers hand stages between a producer warp and the consumer warpgroups (sm_90a only)
extern "C" __global__ void __launch_bounds__(V8_THREADS, 1)
tc_v8_tma_wgmma_f16(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
                    float* __restrict__ C, int M, int N, int K)
{
    tma_wgmma_gemm<F16>(&tma_a, &tma_b, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(V8_THREADS, 1)
tc_v8_tma_wgmma_bf16(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
                     float* __restrict__ C, int M, int N, int K)
{
    tma_wgmma_gemm<Bf16>(&tma_a, &tma_b, C, M, N, K);
}

// ============================================================================================
// v6w (sm_90a): TF32 mma.sync fed by the TMA, stages handed over with mbarriers instead of
// __syncthreads: the test of whether v6t's one block-wide barrier per k-tile and its cp.async
// instructions are what hold the tensor pipe at 77 % (Nsight Compute). A warp waits only for
// the tile it reads next (full[s], completed by the TMA's bytes) and releases each tile when
// its last fragments are in registers (empty[s], one arrive per warp). The TMA writes the
// 128-byte swizzle v6t's ldmatrix addresses already assume (chunk c of row r at c ^ (r & 7),
// tiles 1024-byte aligned), and no consumer issues a copy instruction.
// Measured (H100, benchmarks/results/tensor_cores_tf32_h100.*): the barrier stalls go (0.36 a
// warp instruction to 0), the tensor pipe stays at 76-77 %, the time within 3 % of v6t's.
// Thread 0 issues the copies: at the end of k-tile g it refills the slot k-tile g-1 freed,
// STAGES-1 k-tiles ahead. (A producer warp of its own, as v8 has, would cap every thread at 168
// registers: ptxas sizes a 288- or 384-thread block for 65536 / 384, and the 64 x 64 warps need
// about 220; measured with --ptxas-options=-v: 380 bytes spilled.)
// Boxes: 32 k (128 bytes) x BM rows of A, 32 k x BN rows of B^T (tensor maps made by the host).
// ============================================================================================
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Which k-tiles of which C tiles a block computes: a list of units (tile, k-tiles kb .. ke-1).
// ONE_TILE: tile blockIdx.x, whole. PERSISTENT: tiles blockIdx.x, + gridDim.x, ..., whole.
// STREAM_K (Osama et al., "Stream-K", PPoPP 2023): the persistent walk over the full waves only,
// then an even share of the last wave's k-tiles: 4096^2 in 128 x 256 tiles is 512 tiles, 3.88
// waves of 132 SMs, and a fourth whole wave would leave 16 SMs idle for a quarter of the time.
// Here the 116 tiles left are 14,848 k-tiles, 112 or 113 a block; a tile whose k-tiles fall to
// several blocks is summed by the last of them to finish (fix_up). The share must be at least
// one k-tile a block, else the tail stays whole tiles.
// A share is the end of one tile (k-tiles k1 ..) and the start of the next (.. k2) or a piece of
// one. STREAM_K_TAIL_IN_ORDER walks it in that order, so the 132 blocks start the tail at 132
// different k (k1 = 112.5 c mod 128) and read 132 different slices of A and B^T at a time.
// STREAM_K_TAIL walks the next tile's start first: every block starts its tail at k = 0, and
// the end of the other tile, k1 .. 127, comes at k1 - k2 = 128 - share = 15 or 16 k-tiles ahead
// of the blocks still on their first piece: two slices at a time, as in the full waves.
// Measured (H100, benchmarks/results/ncu_streamk_h100.txt, tensor_cores_tf32_h100.json): in order,
// 917 MB read from DRAM against the persistent kernel's 373 and 10 points slower; second tile first,
// 392 MB, and still 3 points slower than the persistent kernel (the fix-up's adds wait for L2 in 3 %
// of its stall samples, ncu_source_streamk_h100.csv).
enum Schedule { ONE_TILE, PERSISTENT_TILES, STREAM_K_TAIL, STREAM_K_TAIL_IN_ORDER };
struct TileSchedule {
    int ktiles, blocks, dp_units, sk_tile0, sk_begin, sk_end, sk_units, units, total;
    bool reverse;                                              // the share's tiles last to first
    long long sk_iters;                                        // the tail's k-tiles, all blocks together
    __device__ TileSchedule(Schedule mode, int tiles, int ktiles_) : ktiles(ktiles_), blocks(gridDim.x)
    {
        const int me = blockIdx.x, waves = tiles / blocks, rest = tiles - waves * blocks;
        sk_tile0 = tiles;
        sk_iters = 0;
        sk_begin = sk_end = 0;
        reverse = mode == STREAM_K_TAIL;
        if (mode == ONE_TILE) dp_units = 1;
        else if ((mode == STREAM_K_TAIL || mode == STREAM_K_TAIL_IN_ORDER) && rest > 0 && (long long)rest * ktiles >= blocks) {
            dp_units = waves;
            sk_tile0 = waves * blocks;
            sk_iters = (long long)rest * ktiles;
            sk_begin = (int)(me * sk_iters / blocks);
            sk_end = (int)((me + 1) * sk_iters / blocks);
        } else dp_units = (tiles - me + blocks - 1) / blocks;
        sk_units = sk_end > sk_begin ? (sk_end - 1) / ktiles - sk_begin / ktiles + 1 : 0;
        units = dp_units + sk_units;
        total = dp_units * ktiles + (sk_end - sk_begin);
    }
    __device__ void unit(int u, int& tile, int& kb, int& ke) const
    {
        if (u < dp_units) {
            tile = blockIdx.x + u * blocks;
            kb = 0;
            ke = ktiles;
            return;
        }
        const int j = reverse ? sk_units - 1 - (u - dp_units) : u - dp_units;   // the share's j-th tile
        const int t = sk_begin / ktiles + j;                   // the tail's tile t
        tile = sk_tile0 + t;
        kb = j == 0 ? sk_begin - t * ktiles : 0;
        ke = min(ktiles, sk_end - t * ktiles);
    }
    // the block whose share of the tail holds its k-tile x: the last c with c * sk_iters / blocks <= x
    __device__ int block_of(long long x) const { return (int)(((x + 1) * blocks + sk_iters - 1) / sk_iters) - 1; }
    // a block's partial sums of tail tile t wait in workspace slot 2c (its first tile) or 2c + 1 (its last)
    __device__ int slot(int c, int t) const { return 2 * c + (t == (int)(c * sk_iters / blocks) / ktiles ? 0 : 1); }
};

template <int BM, int BN, int STAGES, int GROUP, bool B_LATE, bool PERSISTENT, bool LAST_ISSUES, int CLUSTER, int STREAM_K = 0,
          bool PRODUCER = false, bool STAGED_C = false, bool EARLY_RELEASE = false, bool MMA_FIRST = false,
          bool SNAKE = false>
struct MmaTf32Tma {
    // v6t's fragments, offsets and MMA shapes (B^T given, not rounded): its layout is the TMA's
    typedef MmaTf32Bt<BM, BN, 32, 64, 64, STAGES, GROUP, B_GIVEN_T, false, B_LATE> Bt;
    static constexpr int WARPS = Bt::WARPS, KSTEPS = Bt::KSTEPS;
    static constexpr int A_BYTES = Bt::A_BYTES, STAGE_BYTES = Bt::STAGE_BYTES;
    static_assert(STAGE_BYTES % 1024 == 0 && A_BYTES % 1024 == 0, "TMA's 128-byte swizzle repeats every 1024 bytes");
    static_assert(BM <= 256 && BN <= 256, "a TMA box has at most 256 rows");
    // CLUSTER 2: the pair shares the larger operand tile, each block asking the TMA for half of it, multicast to
    // both: B^T's when BN >= BM (tiles one above the other in a group), A's when BM > BN (tiles side by side, GROUP
    // then groups rows of pairs; kernels/tensor_cores.py: cluster_shape). A k-tile of 256 x 128 tiles is 48 KB from
    // L2 for a tile alone, 32 KB a tile in a pair sharing A.
    static constexpr bool SHARE_A = CLUSTER == 2 && BM > BN;
    static_assert(CLUSTER == 1 || (CLUSTER == 2 && (!PERSISTENT || PRODUCER) && !LAST_ISSUES && (SHARE_A || GROUP % 2 == 0)),
                  "CLUSTER 2: a cluster's blocks hold neighbouring tiles; persistent, "
                  "they walk tiles 2c + r + p gridDim.x together (gridDim.x even)");
    static_assert(!(LAST_ISSUES && PERSISTENT) && (STREAM_K == 0 || PERSISTENT), "LAST_ISSUES: one tile a block; STREAM_K: persistent");
    static constexpr int THREADS = WARPS * 32, ACC4 = Bt::MT * Bt::NT;     // float4s of accumulators a thread
    // PRODUCER: a warpgroup of its own (threads 0-127, before the consumers) asks the TMA for the tiles, so
    // no consumer warp spends its time there and a slot is refilled the moment the last warp releases it.
    // A 384-thread block gets 168 registers a thread (3 warps share each scheduler's 16384); setmaxnreg
    // gives the producer's back (40) to the consumers (232: they need about 225; a single producer warp,
    // 288 threads, would leave them 168 too, and ptxas spilled 604 bytes there).
    static constexpr int PRODUCER_THREADS = PRODUCER ? 128 : 0;
    static_assert(!PRODUCER || (STREAM_K == 0 && !LAST_ISSUES && !B_LATE),
                  "PRODUCER: whole tiles (its warpgroup leaves before the end)");
    static_assert(!PRODUCER || (40 + 2 * 232) * 32 <= 16384, "three warps' registers on each scheduler");
    // STAGED_C: C leaves through an 8-row strip of shared memory a consumer warp, past the ring (which already
    // holds the next tile's k-tiles: 34 KB is all that is left), written as the fragments hold it and read back
    // as float4 rows. A fragment's float2 store touches 8 rows, 8 L1 tag requests an instruction, and those
    // stores stalled on the LSU queue (stall_lg, benchmarks/results/ncu_source_streamk_h100.csv); a strip's
    // float4 store touches 2 whole 256-byte rows: 4 tags for twice the bytes.
    static constexpr int STRIP_LD = 64 + 8;                              // floats a strip row: +8 keeps float2 writes conflict-free
    static constexpr int STRIP_BYTES = 8 * STRIP_LD * 4;
    static constexpr int STAGED_BYTES = STAGED_C ? WARPS * STRIP_BYTES : 0;   // shared memory past the ring
    static_assert(!STAGED_C || (PRODUCER && STREAM_K == 0), "STAGED_C: whole tiles, with a producer");
    // EARLY_RELEASE: a consumer warp releases slot s once it has loaded the slot's last fragments (k-step KSTEPS - 1,
    // loaded during k-step KSTEPS - 2), not after the MMAs of its last two k-steps: the producer refills it sooner.
    // (The arrive orders the warp's ldmatrix reads of the slot before the TMA's writes, as it does after the MMAs.)
    static_assert(!EARLY_RELEASE || (PRODUCER && !B_LATE), "EARLY_RELEASE: a producer, B with A");
    // RELAY (EARLY_RELEASE in a cluster): a consumer warp's arrive orders its ldmatrix reads before the arrive for its
    // own block only, so a warp that releases a slot early tells its own producer (freed[s]), and the producer, once
    // all its consumers have, tells both blocks (empty[s]: one arrive from each block's producer) before the pair's
    // copies refill the slot. The chain is of events that already happened: the reads were done when the consumers
    // arrived, before the producer's arrive, before the other producer's copy. (A consumer's remote arrive made
    // .release.cluster would give that order on its own; ptxas puts a MEMBAR.ALL.GPU before it, which halved the
    // rate: see V6W_KERNEL's CLUSTER 2.)
    static constexpr bool RELAY = EARLY_RELEASE && CLUSTER > 1;
    // MMA_FIRST: at a k-tile's last k-step the warp first tests (without waiting) whether the next k-tile has landed;
    // if not, it issues the k-step's MMAs and only then waits and loads the next fragments (a consumer warp found
    // the next k-tile missing at the first look in 19 % of the k-tiles: benchmarks/results/ncu_source_staged_h100.csv)
    static_assert(!MMA_FIRST || (PRODUCER && !B_LATE), "MMA_FIRST: a producer, B with A");
    // SNAKE: the block's odd units (persistent: its tiles of odd rounds) walk K from the end, and odd groups of tile
    // rows walk their columns right to left: a round's first k-tiles are then the last its predecessor read, of the
    // A panels (same group) or B^T panels (the next group, same columns) they share, while still in L2. (The
    // consumers take the slots in order and never see K: only the producer's copies change.)
    static_assert(!SNAKE || (PRODUCER && PERSISTENT && STREAM_K == 0), "SNAKE: whole tiles, persistent, with a producer");

    // Stream-K's fix-up of tail tile `tile`: this block's partial sums go to its workspace slot (float4
    // e of thread t at e * THREADS + t: a warp's stores and loads are whole 512-byte lines), then a
    // counter per tile says who is last; the last block adds every block's partial sums in block
    // order (the same sum whoever finishes last) straight into C, reading them from the workspace
    // (its own too): the accumulators are dead once stored, so the sum needs no registers of its own
    // (summed back into the accumulators, ptxas -v reported 488 bytes spilled).
    static __device__ void fix_up(const typename Bt::Acc& acc, const TileSchedule& sched, int tile, float* __restrict__ ws,
                                  int* __restrict__ counters, float* __restrict__ C, int row0, int col0, int N)
    {
        __shared__ int last;
        const int t = tile - sched.sk_tile0;
        const long long first_k = (long long)t * sched.ktiles;
        const int c_lo = sched.block_of(first_k), c_hi = sched.block_of(first_k + sched.ktiles - 1);
        constexpr int SLOT = ACC4 * THREADS;                  // float4s of one slot
        float4* mine = reinterpret_cast<float4*>(ws) + (size_t)sched.slot(blockIdx.x, t) * SLOT + threadIdx.x;
#pragma unroll
        for (int i = 0; i < Bt::MT; ++i)
#pragma unroll
            for (int j = 0; j < Bt::NT; ++j)
                mine[(i * Bt::NT + j) * THREADS] = make_float4(acc[i][j][0], acc[i][j][1], acc[i][j][2], acc[i][j][3]);
        __threadfence();                                      // the partial sums are visible before they are counted
        __syncthreads();
        if (threadIdx.x == 0) {
            last = atomicAdd(&counters[t], 1) == c_hi - c_lo;
            if (last) counters[t] = 0;                        // ready for the next launch
        }
        __syncthreads();
        if (!last) return;
        __threadfence();
        // tile t is the first tile of every contributor after c_lo (slot 2c), and c_lo's first or last
        const float4* lo = reinterpret_cast<const float4*>(ws) + (size_t)sched.slot(c_lo, t) * SLOT + threadIdx.x;
        const float4* next = reinterpret_cast<const float4*>(ws) + (size_t)(2 * c_lo + 2) * SLOT + threadIdx.x;
        const int lane = threadIdx.x % 32;
#pragma unroll
        for (int i = 0; i < Bt::MT; ++i)
#pragma unroll
            for (int j = 0; j < Bt::NT; ++j) {
                const int e = (i * Bt::NT + j) * THREADS;
                float4 v = __ldcg(lo + e);                    // from L2: L1 has not seen the other blocks' writes
                for (int c = 0; c < c_hi - c_lo; ++c) {
                    const float4 p = __ldcg(next + (size_t)2 * c * SLOT + e);
                    v.x += p.x; v.y += p.y; v.z += p.z; v.w += p.w;
                }
                const int row = row0 + i * 16 + (lane >> 2), col = col0 + j * 8 + (lane & 3) * 2;   // V6::store's places
                *reinterpret_cast<float2*>(&C[(size_t)row * N + col]) = make_float2(v.x, v.y);
                *reinterpret_cast<float2*>(&C[(size_t)(row + 8) * N + col]) = make_float2(v.z, v.w);
            }
    }

    // STAGED_C's epilogue: each 8-row half of a 16-row fragment block (a fragment's floats 0, 1 are row lane / 4,
    // its 2, 3 that row + 8) goes to the warp's strip as the fragments hold it, then out as float4 rows (a warp
    // instruction: 2 rows of 64 floats)
    static __device__ __forceinline__ void store_staged(const typename Bt::Acc& acc, float* __restrict__ C, u32 strip,
                                                        int row0, int col0, int N)
    {
        const int lane = threadIdx.x % 32;
#pragma unroll
        for (int i = 0; i < Bt::MT; ++i)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
#pragma unroll
                for (int j = 0; j < Bt::NT; ++j)
                    st_shared_f2(strip + ((lane >> 2) * STRIP_LD + j * 8 + (lane & 3) * 2) * 4, acc[i][j][2 * h], acc[i][j][2 * h + 1]);
                __syncwarp();
#pragma unroll
                for (int p = 0; p < 4; ++p) {
                    const int e = lane + 32 * p, r = e / 16, c4 = e % 16;
                    const float4 v = ld_shared_f4(strip + (r * STRIP_LD + c4 * 4) * 4);
                    *reinterpret_cast<float4*>(&C[(size_t)(row0 + i * 16 + h * 8 + r) * N + col0 + c4 * 4]) = v;
                }
                __syncwarp();                                 // the strip is rewritten by the next half
            }
    }

    static __device__ __forceinline__ void run(const TmaDescriptor* tma_a, const TmaDescriptor* tma_bt, float* __restrict__ C,
                                               int M, int N, int K, float* __restrict__ ws = nullptr,
                                               int* __restrict__ counters = nullptr)
    {
        extern __shared__ __align__(128) unsigned char smem[];
        __shared__ __align__(8) unsigned long long bars[(RELAY ? 3 : 2) * STAGES];   // full[0..S-1], empty[0..S-1], RELAY: freed
        __shared__ int released[STAGES];                                    // LAST_ISSUES: warps done with each slot
        const u32 base = (smem_u32(smem) + 1023) & ~1023u;
        const u32 full = smem_u32(&bars[0]), empty = smem_u32(&bars[STAGES]);
        if (threadIdx.x == 0) {
            for (int s = 0; s < STAGES; ++s) {
                mbar_init(full + 8 * s, 1);                   // the issuer's arrive.expect_tx (+ the TMA's bytes)
                mbar_init(empty + 8 * s, RELAY ? CLUSTER : WARPS * CLUSTER);
                if (RELAY) mbar_init(empty + 8 * (STAGES + s), WARPS);
            }
            asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
            for (int s = 0; s < STAGES; ++s) released[s] = 0;
        }
        if constexpr (CLUSTER > 1) cluster_sync(); else __syncthreads();
        // PRODUCER: the producer's registers go to the consumers before anything is live (ptxas spilled
        // what crossed setmaxnreg), and each role computes its own schedule
        if constexpr (PRODUCER) {
            if (threadIdx.x < PRODUCER_THREADS) {
                asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
                if (threadIdx.x == 0) tiles<true>(tma_a, tma_bt, C, M, N, K, ws, counters, base, full, empty, released);
                return;
            }
            asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
        }
        tiles<false>(tma_a, tma_bt, C, M, N, K, ws, counters, base, full, empty, released);
    }

    // The block's tiles after the ring's set-up: ISSUE_ONLY, the producer's part (every k-tile into its slot
    // once free); otherwise the consumers' (and, without PRODUCER, thread 0 of warp 0 issues too)
    template <bool ISSUE_ONLY>
    static __device__ __forceinline__ void tiles(const TmaDescriptor* tma_a, const TmaDescriptor* tma_bt, float* __restrict__ C,
                                                 int M, int N, int K, float* __restrict__ ws, int* __restrict__ counters,
                                                 u32 base, u32 full, u32 empty, int* released)
    {
        // the block's units of work (TileSchedule); g counts the block's k-tiles across them, so the ring
        // runs on from one tile to the next
        const int tiles_m = M / BM, tiles_n = N / BN, ktiles = K / 32;
        // STREAM_K: 0 none, 1 the share's tiles last to first, 2 in order
        const TileSchedule sched(STREAM_K == 1 ? STREAM_K_TAIL : STREAM_K == 2 ? STREAM_K_TAIL_IN_ORDER
                                 : PERSISTENT ? PERSISTENT_TILES : ONE_TILE, tiles_m * tiles_n, ktiles);
        const int total = sched.total;
        auto origin = [&](int tile, int& m0, int& n0) {
            int bm, bn;
            if constexpr (SHARE_A) {                          // tile 2p + r: pair p's left (r = 0) or right tile
                grouped_tile<GROUP>(tile / 2, tiles_m, tiles_n / 2, bm, bn);
                if (SNAKE && bm / GROUP % 2) bn = tiles_n / 2 - 1 - bn;
                bn = 2 * bn + tile % 2;
            } else {                                          // CLUSTER 2: tiles 2c, 2c + 1 one above the other
                grouped_tile<GROUP>(tile, tiles_m, tiles_n, bm, bn);
                if (SNAKE && bm / GROUP % 2) bn = tiles_n - 1 - bn;
            }
            m0 = bm * BM;
            n0 = bn * BN;
        };
        const u32 rank = CLUSTER > 1 ? cluster_rank() : 0;
        // LAST_ISSUES: the last warp to finish with k-tile g's slot asks for k-tile g + STAGES into it at
        // once (an atomic count per slot says which warp is last): the ring runs STAGES k-tiles ahead, not
        // STAGES - 1, and nobody waits for a slot to empty
        int own_m0 = 0, own_n0 = 0;
        if (LAST_ISSUES) origin(blockIdx.x, own_m0, own_n0);
        auto issue_at = [&](int g) {
            const int s = g % STAGES;
            const u32 sa = base + s * STAGE_BYTES;
            if (g >= STAGES) fence_proxy_async();               // the warps' reads of the slot before the TMA's writes
            mbar_arrive_expect_tx(full + 8 * s, STAGE_BYTES);
            tma_load_2d(sa, tma_a, g * 32, own_m0, full + 8 * s);
            tma_load_2d(sa + A_BYTES, tma_bt, g * 32, own_n0, full + 8 * s);
        };
        // otherwise: the next k-tile thread 0 asks for: its number ig (slot ig % STAGES, once k-tile ig - STAGES has
        // left it), its unit iu, its k and its tile's origin, advanced by one each time (no division in the loop:
        // the issuing warp is a consumer too, and every instruction it spends here delays its MMAs)
        int ig = 0, iu = 0, ikt = 0, ike = 0, im0 = 0, in0 = 0, ikb = 0;
        auto start_unit = [&](int u) {
            int tile;
            sched.unit(u, tile, ikt, ike);
            ikb = ikt;
            origin(tile, im0, in0);
        };
        if (!PRODUCER && threadIdx.x == 0 && sched.units > 0) start_unit(0);
        // k-tile g may go into slot g % STAGES once k-tile g - STAGES has left it in every block of the cluster
        const u32 freed = empty + 8 * STAGES;                 // RELAY: this block's consumers released the slot
        auto wait_empty = [&](int g) {
            const int s = g % STAGES;
            const u32 parity = ((g / STAGES) & 1) ^ 1;
            if constexpr (RELAY) {
                mbar_wait(freed + 8 * s, parity);
                for (u32 r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(empty + 8 * s, r);
            }
            mbar_wait(empty + 8 * s, parity);
        };
        auto issue_next = [&]() {
            const int s = ig % STAGES;
            if (ig >= STAGES) wait_empty(ig);
            const u32 sa = base + s * STAGE_BYTES;
            const int k = 32 * (SNAKE && iu % 2 ? ikb + ike - 1 - ikt : ikt);
            mbar_arrive_expect_tx(full + 8 * s, STAGE_BYTES);
            if constexpr (SHARE_A) {                          // half of A's tile, to both blocks; B^T's tile, its own
                tma_load_2d_multicast(sa + rank * (BM / 2) * 128, tma_a, k, im0 + rank * (BM / 2), full + 8 * s,
                                      (unsigned short)0b11);
                tma_load_2d(sa + A_BYTES, tma_bt, k, in0, full + 8 * s);
            } else {
                tma_load_2d(sa, tma_a, k, im0, full + 8 * s);
                if constexpr (CLUSTER > 1)
                    tma_load_2d_multicast(sa + A_BYTES + rank * (BN / CLUSTER) * 128, tma_bt, k, in0 + rank * (BN / CLUSTER),
                                          full + 8 * s, (unsigned short)((1 << CLUSTER) - 1));
                else
                    tma_load_2d(sa + A_BYTES, tma_bt, k, in0, full + 8 * s);
            }
            ++ig;
            if (++ikt == ike && ++iu < sched.units) start_unit(iu);
        };
        if constexpr (ISSUE_ONLY) {                           // the producer: every k-tile, as soon as its slot is free
            if (sched.units > 0) {
                start_unit(0);
                while (ig < total) issue_next();
            }
            // CLUSTER: no block leaves while the other may still arrive on its barriers or receive its copies. This
            // thread keeps the block alive until the consumers of both blocks have released every slot once more
            // (after that, neither arrives here again, and every copy has landed and been read). Any warp-wide
            // instruction after the consumers' loop (a cluster barrier, even a __syncwarp) made ptxas spill 400
            // bytes inside it.
            if constexpr (CLUSTER > 1)
                for (int g = total > STAGES ? total : STAGES; g < total + STAGES; ++g) wait_empty(g);
            return;
        } else if (!PRODUCER && threadIdx.x == 0) {
            if (LAST_ISSUES)
                for (int g = 0; g < STAGES && g < total; ++g) issue_at(g);
            else
                for (int g = 0; g < STAGES - 1 && g < total; ++g) issue_next();
        }
        const int warp = (threadIdx.x - PRODUCER_THREADS) / 32, lane = threadIdx.x % 32;
        const int wm = warp / (BN / 64), wn = warp % (BN / 64);
        typename Bt::Acc acc;
        typename Bt::Frags f[2];
        const typename Bt::Offsets offsets = Bt::fragment_offsets(wm, wn);
        if (total > 0) {
            mbar_wait(full, 0);
            Bt::load_a_frags(f[0], base, offsets, 0);
            Bt::load_b_frags(f[0], base + A_BYTES, offsets, 0);
        }
        int g = 0, s = 0;
        for (int u = 0; u < sched.units; ++u) {
            int tile, kb, ke;
            sched.unit(u, tile, kb, ke);
            zero_accumulators(acc);
            for (int kt = kb; kt < ke; ++kt, ++g) {
                const u32 sa = base + s * STAGE_BYTES, sb = sa + A_BYTES;
                const int ns = s + 1 == STAGES ? 0 : s + 1;
                const u32 na = base + ns * STAGE_BYTES, nb = na + A_BYTES;
#pragma unroll
                for (int kk = 0; kk < KSTEPS; ++kk) {
                    typename Bt::Frags& next = f[(kk + 1) & 1];
                    const bool last = kk == KSTEPS - 1;
                    if (!last) {
                        Bt::load_a_frags(next, sa, offsets, kk + 1);
                        if (!B_LATE) Bt::load_b_frags(next, sb, offsets, kk + 1);
                        if (EARLY_RELEASE && kk == KSTEPS - 2) {     // the slot's last fragments are loaded
                            __syncwarp();
                            if (lane == 0) mbar_arrive((RELAY ? freed : empty) + 8 * s);
                        }
                    } else if (g + 1 < total) {               // the next k-tile, of this tile or the next
                        if (MMA_FIRST && !mbar_test_wait(full + 8 * ns, ((g + 1) / STAGES) & 1)) {
                            Bt::mma_all(acc, f[kk & 1]);      // not there yet: multiply first, then wait
                            mbar_wait(full + 8 * ns, ((g + 1) / STAGES) & 1);
                            Bt::load_a_frags(next, na, offsets, 0);
                            Bt::load_b_frags(next, nb, offsets, 0);
                            continue;
                        }
                        if (!MMA_FIRST) mbar_wait(full + 8 * ns, ((g + 1) / STAGES) & 1);
                        Bt::load_a_frags(next, na, offsets, 0);
                        if (!B_LATE) Bt::load_b_frags(next, nb, offsets, 0);
                    }
                    Bt::mma_all(acc, f[kk & 1]);
                    if (B_LATE) {
                        if (!last) Bt::load_b_frags(next, sb, offsets, kk + 1);
                        else if (g + 1 < total) Bt::load_b_frags(next, nb, offsets, 0);
                    }
                }
                // the MMAs above consumed k-tile g's last fragments: the warp is done with slot s
                __syncwarp();
                if constexpr (LAST_ISSUES) {
                    if (lane == 0 && atomicAdd(&released[s], 1) % WARPS == WARPS - 1 && g + STAGES < total)
                        issue_at(g + STAGES);
                } else {
                    if (lane == 0 && !EARLY_RELEASE) {
                        if constexpr (CLUSTER > 1) { for (u32 r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(empty + 8 * s, r); }
                        else mbar_arrive(empty + 8 * s);
                    }
                    if (!PRODUCER && threadIdx.x == 0 && ig < total) issue_next();   // k-tile g + STAGES - 1, into g - 1's slot
                }
                s = ns;
            }
            // the next unit's first k-tiles are on their way (and its first fragments loaded) while C is stored
            int m0, n0;
            origin(tile, m0, n0);
            if constexpr (STAGED_C) store_staged(acc, C, base + STAGES * STAGE_BYTES + warp * STRIP_BYTES, m0 + wm * 64, n0 + wn * 64, N);
            else if (STREAM_K == 0 || (kb == 0 && ke == ktiles)) Bt::V6::store(acc, C, base, m0 + wm * 64, n0 + wn * 64, N);
            else fix_up(acc, sched, tile, ws, counters, C, m0 + wm * 64, n0 + wn * 64, N);
        }
        if constexpr (CLUSTER > 1 && !PRODUCER) cluster_sync();   // with a producer, its issuing thread waits instead
    }
};
#endif

// One v6w configuration: (name, BM, BN, STAGES, GROUP, B_LATE, PERSISTENT, LAST_ISSUES, CLUSTER);
// kernels/tensor_cores.py reads these lines. PERSISTENT: launched with one block per SM (the host's grid), each
// walking tiles gridDim.x apart. LAST_ISSUES: the last warp done with a slot refills it (else thread 0, STAGES-1
// k-tiles ahead). CLUSTER 2: blocks 2c, 2c+1 form a cluster and share B^T's tile, each asking the TMA for half of
// it, multicast to both; the consumers release a slot in both blocks (a remote mbarrier arrive, plain: with
// .release.cluster it brings a MEMBAR.ALL.GPU that halved the rate, benchmarks/results/ncu_source_tf32_cluster2_h100.csv),
// after their MMAs; or, with EARLY_RELEASE, in their own block, and the producers relay it (MmaTf32Tma's RELAY).
#define V6W_KERNEL(name, BM, BN, STAGES, GROUP, B_LATE, PERSISTENT, LAST_ISSUES, CLUSTER)                       \
    extern "C" __global__ void __launch_bounds__((BM / 64) * (BN / 64) * 32, 1) __cluster_dims__(CLUSTER, 1, 1) \
    name(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_bt,             \
         float* __restrict__ C, int M, int N, int K)                                                            \
    {                                                                                                           \
        V6W_BODY(MmaTf32Tma<BM, BN, STAGES, GROUP, B_LATE, PERSISTENT, LAST_ISSUES, CLUSTER>::run(&tma_a, &tma_bt, C, M, N, K));       \
    }
// A v6w with a producer warpgroup: 128 more threads, one of which asks the TMA for every k-tile (name, BM, BN,
// STAGES, GROUP, PERSISTENT, STAGED_C, CLUSTER, EARLY_RELEASE, MMA_FIRST, SNAKE); kernels/tensor_cores.py reads these lines too.
#define V6W_PRODUCER_KERNEL(name, BM, BN, STAGES, GROUP, PERSISTENT, STAGED_C, CLUSTER, EARLY, MMA_FIRST, SNAKE) \
    extern "C" __global__ void __launch_bounds__((BM / 64) * (BN / 64) * 32 + 128, 1) __cluster_dims__(CLUSTER, 1, 1) \
    name(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_bt,             \
         float* __restrict__ C, int M, int N, int K)                                                            \
    {                                                                                                           \
        V6W_BODY(MmaTf32Tma<BM, BN, STAGES, GROUP, false, PERSISTENT, false, CLUSTER, 0, true, STAGED_C, EARLY, MMA_FIRST, SNAKE>::run(&tma_a, &tma_bt, C, M, N, K)); \
    }
// A v6w with a producer warpgroup whose tensor maps name their elements TF32 (CU_TENSOR_MAP_DATA_TYPE_TFLOAT32),
// not FP32: the same code, but the TMA rounds every element of A and B^T to nearest TF32 (ties to even) on its way
// into shared memory, as cuBLAS's TF32 GEMM rounds its inputs. With FP32 maps the MMAs read the raw FP32 bits and
// drop the low 13 (truncation). kernels/tensor_cores.py reads these lines and encodes the maps (TcVersion.tma_rounds).
#define V6W_PRODUCER_KERNEL_TMA_RN(...) V6W_PRODUCER_KERNEL(__VA_ARGS__)
// A stream-K v6w (persistent, one block an SM): two more parameters, the workspace of partial sums
// (2 x blocks x BM x BN floats) and a counter per tail tile (zero before the first launch; the last
// block of each tile sets it back to zero).
#define V6W_STREAM_K_KERNEL(name, BM, BN, STAGES, GROUP, IN_ORDER)                                               \
    extern "C" __global__ void __launch_bounds__((BM / 64) * (BN / 64) * 32, 1)                                 \
    name(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_bt,             \
         float* __restrict__ C, int M, int N, int K, float* __restrict__ ws, int* __restrict__ counters)         \
    {                                                                                                           \
        V6W_BODY(MmaTf32Tma<BM, BN, STAGES, GROUP, false, true, false, 1, IN_ORDER ? 2 : 1>::run(&tma_a, &tma_bt, C, M, N, K, ws, counters)); \
    }
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define V6W_BODY(...) __VA_ARGS__
#else
#define V6W_BODY(...)
#endif

// ---- v6w: TF32 mma.sync with B^T given, tiles brought by the TMA and handed over by mbarriers: no block-wide barrier and no copy instruction in the loop, so a warp waits only for the tile it reads next (sm_90a only)
V6W_KERNEL(tc_v6w_tf32_128x256_s4, 128, 256, 4, 8, false, false, false, 1)            // v6t's tile, 4 stages (192 KB): 3 k-tiles ahead
V6W_KERNEL(tc_v6w_tf32_256x128_s4, 256, 128, 4, 8, false, false, false, 1)            // tall: 8 warps of 64 x 64 over 256 x 128
V6W_KERNEL(tc_v6w_tf32_128x256_s4_persistent, 128, 256, 4, 8, false, true, false, 1)  // one block an SM walks its tiles: the next tile's loads fly during the epilogue, no block start-up
V6W_KERNEL(tc_v6w_tf32_256x128_s4_last, 256, 128, 4, 8, false, false, true, 1)       // the last warp done with a slot refills it: 4 k-tiles ahead, not 3 (do the tiles arrive late, or too slowly?)
V6W_KERNEL(tc_v6w_tf32_128x256_s4_cluster2, 128, 256, 4, 8, false, false, false, 2)  // clusters of 2 share B^T's tile (TMA multicast): by design a third fewer L2 requests per FLOP (measured: within 2 points of the same tile without)

// ---- v6w stream-K: the persistent walk over the full waves, then every block an even share of the last wave's k-tiles, partial tiles summed by the last block to finish: no SM idle in a fourth wave (sm_90a only)
V6W_STREAM_K_KERNEL(tc_v6w_tf32_128x256_s4_streamk, 128, 256, 4, 8, false)           // 512 tiles = 3.88 waves: the last 116 tiles' k-tiles split over all 132 SMs, each share's second tile first
V6W_STREAM_K_KERNEL(tc_v6w_tf32_128x256_s4_streamk_in_order, 128, 256, 4, 8, true)   // the blocks start the tail at 132 different k

// ---- v6w with a producer warpgroup: the consumers only wait, load fragments and multiply; one more warpgroup refills each slot the moment its last reader releases it, 4 k-tiles ahead, and gives its registers to the consumers (setmaxnreg) (sm_90a only)
V6W_PRODUCER_KERNEL(tc_v6w_tf32_128x256_s4_producer_persistent, 128, 256, 4, 8, true, false, 1, false, false, false)      // the persistent v6w, the TMA asked by a warpgroup of its own instead of thread 0 of consumer warp 0
V6W_PRODUCER_KERNEL(tc_v6w_tf32_256x128_s4_producer_persistent, 256, 128, 4, 8, true, false, 1, false, false, false)      // tall
V6W_PRODUCER_KERNEL(tc_v6w_tf32_128x256_s4_group4_producer_persistent, 128, 256, 4, 4, true, false, 1, false, false, false)  // groups of 4 tile rows, not 8: another order of the same tiles through L2
V6W_PRODUCER_KERNEL(tc_v6w_tf32_128x256_s4_producer_persistent_staged, 128, 256, 4, 8, true, true, 1, false, false, false)  // C through 8-row strips of shared memory: float4 stores of whole rows, a quarter of the L1 tag requests a byte
V6W_PRODUCER_KERNEL(tc_v6w_tf32_256x128_s4_producer_persistent_staged, 256, 128, 4, 8, true, true, 1, false, false, false)  // tall, C through 8-row strips
V6W_PRODUCER_KERNEL(tc_v6w_tf32_128x256_s4_cluster2_producer_persistent_staged, 128, 256, 4, 8, true, true, 2, false, false, false)  // clusters of 2 share B^T's tile (TMA multicast): a third fewer L2 reads a k-tile
V6W_PRODUCER_KERNEL(tc_v6w_tf32_128x256_s4_producer_persistent_staged_early, 128, 256, 4, 8, true, true, 1, true, false, false)  // each slot released once the warp has loaded its last fragments, not after its last MMAs: refilled half a k-tile sooner
V6W_PRODUCER_KERNEL(tc_v6w_tf32_256x128_s4_producer_persistent_staged_early, 256, 128, 4, 8, true, true, 1, true, false, false)  // tall, slots released early
V6W_PRODUCER_KERNEL(tc_v6w_tf32_128x256_s4_producer_persistent_staged_early_mmafirst, 128, 256, 4, 8, true, true, 1, true, true, false)  // when the next k-tile has not landed, the k-tile's last MMAs go first and the wait after them: the warp multiplies while it waits
V6W_PRODUCER_KERNEL(tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst, 256, 128, 4, 8, true, true, 1, true, true, false)  // tall, last MMAs first
V6W_PRODUCER_KERNEL(tc_v6w_tf32_128x256_s4_cluster2_producer_persistent_staged_mmafirst, 128, 256, 4, 8, true, true, 2, false, true, false)  // clusters of 2 sharing B^T's tile, last MMAs first: a third fewer bytes from L2 (slots released after the MMAs, by remote arrives in both blocks)
V6W_PRODUCER_KERNEL(tc_v6w_tf32_256x128_s4_cluster2_producer_persistent_staged_mmafirst, 256, 128, 4, 8, true, true, 2, false, true, false)  // tall, clusters of 2 side by side sharing A's tile
V6W_PRODUCER_KERNEL(tc_v6w_tf32_128x256_s4_cluster2_producer_persistent_staged_early_mmafirst, 128, 256, 4, 8, true, true, 2, true, true, false)  // and slots released early, relayed by the producers: refilled half a k-tile sooner, as alone
V6W_PRODUCER_KERNEL(tc_v6w_tf32_256x128_s4_cluster2_producer_persistent_staged_early_mmafirst, 256, 128, 4, 8, true, true, 2, true, true, false)  // tall, sharing A's tile, slots released early through the producers
V6W_PRODUCER_KERNEL(tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst_snake, 256, 128, 4, 8, true, true, 1, true, true, true)  // odd rounds walk K backwards, odd groups their columns right to left: a round starts on what the last read last, still in L2 (measured: 6 % fewer bytes from DRAM, no faster)
V6W_PRODUCER_KERNEL(tc_v6w_tf32_256x128_s4_cluster2_producer_persistent_staged_early_mmafirst_snake, 256, 128, 4, 8, true, true, 2, true, true, true)  // in clusters of 2 sharing A, slots released early (measured: 7 % fewer bytes from DRAM, no faster)

// ---- v6w whose TMA rounds the inputs to TF32: the tensor maps say TF32, so the tiles land in shared memory already rounded to nearest, their low 13 bits zero (sm_90a only)
V6W_PRODUCER_KERNEL_TMA_RN(tc_v6w_tf32_256x128_s4_producer_persistent_staged_early_mmafirst_rn, 256, 128, 4, 8, true, true, 1, true, true, false)  // the best tile alone: inputs rounded as cuBLAS rounds them, and 13 of every 32 bits the tiles carry through shared memory, ldmatrix and the MMAs' operand reads stay zero
V6W_PRODUCER_KERNEL_TMA_RN(tc_v6w_tf32_256x128_s4_cluster2_producer_persistent_staged_early_mmafirst_rn, 256, 128, 4, 8, true, true, 2, true, true, false)  // in clusters of 2 sharing A's tile, slots released early: the course's best TF32 mma.sync
