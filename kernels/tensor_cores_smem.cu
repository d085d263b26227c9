// Chapter 9 on the CPU: the shared-memory side of the tensor-core GEMMs (kernels/tensor_cores.cu),
// in kernels the PTX engine runs today (plain shared loads and cp.async; no mma, no ldmatrix).
//
// ldmatrix_rows: the addresses of one ldmatrix phase. An ldmatrix.x4 takes one 16-byte row
// address from each lane; the shared memory serves them 8 lanes (one 8x8 matrix) at a time.
// Lanes 0-7 here each load the 16 bytes their ldmatrix row address points to, from a tile laid
// out as v4 (plain) or v5/v6 (XOR swizzle) lay it out, so the trace's bank-conflict count is that
// phase's: the course's bank view draws it.
//
// pipeline_stagesN: a cp.async ring of N stages over tiles of 32 float4, with the commit groups
// and wait_group N-2 of v6's main loop: tile t in slot t % N, tile t + N - 1 issued while tile t
// is read. The trace holds each copy's issue (its global read) and landing (its shared write).

#include <cuda_pipeline.h>

// tensor_cores.cu's swizzles: the 16-byte chunk a row's chunk `chunk` is stored in
//   kind 0: none (v4)
//   kind 1: chunk ^ (row & 7)         rows of 8 or more chunks (TF32 A: 128 bytes; FP16 B: 512)
//   kind 2: chunk ^ ((row >> 1) & 3)  rows of 4 chunks (FP16 A: 64 bytes): two rows share 128 bytes
__device__ __forceinline__ int stored_chunk(int row, int chunk, int kind)
{
    if (kind == 1) return chunk ^ (row & 7);
    if (kind == 2) return chunk ^ ((row >> 1) & 3);
    return chunk;
}

// out[4 l .. 4 l + 3]: the float4 lane l < 8 read; the tile holds smem[i] = i
extern "C" __global__ void ldmatrix_rows(float* out, int row_chunks, int kind, int chunk)
{
    __shared__ __align__(16) float smem[2048];                 // 16 rows of up to 512 bytes
    const int lane = threadIdx.x;
    for (int i = lane; i < 2048; i += blockDim.x) smem[i] = (float)i;
    __syncthreads();
    if (lane < 8) {                                            // one phase: 8 row addresses
        const int row = lane;
        const int offset = (row * row_chunks + stored_chunk(row, chunk, kind)) * 16;   // bytes
        const float4 v = *reinterpret_cast<const float4*>(reinterpret_cast<const char*>(smem) + offset);
        out[4 * lane] = v.x;
        out[4 * lane + 1] = v.y;
        out[4 * lane + 2] = v.z;
        out[4 * lane + 3] = v.w;
    }
}

// one block of 32 threads; out[t] = sum over tiles of tile[t + 1 (mod 32)]'s four floats
template <int STAGES>
__device__ __forceinline__ void pipeline_body(const float4* tiles, float* out, int ntiles)
{
    __shared__ float4 ring[STAGES][32];
    const int t = threadIdx.x;
    float acc = 0.f;
    for (int s = 0; s < STAGES - 1; ++s) {                      // prologue: tiles 0 .. N-2 in flight
        if (s < ntiles) __pipeline_memcpy_async(&ring[s][t], &tiles[s * 32 + t], 16);
        __pipeline_commit();                                   // one group per tile, empty ones too
    }
    for (int kt = 0; kt < ntiles; ++kt) {
        __pipeline_wait_prior(STAGES - 2);                     // all but the newest N-2 groups: tile kt landed
        __syncthreads();                                       // everyone's copies; nobody reads tile kt-1 now
        const int next = kt + STAGES - 1;
        if (next < ntiles) __pipeline_memcpy_async(&ring[next % STAGES][t], &tiles[next * 32 + t], 16);
        __pipeline_commit();
        const float4 v = ring[kt % STAGES][(t + 1) % 32];       // compute on tile kt (a neighbour's element)
        acc += (v.x + v.y) + (v.z + v.w);
    }
    out[t] = acc;
}

extern "C" __global__ void pipeline_stages2(const float4* tiles, float* out, int ntiles) { pipeline_body<2>(tiles, out, ntiles); }
extern "C" __global__ void pipeline_stages3(const float4* tiles, float* out, int ntiles) { pipeline_body<3>(tiles, out, ntiles); }
extern "C" __global__ void pipeline_stages4(const float4* tiles, float* out, int ntiles) { pipeline_body<4>(tiles, out, ntiles); }
