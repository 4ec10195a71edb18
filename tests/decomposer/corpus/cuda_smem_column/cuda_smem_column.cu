
// 32x32 tile read by columns: tile[tx][k] puts the 32 lanes of a warp 128 B apart, one bank
extern "C" __global__ void __launch_bounds__(1024)
smem_column_sum(const float* __restrict__ in, float* __restrict__ out) {
    __shared__ float tile[32][32];
    int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    long long base = (long long)blockIdx.x * 1024;
    tile[ty][tx] = in[base + ty * 32 + tx];
    __syncthreads();
    float s = 0.0f;
    for (int k = 0; k < 32; ++k) {
        s += tile[tx][(k + ty) & 31];
    }
    out[base + ty * 32 + tx] = s;
}
