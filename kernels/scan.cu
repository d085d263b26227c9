// Chapter 4: scan (inclusive prefix sum), in CUDA C++. The same kernels as kernels/scan.py,
// with the same names, plus the element count n; launched through CuPy's RawModule
// (simtlab.cuda_source.cu_kernel("scan", name)). float32 data; every access is guarded, so n
// need not be a multiple of a block. The block-level kernels take dynamic shared memory
// (see shared_bytes in kernels/scan.py); v5 and v6 load float4, so x and out must be 16-byte
// aligned (CuPy's allocations are).

#define FULL_MASK 0xffffffffu
#define WARP 32
#define LOG_NUM_BANKS 5
#define MAX_WARPS 32

#ifndef TILE_THREADS
#define TILE_THREADS 256                     // v5, v6: threads per block
#endif
#ifndef TILE_VECS
#define TILE_VECS 4                          // float4 rounds per thread: 16 elements per thread
#endif
#define WARP_TILE (WARP * 4 * TILE_VECS)     // 512 contiguous elements per warp
#define TILE_ITEMS (TILE_THREADS * 4 * TILE_VECS)   // 4096 elements per block
#define TILE_WARPS (TILE_THREADS / WARP)

#define FLAG_AGGREGATE 1u                    // v6 tile status: the tile's own total is known
#define FLAG_PREFIX 2u                       // the sum of this tile and all before it is known

// Hillis-Steele across a warp with shuffles: lane l ends with v(0) + ... + v(l)
__device__ __forceinline__ float warp_inclusive_scan(float v, int lane)
{
#pragma unroll
    for (int d = 1; d < WARP; d *= 2) {
        float y = __shfl_up_sync(FULL_MASK, v, d);
        if (lane >= d) v += y;
    }
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(FULL_MASK, v, d);
    return v;
}

// ---- wrong on purpose: Hillis-Steele in place; a thread may read temp[t - d] after its owner added to it
extern "C" __global__ void scan_in_place_racy(const float* __restrict__ x, float* __restrict__ out,
                                              float* __restrict__ block_sums, int n)
{
    extern __shared__ float temp[];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    temp[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int d = 1; d < (int)blockDim.x; d *= 2) {
        if (t >= d) temp[t] += temp[t - d];
        __syncthreads();
    }
    if (i < n) out[i] = temp[t];
    if (t == (int)blockDim.x - 1) block_sums[blockIdx.x] = temp[t];
}

// ---- v1: Hillis-Steele, log2(B) steps; each thread reads before a barrier and writes after it, so no race
extern "C" __global__ void scan_v1_hillis_steele(const float* __restrict__ x, float* __restrict__ out,
                                                 float* __restrict__ block_sums, int n)
{
    extern __shared__ float temp[];          // blockDim.x floats
    int t = threadIdx.x;
    int b = blockDim.x;
    int i = blockIdx.x * b + t;
    temp[t] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int d = 1; d < b; d *= 2) {
        float left = t >= d ? temp[t - d] : 0.0f;
        __syncthreads();                     // every read of this step is done ...
        if (t >= d) temp[t] += left;
        __syncthreads();                     // ... and every write, before the next step reads
    }
    if (i < n) out[i] = temp[t];
    if (t == b - 1) block_sums[blockIdx.x] = temp[t];
}

// ---- v2: Blelloch, work-efficient: up-sweep then down-sweep, 2 elements per thread, about 2n additions
extern "C" __global__ void scan_v2_blelloch(const float* __restrict__ x, float* __restrict__ out,
                                            float* __restrict__ block_sums, int n)
{
    extern __shared__ float temp[];          // 2 * blockDim.x floats; blockDim a power of two
    int t = threadIdx.x;
    int b = blockDim.x;
    int m = 2 * b;
    int base = blockIdx.x * m;
    temp[t] = base + t < n ? x[base + t] : 0.0f;
    temp[t + b] = base + t + b < n ? x[base + t + b] : 0.0f;
    int offset = 1;
    for (int d = b; d > 0; d /= 2) {         // up-sweep
        __syncthreads();
        if (t < d) temp[offset * (2 * t + 2) - 1] += temp[offset * (2 * t + 1) - 1];
        offset *= 2;
    }
    if (t == 0) {
        block_sums[blockIdx.x] = temp[m - 1];
        temp[m - 1] = 0.0f;
    }
    for (int d = 1; d < m; d *= 2) {         // down-sweep
        offset /= 2;
        __syncthreads();
        if (t < d) {
            int left = offset * (2 * t + 1) - 1;
            int right = offset * (2 * t + 2) - 1;
            float v = temp[left];
            temp[left] = temp[right];
            temp[right] += v;
        }
    }
    __syncthreads();
    if (base + t < n) out[base + t] = temp[t] + x[base + t];
    if (base + t + b < n) out[base + t + b] = temp[t + b] + x[base + t + b];
}

#define PAD(i) ((i) + ((i) >> LOG_NUM_BANKS))

// ---- v3: Blelloch with a padding word every 32: the tree's strided indices spread over the banks
extern "C" __global__ void scan_v3_blelloch_padded(const float* __restrict__ x, float* __restrict__ out,
                                                   float* __restrict__ block_sums, int n)
{
    extern __shared__ float temp[];          // PAD(2 * blockDim.x) floats
    int t = threadIdx.x;
    int b = blockDim.x;
    int m = 2 * b;
    int base = blockIdx.x * m;
    temp[PAD(t)] = base + t < n ? x[base + t] : 0.0f;
    temp[PAD(t + b)] = base + t + b < n ? x[base + t + b] : 0.0f;
    int offset = 1;
    for (int d = b; d > 0; d /= 2) {
        __syncthreads();
        if (t < d) temp[PAD(offset * (2 * t + 2) - 1)] += temp[PAD(offset * (2 * t + 1) - 1)];
        offset *= 2;
    }
    if (t == 0) {
        block_sums[blockIdx.x] = temp[PAD(m - 1)];
        temp[PAD(m - 1)] = 0.0f;
    }
    for (int d = 1; d < m; d *= 2) {
        offset /= 2;
        __syncthreads();
        if (t < d) {
            int left = PAD(offset * (2 * t + 1) - 1);
            int right = PAD(offset * (2 * t + 2) - 1);
            float v = temp[left];
            temp[left] = temp[right];
            temp[right] += v;
        }
    }
    __syncthreads();
    if (base + t < n) out[base + t] = temp[PAD(t)] + x[base + t];
    if (base + t + b < n) out[base + t + b] = temp[PAD(t + b)] + x[base + t + b];
}

// ---- v4: warp-shuffle scan: each warp scans 32 values in registers, one warp scans the warp totals
extern "C" __global__ void scan_v4_warp_shuffle(const float* __restrict__ x, float* __restrict__ out,
                                                float* __restrict__ block_sums, int n)
{
    __shared__ float warp_sums[MAX_WARPS];
    int t = threadIdx.x;
    int lane = t % WARP;
    int warp = t / WARP;
    int nwarps = blockDim.x / WARP;          // blockDim a multiple of 32
    int i = blockIdx.x * blockDim.x + t;
    float v = i < n ? x[i] : 0.0f;
    v = warp_inclusive_scan(v, lane);
    if (lane == WARP - 1) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float s = lane < nwarps ? warp_sums[lane] : 0.0f;
        s = warp_inclusive_scan(s, lane);
        if (lane < nwarps) warp_sums[lane] = s;
    }
    __syncthreads();
    if (warp > 0) v += warp_sums[warp - 1];
    if (i < n) out[i] = v;
    if (t == (int)blockDim.x - 1) block_sums[blockIdx.x] = v;
}

// One tile of TILE_ITEMS elements from base: warp w owns WARP_TILE contiguous elements; in round j
// lane l loads the float4 at w * WARP_TILE + 128 j + 4 l (a warp reads 512 contiguous bytes).
// On return v[] holds each element's inclusive scan inside its warp's part, warp_sums[w] the
// exclusive prefix of warp w inside the tile, warp_sums[TILE_WARPS] the tile's total.
template <bool FULL>
__device__ __forceinline__ void tile_scan(const float* __restrict__ x, int base, int n, float4 (&v)[TILE_VECS],
                                          float* warp_sums, int lane, int warp)
{
    int wbase = base + warp * WARP_TILE + 4 * lane;
#pragma unroll
    for (int j = 0; j < TILE_VECS; ++j) {
        int k = wbase + j * 4 * WARP;
        if (FULL) {
            v[j] = *reinterpret_cast<const float4*>(x + k);
        } else {
            v[j].x = k < n ? x[k] : 0.0f;
            v[j].y = k + 1 < n ? x[k + 1] : 0.0f;
            v[j].z = k + 2 < n ? x[k + 2] : 0.0f;
            v[j].w = k + 3 < n ? x[k + 3] : 0.0f;
        }
    }
    float carry = 0.0f;
#pragma unroll
    for (int j = 0; j < TILE_VECS; ++j) {
        v[j].y += v[j].x;                    // scan the 4 elements of the float4 in registers
        v[j].z += v[j].y;
        v[j].w += v[j].z;
        float incl = warp_inclusive_scan(v[j].w, lane);
        float before = __shfl_up_sync(FULL_MASK, incl, 1);
        before = (lane == 0 ? 0.0f : before) + carry;
        v[j].x += before;
        v[j].y += before;
        v[j].z += before;
        v[j].w += before;
        carry += __shfl_sync(FULL_MASK, incl, WARP - 1);
    }
    if (lane == 0) warp_sums[warp] = carry;
    __syncthreads();
    if (warp == 0) {
        float s = lane < TILE_WARPS ? warp_sums[lane] : 0.0f;
        float incl = warp_inclusive_scan(s, lane);
        float before = __shfl_up_sync(FULL_MASK, incl, 1);
        if (lane < TILE_WARPS) warp_sums[lane] = lane == 0 ? 0.0f : before;
        if (lane == TILE_WARPS - 1) warp_sums[TILE_WARPS] = incl;
    }
    __syncthreads();
}

template <bool FULL>
__device__ __forceinline__ void store_tile(float* __restrict__ out, int base, int n, const float4 (&v)[TILE_VECS],
                                           float prefix, int lane, int warp)
{
    int wbase = base + warp * WARP_TILE + 4 * lane;
#pragma unroll
    for (int j = 0; j < TILE_VECS; ++j) {
        int k = wbase + j * 4 * WARP;
        float4 r = make_float4(v[j].x + prefix, v[j].y + prefix, v[j].z + prefix, v[j].w + prefix);
        if (FULL) {
            *reinterpret_cast<float4*>(out + k) = r;
        } else {
            if (k < n) out[k] = r.x;
            if (k + 1 < n) out[k + 1] = r.y;
            if (k + 2 < n) out[k + 2] = r.z;
            if (k + 3 < n) out[k + 3] = r.w;
        }
    }
}

// ---- v5: 16 elements per thread as 4 float4 loads: shuffles in registers per element, barriers once per 4096
extern "C" __global__ void __launch_bounds__(TILE_THREADS) scan_v5_tile(const float* __restrict__ x,
                                                                        float* __restrict__ out,
                                                                        float* __restrict__ block_sums, int n)
{
    __shared__ float warp_sums[TILE_WARPS + 1];
    float4 v[TILE_VECS];
    int lane = threadIdx.x % WARP;
    int warp = threadIdx.x / WARP;
    int base = blockIdx.x * TILE_ITEMS;
    bool full = base + TILE_ITEMS <= n;
    if (full) tile_scan<true>(x, base, n, v, warp_sums, lane, warp);
    else tile_scan<false>(x, base, n, v, warp_sums, lane, warp);
    float prefix = warp_sums[warp];
    if (full) store_tile<true>(out, base, n, v, prefix, lane, warp);
    else store_tile<false>(out, base, n, v, prefix, lane, warp);
    if (threadIdx.x == 0) block_sums[blockIdx.x] = warp_sums[TILE_WARPS];
}

// ---- add-back: block b + 1 adds the scanned sum of blocks 0..b to each of its per_block elements
extern "C" __global__ void add_block_prefix(float* __restrict__ out, const float* __restrict__ scanned_sums,
                                            int per_block, int n)
{
    int b = blockIdx.x + 1;
    float add = scanned_sums[b - 1];
    int start = b * per_block;
    int end = min(start + per_block, n);
    for (int i = start + threadIdx.x; i < end; i += blockDim.x) out[i] += add;
}

// v6 tile status: flag in the high 32 bits, the float's bits in the low 32, so one 64-bit store
// publishes both and a reader can never see a flag with a stale value (no fence needed between them)
__device__ __forceinline__ unsigned long long pack_status(unsigned flag, float value)
{
    return (static_cast<unsigned long long>(flag) << 32) | __float_as_uint(value);
}

// Release/acquire, GPU scope: what a block wrote before its release store (its aggregate, and
// for the grid anything else it published) is visible to a block whose acquire load reads that
// store. `volatile` only keeps the compiler from caching a value in a register: it orders
// nothing, so it is not a memory-ordering tool. These two are what
// cuda::atomic_ref<unsigned long long, cuda::thread_scope_device>(s).store(v, cuda::memory_order_release)
// and .load(cuda::memory_order_acquire) compile to; written as PTX so that CuPy's NVRTC needs no
// libcu++ headers.
__device__ __forceinline__ void store_release(unsigned long long* p, unsigned long long v)
{
    asm volatile("st.release.gpu.global.u64 [%0], %1;" :: "l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ unsigned long long load_acquire(const unsigned long long* p)
{
    unsigned long long v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void publish(unsigned long long* status, int tile, unsigned flag, float value)
{
    store_release(status + tile, pack_status(flag, value));
}

// Warp 0's decoupled look-back: lane l inspects tile (tile - 1 - l) of a window of 32; sums the
// aggregates back to the newest tile that has published its inclusive prefix, or moves the
// window 32 tiles further back if none has.
__device__ __forceinline__ float look_back(const unsigned long long* status, int tile, int lane)
{
    float exclusive = 0.0f;
    for (int newest = tile - 1;; newest -= WARP) {
        int k = newest - lane;
        unsigned long long s;
        unsigned flag;
        do {                                 // wait until every tile of the window published something
            s = k >= 0 ? load_acquire(status + k) : pack_status(FLAG_PREFIX, 0.0f);
            flag = static_cast<unsigned>(s >> 32);
        } while (__any_sync(FULL_MASK, flag == 0u));
        float v = __uint_as_float(static_cast<unsigned>(s));
        unsigned prefixes = __ballot_sync(FULL_MASK, flag == FLAG_PREFIX);
        if (prefixes & ((1u << lane) - 1u)) v = 0.0f;   // behind the newest prefix: already in it
        exclusive += warp_sum(v);
        if (prefixes) return exclusive;
    }
}

// ---- v6: single pass, decoupled look-back (Merrill & Garland 2016): read x once, write out once
extern "C" __global__ void __launch_bounds__(TILE_THREADS) scan_v6_lookback(const float* __restrict__ x,
                                                                            float* __restrict__ out,
                                                                            unsigned long long* status,
                                                                            unsigned int* ticket, int n)
{
    __shared__ float warp_sums[TILE_WARPS + 2];      // warp prefixes, tile total, tile prefix
    __shared__ int tile_sh;
    float4 v[TILE_VECS];
    int lane = threadIdx.x % WARP;
    int warp = threadIdx.x / WARP;
    // tiles in the order blocks start: a block only waits for blocks that are already running
    if (threadIdx.x == 0) tile_sh = static_cast<int>(atomicAdd(ticket, 1u));
    __syncthreads();
    int tile = tile_sh;
    int base = tile * TILE_ITEMS;
    bool full = base + TILE_ITEMS <= n;
    if (full) tile_scan<true>(x, base, n, v, warp_sums, lane, warp);
    else tile_scan<false>(x, base, n, v, warp_sums, lane, warp);
    if (warp == 0) {
        float total = warp_sums[TILE_WARPS];
        float exclusive = 0.0f;
        if (tile == 0) {
            if (lane == 0) publish(status, 0, FLAG_PREFIX, total);
        } else {
            if (lane == 0) publish(status, tile, FLAG_AGGREGATE, total);
            exclusive = look_back(status, tile, lane);
            if (lane == 0) publish(status, tile, FLAG_PREFIX, exclusive + total);
        }
        if (lane == 0) warp_sums[TILE_WARPS + 1] = exclusive;
    }
    __syncthreads();
    float prefix = warp_sums[warp] + warp_sums[TILE_WARPS + 1];
    if (full) store_tile<true>(out, base, n, v, prefix, lane, warp);
    else store_tile<false>(out, base, n, v, prefix, lane, warp);
}
