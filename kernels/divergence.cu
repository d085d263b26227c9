// Chapter 2: warps and divergence, in CUDA C++. The same kernels as kernels/divergence.py, with
// the same names and launch shapes: pairs that do the same work with and without divergence
// inside a warp. The emulator runs them on the CPU (NVRTC's PTX on the PTX engine), CuPy's
// RawModule on a GPU. Sizes come as trailing ints.

// ---- branch_by_parity v1: branch on the thread's parity: both paths inside every warp, 16 lanes each
extern "C" __global__ void branch_by_parity(const float* x, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        if (i % 2 == 0)
            out[i] = 2.0f * x[i];
        else
            out[i] = -x[i];
    }
}

// ---- branch_by_parity_select: the same choice as one conditional expression
extern "C" __global__ void branch_by_parity_select(const float* x, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = i % 2 == 0 ? 2.0f * x[i] : -x[i];
}

// ---- branch_by_warp v2: branch on the warp index: all 32 lanes of a warp agree, no warp runs both paths
extern "C" __global__ void branch_by_warp(const float* x, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        if ((i / 32) % 2 == 0)
            out[i] = 2.0f * x[i];
        else
            out[i] = -x[i];
    }
}

// ---- triangle_sum v1: each thread loops n_terms[i] times; a warp runs until its longest lane is done
extern "C" __global__ void triangle_sum(const int* n_terms, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        int acc = 0;
        for (int k = 0; k < n_terms[i]; ++k)
            acc += k;
        out[i] = acc;
    }
}

// ---- triangle_sum_by_order v2: thread t takes element order[t]; sorted trip counts keep a warp's lanes even
extern "C" __global__ void triangle_sum_by_order(const int* n_terms, const int* order, int* out, int n)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) {
        int i = order[t];
        int acc = 0;
        for (int k = 0; k < n_terms[i]; ++k)
            acc += k;
        out[i] = acc;
    }
}
