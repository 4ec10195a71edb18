
extern "C" __global__ void __launch_bounds__(100)
saxpy100(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // planted: 100 threads = 3 full warps + 4 lanes
    if (i < n) out[i] = a * x[i] + y[i];
}
