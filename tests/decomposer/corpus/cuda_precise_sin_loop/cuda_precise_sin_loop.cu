
extern "C" __global__ void __launch_bounds__(256)
sin_sum(const float* __restrict__ in, float* __restrict__ out, int n, int terms) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = in[i], acc = 0.0f;
    for (int k = 1; k <= terms; ++k) acc += sinf(x * (float)k) / (float)k;
    out[i] = acc;
}
