// Chapter 5: blocks that wait for each other. kernels/cooperation.py has the numba-cuda side
// (a cooperative launch with a grid-wide barrier); numba-cuda 0.30 has no thread-block
// clusters, so the cluster version is CUDA C only. CPU reference: reduction.py's sum_cpu.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#define BLOCK 256
#define WARPS (BLOCK / 32)
#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float warp_sum(float v)
{
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(FULL_MASK, v, offset);
    return v;
}

// The sum of v over the block, in thread 0 (the same as reduction.cu's block_sum).
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

// ---- cluster pairs: Hopper's thread-block clusters: the two blocks of a cluster run at the same time on one GPC, and block 0 reads block 1's total straight from block 1's shared memory (distributed shared memory): one partial per cluster, half as many for the second pass
extern "C" __global__ void __cluster_dims__(2, 1, 1)
reduce_cluster_pairs(const float* __restrict__ x, float* __restrict__ partial, long long n)
{
    __shared__ float block_total;
    cg::cluster_group cluster = cg::this_cluster();
    float acc = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        acc += x[i];
    const float total = block_sum(acc);
    if (threadIdx.x == 0)
        block_total = total;
    cluster.sync();                             // both blocks have written block_total
    if (cluster.block_rank() == 0 && threadIdx.x == 0) {
        const float* other = cluster.map_shared_rank(&block_total, 1);   // the other block's shared memory
        partial[blockIdx.x / 2] = block_total + *other;
    }
    cluster.sync();                             // block 1 keeps its shared memory until block 0 has read it
}
