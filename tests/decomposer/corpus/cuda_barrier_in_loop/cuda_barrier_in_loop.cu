
extern "C" __global__ void __launch_bounds__(256)
barrier_poly(const float* __restrict__ in, float* __restrict__ out, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    for (int it = 0; it < iters; ++it) {
        v = v * 1.0001f + 0.5f;
        __syncthreads();
    }
    if (i < n) out[i] = v;
}
