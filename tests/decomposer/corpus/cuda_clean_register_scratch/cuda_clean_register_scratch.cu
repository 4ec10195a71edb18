
extern "C" __global__ void __launch_bounds__(256)
register_scratch(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float tmp[8];  // constant indices after unrolling: registers
#pragma unroll
    for (int k = 0; k < 8; ++k) tmp[k] = in[i] * (float)(k + 1);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; ++k) s += tmp[k];
    out[i] = s;
}
