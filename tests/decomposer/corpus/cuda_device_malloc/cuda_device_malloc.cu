
extern "C" __global__ void __launch_bounds__(256)
malloc_scratch(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float* tmp = (float*)malloc(8 * sizeof(float));  // planted: a device-heap allocation per thread
    if (tmp == nullptr) return;
    for (int k = 0; k < 8; ++k) tmp[k] = in[i] * (float)(k + 1);
    float s = 0.0f;
    for (int k = 0; k < 8; ++k) s += tmp[k];
    free(tmp);
    out[i] = s;
}
