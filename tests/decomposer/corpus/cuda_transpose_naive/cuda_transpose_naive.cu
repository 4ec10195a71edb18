
extern "C" __global__ void __launch_bounds__(256)
transpose_naive(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    int c = blockIdx.x * 32 + (threadIdx.x & 31);
    int r = blockIdx.y * 8 + (threadIdx.x >> 5);
    if (r < rows && c < cols) {
        out[(long long)c * rows + r] = in[(long long)r * cols + c];  // writes stride `rows`
    }
}
