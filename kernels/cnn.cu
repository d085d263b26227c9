// Chapter 8: the LeNet-5-like network's kernels in CUDA C++, the same versions as kernels/cnn.py,
// launched through CuPy's RawModule (simtlab.cuda_source.cu_kernel("cnn", name)).
//
// Layout NCHW, float32. Every kernel takes its sizes as trailing int arguments (np.int32).
// Convolutions are 'valid', stride 1 (the network's). The CPU reference is kernels/cnn.py:
// forward_cpu (float64 sums, rounded once per layer to float32).

#define TILE 16
#define REDUCE_BLOCK 128

// conv, implicit GEMM: chapter 7's v3 (tiles of the unrolled input gathered into shared
// memory) with bias + ReLU applied in registers before the one store
extern "C" __global__ void conv_bias_relu(const float* __restrict__ x, const float* __restrict__ w,
                                          const float* __restrict__ bias, float* __restrict__ y,
                                          int B, int C, int H, int W, int M, int K, int Ho, int Wo)
{
    __shared__ float sa[TILE][TILE];
    __shared__ float sb[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int kk = K * K, depth = C * kk, hw = Ho * Wo;
    const long long n_cols = (long long)B * hw;
    const long long n = (long long)blockIdx.x * TILE + tx;        // output column (b, oy, ox)
    const int m = blockIdx.y * TILE + ty;                          // output filter
    const long long nl = (long long)blockIdx.x * TILE + ty;        // the column this thread gathers
    const int b = (int)(nl / hw), pix = (int)(nl % hw);
    const int oy = pix / Wo, ox = pix % Wo;
    float acc = 0.0f;
    for (int t = 0; t < (depth + TILE - 1) / TILE; ++t) {
        const int r = t * TILE + tx;
        sa[ty][tx] = (m < M && r < depth) ? w[(long long)m * depth + r] : 0.0f;
        float v = 0.0f;
        if (r < depth && nl < n_cols) {
            const int c = r / kk, pq = r % kk;
            v = x[(((long long)b * C + c) * H + oy + pq / K) * W + ox + pq % K];
        }
        sb[tx][ty] = v;
        __syncthreads();
#pragma unroll
        for (int j = 0; j < TILE; ++j)
            acc += sa[ty][j] * sb[j][tx];
        __syncthreads();
    }
    if (m < M && n < n_cols) {
        acc += bias[m];                                            // the epilogue: bias, ReLU, one store
        const int bn = (int)(n / hw), p = (int)(n % hw);
        y[((long long)bn * M + m) * hw + p] = fmaxf(acc, 0.0f);
    }
}

// conv + pool fused: one thread per pooled output computes the 2x2 convolution outputs under it
// and stores their max (+ bias, ReLU); blockIdx.y is the filter, so the weight reads of a block
// are uniform (one broadcast per warp) and the full-size map is never written
template <int C, int K>
__device__ __forceinline__ void conv_pool_body(const float* __restrict__ x, const float* __restrict__ w,
                                               const float* __restrict__ bias, float* __restrict__ y,
                                               int B, int H, int W, int M, int Po, int Qo)
{
    const int m = blockIdx.y;
    const int per_image = Po * Qo;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)B * per_image)
        return;
    const int b = (int)(i / per_image), pix = (int)(i % per_image);
    const int oy = 2 * (pix / Qo), ox = 2 * (pix % Qo);
    float a00 = 0.0f, a01 = 0.0f, a10 = 0.0f, a11 = 0.0f;
#pragma unroll
    for (int c = 0; c < C; ++c) {
        const float* xc = x + (((long long)b * C + c) * H + oy) * W + ox;
        const float* wc = w + ((long long)m * C + c) * K * K;
        // the (K+1) x (K+1) input patch under the four outputs, one row at a time
#pragma unroll
        for (int p = 0; p <= K; ++p) {
            float row[K + 1];
#pragma unroll
            for (int q = 0; q <= K; ++q)
                row[q] = __ldg(xc + p * W + q);
#pragma unroll
            for (int q = 0; q < K; ++q) {
                if (p < K) {
                    const float wv = __ldg(wc + p * K + q);
                    a00 += row[q] * wv;
                    a01 += row[q + 1] * wv;
                }
                if (p > 0) {
                    const float wv = __ldg(wc + (p - 1) * K + q);
                    a10 += row[q] * wv;
                    a11 += row[q + 1] * wv;
                }
            }
        }
    }
    const float best = fmaxf(fmaxf(a00, a01), fmaxf(a10, a11)) + bias[m];
    y[((long long)b * M + m) * per_image + pix] = fmaxf(best, 0.0f);
}

// the generic entry point (any C, K) and the network's two layers compiled for their sizes
extern "C" __global__ void conv_bias_relu_pool(const float* __restrict__ x, const float* __restrict__ w,
                                               const float* __restrict__ bias, float* __restrict__ y,
                                               int B, int C, int H, int W, int M, int K, int Po, int Qo)
{
    if (C == 1 && K == 5) {
        conv_pool_body<1, 5>(x, w, bias, y, B, H, W, M, Po, Qo);
        return;
    }
    if (C == 6 && K == 5) {
        conv_pool_body<6, 5>(x, w, bias, y, B, H, W, M, Po, Qo);
        return;
    }
    const int m = blockIdx.y, per_image = Po * Qo;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)B * per_image)
        return;
    const int b = (int)(i / per_image), pix = (int)(i % per_image);
    const int oy = 2 * (pix / Qo), ox = 2 * (pix % Qo);
    float a00 = 0.0f, a01 = 0.0f, a10 = 0.0f, a11 = 0.0f;
    for (int c = 0; c < C; ++c)
        for (int p = 0; p < K; ++p)
            for (int q = 0; q < K; ++q) {
                const float wv = w[((m * C + c) * K + p) * K + q];
                const float* xr = x + (((long long)b * C + c) * H + oy + p) * W + ox + q;
                a00 += xr[0] * wv;
                a01 += xr[1] * wv;
                a10 += xr[W] * wv;
                a11 += xr[W + 1] * wv;
            }
    const float best = fmaxf(fmaxf(a00, a01), fmaxf(a10, a11)) + bias[m];
    y[((long long)b * M + m) * per_image + pix] = fmaxf(best, 0.0f);
}

// conv, direct and unfused: the fused kernel's thread (the four sums of one 2x2 pooling window,
// the same loads and FMAs in the same order) storing its four outputs, biased and ReLU'd, to the
// conv map y (B, M, Ho, Wo); maxpool2 then pools them. Against conv_bias_relu_pool this measures
// what fusing saves (the map's store and reload, and one launch) apart from the change of
// algorithm (direct sums instead of the implicit GEMM's tiles, which multiply padding zeros)
template <int C, int K>
__device__ __forceinline__ void conv_direct_body(const float* __restrict__ x, const float* __restrict__ w,
                                                 const float* __restrict__ bias, float* __restrict__ y,
                                                 int B, int H, int W, int M, int Ho, int Wo)
{
    const int m = blockIdx.y;
    const int Po = Ho / 2, Qo = Wo / 2, per_window = Po * Qo;
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)B * per_window)
        return;
    const int b = (int)(i / per_window), pix = (int)(i % per_window);
    const int oy = 2 * (pix / Qo), ox = 2 * (pix % Qo);
    float a00 = 0.0f, a01 = 0.0f, a10 = 0.0f, a11 = 0.0f;
#pragma unroll
    for (int c = 0; c < C; ++c) {
        const float* xc = x + (((long long)b * C + c) * H + oy) * W + ox;
        const float* wc = w + ((long long)m * C + c) * K * K;
#pragma unroll
        for (int p = 0; p <= K; ++p) {
            float row[K + 1];
#pragma unroll
            for (int q = 0; q <= K; ++q)
                row[q] = __ldg(xc + p * W + q);
#pragma unroll
            for (int q = 0; q < K; ++q) {
                if (p < K) {
                    const float wv = __ldg(wc + p * K + q);
                    a00 += row[q] * wv;
                    a01 += row[q + 1] * wv;
                }
                if (p > 0) {
                    const float wv = __ldg(wc + (p - 1) * K + q);
                    a10 += row[q] * wv;
                    a11 += row[q + 1] * wv;
                }
            }
        }
    }
    const float bm = bias[m];
    float* yr = y + (((long long)b * M + m) * Ho + oy) * Wo + ox;
    yr[0] = fmaxf(a00 + bm, 0.0f);
    yr[1] = fmaxf(a01 + bm, 0.0f);
    yr[Wo] = fmaxf(a10 + bm, 0.0f);
    yr[Wo + 1] = fmaxf(a11 + bm, 0.0f);
}

// the network's two layers (C = 1 and 6, K = 5; Ho and Wo even); one thread per 2x2 window
extern "C" __global__ void conv_bias_relu_direct(const float* __restrict__ x, const float* __restrict__ w,
                                                 const float* __restrict__ bias, float* __restrict__ y,
                                                 int B, int C, int H, int W, int M, int K, int Ho, int Wo)
{
    if (C == 1 && K == 5)
        conv_direct_body<1, 5>(x, w, bias, y, B, H, W, M, Ho, Wo);
    else if (C == 6 && K == 5)
        conv_direct_body<6, 5>(x, w, bias, y, B, H, W, M, Ho, Wo);
}

// pool: one thread per output, each reads its own 2x2 window
extern "C" __global__ void maxpool2(const float* __restrict__ x, float* __restrict__ y,
                                    int B, int C, int Ho, int Wo)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)B * C * Ho * Wo)
        return;
    const int ox = (int)(i % Wo), oy = (int)((i / Wo) % Ho);
    const long long plane = i / ((long long)Wo * Ho);             // (b, c)
    const int W = 2 * Wo;
    const float* xr = x + (plane * 2 * Ho + 2 * oy) * W + 2 * ox;
    y[i] = fmaxf(fmaxf(xr[0], xr[1]), fmaxf(xr[W], xr[W + 1]));
}

// fc, tiled GEMM: y (B x N) = x (B x K) @ w.T, bias + optional ReLU in the store
extern "C" __global__ void dense_bias_act(const float* __restrict__ x, const float* __restrict__ w,
                                          const float* __restrict__ bias, float* __restrict__ y,
                                          int relu, int B, int K, int N)
{
    __shared__ float sa[TILE][TILE];
    __shared__ float sb[TILE][TILE + 1];                           // +1: w's tile is stored transposed
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int col = blockIdx.x * TILE + tx, row = blockIdx.y * TILE + ty;
    const int wrow = blockIdx.x * TILE + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        sa[ty][tx] = (row < B && k0 + tx < K) ? x[(long long)row * K + k0 + tx] : 0.0f;
        sb[tx][ty] = (wrow < N && k0 + tx < K) ? w[(long long)wrow * K + k0 + tx] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int j = 0; j < TILE; ++j)
            acc += sa[ty][j] * sb[j][tx];
        __syncthreads();
    }
    if (row < B && col < N) {
        acc += bias[col];
        y[(long long)row * N + col] = relu ? fmaxf(acc, 0.0f) : acc;
    }
}

// fc, batch 1: the lab seed's vector-matrix product: one block per output neuron, threads stride
// over K, then a shared-memory tree halves the partial sums; thread 0 adds the bias and stores
extern "C" __global__ void vecmat_block_reduce(const float* __restrict__ x, const float* __restrict__ w,
                                               const float* __restrict__ bias, float* __restrict__ y,
                                               int relu, int K, int N)
{
    __shared__ float partial[REDUCE_BLOCK];
    const int t = threadIdx.x, n = blockIdx.x;
    float acc = 0.0f;
    for (int k = t; k < K; k += blockDim.x)
        acc += x[k] * w[(long long)n * K + k];
    partial[t] = acc;
    __syncthreads();
    for (int step = blockDim.x / 2; step > 0; step /= 2) {
        if (t < step)
            partial[t] += partial[t + step];
        __syncthreads();
    }
    if (t == 0) {
        const float s = partial[0] + bias[n];
        y[n] = relu ? fmaxf(s, 0.0f) : s;
    }
}

// softmax + argmax: one thread per image, the max subtracted before exp
extern "C" __global__ void softmax_argmax(const float* __restrict__ z, float* __restrict__ probs,
                                          int* __restrict__ labels, int B, int N)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= B)
        return;
    const float* zi = z + (long long)i * N;
    float best = zi[0];
    int arg = 0;
    for (int j = 1; j < N; ++j)
        if (zi[j] > best) {
            best = zi[j];
            arg = j;
        }
    float total = 0.0f;
    for (int j = 0; j < N; ++j) {
        const float e = expf(zi[j] - best);
        probs[(long long)i * N + j] = e;
        total += e;
    }
    for (int j = 0; j < N; ++j)
        probs[(long long)i * N + j] /= total;
    labels[i] = arg;
}

// ============================================================================================
// Tensor-core convolution: the network's convolutions as an implicit GEMM on WMMA (chapter 9's
// fragments), TF32 and BF16 inputs, FP32 accumulate, bias + ReLU in the epilogue
// ============================================================================================
// The GEMM: D (P x N) = A (P x Kd) * B (Kd x N), with
//   P  = output pixels B*Ho*Wo (the rows: one per (image, oy, ox)),
//   N  = output channels M (the columns),
//   Kd = C*K*K (the depth: one per (c, p, q)): A[pix][r] = x[b, c, oy+p, ox+q], B[r][n] = w[n][r].
// Napkin math for the network (K = 5, batch 10,000):
//   conv1: P = 5.76 M, N = 6,  Kd = 25;  conv2: P = 640 k, N = 16, Kd = 150.
//   A WMMA tile is 16 x 16 x k (k = 8 TF32, 16 BF16): N is padded to 16 and Kd to k's multiple.
//   conv1: N 6 -> 16 and Kd 25 -> 32: 6*25 / (16*32) = 29 % of the tensor cores' multiplies
//   are useful (71 % multiply padding zeros); conv2: N = 16 fits, Kd 150 -> 152 (TF32) or 160
//   (BF16): 99 % / 94 % useful. The width is wasted where N is small, and the time is not in
//   the multiplies anyway where the bytes dominate. At the H100 SXM's peaks (FP32 67 TFLOP/s,
//   TF32 495, BF16 989 dense; 3.35 TB/s):
//   conv1: 1.7 GFLOP = 26 us on the FP32 units, 3.5 us on TF32 tensor cores, but its 31 MB in
//          and 138 MB of FP32 out take 50 us: memory-bound whatever unit multiplies;
//   conv2: 3.1 GFLOP = 46 us on the FP32 units, 6 us TF32 / 3 us BF16, against 23 us for its
//          35 MB in and 41 MB out: here the tensor cores can help, by about 2x at best.
// Block: 4 warps, 64 output pixels (16 per warp) x 16 channels (blockIdx.y: the next 16, for
// M > 16); the K loop stages TC_BK columns of A (gathered from x, im2col on the fly) and B
// (from w) in shared memory, converted to the input precision on the way (once per element).
// Sizes: any B, C, H, W, M, K ('valid', stride 1); rows past P, channels past M and depth past
// Kd are zeros in shared memory and never stored.
#define TC_BM 64                     // output pixels per block (4 warps x 16)
#define TC_BN 16                     // output channels per block: one WMMA tile wide
#define TC_BK 32                     // depth per stage (a multiple of both k's)
#define TC_WARPS 4
#define TC_LDC 20                    // the C tile's row in shared memory (multiple of 4 floats)

typedef unsigned int u32;
typedef unsigned short u16;

// WMMA as the PTX it compiles to, as kernels/tensor_cores.cu writes it (each .cu file is
// compiled alone, without mma.h); A and B row-major, ldm in elements, addresses 32-byte aligned.
// wmma::load_matrix_sync (TF32, m16n16k8: 4 registers; the values were rounded when staged)
__device__ __forceinline__ void tc_load_a_tf32(u32 (&a)[4], const float* p, int ldm)
{
    asm volatile("wmma.load.a.sync.aligned.row.m16n16k8.tf32 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "l"(p), "r"(ldm));
}
__device__ __forceinline__ void tc_load_b_tf32(u32 (&b)[4], const float* p, int ldm)
{
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k8.tf32 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]) : "l"(p), "r"(ldm));
}
// BF16, m16n16k16: 4 registers of two bf16 each
__device__ __forceinline__ void tc_load_a_bf16(u32 (&a)[4], const u16* p, int ldm)
{
    asm volatile("wmma.load.a.sync.aligned.row.m16n16k16.bf16 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3]) : "l"(p), "r"(ldm));
}
__device__ __forceinline__ void tc_load_b_bf16(u32 (&b)[4], const u16* p, int ldm)
{
    asm volatile("wmma.load.b.sync.aligned.row.m16n16k16.bf16 {%0, %1, %2, %3}, [%4], %5;\n"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]) : "l"(p), "r"(ldm));
}
#define TC_C8 "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]), "+f"(c[4]), "+f"(c[5]), "+f"(c[6]), "+f"(c[7])
// wmma::mma_sync: c += a * b, FP32 accumulate
__device__ __forceinline__ void tc_mma_tf32(float (&c)[8], const u32 (&a)[4], const u32 (&b)[4])
{
    asm volatile("wmma.mma.sync.aligned.row.row.m16n16k8.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, {%12, %13, %14, %15}, "
                 "{%0, %1, %2, %3, %4, %5, %6, %7};\n"
                 : TC_C8 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]));
}
__device__ __forceinline__ void tc_mma_bf16(float (&c)[8], const u32 (&a)[4], const u32 (&b)[4])
{
    asm volatile("wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, {%12, %13, %14, %15}, "
                 "{%0, %1, %2, %3, %4, %5, %6, %7};\n"
                 : TC_C8 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]));
}
// wmma::store_matrix_sync (row-major, FP32)
__device__ __forceinline__ void tc_store_c(float* p, const float (&c)[8], int ldm)
{
    asm volatile("wmma.store.d.sync.aligned.row.m16n16k8.f32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8}, %9;\n"
                 :: "l"(p), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]), "f"(c[4]), "f"(c[5]), "f"(c[6]), "f"(c[7]),
                    "r"(ldm) : "memory");
}

// the two input precisions: what a staged element is, and the conversion on the way in
struct ConvTf32 {
    typedef float T;
    static constexpr int MMA_K = 8;
    static constexpr int LDA = TC_BK + 4;          // +4 floats: a fragment's 16 rows start in different banks
    static __device__ __forceinline__ float put(float v)       // wmma::__float_to_tf32: to nearest, ties away
    {
        u32 r;
        asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
        return __uint_as_float(r);
    }
    static __device__ __forceinline__ void mma(float (&c)[8], const T* a, int lda, const T* b, int ldb)
    {
        u32 fa[4], fb[4];
        tc_load_a_tf32(fa, a, lda);
        tc_load_b_tf32(fb, b, ldb);
        tc_mma_tf32(c, fa, fb);
    }
};
struct ConvBf16 {
    typedef u16 T;
    static constexpr int MMA_K = 16;
    static constexpr int LDA = TC_BK + 8;          // +8 bf16 (16 bytes, the least ldm allows): the same spread
    static __device__ __forceinline__ u16 put(float v)         // __float2bfloat16_rn: to nearest even
    {
        u16 r;
        asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(r) : "f"(v));
        return r;
    }
    static __device__ __forceinline__ void mma(float (&c)[8], const T* a, int lda, const T* b, int ldb)
    {
        u32 fa[4], fb[4];
        tc_load_a_bf16(fa, a, lda);
        tc_load_b_bf16(fb, b, ldb);
        tc_mma_bf16(c, fa, fb);
    }
};

// ---- tc v1 (TF32 and BF16, one body): chapter 8's implicit GEMM with its 16 x 16 x k blocks on WMMA instead of FMA loops; x and w are read as float32 and rounded to TF32 / BF16 while staged (a drop-in for the FP32 layers: the same buffers, no conversion pass; so BF16 reads as many bytes as FP32, where cuDNN's BF16 reads and writes half: the table says so)
template <class P>
__device__ __forceinline__ void conv_wmma_body(const float* __restrict__ x, const float* __restrict__ w,
                                               const float* __restrict__ bias, float* __restrict__ y,
                                               int B, int C, int H, int W, int M, int K, int Ho, int Wo)
{
    typedef typename P::T T;
    __shared__ __align__(32) T sa[TC_BM * P::LDA];           // A: 64 pixels x TC_BK depth
    __shared__ __align__(32) T sb[TC_BK * TC_BN];            // B: TC_BK depth x 16 channels
    __shared__ __align__(32) float sc[TC_WARPS * 16 * TC_LDC];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int kk = K * K, depth = C * kk, hw = Ho * Wo, plane = H * W;
    const long long n_pix = (long long)B * hw;
    const long long pix0 = (long long)blockIdx.x * TC_BM;
    const int n0 = blockIdx.y * TC_BN;
    // this thread gathers rows tid/4 and tid/4 + 32 of A, columns tid%4 + 4j: a warp covers 8
    // neighbouring pixels x 4 depths, so its loads from x stay within a few sectors and its
    // shared stores hit different banks (TF32: word 36 row + col = 4 row + col mod 32, 32 banks;
    // BF16: word 20 row + col/2, two lanes a word)
    long long base[2];
    bool live[2];
    for (int h = 0; h < 2; ++h) {
        const long long p = pix0 + tid / 4 + 32 * h;
        live[h] = p < n_pix;
        const int b = (int)(live[h] ? p / hw : 0), pix = (int)(live[h] ? p % hw : 0);
        base[h] = (long long)b * C * plane + (long long)(pix / Wo) * W + pix % Wo;
    }
    float c[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    for (int k0 = 0; k0 < depth; k0 += TC_BK) {
        for (int j = 0; j < TC_BK / 4; ++j) {
            const int col = tid % 4 + 4 * j, r = k0 + col;
            const bool in = r < depth;
            const int ch = in ? r / kk : 0, pq = in ? r % kk : 0;
            const long long off = (long long)ch * plane + (pq / K) * W + pq % K;
            for (int h = 0; h < 2; ++h)
                sa[(tid / 4 + 32 * h) * P::LDA + col] = P::put(in && live[h] ? __ldg(x + base[h] + off) : 0.0f);
        }
        for (int i = tid; i < TC_BK * TC_BN; i += TC_WARPS * 32) {
            const int r = i % TC_BK, n = i / TC_BK;            // consecutive threads, consecutive weights
            const bool in = k0 + r < depth && n0 + n < M;
            sb[r * TC_BN + n] = P::put(in ? __ldg(w + (long long)(n0 + n) * depth + k0 + r) : 0.0f);
        }
        __syncthreads();
        const int k_left = depth - k0 < TC_BK ? depth - k0 : TC_BK;   // skip MMAs past Kd padded to k
        for (int k = 0; k < k_left; k += P::MMA_K)
            P::mma(c, sa + warp * 16 * P::LDA + k, P::LDA, sb + k * TC_BN, TC_BN);
        __syncthreads();
    }
    // the epilogue: the warp's 16 x 16 tile through shared memory, then bias, ReLU and one store
    // per output; lanes walk pixels fastest, so 16 lanes store 16 neighbouring outputs of a map
    float* tile = sc + warp * 16 * TC_LDC;
    tc_store_c(tile, c, TC_LDC);
    __syncwarp();
    for (int e = lane; e < 256; e += 32) {
        const int row = e % 16, n = n0 + e / 16;
        const long long p = pix0 + warp * 16 + row;
        if (p < n_pix && n < M) {
            const int b = (int)(p / hw), pix = (int)(p % hw);
            y[((long long)b * M + n) * hw + pix] = fmaxf(tile[row * TC_LDC + e / 16] + bias[n], 0.0f);
        }
    }
}

extern "C" __global__ void __launch_bounds__(TC_WARPS * 32)
conv_wmma_tf32_bias_relu(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
                         float* __restrict__ y, int B, int C, int H, int W, int M, int K, int Ho, int Wo)
{
    conv_wmma_body<ConvTf32>(x, w, bias, y, B, C, H, W, M, K, Ho, Wo);
}

extern "C" __global__ void __launch_bounds__(TC_WARPS * 32)
conv_wmma_bf16_bias_relu(const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
                         float* __restrict__ y, int B, int C, int H, int W, int M, int K, int Ho, int Wo)
{
    conv_wmma_body<ConvBf16>(x, w, bias, y, B, C, H, W, M, K, Ho, Wo);
}
// ==================================== end tensor-core convolution ============================
