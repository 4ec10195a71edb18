
// 64 live accumulators per thread, but __launch_bounds__(256, 8) caps registers at 32: ptxas must spill
extern "C" __global__ void __launch_bounds__(256, 8)
spill_poly(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = in[i];
    float acc[64];
#pragma unroll
    for (int j = 0; j < 64; ++j) acc[j] = x * (j + 1);
#pragma unroll
    for (int it = 0; it < 8; ++it) {
#pragma unroll
        for (int j = 0; j < 64; ++j) acc[j] = acc[j] * acc[(j + 7) & 63] + 0.5f;
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 64; ++j) s += acc[j];
    out[i] = s;
}
