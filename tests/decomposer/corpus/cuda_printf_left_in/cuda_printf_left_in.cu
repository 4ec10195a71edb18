
extern "C" __global__ void __launch_bounds__(256)
saxpy_printf(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a * x[i] + y[i];
        if (out[i] > 1e30f) printf("overflow at %d\n", i);  // planted: debug printf left in
    }
}
