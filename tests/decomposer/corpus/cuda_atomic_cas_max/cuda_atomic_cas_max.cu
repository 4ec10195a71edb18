
__device__ float atomic_max_float(float* addr, float v) {
    int* a = (int*)addr;
    int old = *a, assumed;
    do {
        assumed = old;
        old = atomicCAS(a, assumed, __float_as_int(fmaxf(v, __int_as_float(assumed))));
    } while (assumed != old);  // planted: retried until this lane wins
    return __int_as_float(old);
}

extern "C" __global__ void __launch_bounds__(256)
block_max_cas(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomic_max_float(&out[i & 1023], fabsf(in[i]));
}
