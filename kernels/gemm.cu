// Chapter 6: C = A @ B in float32, row-major (A is M x K, B is K x N, C is M x N), the same
// versions as kernels/gemm.py, launched through CuPy's RawModule
// (simtlab.cuda_source.cu_kernel("gemm", name)), plus float4 loads (v6), warp tiling with
// double-buffered shared memory (v7) and a cp.async ring autotuned over its tiles (v8, a
// template: one V8_KERNEL line per configuration). Every kernel takes M, N, K as int after its
// arrays and works on any sizes: loads outside a matrix read 0, stores outside it are skipped.
// The CPU reference is kernels/gemm.py: gemm_cpu (float64, rounded once to float32).
//
// Napkin math: 2*M*N*K FLOPs; at least 4*(M*K + K*N + M*N) bytes cross DRAM. At 4096^3 that is
// 137 GFLOP against 201 MB: 680 FLOP/byte, far right of the H100's ridge point (67 TFLOP/s /
// 3.35 TB/s = 20 FLOP/byte), so a good kernel is bound by the FP32 pipes, not by HBM.

#define TILE 16

// ---- v1: one thread per C element, threadIdx.x walks down the rows: with 16 x 16 blocks a warp covers 16 rows x 2 columns of C, so it reads 16 rows of A and writes 16 rows of C, 16 sectors per request
extern "C" __global__ void gemm_v1_naive(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, int M, int N, int K)
{
    const int row = blockIdx.x * blockDim.x + threadIdx.x;
    const int col = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
        C[(size_t)row * N + col] = acc;
    }
}

// ---- v2: threadIdx.x walks along a row of C: with 16 x 16 blocks a warp covers 2 rows x 16 columns: one A element per row (broadcast), 16 consecutive B elements, 16 consecutive C elements per row (2 sectors per row)
extern "C" __global__ void gemm_v2_coalesced(const float* __restrict__ A, const float* __restrict__ B,
                                             float* __restrict__ C, int M, int N, int K)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < M && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
        C[(size_t)row * N + col] = acc;
    }
}

// ---- v3: TILE x TILE tiles of A and B staged in shared memory, one phase per tile along K: each element is read from global memory once per block, TILE times fewer loads
extern "C" __global__ void gemm_v3_tiled(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, int M, int N, int K)
{
    __shared__ float sa[TILE][TILE];
    __shared__ float sb[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col = blockIdx.x * TILE + tx;
    const int row = blockIdx.y * TILE + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        sa[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        sb[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();                       // the whole tile is in before anyone reads it
#pragma unroll
        for (int j = 0; j < TILE; ++j)
            acc += sa[ty][j] * sb[j][tx];
        __syncthreads();                       // the next phase overwrites sa/sb
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
}

#define BM4 64
#define BN4 64
#define BK4 8
#define TM4 8
#define THREADS4 (BM4 * BN4 / TM4)
// ---- v4: 1-D register blocking: each thread keeps TM4 outputs of one column in registers; one B value from shared memory serves TM4 FMAs (each FMA still loads its own A value: 9 shared loads per 8 FMAs, v3 2 per FMA)
extern "C" __global__ void __launch_bounds__(THREADS4)
gemm_v4_blocking_1d(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                    int M, int N, int K)
{
    __shared__ float sa[BK4][BM4];             // A tile transposed: sa[k][row]
    __shared__ float sb[BK4][BN4];
    const int t = threadIdx.x;
    const int tx = t % BN4, ty = t / BN4;      // column tx, rows ty + 8*i of the tile
    const int row0 = blockIdx.y * BM4, col0 = blockIdx.x * BN4;
    float acc[TM4] = {0.0f};
    for (int k0 = 0; k0 < K; k0 += BK4) {
        {
            const int r = t / BK4, q = t % BK4;
            sa[q][r] = (row0 + r < M && k0 + q < K) ? A[(size_t)(row0 + r) * K + k0 + q] : 0.0f;
        }
        {
            const int r = t / BN4, q = t % BN4;
            sb[r][q] = (k0 + r < K && col0 + q < N) ? B[(size_t)(k0 + r) * N + col0 + q] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK4; ++k) {
            const float bv = sb[k][tx];
#pragma unroll
            for (int i = 0; i < TM4; ++i)
                acc[i] += sa[k][ty + (THREADS4 / BN4) * i] * bv;
        }
        __syncthreads();
    }
    const int col = col0 + tx;
#pragma unroll
    for (int i = 0; i < TM4; ++i) {
        const int row = row0 + ty + (THREADS4 / BN4) * i;
        if (row < M && col < N)
            C[(size_t)row * N + col] = acc[i];
    }
}

#define BM5 128
#define BN5 128
#define BK5 8
#define TM5 8
#define TN5 8
#define TX5 (BN5 / TN5)
#define TY5 (BM5 / TM5)
#define THREADS5 (TX5 * TY5)
// ---- v5: 2-D register blocking: each thread keeps TM5 x TN5 outputs; per k it reads TM5 + TN5 values from shared memory for TM5 * TN5 FMAs
extern "C" __global__ void __launch_bounds__(THREADS5)
gemm_v5_blocking_2d(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                    int M, int N, int K)
{
    __shared__ float sa[BK5][BM5];
    __shared__ float sb[BK5][BN5];
    const int t = threadIdx.x;
    const int tx = t % TX5, ty = t / TX5;      // rows ty + 16*i, columns tx + 16*j: strided, conflict-free
    const int row0 = blockIdx.y * BM5, col0 = blockIdx.x * BN5;
    float acc[TM5][TN5] = {{0.0f}};
    float ra[TM5], rb[TN5];
    for (int k0 = 0; k0 < K; k0 += BK5) {
#pragma unroll
        for (int p = 0; p < BM5 * BK5 / THREADS5; ++p) {
            const int e = t + p * THREADS5, r = e / BK5, q = e % BK5;
            sa[q][r] = (row0 + r < M && k0 + q < K) ? A[(size_t)(row0 + r) * K + k0 + q] : 0.0f;
        }
#pragma unroll
        for (int p = 0; p < BK5 * BN5 / THREADS5; ++p) {
            const int e = t + p * THREADS5, r = e / BN5, q = e % BN5;
            sb[r][q] = (k0 + r < K && col0 + q < N) ? B[(size_t)(k0 + r) * N + col0 + q] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK5; ++k) {
#pragma unroll
            for (int i = 0; i < TM5; ++i) ra[i] = sa[k][ty + TY5 * i];
#pragma unroll
            for (int j = 0; j < TN5; ++j) rb[j] = sb[k][tx + TX5 * j];
#pragma unroll
            for (int i = 0; i < TM5; ++i)
#pragma unroll
                for (int j = 0; j < TN5; ++j)
                    acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM5; ++i) {
        const int row = row0 + ty + TY5 * i;
#pragma unroll
        for (int j = 0; j < TN5; ++j) {
            const int col = col0 + tx + TX5 * j;
            if (row < M && col < N)
                C[(size_t)row * N + col] = acc[i][j];
        }
    }
}

// ------------------------------------------------------------------------------------------
// v6 and v7: float4 loads. A float4 needs a 16-byte aligned address: rows of A and B start
// aligned only when K and N are multiples of 4, so each kernel comes twice: VEC (float4, for
// K % 4 == 0 and N % 4 == 0, any M) and scalar (any sizes); the launch plan picks one.
// ------------------------------------------------------------------------------------------

// A 4-wide slice of row r of a rows x cols matrix starting at column c, zeros outside it.
template <bool VEC>
__device__ __forceinline__ float4 load4(const float* __restrict__ X, int r, int c, int rows, int cols)
{
    if (VEC) {
        if (r < rows && c < cols)              // cols % 4 == 0: the four are all in or all out
            return __ldg(reinterpret_cast<const float4*>(X + (size_t)r * cols + c));
        return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    float4 v;
    const bool in = r < rows;
    const float* p = X + (size_t)r * cols;
    v.x = (in && c + 0 < cols) ? p[c + 0] : 0.0f;
    v.y = (in && c + 1 < cols) ? p[c + 1] : 0.0f;
    v.z = (in && c + 2 < cols) ? p[c + 2] : 0.0f;
    v.w = (in && c + 3 < cols) ? p[c + 3] : 0.0f;
    return v;
}

template <bool VEC>
__device__ __forceinline__ void store4(float* __restrict__ C, int r, int c, int M, int N, float4 v)
{
    if (r >= M) return;
    float* p = C + (size_t)r * N + c;
    if (VEC) {
        if (c < N) *reinterpret_cast<float4*>(p) = v;
        return;
    }
    if (c + 0 < N) p[0] = v.x;
    if (c + 1 < N) p[1] = v.y;
    if (c + 2 < N) p[2] = v.z;
    if (c + 3 < N) p[3] = v.w;
}

// v6's body (see gemm_v6_float4 below), for float4 rows (VEC) or any sizes
template <int BM, int BN, int BK, int TM, int TN, bool VEC>
__device__ __forceinline__ void gemm_v6_body(const float* __restrict__ A, const float* __restrict__ B,
                                             float* __restrict__ C, int M, int N, int K)
{
    constexpr int NT = (BM / TM) * (BN / TN);
    constexpr int PAD = 4;                     // A's transposed stores: 4 floats of padding spread the banks
    __shared__ __align__(16) float sa[BK][BM + PAD];
    __shared__ __align__(16) float sb[BK][BN];
    const int t = threadIdx.x;
    const int tx = t % (BN / TN), ty = t / (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    float acc[TM][TN] = {{0.0f}};
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int p = 0; p < BM * BK / 4 / NT; ++p) {
            const int f = t + p * NT, r = f / (BK / 4), q = (f % (BK / 4)) * 4;
            const float4 v = load4<VEC>(A, row0 + r, k0 + q, M, K);
            sa[q + 0][r] = v.x; sa[q + 1][r] = v.y; sa[q + 2][r] = v.z; sa[q + 3][r] = v.w;
        }
#pragma unroll
        for (int p = 0; p < BK * BN / 4 / NT; ++p) {
            const int f = t + p * NT, r = f / (BN / 4), q = (f % (BN / 4)) * 4;
            *reinterpret_cast<float4*>(&sb[r][q]) = load4<VEC>(B, k0 + r, col0 + q, K, N);
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float ra[TM], rb[TN];
#pragma unroll
            for (int i = 0; i < TM; i += 4)
                *reinterpret_cast<float4*>(&ra[i]) = *reinterpret_cast<const float4*>(&sa[k][ty * TM + i]);
#pragma unroll
            for (int j = 0; j < TN; j += 4)
                *reinterpret_cast<float4*>(&rb[j]) = *reinterpret_cast<const float4*>(&sb[k][tx * TN + j]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += ra[i] * rb[j];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; j += 4)
            store4<VEC>(C, row0 + ty * TM + i, col0 + tx * TN + j, M, N,
                        make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
}

#define V6_CONFIG 128, 128, 8, 8, 8
#ifndef V6_MIN_BLOCKS
#define V6_MIN_BLOCKS 1        // 1: no register cap (the course's v6); 2: v7's cap, for the ablation
#endif                         // in benchmarks/probe_ch6_8.py
// ---- v6: v5 with float4 global loads (4 floats per instruction), A stored transposed so each thread reads its 8 rows and 8 columns as two float4 from shared memory
extern "C" __global__ void __launch_bounds__(256, V6_MIN_BLOCKS)
gemm_v6_float4(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
               int M, int N, int K)
{
    gemm_v6_body<V6_CONFIG, true>(A, B, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(256, V6_MIN_BLOCKS)
gemm_v6_float4_scalar(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                      int M, int N, int K)
{
    gemm_v6_body<V6_CONFIG, false>(A, B, C, M, N, K);
}

// v7's body (see gemm_v7_warptile below), for float4 rows (VEC) or any sizes
// SPLIT (split-K, below): the block's K range is its slice blockIdx.z of the whole tiles, and its
// partial sums are added into C with atomicAdd instead of stored
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int GROUP, bool VEC, bool SPLIT = false>
__device__ __forceinline__ void gemm_v7_body(const float* __restrict__ A, const float* __restrict__ B,
                                             float* __restrict__ C, int M, int N, int K)
{
    constexpr int NT = (BM / WM) * (BN / WN) * 32;
    constexpr int WMITER = (WM * WN) / (32 * TM * TN * WNITER);
    constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;
    constexpr int LOAD_A = BM * BK / 4 / NT, LOAD_B = BK * BN / 4 / NT;   // float4 per thread
    constexpr int PAD = 4;
    static_assert(WMITER * WSUBM == WM && WNITER * WSUBN == WN, "warp tile must split evenly");
    static_assert((WSUBN / TN) * (WSUBM / TM) == 32, "a warp's 32 lanes must cover a sub-tile");
    static_assert(LOAD_A * NT * 4 == BM * BK && LOAD_B * NT * 4 == BK * BN, "tile loads must split evenly");
    __shared__ __align__(16) float sa[2][BK][BM + PAD];
    __shared__ __align__(16) float sb[2][BK][BN];

    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int warp_row = warp / (BN / WN), warp_col = warp % (BN / WN);
    const int lane_row = lane / (WSUBN / TN), lane_col = lane % (WSUBN / TN);
    int bx = blockIdx.x, by = blockIdx.y;
    if (GROUP > 0) {                           // consecutive blocks walk down GROUP block rows, then right:
        const int bid = by * gridDim.x + bx;   // blocks resident together share A and B tiles in L2
        const int first = bid / (GROUP * gridDim.x) * GROUP;
        const int rows = min((int)gridDim.y - first, GROUP);
        const int in_group = bid % (GROUP * gridDim.x);
        by = first + in_group % rows;
        bx = in_group / rows;
    }
    const int row0 = by * BM, col0 = bx * BN;
    int first = 0, tiles = (K + BK - 1) / BK;
    if (SPLIT) {                               // whole BK tiles per split: only the last split's last
        const int per_split = (tiles + gridDim.z - 1) / gridDim.z;   // tile meets K's edge (load4's bound)
        first = blockIdx.z * per_split;
        tiles = max(0, min(tiles, first + per_split) - first);
        if (tiles == 0) return;                // more splits than tiles: nothing to add
    }

    float4 pa[LOAD_A], pb[LOAD_B];             // the next tile, on its way from global memory
    auto fetch = [&](int k0) {
#pragma unroll
        for (int p = 0; p < LOAD_A; ++p) {
            const int f = t + p * NT;
            pa[p] = load4<VEC>(A, row0 + f / (BK / 4), k0 + (f % (BK / 4)) * 4, M, K);
        }
#pragma unroll
        for (int p = 0; p < LOAD_B; ++p) {
            const int f = t + p * NT;
            pb[p] = load4<VEC>(B, k0 + f / (BN / 4), col0 + (f % (BN / 4)) * 4, K, N);
        }
    };
    auto stash = [&](int s) {
#pragma unroll
        for (int p = 0; p < LOAD_A; ++p) {
            const int f = t + p * NT, r = f / (BK / 4), q = (f % (BK / 4)) * 4;
            sa[s][q + 0][r] = pa[p].x; sa[s][q + 1][r] = pa[p].y;
            sa[s][q + 2][r] = pa[p].z; sa[s][q + 3][r] = pa[p].w;
        }
#pragma unroll
        for (int p = 0; p < LOAD_B; ++p) {
            const int f = t + p * NT;
            *reinterpret_cast<float4*>(&sb[s][f / (BN / 4)][(f % (BN / 4)) * 4]) = pb[p];
        }
    };

    float acc[WMITER * TM][WNITER * TN] = {{0.0f}};
    fetch(first * BK);
    stash(0);
    __syncthreads();
    for (int tile = 0; tile < tiles; ++tile) {
        const int s = tile & 1;
        if (tile + 1 < tiles)
            fetch((first + tile + 1) * BK);    // in flight while the FMAs below run
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float ra[WMITER * TM], rb[WNITER * TN];
#pragma unroll
            for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
                for (int i = 0; i < TM; i += 4)
                    *reinterpret_cast<float4*>(&ra[wm * TM + i]) = *reinterpret_cast<const float4*>(
                        &sa[s][k][warp_row * WM + wm * WSUBM + lane_row * TM + i]);
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4)
                    *reinterpret_cast<float4*>(&rb[wn * TN + j]) = *reinterpret_cast<const float4*>(
                        &sb[s][k][warp_col * WN + wn * WSUBN + lane_col * TN + j]);
#pragma unroll
            for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
                for (int j = 0; j < WNITER * TN; ++j)
                    acc[i][j] += ra[i] * rb[j];
        }
        if (tile + 1 < tiles)
            stash(s ^ 1);                      // the other buffer: last read one tile ago
        __syncthreads();
    }
#pragma unroll
    for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            const int row = row0 + warp_row * WM + wm * WSUBM + lane_row * TM + i;
#pragma unroll
            for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    const int col = col0 + warp_col * WN + wn * WSUBN + lane_col * TN + j;
                    const float* v = &acc[wm * TM + i][wn * TN + j];
                    if (SPLIT) {
#pragma unroll
                        for (int e = 0; e < 4; ++e)
                            if (row < M && col + e < N) atomicAdd(&C[(size_t)row * N + col + e], v[e]);
                    } else {
                        store4<VEC>(C, row, col, M, N, make_float4(v[0], v[1], v[2], v[3]));
                    }
                }
        }
}

// the tuned configuration (benchmarks/gpu_gemm.py --tune times the others):
// BM, BN, BK, WM, WN, WNITER, TM, TN, GROUP -> (BM/WM)*(BN/WN)*32 threads, at least
// V7_MIN_BLOCKS blocks per SM (the compiler caps registers to fit them)
#ifndef V7_CONFIG
#define V7_CONFIG 128, 128, 16, 64, 32, 2, 8, 4, 0
#define V7_THREADS 256
#endif
#ifndef V7_MIN_BLOCKS
#define V7_MIN_BLOCKS 2        // 2 blocks of 256 per SM: registers capped at 128 (159 without the cap,
#endif                         // 1 block per SM); measured 42.5 against 33.8 TFLOP/s at 4096^3 on an H100
// ---- v7: warp tiling: each warp owns a WM x WN sub-tile, its lanes WMITER x WNITER small blocks of TM x TN in it, so a warp's shared reads touch few distinct addresses; two shared buffers let the next tile's global loads overlap this tile's FMAs
extern "C" __global__ void __launch_bounds__(V7_THREADS, V7_MIN_BLOCKS)
gemm_v7_warptile(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                 int M, int N, int K)
{
    gemm_v7_body<V7_CONFIG, true>(A, B, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(V7_THREADS, V7_MIN_BLOCKS)
gemm_v7_warptile_scalar(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                        int M, int N, int K)
{
    gemm_v7_body<V7_CONFIG, false>(A, B, C, M, N, K);
}

// ==========================================================================================
// numba: 128-bit loads for numba's v7 float4 variant (kernels/gemm.py numba_v7_float4_kernel links
// this section, from here to "end numba", with cuda.declare_device; numba has no float4 load of
// its own). numba's calling convention: int status, then a pointer to the return value (four
// floats: numba's UniTuple(float32, 4)); addresses come as integers (numba's arr.ctypes.data).
// ==========================================================================================
struct GemmFloat4 { float v[4]; };

// one LDG.128 through the read-only path: 4 consecutive floats of global memory, 16-byte aligned
extern "C" __device__ int gemm_ld_global_f4(GemmFloat4* out, unsigned long long address)
{
    const float4 x = __ldg(reinterpret_cast<const float4*>(address));
    out->v[0] = x.x; out->v[1] = x.y; out->v[2] = x.z; out->v[3] = x.w;
    return 0;
}

// one LDS.128: 4 consecutive floats of shared memory (a generic address, converted to shared)
extern "C" __device__ int gemm_ld_shared_f4(GemmFloat4* out, unsigned long long address)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(reinterpret_cast<const void*>(address));
    float4 x;
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(x.x), "=f"(x.y), "=f"(x.z), "=f"(x.w) : "r"(s) : "memory");
    out->v[0] = x.x; out->v[1] = x.y; out->v[2] = x.z; out->v[3] = x.w;
    return 0;
}
// ==================================== end numba =============================================

// ------------------------------------------------------------------------------------------
// v8: what v7 still lacked, measured against cuBLAS's own kernel (sm80_xmma_gemm_f32f32,
// 256 x 128 x 8 tiles, 3 stages, 256 threads, 254 registers, one block per SM):
//  - a cp.async ring of STAGES tiles: global loads go straight to shared memory, STAGES - 1
//    tiles ahead, so no registers hold a tile in transit (v7's staging registers are what
//    spilled under its 128-register cap);
//  - A still stored transposed (sa[k][row], read as float4 along the rows) by 4-byte cp.async,
//    8 lanes a row: a warp reads 4 rows x 32 bytes (4 sectors) and writes 32 distinct banks;
//    B copied 16 bytes at a time (float4 rows: K % 4 == 0 and N % 4 == 0) or 4 (any sizes);
//  - the fragments double-buffered in registers: the shared reads of step k + 1 are issued
//    before the FMAs of step k, so their latency hides behind 64-128 independent FFMAs;
//  - thread tiles of WMITER x WNITER float4 blocks (lanes 4 or 8 apart read consecutive
//    16-byte words: one wavefront per float4 read), up to 16 x 8 outputs per thread as cuBLAS;
//  - GROUP block swizzle and __launch_bounds__(threads, MINB) as knobs.
// Any sizes: copies outside A or B zero-fill (src-size 0, nothing read), stores outside C are
// skipped. Shared memory is dynamic: STAGES * BK * (BM + 4 + BN) floats (the launch plan in
// kernels/gemm.py computes the same; past 48 KB the launch opts in).
// ------------------------------------------------------------------------------------------
__device__ __forceinline__ unsigned shared_address(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// BYTES (4 or 16) from global to shared memory without passing through registers; `in` false:
// src-size 0, the destination is zero-filled and nothing is read (src is then any valid address)
template <int BYTES>
__device__ __forceinline__ void cp_async_zfill(unsigned dst, const float* src, bool in)
{
    if (BYTES == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(src), "r"(in ? 16 : 0) : "memory");
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(dst), "l"(src), "r"(in ? 4 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit_group() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>      // all but the N newest commit groups of this thread have landed
__device__ __forceinline__ void cp_async_wait_group() { asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory"); }

// v7's block walk: consecutive blocks go down GROUP block rows, then right (0: row-major)
template <int GROUP>
__device__ __forceinline__ void grouped_tile(int& bx, int& by)
{
    if (GROUP <= 0) return;
    const int bid = by * gridDim.x + bx;
    const int first = bid / (GROUP * gridDim.x) * GROUP;
    const int rows = min((int)gridDim.y - first, GROUP);
    const int in_group = bid % (GROUP * gridDim.x);
    by = first + in_group % rows;
    bx = in_group / rows;
}

template <int BM, int BN, int BK, int WM, int WN, int WMITER, int WNITER, int TM, int TN, int STAGES, int GROUP>
struct SgemmPipeline {
    static constexpr int NT = (BM / WM) * (BN / WN) * 32;
    static constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;
    static constexpr int LANES_M = WSUBM / TM, LANES_N = WSUBN / TN;
    static constexpr int FM = WMITER * TM, FN = WNITER * TN;       // outputs per thread: FM x FN
    static constexpr int PAD = 4;                                  // sa's rows: BM + 4 floats, 16-byte aligned
    static constexpr int SA = BK * (BM + PAD), STAGE = SA + BK * BN;   // floats
    static constexpr int COPIES_A = BM * BK / NT, COPIES_B = BK * BN / 4 / NT;
    static_assert(LANES_M * LANES_N == 32, "a warp's 32 lanes must cover a WSUBM x WSUBN sub-tile");
    static_assert(WMITER * WSUBM == WM && WNITER * WSUBN == WN && LANES_M * TM == WSUBM && LANES_N * TN == WSUBN,
                  "the warp tile must split evenly");
    static_assert(TM % 4 == 0 && TN % 4 == 0, "fragments are read as float4");
    static_assert(BK % 8 == 0, "A is copied in runs of 8 k (32 bytes of a row)");
    static_assert(COPIES_A * NT == BM * BK && COPIES_B * NT * 4 == BK * BN, "tile copies must split evenly");
    static_assert(STAGES >= 2, "a ring needs two stages");

    // issue the copies of the k-tile at k0 into one stage (the caller commits the group)
    template <bool VEC>
    static __device__ __forceinline__ void copy_tile(const float* __restrict__ A, const float* __restrict__ B,
                                                     float* sa, float* sb, int row0, int col0, int k0, int M, int N, int K)
    {
        const int t = threadIdx.x;
#pragma unroll
        for (int p = 0; p < COPIES_A; ++p) {       // lanes 8 apart: one row each, 8 consecutive k
            const int f = t + p * NT;
            const int r = (f / 8) % BM, k = f / (8 * BM) * 8 + f % 8;
            const bool in = row0 + r < M && k0 + k < K;
            cp_async_zfill<4>(shared_address(&sa[k * (BM + PAD) + r]), in ? A + (size_t)(row0 + r) * K + k0 + k : A, in);
        }
#pragma unroll
        for (int p = 0; p < COPIES_B; ++p) {       // consecutive lanes: consecutive float4 of a row
            const int f = t + p * NT;
            const int r = f / (BN / 4), c = f % (BN / 4) * 4;
            float* dst = &sb[r * BN + c];
            const bool row_in = k0 + r < K;
            if (VEC) {
                const bool in = row_in && col0 + c < N;            // N % 4 == 0: all four in or out
                cp_async_zfill<16>(shared_address(dst), in ? B + (size_t)(k0 + r) * N + col0 + c : B, in);
            } else {
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const bool in = row_in && col0 + c + e < N;
                    cp_async_zfill<4>(shared_address(dst + e), in ? B + (size_t)(k0 + r) * N + col0 + c + e : B, in);
                }
            }
        }
    }

    // this lane's FM values of A and FN of B at step k of one stage, as float4 reads
    static __device__ __forceinline__ void load_fragments(float (&fa)[FM], float (&fb)[FN], const float* sa,
                                                          const float* sb, int k, int a_col, int b_col)
    {
#pragma unroll
        for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
            for (int i = 0; i < TM; i += 4)
                *reinterpret_cast<float4*>(&fa[wm * TM + i]) =
                    *reinterpret_cast<const float4*>(&sa[k * (BM + PAD) + a_col + wm * WSUBM + i]);
#pragma unroll
        for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
            for (int j = 0; j < TN; j += 4)
                *reinterpret_cast<float4*>(&fb[wn * TN + j]) =
                    *reinterpret_cast<const float4*>(&sb[k * BN + b_col + wn * WSUBN + j]);
    }

    template <bool VEC>
    static __device__ __forceinline__ void run(const float* __restrict__ A, const float* __restrict__ B,
                                               float* __restrict__ C, int M, int N, int K)
    {
        extern __shared__ __align__(16) float smem[];
        const int t = threadIdx.x, warp = t / 32, lane = t % 32;
        const int warp_row = warp / (BN / WN), warp_col = warp % (BN / WN);
        const int lane_row = lane / LANES_N, lane_col = lane % LANES_N;
        int bx = blockIdx.x, by = blockIdx.y;
        grouped_tile<GROUP>(bx, by);
        const int row0 = by * BM, col0 = bx * BN;
        const int a_col = warp_row * WM + lane_row * TM, b_col = warp_col * WN + lane_col * TN;
        const int tiles = (K + BK - 1) / BK;

#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {     // the ring's first STAGES - 1 tiles
            if (s < tiles)
                copy_tile<VEC>(A, B, smem + s * STAGE, smem + s * STAGE + SA, row0, col0, s * BK, M, N, K);
            cp_async_commit_group();               // empty groups too: the wait counts stay aligned
        }
        float acc[FM][FN];
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
            for (int j = 0; j < FN; ++j) acc[i][j] = 0.0f;
        float fa[2][FM], fb[2][FN];
        if (tiles > 0) {
            cp_async_wait_group<STAGES - 2>();     // tile 0 has landed (this thread's copies) ...
            __syncthreads();                       // ... and everyone's
            load_fragments(fa[0], fb[0], smem, smem + SA, 0, a_col, b_col);
        }
        int read = 0, write = STAGES - 1;
        for (int tile = 0; tile < tiles; ++tile) {
            const float* sa = smem + read * STAGE;
            const float* sb = sa + SA;
#pragma unroll
            for (int k = 0; k < BK; ++k) {
                if (k == 0) {                      // refill the stage everyone left at the last barrier
                    const int next = tile + STAGES - 1;
                    if (next < tiles)
                        copy_tile<VEC>(A, B, smem + write * STAGE, smem + write * STAGE + SA, row0, col0,
                                       next * BK, M, N, K);
                    cp_async_commit_group();
                }
                if (k + 1 < BK) {                  // step k + 1's fragments, before step k's FMAs
                    load_fragments(fa[(k + 1) & 1], fb[(k + 1) & 1], sa, sb, k + 1, a_col, b_col);
                } else if (tile + 1 < tiles) {     // the next tile's first step: wait for it to land
                    cp_async_wait_group<STAGES - 2>();
                    __syncthreads();               // also: nobody reads this tile's stage any more
                    const float* na = smem + (read + 1 == STAGES ? 0 : read + 1) * STAGE;
                    load_fragments(fa[(k + 1) & 1], fb[(k + 1) & 1], na, na + SA, 0, a_col, b_col);
                }
#pragma unroll
                for (int i = 0; i < FM; ++i)
#pragma unroll
                    for (int j = 0; j < FN; ++j)
                        acc[i][j] += fa[k & 1][i] * fb[k & 1][j];
            }
            read = read + 1 == STAGES ? 0 : read + 1;
            write = write + 1 == STAGES ? 0 : write + 1;
        }
        cp_async_wait_group<0>();                  // only empty groups are left; none outlives the block
#pragma unroll
        for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                const int row = row0 + a_col + wm * WSUBM + i;
#pragma unroll
                for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
                    for (int j = 0; j < TN; j += 4) {
                        const int col = col0 + b_col + wn * WSUBN + j;
                        const float* v = &acc[wm * TM + i][wn * TN + j];
                        store4<VEC>(C, row, col, M, N, make_float4(v[0], v[1], v[2], v[3]));
                    }
            }
    }
};

// One v8 configuration: (name, BM, BN, BK, WM, WN, WMITER, WNITER, TM, TN, STAGES, GROUP, MINB):
// (BM/WM) x (BN/WN) warps, each lane (WMITER*TM) x (WNITER*TN) outputs, at least MINB blocks per SM.
// One kernel takes any sizes: float4 rows (K % 4 == 0, N % 4 == 0) or 4-byte copies and stores.
// kernels/gemm.py reads these lines (and the comment after each) into V8_CONFIGS.
#define V8_KERNEL(name, BM, BN, BK, WM, WN, WMITER, WNITER, TM, TN, STAGES, GROUP, MINB)                        \
    extern "C" __global__ void __launch_bounds__((BM / WM) * (BN / WN) * 32, MINB)                                \
    name(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)    \
    {                                                                                                             \
        using P = SgemmPipeline<BM, BN, BK, WM, WN, WMITER, WNITER, TM, TN, STAGES, GROUP>;                       \
        if (K % 4 == 0 && N % 4 == 0) P::run<true>(A, B, C, M, N, K);                                             \
        else P::run<false>(A, B, C, M, N, K);                                                                     \
    }

// ---- v8: cp.async ring + register double buffering + float4 shared reads of both operands, autotuned over the configurations below (the chapter's row: kernels/gemm.py V8_CHAMPION)
V8_KERNEL(gemm_v8_256x128x8_w64x64_t16x8_s3_g8_b1, 256, 128, 8, 64, 64, 4, 2, 4, 4, 3, 8, 1)      // cuBLAS's own shape: 16 x 8 outputs a thread, 6 float4 reads per 128 FFMAs, 1 block of 8 warps an SM
V8_KERNEL(gemm_v8_256x128x8_w64x64_t8x16_s3_g8_b1, 256, 128, 8, 64, 64, 2, 4, 4, 4, 3, 8, 1)      // the same outputs as 8 x 16 (lanes 8 x 4): other bank phases, other store rows
V8_KERNEL(gemm_v8_256x128x8_w64x64_t16x8_s4_g8_b1, 256, 128, 8, 64, 64, 4, 2, 4, 4, 4, 8, 1)      // one more tile in flight (48 KB)
V8_KERNEL(gemm_v8_256x128x8_w64x64_t16x8_s2_g8_b1, 256, 128, 8, 64, 64, 4, 2, 4, 4, 2, 8, 1)      // the stage ablation: double buffering only
V8_KERNEL(gemm_v8_256x128x16_w64x64_t16x8_s3_g8_b1, 256, 128, 16, 64, 64, 4, 2, 4, 4, 3, 8, 1)    // BK 16: half the barriers and waits per FFMA (73 KB, opt-in)
V8_KERNEL(gemm_v8_256x128x8_w64x64_t16x8_s3_g0_b1, 256, 128, 8, 64, 64, 4, 2, 4, 4, 3, 0, 1)      // the swizzle ablation: row-major block order
V8_KERNEL(gemm_v8_256x128x8_w64x64_t16x8_s3_g16_b1, 256, 128, 8, 64, 64, 4, 2, 4, 4, 3, 16, 1)    // a wider L2 group
V8_KERNEL(gemm_v8_128x256x8_w64x64_t16x8_s3_g8_b1, 128, 256, 8, 64, 64, 4, 2, 4, 4, 3, 8, 1)      // the wide tile: warps 2 x 4, fewer A copies per FFMA
V8_KERNEL(gemm_v8_128x128x8_w64x32_t8x8_s3_g8_b2, 128, 128, 8, 64, 32, 2, 2, 4, 4, 3, 8, 2)       // v7's tile and register cap, fed by cp.async (no staging registers to spill)
V8_KERNEL(gemm_v8_128x128x16_w64x32_t8x8_s3_g8_b2, 128, 128, 16, 64, 32, 2, 2, 4, 4, 3, 8, 2)     // v7's exact tile (BK 16) with cp.async, 2 blocks an SM (49 KB each; ptxas spills 128 B under the cap)
V8_KERNEL(gemm_v8_128x128x8_w64x32_t8x8_s4_g8_b2, 128, 128, 8, 64, 32, 2, 2, 4, 4, 4, 8, 2)       // v7's tile, 4 stages
V8_KERNEL(gemm_v8_128x128x8_w64x64_t16x8_s3_g8_b2, 128, 128, 8, 64, 64, 4, 2, 4, 4, 3, 8, 2)      // 4 warps of 16 x 8 a lane, 2 blocks an SM: cuBLAS's thread tile on a 128 x 128 block
V8_KERNEL(gemm_v8_128x128x16_w64x64_t16x8_s3_g8_b2, 128, 128, 16, 64, 64, 4, 2, 4, 4, 3, 8, 2)    // the same with BK 16
V8_KERNEL(gemm_v8_128x64x8_w64x32_t8x8_s4_g8_b3, 128, 64, 8, 64, 32, 2, 2, 4, 4, 4, 8, 3)         // small tiles, 3 blocks an SM (168 registers; at 4 blocks' 128 ptxas spills 244 B): 2048 blocks, finer waves at 4096

// ------------------------------------------------------------------------------------------
// v9: v8's sweep showed where it lost against cuBLAS: its 128-accumulator tiles spilled (24-40 B
// at 255 registers) and its 8-warp tiles lost to v7's 2 blocks an SM. v9 keeps v7's register
// staging (global loads into registers, stored to the other of two shared buffers once per tile,
// one barrier per tile) and adds what the ncu and SASS reports of v7 showed missing:
//  - thread tiles of MI x NI blocks of 4 x 4 (rows lane_row*4 + i*LANES_M*4): every float4
//    fragment read of a warp is LANES_M (or LANES_N) consecutive float4, conflict-free and
//    broadcast to the other lanes (v7's 8 consecutive rows a lane put 2 lanes on each bank);
//  - the fragments double-buffered in registers: step k + 1's shared reads are issued before
//    step k's FMAs, and the next tile's first fragments before the tile's last FMAs;
//  - one kernel per path (float4 rows or any sizes), so ptxas allocates registers for one path;
//  - BK 8 by default: 8 staging registers for 128 x 128 (v7's BK 16 needed 16 and spilled).
// Any sizes: loads outside A or B read 0, stores outside C are skipped (load4/store4 above).
// ------------------------------------------------------------------------------------------
template <int BM, int BN, int BK, int WARPS_M, int WARPS_N, int MI, int NI, int GROUP, int ASYNC>
struct SgemmStaged {
    static constexpr bool A_ASYNC = ASYNC == 1, B_ASYNC = ASYNC >= 1;   // else through staging registers
    static constexpr int NT = WARPS_M * WARPS_N * 32;
    static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;          // a warp's tile
    static constexpr int LANES_M = WM / (4 * MI), LANES_N = WN / (4 * NI);
    static constexpr int FM = 4 * MI, FN = 4 * NI;                      // outputs per thread
    static constexpr int SAW = BM + 4;                                  // sa's rows, 16-byte aligned
    static constexpr int LOADS_A = BM * BK / 4 / NT, LOADS_B = BK * BN / 4 / NT;   // float4 per thread
    static_assert(LANES_M * LANES_N == 32, "a warp's lanes must cover its tile");
    static_assert(LANES_M * 4 * MI == WM && LANES_N * 4 * NI == WN, "the warp tile must split evenly");
    static_assert(LOADS_A * NT * 4 == BM * BK && LOADS_B * NT * 4 == BK * BN, "tile loads must split evenly");
    static_assert(BK % 8 == 0, "an even number of k steps per tile (two fragment buffers)");

    template <bool VEC>
    static __device__ __forceinline__ void run(const float* __restrict__ A, const float* __restrict__ B,
                                               float* __restrict__ C, int M, int N, int K)
    {
        __shared__ __align__(16) float sa[2][BK][SAW];
        __shared__ __align__(16) float sb[2][BK][BN];
        const int t = threadIdx.x, warp = t / 32, lane = t % 32;
        const int a_off = (warp / WARPS_N) * WM + (lane / LANES_N) * 4;
        const int b_off = (warp % WARPS_N) * WN + (lane % LANES_N) * 4;
        int bx = blockIdx.x, by = blockIdx.y;
        grouped_tile<GROUP>(bx, by);
        const int row0 = by * BM, col0 = bx * BN;

        float4 pa[LOADS_A], pb[LOADS_B];       // the next tile, on its way from global memory
        auto fetch = [&](int k0) {
#pragma unroll
            for (int p = 0; p < LOADS_A && !A_ASYNC; ++p) {
                const int f = t + p * NT;
                pa[p] = load4<VEC>(A, row0 + f / (BK / 4), k0 + f % (BK / 4) * 4, M, K);
            }
#pragma unroll
            for (int p = 0; p < LOADS_B && !B_ASYNC; ++p) {
                const int f = t + p * NT;
                pb[p] = load4<VEC>(B, k0 + f / (BN / 4), col0 + f % (BN / 4) * 4, K, N);
            }
        };
        auto stash = [&](int s) {              // A transposed (sa[k][row]), B as it is
#pragma unroll
            for (int p = 0; p < LOADS_A && !A_ASYNC; ++p) {
                const int f = t + p * NT, r = f / (BK / 4), q = f % (BK / 4) * 4;
                sa[s][q + 0][r] = pa[p].x; sa[s][q + 1][r] = pa[p].y;
                sa[s][q + 2][r] = pa[p].z; sa[s][q + 3][r] = pa[p].w;
            }
#pragma unroll
            for (int p = 0; p < LOADS_B && !B_ASYNC; ++p) {
                const int f = t + p * NT;
                *reinterpret_cast<float4*>(&sb[s][f / (BN / 4)][f % (BN / 4) * 4]) = pb[p];
            }
        };
        auto copy = [&](int s, int k0) {       // the cp.async operands of the tile at k0 into buffer s
#pragma unroll
            for (int p = 0; p < LOADS_A && A_ASYNC; ++p) {
                const int f = t + p * NT, r = f / (BK / 4), q = f % (BK / 4) * 4;
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const bool in = row0 + r < M && k0 + q + e < K;
                    cp_async_zfill<4>(shared_address(&sa[s][q + e][r]), in ? A + (size_t)(row0 + r) * K + k0 + q + e : A, in);
                }
            }
#pragma unroll
            for (int p = 0; p < LOADS_B && B_ASYNC; ++p) {
                const int f = t + p * NT, r = f / (BN / 4), c = f % (BN / 4) * 4;
                const bool row_in = k0 + r < K;
                if (VEC) {
                    const bool in = row_in && col0 + c < N;
                    cp_async_zfill<16>(shared_address(&sb[s][r][c]), in ? B + (size_t)(k0 + r) * N + col0 + c : B, in);
                } else {
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const bool in = row_in && col0 + c + e < N;
                        cp_async_zfill<4>(shared_address(&sb[s][r][c + e]), in ? B + (size_t)(k0 + r) * N + col0 + c + e : B, in);
                    }
                }
            }
            cp_async_commit_group();
        };
        float fa[2][FM], fb[2][FN];
        auto fragments = [&](int buf, int s, int k) {
#pragma unroll
            for (int i = 0; i < MI; ++i)
                *reinterpret_cast<float4*>(&fa[buf][4 * i]) =
                    *reinterpret_cast<const float4*>(&sa[s][k][a_off + i * LANES_M * 4]);
#pragma unroll
            for (int j = 0; j < NI; ++j)
                *reinterpret_cast<float4*>(&fb[buf][4 * j]) =
                    *reinterpret_cast<const float4*>(&sb[s][k][b_off + j * LANES_N * 4]);
        };

        float acc[FM][FN];
#pragma unroll
        for (int i = 0; i < FM; ++i)
#pragma unroll
            for (int j = 0; j < FN; ++j) acc[i][j] = 0.0f;
        const int tiles = (K + BK - 1) / BK;
        fetch(0);
        copy(0, 0);
        stash(0);
        if (ASYNC) cp_async_wait_group<0>();
        __syncthreads();
        fragments(0, 0, 0);
        for (int tile = 0; tile < tiles; ++tile) {
            const int s = tile & 1;
            // The next tile, in flight during this tile's FMAs. Unconditional on purpose: after the
            // last tile it reads nothing (every k is past K: zeros) and fills a buffer nobody reads.
            // Under `if (tile + 1 < tiles)` the compiled loop issued the loads after 768 of its 896
            // FFMAs, 128 before the stash needs them (unconditional: 217; benchmarks/sass_fetch_placement.py);
            // Nsight Compute: long-scoreboard stalls 0.10 -> 0.01 per instruction, 89.1 -> 91.2 % of cuBLAS.
            fetch((tile + 1) * BK);
            if (ASYNC) copy(s ^ 1, (tile + 1) * BK);    // s ^ 1 was last read before the last barrier
#pragma unroll
            for (int k = 0; k < BK; ++k) {
                if (k + 1 < BK) {
                    fragments((k + 1) & 1, s, k + 1);
                } else {                       // the other buffer was last read before the last barrier
                    stash(s ^ 1);
                    if (ASYNC) cp_async_wait_group<0>();
                    __syncthreads();
                    fragments(0, s ^ 1, 0);
                }
#pragma unroll
                for (int i = 0; i < FM; ++i)
#pragma unroll
                    for (int j = 0; j < FN; ++j)
                        acc[i][j] = fmaf(fa[k & 1][i], fb[k & 1][j], acc[i][j]);
            }
        }
#pragma unroll
        for (int i = 0; i < MI; ++i)
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const int row = row0 + a_off + i * LANES_M * 4 + r;
#pragma unroll
                for (int j = 0; j < NI; ++j) {
                    const float* v = &acc[4 * i + r][4 * j];
                    store4<VEC>(C, row, col0 + b_off + j * LANES_N * 4, M, N, make_float4(v[0], v[1], v[2], v[3]));
                }
            }
    }
};

// One v9 configuration: (name, BM, BN, BK, WARPS_M, WARPS_N, MI, NI, GROUP, MINB, ASYNC): WARPS_M x WARPS_N
// warps, each lane 4*MI x 4*NI outputs, at least MINB blocks per SM; ASYNC 1: the next tile goes
// to shared memory by cp.async (no staging registers, no stores), waited for at the tile's end;
// ASYNC 2: only B by cp.async (16-byte copies into the layout it keeps), A through registers. Two kernels each: `name` for
// float4 rows (K % 4 == 0 and N % 4 == 0) and `name`_scalar for any sizes.
// kernels/gemm.py reads these lines (and the comment after each) into V9_CONFIGS.
#define V9_KERNEL(name, BM, BN, BK, WARPS_M, WARPS_N, MI, NI, GROUP, MINB, ASYNC)                                         \
    extern "C" __global__ void __launch_bounds__(WARPS_M * WARPS_N * 32, MINB)                                    \
    name(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)    \
    {                                                                                                             \
        SgemmStaged<BM, BN, BK, WARPS_M, WARPS_N, MI, NI, GROUP, ASYNC>::run<true>(A, B, C, M, N, K);                    \
    }                                                                                                             \
    extern "C" __global__ void __launch_bounds__(WARPS_M * WARPS_N * 32, MINB)                                    \
    name##_scalar(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N,  \
                  int K)                                                                                          \
    {                                                                                                             \
        SgemmStaged<BM, BN, BK, WARPS_M, WARPS_N, MI, NI, GROUP, ASYNC>::run<false>(A, B, C, M, N, K);                   \
    }

// ---- v9: v7's register staging with conflict-free 4 x 4 fragment blocks, fragments double-buffered in registers and one kernel per path, autotuned over the configurations below (the chapter's row: kernels/gemm.py V9_CHAMPION)
V9_KERNEL(gemm_v9_128x128x8_w2x4_t8x8_g8_b2, 128, 128, 8, 2, 4, 2, 2, 8, 2, 0)        // v7's tile, threads and register cap at BK 8: 8 warps of 64 x 32, 8 x 8 a lane
V9_KERNEL(gemm_v9_128x128x8_w4x2_t8x8_g8_b2, 128, 128, 8, 4, 2, 2, 2, 8, 2, 0)        // the same as warps of 32 x 64: lanes 4 x 8
V9_KERNEL(gemm_v9_128x128x8_w2x2_t16x8_g8_b2, 128, 128, 8, 2, 2, 4, 2, 8, 2, 0)       // 4 warps of 16 x 8 a lane, 2 blocks an SM: 6 float4 reads per 128 FFMAs (v7: 4 per 64)
V9_KERNEL(gemm_v9_128x128x8_w2x2_t16x8_g8_b2_async, 128, 128, 8, 2, 2, 4, 2, 8, 2, 1) // cp.async instead of staging registers: no long-scoreboard wait at the stash, 16 registers freed
V9_KERNEL(gemm_v9_128x128x8_w2x2_t16x8_g8_b2_basync, 128, 128, 8, 2, 2, 4, 2, 8, 2, 2) // B by cp.async (16 bytes, conflict-free), A through registers (it must be transposed): 8 staging registers and 2 stores fewer
V9_KERNEL(gemm_v9_128x128x16_w2x2_t16x8_g8_b2_async, 128, 128, 16, 2, 2, 4, 2, 8, 2, 1) // cp.async with BK 16: half the barriers, no staging registers to spill
V9_KERNEL(gemm_v9_256x128x8_w4x2_t16x8_g8_b1_async, 256, 128, 8, 4, 2, 4, 2, 8, 1, 1) // cuBLAS's shape with cp.async
V9_KERNEL(gemm_v9_128x128x8_w2x2_t8x16_g8_b2, 128, 128, 8, 2, 2, 2, 4, 8, 2, 0)       // the same outputs as 8 x 16 a lane
V9_KERNEL(gemm_v9_128x128x16_w2x2_t16x8_g8_b2, 128, 128, 16, 2, 2, 4, 2, 8, 2, 0)     // BK 16: half the barriers per FFMA, 32 staging registers
V9_KERNEL(gemm_v9_128x128x8_w2x2_t16x8_g0_b2, 128, 128, 8, 2, 2, 4, 2, 0, 2, 0)       // the swizzle ablation: row-major block order
V9_KERNEL(gemm_v9_128x128x8_w2x2_t16x8_g4_b2, 128, 128, 8, 2, 2, 4, 2, 4, 2, 0)       // a narrower L2 group
V9_KERNEL(gemm_v9_128x128x8_w2x2_t16x8_g16_b2, 128, 128, 8, 2, 2, 4, 2, 16, 2, 0)     // a wider L2 group
V9_KERNEL(gemm_v9_128x64x8_w2x1_t16x8_g8_b4, 128, 64, 8, 2, 1, 4, 2, 8, 4, 0)         // 2 warps a block, 4 blocks an SM: four barrier domains an SM
V9_KERNEL(gemm_v9_64x128x8_w1x2_t16x8_g8_b4, 64, 128, 8, 1, 2, 4, 2, 8, 4, 0)         // the same as 64 x 128 tiles
V9_KERNEL(gemm_v9_256x128x8_w4x2_t16x8_g8_b1, 256, 128, 8, 4, 2, 4, 2, 8, 1, 0)       // cuBLAS's shape: 8 warps of 64 x 64, 16 x 8 a lane, 1 block an SM (the same warps and registers an SM as 2 x 4 warps)
V9_KERNEL(gemm_v9_128x256x8_w2x4_t16x8_g8_b1, 128, 256, 8, 2, 4, 4, 2, 8, 1, 0)       // the wide tile, 16 x 8 a lane, 1 block an SM

// ------------------------------------------------------------------------------------------
// The seed report's layer: P = act(W @ X + bias), one bias per output row, fused into the store
// ------------------------------------------------------------------------------------------
#define ACT_NONE 0
#define ACT_SWISH 1
#define ACT_SIGMOID 2

__device__ __forceinline__ float activate(float z, int activation)
{
    if (activation == ACT_SWISH) return z / (1.0f + expf(-z));
    if (activation == ACT_SIGMOID) return 1.0f / (1.0f + expf(-z));
    return z;
}

__device__ __forceinline__ float tiled_dot(const float* __restrict__ A, const float* __restrict__ B,
                                           int M, int N, int K, int row, int col)
{
    __shared__ float sa[TILE][TILE];
    __shared__ float sb[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        sa[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.0f;
        sb[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int j = 0; j < TILE; ++j)
            acc += sa[ty][j] * sb[j][tx];
        __syncthreads();
    }
    return acc;
}

// ---- the seed's epilogue as printed: P is stored, then the bias is added to the register only; without an activation the biased value is never written
extern "C" __global__ void gemm_bias_act_seed(const float* __restrict__ A, const float* __restrict__ B,
                                              float* __restrict__ C, const float* __restrict__ bias,
                                              int use_bias, int activation, int M, int N, int K)
{
    const int col = blockIdx.x * TILE + threadIdx.x;
    const int row = blockIdx.y * TILE + threadIdx.y;
    float p = tiled_dot(A, B, M, N, K, row, col);
    if (row < M && col < N) {
        C[(size_t)row * N + col] = p;
        if (use_bias) p += bias[row];
        if (activation != ACT_NONE) C[(size_t)row * N + col] = activate(p, activation);
    }
}

// ---- fixed: bias, then activation, then one store of the finished value
extern "C" __global__ void gemm_bias_act(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, const float* __restrict__ bias,
                                         int use_bias, int activation, int M, int N, int K)
{
    const int col = blockIdx.x * TILE + threadIdx.x;
    const int row = blockIdx.y * TILE + threadIdx.y;
    float p = tiled_dot(A, B, M, N, K, row, col);
    if (row < M && col < N) {
        if (use_bias) p += bias[row];
        C[(size_t)row * N + col] = activate(p, activation);
    }
}

// ==========================================================================================
// Split-K (chapter 6, "Waves and split-K"). When M x N has too few tiles to fill the GPU
// (M = N = 512: 16 tiles of 128 x 128 for 132 SMs) but K is long, the blocks split K as well:
// gridDim.z slices of K, each block multiplying its tile over one slice and adding its partial
// sums into C. kernels/gemm.py: SplitKPlan (C zeroed before the launch: a memset, timed with it).
// ==========================================================================================

// The body is v7's (gemm_v7_body with SPLIT: the BK-aligned K range of this block's split, its
// partial tile added into C with atomicAdd).
// v7's tuned tile and register cap (V7_CONFIG, V7_MIN_BLOCKS of the v7 section, written out so
// that tuning v7 does not change this kernel): BM, BN, BK, WM, WN, WNITER, TM, TN
#define SPLITK_CONFIG 128, 128, 16, 64, 32, 2, 8, 4
// ---- split-K: v7's body over the K range of split blockIdx.z, partial tiles added into a zeroed C with atomicAdd: M x N tiles x splits blocks fill the SMs' waves when M x N alone is too few tiles and K is long, for M x N x splits atomic adds and a zeroing pass
extern "C" __global__ void __launch_bounds__(256, 2)
gemm_splitk(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int M, int N, int K)
{
    gemm_v7_body<SPLITK_CONFIG, 0, true, true>(A, B, C, M, N, K);
}
extern "C" __global__ void __launch_bounds__(256, 2)
gemm_splitk_scalar(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                   int M, int N, int K)
{
    gemm_v7_body<SPLITK_CONFIG, 0, false, true>(A, B, C, M, N, K);
}
// ==================================== end split-K ===========================================
