// The kernels of the course's reference material (../shared/seeds), written out so that NVRTC
// compiles each one on its own: the reports show signatures and fragments, these complete them
// in the same form (the same loops, types, shared arrays and intrinsics), for the PTX engine's
// test that every instruction NVRTC emits for them runs.
#include <cuda_fp16.h>

#define TILE_WIDTH 16
#define BLOCK_SIZE 16
#define BN_BLOCK 256

// Lab report (001): conv 5x5 stride 5 + ReLU, double, grid-stride loop
extern "C" __global__ void conv2d_relu(const double *image, const double *filters, double *output)
{
    for (int output_i = blockIdx.x * blockDim.x + threadIdx.x; output_i < 4000;
         output_i += gridDim.x * blockDim.x) {
        const int filter_num = output_i / 400;
        const double *filter = filters + filter_num * 5 * 5;
        const int filter_output_i = output_i % 400;
        const int image_r = (filter_output_i / 20) * 5;
        const int image_c = (filter_output_i % 20) * 5;
        double sum = 0;
        for (int r = 0; r < 5; r++)
            for (int c = 0; c < 5; c++)
                sum += filter[r * 5 + c] * image[(image_r + r) * 100 + image_c + c];
        output[output_i] = sum > 0 ? sum : 0;
    }
}

// Lab report (001): dense layer as block-wise shared-memory reductions of double segments
extern "C" __global__ void flattened_to_dense(const double *conv2d_output, const double *weights,
                                              double *block_outputs)
{
    __shared__ double x[4000];
    const int output_neuron = blockIdx.y;
    double total = 0;
    for (int segment_start = blockIdx.x * blockDim.x; segment_start < 4000;
         segment_start += gridDim.x * blockDim.x) {
        const int segment_len = min((int)blockDim.x, 4000 - segment_start);
        if (threadIdx.x < segment_len)
            x[threadIdx.x] = weights[output_neuron * 4000 + segment_start + threadIdx.x]
                             * conv2d_output[segment_start + threadIdx.x];
        __syncthreads();
        int right = segment_len - 1;
        while (0 < right) {
            const int mid = right / 2;
            if (((right + 1) % 2) == 0) {
                if (threadIdx.x <= mid)
                    x[threadIdx.x] += x[right - threadIdx.x];
            } else if (threadIdx.x < mid) {
                x[threadIdx.x] += x[right - threadIdx.x];
            }
            __syncthreads();
            right = mid;
        }
        total += x[0];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        block_outputs[output_neuron * gridDim.x + blockIdx.x] = total;
}

// Graduation report (000): batch-norm mean, a shared reduction of 2 * BLOCK elements
extern "C" __global__ void BN_Kernel_Mean_Reduction(float *input, int H1, int W1, int D1,
                                                    float *Mean, int W2)
{
    __shared__ float partialSum[2 * BN_BLOCK];
    int tx = threadIdx.x, bx = blockDim.x;
    int start = 2 * blockIdx.x * blockDim.x;
    int start_yDir = blockIdx.y * W1;
    partialSum[tx] = (start + tx < W1 && start_yDir < H1 * W1) ? input[start + tx + start_yDir] : 0.0f;
    partialSum[bx + tx] = (tx + bx + start < W1 && start_yDir < H1 * W1)
                              ? input[start + bx + tx + start_yDir] : 0.0f;
    for (int stride = blockDim.x; stride > 0; stride = stride / 2) {
        __syncthreads();
        if (tx < stride)
            partialSum[tx] += partialSum[tx + stride];
    }
    if (tx == 0)
        Mean[blockIdx.x + blockIdx.y * W2] = partialSum[0] / W1;
}

// Graduation report (000): input unrolling
extern "C" __global__ void unroll_input(const float *Input, float *X_unrolled, int H1, int W1, int D1,
                                        int Filter_Height, int Output_Height, int Output_Width,
                                        int stride)
{
    int col_no_strided = blockIdx.x * blockDim.x + threadIdx.x;
    int row_no_strided = blockIdx.y * blockDim.y + threadIdx.y;
    int depth = blockIdx.z;
    int W2 = Output_Height * Output_Width;
    if (row_no_strided < Output_Height && col_no_strided < Output_Width && depth < D1) {
        int row = row_no_strided * stride, col = col_no_strided * stride;
        for (int local_row = 0; local_row < Filter_Height; local_row++)
            for (int local_col = 0; local_col < Filter_Height; local_col++)
                X_unrolled[(depth * Filter_Height * Filter_Height + local_row * Filter_Height + local_col) * W2
                           + row_no_strided * Output_Width + col_no_strided] =
                    Input[(row + local_row) * W1 + (col + local_col) + depth * H1 * W1];
    }
}

// Blog post (002): baseline conv forward
extern "C" __global__ void conv_forward_kernel(float *output, const float *input, const float *mask,
    const int B, const int M, const int C, const int H, const int W, const int K, const int S)
{
    const int H_out = (H - K) / S + 1;
    const int W_out = (W - K) / S + 1;
#define out_4d(i3, i2, i1, i0) output[(i3) * (M * H_out * W_out) + (i2) * (H_out * W_out) + (i1) * (W_out) + i0]
#define in_4d(i3, i2, i1, i0) input[(i3) * (C * H * W) + (i2) * (H * W) + (i1) * (W) + i0]
#define mask_4d(i3, i2, i1, i0) mask[(i3) * (C * K * K) + (i2) * (K * K) + (i1) * (K) + i0]
    int b = blockIdx.x % B, m = blockIdx.y % M;
    int w = (blockIdx.x / B) * blockDim.x + threadIdx.x;
    int h = (blockIdx.y / M) * blockDim.y + threadIdx.y;
    float sum = 0.0f;
    for (int c = 0; c < C; c++)
        for (int p = 0; p < K; p++)
            for (int q = 0; q < K; q++)
                if (h * S + p < H && w * S + q < W)
                    sum += in_4d(b, c, h * S + p, w * S + q) * mask_4d(m, c, p, q);
    if (h < H_out && w < W_out)
        out_4d(b, m, h, w) = sum;
#undef out_4d
#undef in_4d
#undef mask_4d
}

// Blog post (002): im2col of input and mask
extern "C" __global__ void im2col_kernel(float* output, const float *input, float* mask_o, const float* mask_i,
    const int B, const int M, const int C, const int H, const int W, const int K, const int S)
{
    const int H_out = (H - K) / S + 1;
    const int W_out = (W - K) / S + 1;
    int b = (blockIdx.x * BLOCK_SIZE + threadIdx.x) / (H_out * W_out);
    int h = ((blockIdx.x * BLOCK_SIZE + threadIdx.x) % (W_out * H_out)) / W_out;
    int w = ((blockIdx.x * BLOCK_SIZE + threadIdx.x) % (W_out * H_out)) % W_out;
    int r = blockIdx.y * BLOCK_SIZE + threadIdx.y;
    int m = r / (K * K * C), c = (r % (K * K * C)) / (K * K);
    int p = (r % (K * K * C)) % (K * K) / K, q = (r % (K * K * C)) % (K * K) % K;
    if (b < B && h < H_out && w < W_out && c < C && h * S + p < H && w * S + q < W)
        output[((b * H_out + h) * W_out + w) * C * K * K + (c * K + p) * K + q] =
            input[((b * C + c) * H + h * S + p) * W + w * S + q];
    if (m < M && c < C)
        mask_o[((c * K + p) * K + q) * M + m] = mask_i[((m * C + c) * K + p) * K + q];
}

// Blog post (002): FP16 conversion and an FP16 multiply-accumulate
extern "C" __global__ void float_to_half(half *output, const float *input, const int size)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int x = i * blockDim.y * gridDim.y + j;
    if (x < size)
        output[x] = __float2half(input[x]);
}

extern "C" __global__ void half_dot(const half *a, const half *b, float *out, int n, int K)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        half acc = __float2half(0.0f);
        for (int k = 0; k < K; k++)
            acc = __hadd(acc, __hmul(a[i * K + k], b[k]));
        out[i] = __half2float(acc);
    }
}

// Lecture notes (004): the basic conv layer forward kernel (its indexing written out)
extern "C" __global__ void ConvLayerForward_Basic_Kernel(int C, int W_grid, int K, float* X, float* W, float* Y)
{
    int H_in = W_grid * TILE_WIDTH + K - 1, W_out = W_grid * TILE_WIDTH;
    int m = blockIdx.x;
    int h = (blockIdx.y / W_grid) * TILE_WIDTH + threadIdx.y;
    int w = (blockIdx.y % W_grid) * TILE_WIDTH + threadIdx.x;
    float acc = 0.;
    for (int c = 0; c < C; c++)
        for (int p = 0; p < K; p++)
            for (int q = 0; q < K; q++)
                acc += X[(c * H_in + h + p) * H_in + w + q] * W[((m * C + c) * K + p) * K + q];
    Y[(m * W_out + h) * W_out + w] = acc;
}
