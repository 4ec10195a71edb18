
extern "C" __global__ void __launch_bounds__(256)
precise_div(const float* __restrict__ in, float* __restrict__ out, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    for (int it = 0; it < iters; ++it) {
        v = v / (1.0f + v * v);
    }
    out[i] = v;
}
