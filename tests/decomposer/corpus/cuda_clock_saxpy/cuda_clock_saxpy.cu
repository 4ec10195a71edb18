
extern "C" __global__ void __launch_bounds__(256)
saxpy_timed(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out, float a,
            int n, long long* __restrict__ timing) {
    long long t0 = clock64();  // planted: profiling left in (one clock read per thread, a smell)
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
    if (threadIdx.x == 0) timing[blockIdx.x] = clock64() - t0;
}
