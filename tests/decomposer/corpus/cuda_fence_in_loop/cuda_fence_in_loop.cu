
extern "C" __global__ void __launch_bounds__(256)
fence_steps(const float* __restrict__ in, float* __restrict__ out, int n, int steps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    for (int s = 0; s < steps; ++s) {
        v = v * 1.0001f + 0.5f;
        out[(long long)s * n + i] = v;
        __threadfence();  // planted: a device-wide fence every iteration
    }
}
