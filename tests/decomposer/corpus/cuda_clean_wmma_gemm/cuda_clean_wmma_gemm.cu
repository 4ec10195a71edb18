
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
// one warp per 16x16 output tile, fp16 in, fp32 accumulate on the tensor cores
extern "C" __global__ void __launch_bounds__(128)
hgemm_wmma(const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C, int n) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int tiles = n / 16;
    int tm = warp / tiles, tn = warp % tiles;
    if (tm >= tiles) return;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    for (int k = 0; k < n; k += 16) {
        wmma::load_matrix_sync(a, A + (long long)tm * 16 * n + k, n);
        wmma::load_matrix_sync(b, B + (long long)k * n + tn * 16, n);
        wmma::mma_sync(c, a, b, c);
    }
    wmma::store_matrix_sync(C + (long long)tm * 16 * n + tn * 16, c, n, wmma::mem_row_major);
}
