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
