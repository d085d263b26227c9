// Chapter 5: sum reduction in CUDA C++, the same versions as kernels/reduction.py, launched
// through CuPy's RawModule (simtlab.cuda_source.cu_kernel("reduction", name)).
//
// Block kernels (v1-v5) write one partial sum per block: launch them again on the partials
// until one value is left. Grid-stride kernels (v6-v9) run a few blocks per SM. Every kernel
// takes n as a 64-bit integer (np.int64) and uses BLOCK threads per block.
// The CPU reference is kernels/reduction.py: sum_cpu (float64, rounded once to float32).

#define BLOCK 256
#define WARPS (BLOCK / 32)
#define FULL_MASK 0xffffffffu

// ---- v1: the seed's interleaved tree: threads with t % (2*stride) == 0 add their neighbour; they are spread over every warp, so all warps diverge
extern "C" __global__ void reduce_v1_interleaved(const float* __restrict__ x, float* __restrict__ partial,
                                                 long long n)
{
    __shared__ float s[BLOCK];
    const int t = threadIdx.x;
    const long long i = (long long)blockIdx.x * BLOCK + t;
    s[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int stride = 1; stride < BLOCK; stride *= 2) {
        if (t % (2 * stride) == 0)
            s[t] += s[t + stride];
        __syncthreads();                        // the next level reads what this one wrote
    }
    if (t == 0)
        partial[blockIdx.x] = s[0];
}

// ---- v2: thread t adds pair t (index k = 2*stride*t): active threads are contiguous, so whole warps idle instead of diverging; the strided index hits one shared bank from several lanes
extern "C" __global__ void reduce_v2_strided_index(const float* __restrict__ x, float* __restrict__ partial,
                                                   long long n)
{
    __shared__ float s[BLOCK];
    const int t = threadIdx.x;
    const long long i = (long long)blockIdx.x * BLOCK + t;
    s[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int stride = 1; stride < BLOCK; stride *= 2) {
        const int k = 2 * stride * t;
        if (k < BLOCK)
            s[k] += s[k + stride];
        __syncthreads();
    }
    if (t == 0)
        partial[blockIdx.x] = s[0];
}

// ---- v3: sequential addressing: the upper half is added onto the lower half; contiguous threads, consecutive words: no divergence while step >= 32, no bank conflicts
extern "C" __global__ void reduce_v3_sequential(const float* __restrict__ x, float* __restrict__ partial,
                                                long long n)
{
    __shared__ float s[BLOCK];
    const int t = threadIdx.x;
    const long long i = (long long)blockIdx.x * BLOCK + t;
    s[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int step = BLOCK / 2; step > 0; step /= 2) {
        if (t < step)
            s[t] += s[t + step];
        __syncthreads();
    }
    if (t == 0)
        partial[blockIdx.x] = s[0];
}

// ---- v4: first add during load (the seed's final kernel): each thread adds two elements a block apart, so a block covers 2*BLOCK elements
extern "C" __global__ void reduce_v4_first_add(const float* __restrict__ x, float* __restrict__ partial,
                                               long long n)
{
    __shared__ float s[BLOCK];
    const int t = threadIdx.x;
    const long long i = (long long)blockIdx.x * (2 * BLOCK) + t;
    const float a = i < n ? x[i] : 0.0f;
    const float b = i + BLOCK < n ? x[i + BLOCK] : 0.0f;
    s[t] = a + b;
    __syncthreads();
    for (int step = BLOCK / 2; step > 0; step /= 2) {
        if (t < step)
            s[t] += s[t + step];
        __syncthreads();
    }
    if (t == 0)
        partial[blockIdx.x] = s[0];
}

// ---- v5: v4 with the last 32 partial sums added by warp 0 with __shfl_down_sync: registers instead of shared memory, and 2 barriers in the tree instead of 8
extern "C" __global__ void reduce_v5_warp_shuffle(const float* __restrict__ x, float* __restrict__ partial,
                                                  long long n)
{
    __shared__ float s[BLOCK];
    const int t = threadIdx.x;
    const long long i = (long long)blockIdx.x * (2 * BLOCK) + t;
    const float a = i < n ? x[i] : 0.0f;
    const float b = i + BLOCK < n ? x[i + BLOCK] : 0.0f;
    s[t] = a + b;
    __syncthreads();
    for (int step = BLOCK / 2; step > 32; step /= 2) {
        if (t < step)
            s[t] += s[t + step];
        __syncthreads();
    }
    if (t < 32) {                               // warp 0 only: all its 32 lanes take part below
        float v = s[t] + s[t + 32];
        for (int offset = 16; offset > 0; offset /= 2)
            v += __shfl_down_sync(FULL_MASK, v, offset);   // lane l adds lane l + offset's value
        if (t == 0)
            partial[blockIdx.x] = v;
    }
}

// ---- last warp, unsafe: BROKEN ON PURPOSE, the pre-Volta "unrolled last warp": warp 0 adds the last 64 sums in shared memory with no barrier and no volatile; the compiler may keep s[t] in a register and load s[t + 16] before lane t + 16 has written it
extern "C" __global__ void reduce_last_warp_unsafe(const float* __restrict__ x, float* __restrict__ partial,
                                                   long long n)
{
    __shared__ float s[BLOCK];
    const int t = threadIdx.x;
    const long long i = (long long)blockIdx.x * (2 * BLOCK) + t;
    const float a = i < n ? x[i] : 0.0f;
    const float b = i + BLOCK < n ? x[i + BLOCK] : 0.0f;
    s[t] = a + b;
    __syncthreads();
    for (int step = BLOCK / 2; step > 32; step /= 2) {
        if (t < step)
            s[t] += s[t + step];
        __syncthreads();
    }
    if (t < 32) {                               // lane t + 16 writes s[t + 16] while lane t reads it
        s[t] += s[t + 32];
        s[t] += s[t + 16];
        s[t] += s[t + 8];
        s[t] += s[t + 4];
        s[t] += s[t + 2];
        s[t] += s[t + 1];
    }
    if (t == 0)
        partial[blockIdx.x] = s[0];
}

// ---- last warp, __syncwarp: the fix that keeps shared memory: read into a register, __syncwarp, write, __syncwarp; the barriers order the lanes and tell the compiler that shared memory changed
extern "C" __global__ void reduce_last_warp_syncwarp(const float* __restrict__ x, float* __restrict__ partial,
                                                     long long n)
{
    __shared__ float s[BLOCK];
    const int t = threadIdx.x;
    const long long i = (long long)blockIdx.x * (2 * BLOCK) + t;
    const float a = i < n ? x[i] : 0.0f;
    const float b = i + BLOCK < n ? x[i + BLOCK] : 0.0f;
    s[t] = a + b;
    __syncthreads();
    for (int step = BLOCK / 2; step > 32; step /= 2) {
        if (t < step)
            s[t] += s[t + step];
        __syncthreads();
    }
    if (t < 32) {
        float v = s[t];
        for (int offset = 32; offset > 0; offset /= 2) {
            v += s[t + offset];
            __syncwarp(FULL_MASK);                  // every lane has read this level
            s[t] = v;
            __syncwarp(FULL_MASK);                  // every lane has written it
        }
    }
    if (t == 0)
        partial[blockIdx.x] = s[0];
}

// The sum of v over the 32 lanes of a warp, in lane 0.
__device__ __forceinline__ float warp_sum(float v)
{
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(FULL_MASK, v, offset);
    return v;
}

// The sum of v over the block, in thread 0: shuffles in each warp, then warp 0 adds the warp sums.
// Call it from every thread of the block; two calls need a __syncthreads() between them.
__device__ __forceinline__ float block_sum(float v)
{
    __shared__ float sums[WARPS];
    v = warp_sum(v);
    if ((threadIdx.x & 31) == 0)
        sums[threadIdx.x >> 5] = v;
    __syncthreads();
    float total = 0.0f;
    if (threadIdx.x < 32)
        total = warp_sum(threadIdx.x < WARPS ? sums[threadIdx.x] : 0.0f);
    return total;
}

// This thread's grid-stride share of x, four independent loads in flight per trip.
__device__ __forceinline__ float thread_sum(const float* __restrict__ x, long long n)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long g = (long long)gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (; i + 3 * g < n; i += 4 * g) {
        const float a = x[i], b = x[i + g], c = x[i + 2 * g], d = x[i + 3 * g];
        acc += (a + b) + (c + d);
    }
    for (; i < n; i += g)
        acc += x[i];
    return acc;
}

// This thread's share of x read as float4 (16-byte loads; x must be 16-byte aligned, as
// cudaMalloc/CuPy allocations are), four float4 in flight per trip; the last n % 4 elements
// go to the first threads of the grid.
__device__ __forceinline__ float thread_sum_float4(const float* __restrict__ x, long long n)
{
    const float4* __restrict__ x4 = reinterpret_cast<const float4*>(x);
    const long long n4 = n / 4;
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long g = (long long)gridDim.x * blockDim.x;
    float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
    long long i = tid;
    for (; i + 3 * g < n4; i += 4 * g) {
        const float4 p = x4[i], q = x4[i + g], r = x4[i + 2 * g], s = x4[i + 3 * g];
        a0 += (p.x + p.y) + (p.z + p.w);
        a1 += (q.x + q.y) + (q.z + q.w);
        a2 += (r.x + r.y) + (r.z + r.w);
        a3 += (s.x + s.y) + (s.z + s.w);
    }
    for (; i < n4; i += g) {
        const float4 p = x4[i];
        a0 += (p.x + p.y) + (p.z + p.w);
    }
    if (tid < n - 4 * n4)
        a1 += x[4 * n4 + tid];
    return (a0 + a1) + (a2 + a3);
}

// ---- v6: grid-stride loop (a few blocks per SM, four loads in flight per thread), then shuffles: one partial per block and one barrier; a second launch with one block sums the partials
extern "C" __global__ void reduce_v6_grid_stride(const float* __restrict__ x, float* __restrict__ partial,
                                                 long long n)
{
    const float total = block_sum(thread_sum(x, n));
    if (threadIdx.x == 0)
        partial[blockIdx.x] = total;
}

// ---- v7: v6 whose blocks combine with one atomicAdd each into out[0] (zeroed first): one launch, but blocks add in the order they finish, so float32 rounding varies from run to run
extern "C" __global__ void reduce_v7_atomic(const float* __restrict__ x, float* __restrict__ out, long long n)
{
    const float total = block_sum(thread_sum(x, n));
    if (threadIdx.x == 0)
        atomicAdd(out, total);
}

// ---- v8: v7 with float4 loads: a quarter of the load instructions, 64 bytes in flight per thread per trip
extern "C" __global__ void reduce_v8_float4_atomic(const float* __restrict__ x, float* __restrict__ out,
                                                   long long n)
{
    const float total = block_sum(thread_sum_float4(x, n));
    if (threadIdx.x == 0)
        atomicAdd(out, total);
}

// ---- v9: float4 loads, and the last block to finish adds all partials in a fixed order: one launch, no memset, the same bits every run
extern "C" __global__ void reduce_v9_float4_last_block(const float* __restrict__ x, float* __restrict__ partial,
                                                       unsigned int* __restrict__ done, float* __restrict__ out,
                                                       long long n)
{
    __shared__ bool last;
    const float total = block_sum(thread_sum_float4(x, n));
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = total;
        __threadfence();                        // the partial is visible to all blocks before we count
        last = atomicAdd(done, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (last) {                                 // the same for the whole block: the barriers inside are safe
        float acc = 0.0f;
        for (unsigned int j = threadIdx.x; j < gridDim.x; j += blockDim.x)
            acc += __ldcg(partial + j);        // from L2: this SM's L1 may not have seen other blocks' writes
        acc = block_sum(acc);
        if (threadIdx.x == 0) {
            out[0] = acc;
            *done = 0;                          // ready for the next launch
        }
    }
}

// ---- vecmat v1: the lab report's vector-matrix product as written: BUG, the segment loop steps by blockDim.x * blockDim.x instead of gridDim.x * blockDim.x, so segments are skipped
#define VM_SHARED 4000
extern "C" __global__ void vecmat_v1_seed(const float* __restrict__ v, const float* __restrict__ w,
                                          float* __restrict__ block_out, int n)
{
    __shared__ float x[VM_SHARED];
    const int row = blockIdx.y;
    const int t = threadIdx.x;
    for (int start = blockIdx.x * blockDim.x; start < n; start += blockDim.x * blockDim.x) {
        const int length = min((int)blockDim.x, n - start);
        if (t < length)
            x[t] = w[(long long)row * n + start + t] * v[start + t];
        __syncthreads();
        int right = length - 1;
        while (right > 0) {                     // fold the segment in half: x[t] += x[right - t]
            const int mid = right / 2;
            if ((right + 1) % 2 == 0) {
                if (t <= mid)
                    x[t] += x[right - t];
            } else if (t < mid) {
                x[t] += x[right - t];
            }
            right = mid;
            __syncthreads();
        }
        if (t == 0)
            block_out[row * gridDim.x + blockIdx.x] += x[0];
        __syncthreads();
    }
}

// ---- vecmat v2: the fix: each thread sums its grid-stride products in a register, then one block_sum per block; one partial per (row, block)
extern "C" __global__ void vecmat_v2_grid_stride(const float* __restrict__ v, const float* __restrict__ w,
                                                 float* __restrict__ block_out, int n)
{
    const int row = blockIdx.y;
    const float* __restrict__ wr = w + (long long)row * n;
    float acc = 0.0f;
    for (int k = blockIdx.x * blockDim.x + threadIdx.x; k < n; k += gridDim.x * blockDim.x)
        acc += wr[k] * v[k];
    const float total = block_sum(acc);
    if (threadIdx.x == 0)
        block_out[row * gridDim.x + blockIdx.x] = total;
}

// The second pass of both vecmat versions: one block per row adds that row's block partials.
extern "C" __global__ void vecmat_rows(const float* __restrict__ block_out, float* __restrict__ out, int blocks)
{
    const int row = blockIdx.x;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < blocks; j += blockDim.x)
        acc += block_out[row * blocks + j];
    const float total = block_sum(acc);
    if (threadIdx.x == 0)
        out[row] = total;
}

// ---- row sums v1: the per-channel sums behind batch-norm means, x is rows x cols (one row per channel); a (blocks per row, rows) grid, each block adds its grid-stride share of a row in registers (coalesced), then one block_sum
extern "C" __global__ void row_sum_partials(const float* __restrict__ x, float* __restrict__ partial, long long cols)
{
    const int row = blockIdx.y;
    const float* __restrict__ xr = x + (long long)row * cols;
    float acc = 0.0f;
    for (long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x; k < cols; k += (long long)gridDim.x * blockDim.x)
        acc += xr[k];
    const float total = block_sum(acc);
    if (threadIdx.x == 0)
        partial[row * gridDim.x + blockIdx.x] = total;
}

// Second pass: one block per row adds that row's partials and divides by the row's length.
extern "C" __global__ void row_mean_finish(const float* __restrict__ partial, float cols, float* __restrict__ out,
                                           int blocks)
{
    const int row = blockIdx.x;
    float acc = 0.0f;
    for (int j = threadIdx.x; j < blocks; j += blockDim.x)
        acc += partial[row * blocks + j];
    const float total = block_sum(acc);
    if (threadIdx.x == 0)
        out[row] = total / cols;
}
