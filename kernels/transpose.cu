// Transpose of an fp16 matrix, Y[c, r] = X[r, c] (common.cuh's
// transpose_tiles; 32 x 8 threads per block, one matrix). Its time is the
// real cost of a layout change between two layers.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
    transpose(const half_t* __restrict__ X, half_t* __restrict__ Y, int rows, int cols) {
    transpose_tiles(X, Y, rows, cols);
}
