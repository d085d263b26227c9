// Chapter 7: convolution layers in CUDA C++, the same versions as kernels/conv.py, launched
// through CuPy's RawModule (simtlab.cuda_source.cu_kernel("conv", name)), plus v5/v6: the tuned
// direct convolutions the benchmark holds against cuDNN, and v6h (last section): v6 with 16-bit x and y.
//
// Layout NCHW, float32: x (B, C, H, W), w (M, C, K, K), y (B, M, Ho, Wo);
// y[b,m,oy,ox] = sum_{c,p,q} x[b, c, oy*S + p - P, ox*S + q - P] * w[m,c,p,q], zero outside x.
// Every kernel takes its sizes as trailing int arguments (np.int32). Flat indices into the
// unrolled matrix are 64-bit: at batch 10,000 it has more than 2^31 elements.
// The CPU reference is kernels/conv.py: conv2d_cpu (float64, rounded once to float32).

#define TILE 16
#define CONST_FLOATS 16384                      // 64 KiB of constant memory: the weights must fit

__constant__ float c_weights[CONST_FLOATS];     // v4/v5: the filter, copied in before the launch

// One output: the C x K x K window at (oy, ox) of image b times filter m (zero outside the input)
__device__ __forceinline__ float output_sum(const float* __restrict__ x, const float* __restrict__ w,
                                            int b, int m, int oy, int ox, int C, int H, int W,
                                            int K, int stride, int pad)
{
    float acc = 0.0f;
    for (int c = 0; c < C; ++c) {
        const float* xc = x + ((long long)b * C + c) * H * W;
        const float* wc = w + ((long long)m * C + c) * K * K;
        for (int p = 0; p < K; ++p) {
            const int iy = oy * stride + p - pad;
            if (iy < 0 || iy >= H)
                continue;
            for (int q = 0; q < K; ++q) {
                const int ix = ox * stride + q - pad;
                if (ix >= 0 && ix < W)
                    acc += xc[iy * W + ix] * wc[p * K + q];
            }
        }
    }
    return acc;
}

// ---- v0: the seed as written: the grid-stride loop steps by blockDim.x * blockDim.x instead of the grid's thread count, so with fewer threads than outputs whole ranges are never computed
extern "C" __global__ void conv_v0_seed(const float* __restrict__ x, const float* __restrict__ w,
                                        float* __restrict__ y, int B, int C, int H, int W, int M,
                                        int K, int Ho, int Wo, int stride, int pad)
{
    const long long total = (long long)B * M * Ho * Wo;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += blockDim.x * blockDim.x) {                       // BUG: should be gridDim.x * blockDim.x
        const int ox = i % Wo, oy = (i / Wo) % Ho, m = (i / ((long long)Wo * Ho)) % M;
        const int b = i / ((long long)Wo * Ho * M);
        const float acc = output_sum(x, w, b, m, oy, ox, C, H, W, K, stride, pad);
        y[i] = acc > 0.0f ? acc : 0.0f;                        // ReLU
    }
}

// ---- v1: the grid-stride loop stepping by the grid's thread count: every output once, for any grid size
extern "C" __global__ void conv_v1_direct(const float* __restrict__ x, const float* __restrict__ w,
                                          float* __restrict__ y, int B, int C, int H, int W, int M,
                                          int K, int Ho, int Wo, int stride, int pad)
{
    const long long total = (long long)B * M * Ho * Wo;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const int ox = i % Wo, oy = (i / Wo) % Ho, m = (i / ((long long)Wo * Ho)) % M;
        const int b = i / ((long long)Wo * Ho * M);
        const float acc = output_sum(x, w, b, m, oy, ox, C, H, W, K, stride, pad);
        y[i] = acc > 0.0f ? acc : 0.0f;                        // ReLU
    }
}

// ---- v2a: unroll (im2col): one thread per element of the (C*K*K) x (B*Ho*Wo) matrix; each input element is copied once per window that covers it (up to K*K times)
extern "C" __global__ void im2col(const float* __restrict__ x, float* __restrict__ cols, int B, int C,
                                  int H, int W, int K, int Ho, int Wo, int stride, int pad)
{
    const long long n_cols = (long long)B * Ho * Wo;
    const long long total = n_cols * C * K * K;
    const int hw = Ho * Wo;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (long long)gridDim.x * blockDim.x) {
        const int row = i / n_cols;                             // (c, p, q)
        const long long n = i % n_cols;                         // (b, oy, ox): consecutive threads, consecutive columns
        const int c = row / (K * K), pq = row % (K * K);
        const int b = n / hw, pix = n % hw;
        const int iy = (pix / Wo) * stride + pq / K - pad;
        const int ix = (pix % Wo) * stride + pq % K - pad;
        const bool inside = iy >= 0 && iy < H && ix >= 0 && ix < W;
        cols[i] = inside ? x[(((long long)b * C + c) * H + iy) * W + ix] : 0.0f;
    }
}

// ---- v2b: chapter 6's tiled GEMM of w (M x CKK) by the unrolled matrix; only the store differs: column n = (b, pixel) goes to y[b, m, pixel], NCHW without a transpose
extern "C" __global__ void gemm_tiled_nchw(const float* __restrict__ a, const float* __restrict__ cols,
                                           float* __restrict__ y, int M, int depth, long long n_cols, int hw)
{
    __shared__ float sa[TILE][TILE];
    __shared__ float sb[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long n = (long long)blockIdx.x * TILE + tx;
    const int m = blockIdx.y * TILE + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < depth; k0 += TILE) {
        sa[ty][tx] = (m < M && k0 + tx < depth) ? a[(long long)m * depth + k0 + tx] : 0.0f;
        sb[ty][tx] = (k0 + ty < depth && n < n_cols) ? cols[(long long)(k0 + ty) * n_cols + n] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int j = 0; j < TILE; ++j)
            acc += sa[ty][j] * sb[j][tx];
        __syncthreads();                                        // the next phase overwrites sa/sb
    }
    if (m < M && n < n_cols)
        y[((n / hw) * M + m) * hw + n % hw] = acc;
}

// ---- v3: implicit GEMM: each phase gathers its TILE x TILE slice of the unrolled matrix from x straight into shared memory; the unrolled matrix is never written, DRAM sees the input once
extern "C" __global__ void conv_v3_implicit_gemm(const float* __restrict__ x, const float* __restrict__ w,
                                                 float* __restrict__ y, int B, int C, int H, int W, int M,
                                                 int K, int Ho, int Wo, int stride, int pad)
{
    __shared__ float sa[TILE][TILE];
    __shared__ float sb[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int kk = K * K, depth = C * kk, hw = Ho * Wo;
    const long long n_cols = (long long)B * hw;
    const long long n = (long long)blockIdx.x * TILE + tx;     // this thread's output column ...
    const int m = blockIdx.y * TILE + ty;                      // ... and filter
    const long long nl = (long long)blockIdx.x * TILE + ty;    // the column it gathers for the tile
    const int b = nl / hw, pix = nl % hw, oy = pix / Wo, ox = pix % Wo;
    float acc = 0.0f;
    for (int k0 = 0; k0 < depth; k0 += TILE) {
        const int r = k0 + tx;                                  // the unrolled row (c, p, q) it gathers
        sa[ty][tx] = (m < M && r < depth) ? w[(long long)m * depth + r] : 0.0f;
        float v = 0.0f;
        if (r < depth && nl < n_cols) {
            const int c = r / kk, pq = r % kk;
            const int iy = oy * stride + pq / K - pad, ix = ox * stride + pq % K - pad;
            if (iy >= 0 && iy < H && ix >= 0 && ix < W)
                v = x[(((long long)b * C + c) * H + iy) * W + ix];
        }
        sb[tx][ty] = v;                                         // row tx of the tile, column ty
        __syncthreads();
#pragma unroll
        for (int j = 0; j < TILE; ++j)
            acc += sa[ty][j] * sb[j][tx];
        __syncthreads();
    }
    if (m < M && n < n_cols)
        y[((n / hw) * M + m) * hw + n % hw] = acc;
}

// ---- v3b: v3 with its gather indices precomputed: taps (3 x C*K*K ints, built on the host by kernels/conv.py: gather_table) holds, per unrolled row r = (c, p, q), the offset c*H*W + p*W + q of its input element from the window's corner, and p and q for the bounds check; no division per element (v3 does four for every element it gathers from x)
extern "C" __global__ void conv_v3b_offset_table(const float* __restrict__ x, const float* __restrict__ w,
                                                 const int* __restrict__ taps, float* __restrict__ y, int B,
                                                 int C, int H, int W, int M, int K, int Ho, int Wo, int stride,
                                                 int pad)
{
    __shared__ float sa[TILE][TILE];
    __shared__ float sb[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int depth = C * K * K, hw = Ho * Wo;
    const long long n_cols = (long long)B * hw;
    const long long n = (long long)blockIdx.x * TILE + tx;
    const int m = blockIdx.y * TILE + ty;
    const long long nl = (long long)blockIdx.x * TILE + ty;    // the column it gathers: decoded once
    const int b = nl / hw, pix = nl % hw;
    const int iy0 = (pix / Wo) * stride - pad, ix0 = (pix % Wo) * stride - pad;   // the window's corner
    const float* corner = x + (long long)b * C * H * W + (long long)iy0 * W + ix0;
    const int* offset = taps;
    const int* tap_p = taps + depth;
    const int* tap_q = taps + 2 * depth;
    float acc = 0.0f;
    for (int k0 = 0; k0 < depth; k0 += TILE) {
        const int r = k0 + tx;
        sa[ty][tx] = (m < M && r < depth) ? w[(long long)m * depth + r] : 0.0f;
        float v = 0.0f;
        if (r < depth && nl < n_cols) {
            const int iy = iy0 + tap_p[r], ix = ix0 + tap_q[r];
            if (iy >= 0 && iy < H && ix >= 0 && ix < W)
                v = corner[offset[r]];
        }
        sb[tx][ty] = v;
        __syncthreads();
#pragma unroll
        for (int j = 0; j < TILE; ++j)
            acc += sa[ty][j] * sb[j][tx];
        __syncthreads();
    }
    if (m < M && n < n_cols)
        y[((n / hw) * M + m) * hw + n % hw] = acc;
}

// ---- v4: one thread per output of a 2-D tile, grid (column tiles, row tiles x M, B), weights in constant memory: the block has one filter, so all lanes read the same weight at once, one broadcast from the constant cache
extern "C" __global__ void conv_v4_const_weights(const float* __restrict__ x, float* __restrict__ y,
                                                 int B, int C, int H, int W, int M, int K, int Ho,
                                                 int Wo, int stride, int pad)
{
    const int row_tiles = (Ho + blockDim.y - 1) / blockDim.y;
    const int b = blockIdx.z, m = blockIdx.y / row_tiles;
    const int ox = blockIdx.x * blockDim.x + threadIdx.x;
    const int oy = (blockIdx.y % row_tiles) * blockDim.y + threadIdx.y;
    if (oy >= Ho || ox >= Wo)
        return;
    float acc = 0.0f;
    for (int c = 0; c < C; ++c) {
        const float* xc = x + ((long long)b * C + c) * H * W;
        const float* wc = c_weights + (m * C + c) * K * K;
        for (int p = 0; p < K; ++p) {
            const int iy = oy * stride + p - pad;
            if (iy < 0 || iy >= H)
                continue;
            for (int q = 0; q < K; ++q) {
                const int ix = ox * stride + q - pad;
                if (ix >= 0 && ix < W)
                    acc += xc[iy * W + ix] * wc[p * K + q];
            }
        }
    }
    y[(((long long)b * M + m) * Ho + oy) * Wo + ox] = acc;
}

// ---- v5: tuned for one layer shape (C, M, K compile-time, stride 1): the block stages its input rows in shared memory once; each thread computes TW neighbouring outputs of every filter, sliding a register window along the row; weights are constant-memory operands of the FMAs (compile-time offsets). Constant broadcast is fast only while the weights fit the immediate-constant cache (a few KB): C3's 4*16*49*4 = 12.5 KB do not, and on the H100 ncu's largest stall for C3 is the constant-cache miss (imc_miss), then instruction fetch (benchmarks/results/ncu_ch6_8_h100.txt)
template <int C, int M, int K, int TX, int TH, int TW>
__device__ __forceinline__ void conv_v5(const float* __restrict__ x, float* __restrict__ y,
                                        int H, int W, int Ho, int Wo, int pad)
{
    constexpr int BW = TX * TW;                   // output columns per block
    constexpr int IH = TH + K - 1, IW = BW + K - 1;
    __shared__ float tile[C][IH][IW];
    const int b = blockIdx.z;
    const int ox0 = blockIdx.x * BW, oy0 = blockIdx.y * TH;
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TX + tx;
    const float* xb = x + (long long)b * C * H * W;
    for (int i = tid; i < C * IH * IW; i += TX * TH) {          // stage the input (zeros outside)
        const int c = i / (IH * IW), r = (i / IW) % IH, col = i % IW;
        const int iy = oy0 + r - pad, ix = ox0 + col - pad;
        tile[c][r][col] = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? xb[(c * H + iy) * W + ix] : 0.0f;
    }
    __syncthreads();
    float acc[M][TW];
#pragma unroll
    for (int m = 0; m < M; ++m)
#pragma unroll
        for (int t = 0; t < TW; ++t)
            acc[m][t] = 0.0f;
#pragma unroll
    for (int c = 0; c < C; ++c) {
#pragma unroll
        for (int p = 0; p < K; ++p) {
            float win[TW + K - 1];                                // TW outputs need TW + K - 1 inputs
#pragma unroll
            for (int j = 0; j < TW + K - 1; ++j)
                win[j] = tile[c][ty + p][tx * TW + j];
#pragma unroll
            for (int q = 0; q < K; ++q)
#pragma unroll
                for (int m = 0; m < M; ++m)
#pragma unroll
                    for (int t = 0; t < TW; ++t)
                        acc[m][t] += win[t + q] * c_weights[((m * C + c) * K + p) * K + q];
        }
    }
    const int oy = oy0 + ty;
    if (oy >= Ho)
        return;
#pragma unroll
    for (int m = 0; m < M; ++m)
#pragma unroll
        for (int t = 0; t < TW; ++t) {
            const int ox = ox0 + tx * TW + t;
            if (ox < Wo)
                y[(((long long)b * M + m) * Ho + oy) * Wo + ox] = acc[m][t];
        }
}

// v5 for ECE408's C1 (1 -> 4 maps, 7x7) and C3 (4 -> 16 maps, 7x7), a few tile shapes each:
// conv_v5_c<C>m<M>k<K>_<TX>x<TH>x<TW>; grid (ceil(Wo / (TX*TW)), ceil(Ho / TH), B), block (TX, TH)
#define CONV_V5(C, M, K, TX, TH, TW)                                                            \
    extern "C" __global__ void __launch_bounds__(TX * TH)                                       \
    conv_v5_c##C##m##M##k##K##_##TX##x##TH##x##TW(const float* __restrict__ x, float* __restrict__ y, \
                                                  int H, int W, int Ho, int Wo, int pad)       \
    {                                                                                           \
        conv_v5<C, M, K, TX, TH, TW>(x, y, H, W, Ho, Wo, pad);                                   \
    }

// (the H100 run of 2026-11-24 also tried 16x16x4 and 32x8x4 on C1, 32x8x1, 32x4x2 and 16x16x2 on
// C3, all slower; they are left out because every instantiation of a fully unrolled C3 kernel
// costs tens of seconds of compile time)
CONV_V5(1, 4, 7, 32, 8, 1)
CONV_V5(1, 4, 7, 16, 8, 2)
CONV_V5(1, 4, 7, 16, 8, 5)
CONV_V5(4, 16, 7, 16, 8, 2)
CONV_V5(4, 16, 7, 8, 16, 4)
CONV_V5(4, 16, 7, 16, 8, 4)

// Storage of x and y: v6 reads x and writes y through a storage policy, `type` in memory,
// float in registers. Fp32Storage is v6 itself; the 16-bit policies are in v6h's section after v6.
struct Fp32Storage {
    typedef float type;
    static __device__ __forceinline__ float load(float v) { return v; }
    static __device__ __forceinline__ float store(float v) { return v; }
};

// ---- v6: one block per image at a time (a grid-stride loop over the batch): the block stages the whole padded image and all weights in shared memory once, then each thread computes TW neighbouring outputs of every filter; the loop over (c, p) stays a loop (small code), the weights come as float4 broadcasts, four filters per shared-memory read
template <typename S, int C, int M, int K, int TW, int NT, int IH, int IWP>
__device__ __forceinline__ void conv_v6(const typename S::type* __restrict__ x, const float* __restrict__ w,
                                        typename S::type* __restrict__ y, int B, int H, int W, int Ho, int Wo, int pad)
{
    static_assert(M % 4 == 0, "v6 reads the weights of four filters at once");
    __shared__ __align__(16) float ws[C * K * K][M];      // weights, (c, p, q) major: 4 filters per float4
    __shared__ float tile[C][IH][IWP];                     // the padded image
    const int groups = (Wo + TW - 1) / TW;                 // TW-wide output groups per row
    for (int i = threadIdx.x; i < C * K * K * M; i += NT)  // w[m][c][p][q] -> ws[(c, p, q)][m]
        ws[i % (C * K * K)][i / (C * K * K)] = w[i];
    for (int b = blockIdx.x; b < B; b += gridDim.x) {
        const typename S::type* xb = x + (long long)b * C * H * W;
        __syncthreads();                                   // the previous image is done with tile
        for (int i = threadIdx.x; i < C * IH * IWP; i += NT) {
            const int c = i / (IH * IWP), r = (i / IWP) % IH, col = i % IWP;
            const int iy = r - pad, ix = col - pad;
            tile[c][r][col] = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? S::load(xb[(c * H + iy) * W + ix]) : 0.0f;
        }
        __syncthreads();
        for (int item = threadIdx.x; item < Ho * groups; item += NT) {
            const int oy = item / groups, ox0 = (item % groups) * TW;
            float acc[M][TW];
#pragma unroll
            for (int m = 0; m < M; ++m)
#pragma unroll
                for (int t = 0; t < TW; ++t)
                    acc[m][t] = 0.0f;
#pragma unroll 1
            for (int cp = 0; cp < C * K; ++cp) {           // (c, p): one row of the window per trip
                const int c = cp / K, p = cp % K;
                float win[TW + K - 1];
#pragma unroll
                for (int j = 0; j < TW + K - 1; ++j)
                    win[j] = tile[c][oy + p][ox0 + j];
#pragma unroll
                for (int q = 0; q < K; ++q) {
                    const float4* wq = reinterpret_cast<const float4*>(ws[cp * K + q]);
#pragma unroll
                    for (int m4 = 0; m4 < M / 4; ++m4) {
                        const float4 wv = wq[m4];          // the same address in every lane: a broadcast
#pragma unroll
                        for (int t = 0; t < TW; ++t) {
                            acc[4 * m4 + 0][t] += win[t + q] * wv.x;
                            acc[4 * m4 + 1][t] += win[t + q] * wv.y;
                            acc[4 * m4 + 2][t] += win[t + q] * wv.z;
                            acc[4 * m4 + 3][t] += win[t + q] * wv.w;
                        }
                    }
                }
            }
#pragma unroll
            for (int m = 0; m < M; ++m)
#pragma unroll
                for (int t = 0; t < TW; ++t)
                    if (ox0 + t < Wo)
                        y[(((long long)b * M + m) * Ho + oy) * Wo + ox0 + t] = S::store(acc[m][t]);
        }
    }
}

// v6 instantiations: conv_v6_c<C>m<M>k<K>_tw<TW>_nt<NT>_<IH>x<IWP> (stride 1; the padded image
// must fit: Ho + K - 1 <= IH and ceil(Wo / TW) * TW + K - 1 <= IWP); grid (blocks, 1, 1), block NT
#define CONV_V6(C, M, K, TW, NT, IH, IWP)                                                        \
    extern "C" __global__ void __launch_bounds__(NT)                                             \
    conv_v6_c##C##m##M##k##K##_tw##TW##_nt##NT##_##IH##x##IWP(                                   \
        const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int B,  \
        int H, int W, int Ho, int Wo, int pad)                                                   \
    {                                                                                            \
        conv_v6<Fp32Storage, C, M, K, TW, NT, IH, IWP>(x, w, y, B, H, W, Ho, Wo, pad);           \
    }

CONV_V6(1, 4, 7, 5, 256, 86, 86)
CONV_V6(1, 4, 7, 4, 320, 86, 86)
CONV_V6(4, 16, 7, 4, 320, 40, 42)
CONV_V6(4, 16, 7, 4, 160, 40, 42)
CONV_V6(4, 16, 7, 2, 320, 40, 40)

// ---- v6h: v6 with x and y stored in 16 bits (FP16 or BF16; weights, arithmetic and sums stay FP32), the same tiling: C1 moves half the bytes, which is faster only if v6 waits on DRAM (Nsight Compute calls it issue-bound, and the conversions add instructions)
// A 16-bit value travels as its bit pattern (unsigned short): NVRTC compiles conv.cu without
// cuda_fp16.h. Loads widen exactly; stores round to nearest even (cvt.rn), as __float2half_rn does.
struct Fp16Storage {
    typedef unsigned short type;
    static __device__ __forceinline__ float load(unsigned short bits)
    {
        float v;
        asm("cvt.f32.f16 %0, %1;" : "=f"(v) : "h"(bits));
        return v;
    }
    static __device__ __forceinline__ unsigned short store(float v)
    {
        unsigned short bits;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(v));
        return bits;
    }
};
struct Bf16Storage {
    typedef unsigned short type;
    // BF16 is FP32's top half: widening is a shift
    static __device__ __forceinline__ float load(unsigned short bits) { return __uint_as_float((unsigned)bits << 16); }
    static __device__ __forceinline__ unsigned short store(float v)
    {
        unsigned short bits;
        asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(bits) : "f"(v));
        return bits;
    }
};

// conv_v6<fp16|bf16>_c<C>m<M>k<K>_tw<TW>_nt<NT>_<IH>x<IWP>: v6's default tiles with 16-bit x and y
#define CONV_V6_16BIT(STORAGE, PREFIX, C, M, K, TW, NT, IH, IWP)                                 \
    extern "C" __global__ void __launch_bounds__(NT)                                             \
    PREFIX##_c##C##m##M##k##K##_tw##TW##_nt##NT##_##IH##x##IWP(                                  \
        const unsigned short* __restrict__ x, const float* __restrict__ w,                       \
        unsigned short* __restrict__ y, int B, int H, int W, int Ho, int Wo, int pad)            \
    {                                                                                            \
        conv_v6<STORAGE, C, M, K, TW, NT, IH, IWP>(x, w, y, B, H, W, Ho, Wo, pad);               \
    }

CONV_V6_16BIT(Fp16Storage, conv_v6fp16, 1, 4, 7, 5, 256, 86, 86)
CONV_V6_16BIT(Bf16Storage, conv_v6bf16, 1, 4, 7, 5, 256, 86, 86)
CONV_V6_16BIT(Fp16Storage, conv_v6fp16, 4, 16, 7, 4, 160, 40, 42)
CONV_V6_16BIT(Bf16Storage, conv_v6bf16, 4, 16, 7, 4, 160, 40, 42)
