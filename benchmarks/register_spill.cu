// Register spills, shown by the compiler's resource report (chapter 3, memory hierarchy):
//   nvcc -arch=sm_90 -cubin -Xptxas -v [-maxrregcount=24] benchmarks/register_spill.cu
// Output recorded in benchmarks/results/register_spill_ptxas.txt.
extern "C" __global__ void register_array(const float* __restrict__ x, float* __restrict__ out)
{
    float a[32];
#pragma unroll
    for (int k = 0; k < 32; ++k)
        a[k] = x[k * blockDim.x + threadIdx.x];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 32; ++k)
        s += a[k] * a[31 - k] + a[(k + 7) & 31];
    out[threadIdx.x] = s;
}
