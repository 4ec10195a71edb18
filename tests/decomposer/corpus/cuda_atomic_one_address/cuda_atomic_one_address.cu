
extern "C" __global__ void __launch_bounds__(256)
atomic_total(const float* __restrict__ in, float* __restrict__ total, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(total, in[i]);  // every thread of every block hits one address
    }
}
