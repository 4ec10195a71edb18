
extern "C" __global__ void __launch_bounds__(256)
reduce_shfl(const float* __restrict__ in, float* __restrict__ out, int n) {
    __shared__ float warp_sums[8];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * (blockDim.x * 2) + threadIdx.x;
    float s = i < n ? in[i] : 0.0f;
    if (i + blockDim.x < n) s += in[i + blockDim.x];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if ((tid & 31) == 0) warp_sums[tid >> 5] = s;
    __syncthreads();
    if (tid < 32) {
        s = tid < 8 ? warp_sums[tid] : 0.0f;
        for (int o = 4; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
        if (tid == 0) out[blockIdx.x] = s;
    }
}
