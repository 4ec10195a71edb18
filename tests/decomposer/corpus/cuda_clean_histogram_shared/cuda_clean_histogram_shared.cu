
extern "C" __global__ void __launch_bounds__(256)
hist_shared(const int* __restrict__ in, int* __restrict__ hist, int n) {
    __shared__ int local[256];
    local[threadIdx.x] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        atomicAdd(&local[in[i] & 255], 1);  // privatised in shared memory
    }
    __syncthreads();
    atomicAdd(&hist[threadIdx.x], local[threadIdx.x]);  // one global atomic per bin per block
}
