// Chapter 3: communication patterns, in CUDA C++. The same kernels as kernels/patterns.py,
// with the same names and launch shapes; launched through CuPy's RawModule
// (simtlab.cuda_source.cu_kernel("patterns", name)). float32 data, int32 indices, every
// access guarded so that sizes need not be multiples of the block.

#define BLOCK 256            // threads per block of the 1-D kernels
#define COPY_STRIDE 32       // elements between neighbouring lanes in copy v1

#define RADIUS 3             // 1-D stencil: 2 * RADIUS + 1 = 7 weights
#define STENCIL_BLOCK 128
#define STENCIL_SHARED (STENCIL_BLOCK + 2 * RADIUS)

#define RADIUS_2D 1          // 2-D stencil: 3 x 3 weights, blocks of 32 x 8 threads
#define TILE_2D_X 32
#define TILE_2D_Y 8
#define SHARED_2D_X (TILE_2D_X + 2 * RADIUS_2D)
#define SHARED_2D_Y (TILE_2D_Y + 2 * RADIUS_2D)

#define TILE 32              // transpose: a TILE x TILE tile per block of TILE x BLOCK_ROWS threads
#define BLOCK_ROWS 8
#define BIG_TILE 64          // transpose v4: a 64 x 64 tile per block, 16 elements per thread

// ---- map v1: thread i reads x[i] and writes out[i]: neighbouring lanes touch neighbouring words
extern "C" __global__ void map_v1(const float* __restrict__ x, float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * x[i] + 1.0f;
}

// ---- gather v1: thread i reads where idx[i] says; the writes stay coalesced, the reads scatter
extern "C" __global__ void gather_v1(const float* __restrict__ x, const int* __restrict__ idx,
                                     float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[idx[i]];
}

// ---- scatter v1: thread i writes where idx[i] says; the reads stay coalesced, the writes scatter
extern "C" __global__ void scatter_v1(const float* __restrict__ x, const int* __restrict__ idx,
                                      float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[idx[i]] = x[i];
}

// ---- copy v1 strided: thread t copies element (t % h) * S + t / h (h = ceil(n / S)): lanes S apart
extern "C" __global__ void copy_v1_strided(const float* __restrict__ x, float* __restrict__ out, int n)
{
    long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long h = (n + COPY_STRIDE - 1) / COPY_STRIDE;
    long long i = (t % h) * COPY_STRIDE + t / h;
    if (t < h * COPY_STRIDE && i < n) out[i] = x[i];
}

// ---- copy v2 coalesced: thread t copies element t: one warp moves 128 contiguous bytes
extern "C" __global__ void copy_v2_coalesced(const float* __restrict__ x, float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i];
}

// ---- stencil1d v1: each thread reads its 2R+1 neighbours from global memory (zero outside)
extern "C" __global__ void stencil1d_v1_global(const float* __restrict__ x, const float* __restrict__ w,
                                               float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < 2 * RADIUS + 1; ++k) {
        int j = i + k - RADIUS;
        if (j >= 0 && j < n) acc += w[k] * x[j];
    }
    out[i] = acc;
}

// ---- stencil1d v2: the block loads its tile plus a halo of R each side into shared memory once
extern "C" __global__ void stencil1d_v2_shared(const float* __restrict__ x, const float* __restrict__ w,
                                               float* __restrict__ out, int n)
{
    __shared__ float s[STENCIL_SHARED];
    int t = threadIdx.x;
    int start = blockIdx.x * STENCIL_BLOCK - RADIUS;          // global index of s[0]
    for (int j = t; j < STENCIL_SHARED; j += STENCIL_BLOCK) {
        int g = start + j;
        s[j] = (g >= 0 && g < n) ? x[g] : 0.0f;                // 'same' zero padding
    }
    __syncthreads();
    int i = blockIdx.x * STENCIL_BLOCK + t;
    if (i >= n) return;
    float acc = 0.0f;
    for (int k = 0; k < 2 * RADIUS + 1; ++k) acc += w[k] * s[t + k];
    out[i] = acc;
}

// ---- stencil2d v1: each thread reads its (2R+1)^2 neighbourhood from global memory
extern "C" __global__ void stencil2d_v1_global(const float* __restrict__ x, const float* __restrict__ w,
                                               float* __restrict__ out, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r >= rows || c >= cols) return;
    float acc = 0.0f;
    for (int i = 0; i < 2 * RADIUS_2D + 1; ++i) {
        for (int j = 0; j < 2 * RADIUS_2D + 1; ++j) {
            int rr = r + i - RADIUS_2D, cc = c + j - RADIUS_2D;
            if (rr >= 0 && rr < rows && cc >= 0 && cc < cols)
                acc += w[i * (2 * RADIUS_2D + 1) + j] * x[(size_t)rr * cols + cc];
        }
    }
    out[(size_t)r * cols + c] = acc;
}

// ---- stencil2d v2: the block loads its (8+2R) x (32+2R) tile with halo into shared memory once
extern "C" __global__ void stencil2d_v2_shared(const float* __restrict__ x, const float* __restrict__ w,
                                               float* __restrict__ out, int rows, int cols)
{
    __shared__ float s[SHARED_2D_Y][SHARED_2D_X];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row0 = blockIdx.y * TILE_2D_Y - RADIUS_2D;             // global row and column of s[0][0]
    int col0 = blockIdx.x * TILE_2D_X - RADIUS_2D;
    for (int i = ty; i < SHARED_2D_Y; i += TILE_2D_Y) {
        for (int j = tx; j < SHARED_2D_X; j += TILE_2D_X) {
            int rr = row0 + i, cc = col0 + j;
            s[i][j] = (rr >= 0 && rr < rows && cc >= 0 && cc < cols) ? x[(size_t)rr * cols + cc] : 0.0f;
        }
    }
    __syncthreads();
    int c = blockIdx.x * TILE_2D_X + tx;
    int r = blockIdx.y * TILE_2D_Y + ty;
    if (r >= rows || c >= cols) return;
    float acc = 0.0f;
    for (int i = 0; i < 2 * RADIUS_2D + 1; ++i)
        for (int j = 0; j < 2 * RADIUS_2D + 1; ++j)
            acc += w[i * (2 * RADIUS_2D + 1) + j] * s[ty + i][tx + j];
    out[(size_t)r * cols + c] = acc;
}

// ---- transpose v1 naive: lanes read along a row of a (coalesced) but write down a column of out
extern "C" __global__ void transpose_v1_naive(const float* __restrict__ a, float* __restrict__ out,
                                              int rows, int cols)
{
    int x = blockIdx.x * TILE + threadIdx.x;                   // column of a
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (y + j < rows && x < cols) out[(size_t)x * rows + y + j] = a[(size_t)(y + j) * cols + x];
}

// ---- transpose v2 tile: stage a 32x32 tile in shared memory so reads and writes both walk rows
extern "C" __global__ void transpose_v2_tile(const float* __restrict__ a, float* __restrict__ out,
                                             int rows, int cols)
{
    __shared__ float tile[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int x = blockIdx.x * TILE + tx;
    int y = blockIdx.y * TILE + ty;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (y + j < rows && x < cols) tile[ty + j][tx] = a[(size_t)(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + tx;                                // the tile's place in out
    y = blockIdx.x * TILE + ty;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (y + j < cols && x < rows) out[(size_t)(y + j) * rows + x] = tile[tx][ty + j];  // one bank
}

// ---- transpose v3 padded tile: rows of 33 floats put a tile column's 32 words in 32 banks
extern "C" __global__ void transpose_v3_padded(const float* __restrict__ a,
                                               float* __restrict__ out, int rows, int cols)
{
    __shared__ float tile[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int x = blockIdx.x * TILE + tx;
    int y = blockIdx.y * TILE + ty;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (y + j < rows && x < cols) tile[ty + j][tx] = a[(size_t)(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + tx;
    y = blockIdx.x * TILE + ty;
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (y + j < cols && x < rows) out[(size_t)(y + j) * rows + x] = tile[tx][ty + j];
}

// ---- transpose v4 big tile: a 64x64 padded tile, 16 elements per thread: more loads in flight
extern "C" __global__ void transpose_v4_big_tile(const float* __restrict__ a, float* __restrict__ out,
                                                 int rows, int cols)
{
    __shared__ float tile[BIG_TILE][BIG_TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int bx = blockIdx.x * BIG_TILE, by = blockIdx.y * BIG_TILE;
#pragma unroll
    for (int j = 0; j < BIG_TILE; j += BLOCK_ROWS)
#pragma unroll
        for (int i = 0; i < BIG_TILE; i += TILE)
            if (by + ty + j < rows && bx + tx + i < cols)
                tile[ty + j][tx + i] = a[(size_t)(by + ty + j) * cols + bx + tx + i];
    __syncthreads();
#pragma unroll
    for (int j = 0; j < BIG_TILE; j += BLOCK_ROWS)
#pragma unroll
        for (int i = 0; i < BIG_TILE; i += TILE)
            if (bx + ty + j < cols && by + tx + i < rows)
                out[(size_t)(bx + ty + j) * rows + by + tx + i] = tile[tx + i][ty + j];
}
