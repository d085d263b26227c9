// Chapter 1: first kernels, in CUDA C++. The same kernels as kernels/intro.py, with the same
// names and launch shapes; the emulator runs them on the CPU (simtlab.cuda_c_kernels.course_kernel,
// NVRTC's PTX on the PTX engine), CuPy's RawModule on a GPU. Arrays come as pointers, their
// sizes as trailing ints (the numba kernels read them from the arrays' shapes).

// ---- whoami_2d: each thread writes its block, thread and warp id into the element (y, x) it owns
extern "C" __global__ void whoami_2d(int* block_id, int* thread_id, int* warp_id, int rows, int cols)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (y < rows && x < cols) {
        int at = y * cols + x;
        block_id[at] = blockIdx.y * gridDim.x + blockIdx.x;
        int linear = threadIdx.y * blockDim.x + threadIdx.x;     // linear thread id
        thread_id[at] = linear;
        warp_id[at] = linear / 32;
    }
}

// ---- vector_add v1: one thread per element; the grid covers the array (ceil-div), extra threads idle
extern "C" __global__ void vector_add_v1(const float* a, const float* b, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)                         // the last block may stick out past the array
        out[i] = a[i] + b[i];
}

// ---- vector_add v2: grid-stride loop; any grid covers any n, each thread steps by the whole grid
extern "C" __global__ void vector_add_v2(const float* a, const float* b, float* out, int n)
{
    int stride = gridDim.x * blockDim.x;                     // every thread of the grid
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = a[i] + b[i];
}

// ---- conv2d_relu v1: grid-stride loop over the flattened (F, H/K, W/K) output, stride K, then ReLU;
//      image (H, W) with row length width, filters (F, K, K). numba types intro.py's `acc = 0.0` as
//      float64, so the twin adds in double too (each product rounded to float first, as there)
extern "C" __global__ void conv2d_relu_v1(const float* image, const float* filters, float* out,
                                          int width, int k, int out_h, int out_w, int total)
{
    int per_filter = out_h * out_w;
    int stride = gridDim.x * blockDim.x;                     // NOT blockDim.x * blockDim.x
    for (int o = blockIdx.x * blockDim.x + threadIdx.x; o < total; o += stride) {
        int f = o / per_filter;                              // which filter
        int r = (o % per_filter) / out_w;                    // output row and column in its map
        int c = o % out_w;
        double acc = 0.0;
        for (int i = 0; i < k; ++i)
            for (int j = 0; j < k; ++j)
                acc += image[(r * k + i) * width + c * k + j] * filters[(f * k + i) * k + j];
        out[o] = acc > 0.0 ? (float)acc : 0.0f;              // ReLU
    }
}
