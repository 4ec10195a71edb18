
extern "C" __global__ void scale_one_warp(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = in[i];
        #pragma unroll 4
        for (int k = 0; k < 64; ++k) v = v * 1.0001f + 0.5f;
        out[i] = v;
    }
}
