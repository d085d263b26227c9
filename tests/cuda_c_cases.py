"""CUDA C kernels that several test files run on the PTX engine."""

#: a block sum with a divergent loop and barriers: every tab has something to show
BLOCK_SUM = r"""
extern "C" __global__ void block_sum(const int* x, int* partial, int n) {
    __shared__ int s[128];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    s[t] = i < n ? x[i] : 0;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride) s[t] += s[t + stride];
        __syncthreads();
    }
    if (t == 0) partial[blockIdx.x] = s[0];
}
"""
