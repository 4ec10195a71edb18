
extern "C" __global__ void __launch_bounds__(256)
neighbour_diff(const float* __restrict__ in, float* __restrict__ out, int n) {
    __shared__ float tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    float d = tile[threadIdx.x] - tile[(threadIdx.x + 1) & 255];
    __syncthreads();  // planted: nothing touches shared memory after this barrier
    if (i < n) out[i] = d;
}
