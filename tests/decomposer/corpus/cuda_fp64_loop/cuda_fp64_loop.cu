
extern "C" __global__ void __launch_bounds__(256)
fp64_poly(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double x = in[i];
    double acc = 0.0;
    for (int k = 0; k < 64; ++k) {
        acc = acc * x + 1.0 / (k + 1);  // fp64 FMA and divide in the hot loop
    }
    out[i] = (float)acc;
}
