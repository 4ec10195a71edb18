
extern "C" __global__ void __launch_bounds__(256)
warp_parity(const float* __restrict__ in, float* __restrict__ out, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    for (int it = 0; it < iters; ++it) {
        if ((threadIdx.x >> 5) & 1) {
            #pragma unroll
            for (int k = 0; k < 32; ++k) v = v * 1.0001f + 0.5f;
        } else {
            #pragma unroll
            for (int k = 0; k < 32; ++k) v = v * 0.9999f - 0.25f;
        }
    }
    out[i] = v;
}
