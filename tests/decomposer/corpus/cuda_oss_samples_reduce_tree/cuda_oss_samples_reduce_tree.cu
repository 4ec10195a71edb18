
extern "C" __global__ void __launch_bounds__(256)
reduce_tree(const float* __restrict__ in, float* __restrict__ out, int n) {
    __shared__ float sdata[256];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    float s = i < n ? in[i] : 0.0f;
    if (i + blockDim.x < n) s += in[i + blockDim.x];
    sdata[tid] = s;
    __syncthreads();
    for (unsigned step = blockDim.x / 2; step > 0; step >>= 1) {
        if (tid < step) sdata[tid] = s = s + sdata[tid + step];
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = s;
}
