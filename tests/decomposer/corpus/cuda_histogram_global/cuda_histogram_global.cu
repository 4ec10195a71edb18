
extern "C" __global__ void __launch_bounds__(256)
hist_global(const int* __restrict__ in, int* __restrict__ hist, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        atomicAdd(&hist[in[i] & 255], 1);  // planted: every element an atomic on 256 global bins
    }
}
