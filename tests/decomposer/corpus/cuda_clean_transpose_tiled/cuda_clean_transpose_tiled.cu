
// 32x32 tile through shared memory, padded to 33 columns: coalesced both ways, no bank conflicts
extern "C" __global__ void __launch_bounds__(256)
transpose_tiled(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[32][33];
    int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    int c = blockIdx.x * 32 + tx;
    int r0 = blockIdx.y * 32;
    for (int j = ty; j < 32; j += 8) {
        tile[j][tx] = in[(long long)(r0 + j) * cols + c];
    }
    __syncthreads();
    int oc = r0 + tx;
    int orow0 = blockIdx.x * 32;
    for (int j = ty; j < 32; j += 8) {
        out[(long long)(orow0 + j) * rows + oc] = tile[tx][j];
    }
}
