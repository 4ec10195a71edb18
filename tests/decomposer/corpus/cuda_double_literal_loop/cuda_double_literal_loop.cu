
extern "C" __global__ void __launch_bounds__(256)
double_literal(const float* __restrict__ in, float* __restrict__ out, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    for (int it = 0; it < iters; ++it) {
        v = v * 0.9999 + 0.5;  // planted: double literals promote the float math to fp64
    }
    if (i < n) out[i] = v;
}
