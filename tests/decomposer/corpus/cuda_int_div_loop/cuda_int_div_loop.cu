
extern "C" __global__ void __launch_bounds__(256)
ring_gather(const float* __restrict__ in, float* __restrict__ out, int n, int iters, int ring) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = in[i], acc = 0.0f;
    for (int it = 0; it < iters; ++it) {
        acc += x * (float)((it * 977 + i) % ring);
    }
    out[i] = acc;
}
