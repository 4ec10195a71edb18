
extern "C" __global__ void __launch_bounds__(256)
volatile_sum(const float* in, float* __restrict__ out, int n, int reps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const volatile float* vin = in;  // planted: every read goes to memory, nothing cached or hoisted
    float acc = 0.0f;
    for (int r = 0; r < reps; ++r) {
        acc += vin[i] * (float)(r + 1);
    }
    out[i] = acc;
}
