
extern "C" __global__ void __launch_bounds__(256)
ring64(const float* __restrict__ in, float* __restrict__ out, int n, int iters, int ring) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = in[i], acc = 0.0f;
    for (int k = 0; k < iters; ++k) {
        long long j = (i + (long long)k * 977) % (long long)ring;  // planted: a 64-bit remainder in the loop
        acc += x * (float)j;
    }
    out[i] = acc;
}
