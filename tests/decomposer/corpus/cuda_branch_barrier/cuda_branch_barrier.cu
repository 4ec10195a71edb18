
// the barrier sits under a branch on threadIdx: warps may take different paths around __syncthreads
extern "C" __global__ void __launch_bounds__(256)
branch_barrier(const float* __restrict__ in, float* __restrict__ out, int n, int active) {
    __shared__ float buf[256];
    int t = threadIdx.x;
    long long base = (long long)blockIdx.x * 256;
    float v = in[base + t];
    for (int k = 0; k < 8; ++k) {
        if (t < active) {
            buf[t] = v;
            __syncthreads();
            v = 0.5f * (v + buf[255 - t]);
            __syncthreads();
        }
    }
    out[base + t] = v;
}
