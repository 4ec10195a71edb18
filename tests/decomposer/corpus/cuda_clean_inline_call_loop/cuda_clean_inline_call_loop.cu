
__device__ __forceinline__ float step(float v, int k) { return v * 1.0001f + 0.5f / (float)(k + 1); }

extern "C" __global__ void __launch_bounds__(256)
inline_loop(const float* __restrict__ in, float* __restrict__ out, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    for (int k = 0; k < iters; ++k) v = step(v, k);
    out[i] = v;
}
