
#define T 32
extern "C" __global__ void __launch_bounds__(1024)
sgemm_tiled(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n) {
    __shared__ float As[T][T];
    __shared__ float Bs[T][T];
    int tx = threadIdx.x % T, ty = threadIdx.x / T;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < n; k0 += T) {
        As[ty][tx] = A[(long long)row * n + k0 + tx];
        Bs[ty][tx] = B[(long long)(k0 + ty) * n + col];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < T; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[(long long)row * n + col] = acc;
}
