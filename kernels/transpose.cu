// Transpose of an fp16 matrix, Y[c, r] = X[r, c], through 32 x 32 tiles in
// shared memory (padded against bank conflicts); 32 x 8 threads per block.
// Its time is the real cost of a layout change between two layers.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
    transpose(const half_t* __restrict__ X, half_t* __restrict__ Y, int rows, int cols) {
    __shared__ half_t tile[32][34];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = X[(size_t)(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
#pragma unroll
    for (int j = 0; j < 32; j += 8)
        if (x < rows && y + j < cols) Y[(size_t)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
