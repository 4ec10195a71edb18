"""CUDA C++ corpus, third part (issue 22, library 60 -> 80): a planted case and a clean twin for each CUDA
pattern added then, read from PTX/SASS/ptxas alone. Same record and capture as cuda_cases.py; "oss" cases
follow the structure of a kernel of an open-source project (origin in `notes`), rewritten here."""

from __future__ import annotations

from tests.decomposer.corpus.cuda_cases import CudaCase, _ew

N = 1 << 24
M = 4096  # GEMM side

DOUBLE_LITERAL_LOOP = r"""
extern "C" __global__ void __launch_bounds__(256)
double_literal(const float* __restrict__ in, float* __restrict__ out, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    for (int it = 0; it < iters; ++it) {
        v = v * 0.9999 + 0.5;  // planted: double literals promote the float math to fp64
    }
    if (i < n) out[i] = v;
}
"""

VOLATILE_LOOP = r"""
extern "C" __global__ void __launch_bounds__(256)
volatile_sum(const float* in, float* __restrict__ out, int n, int reps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const volatile float* vin = in;  // planted: every read goes to memory, nothing cached or hoisted
    float acc = 0.0f;
    for (int r = 0; r < reps; ++r) {
        acc += vin[i] * (float)(r + 1);
    }
    out[i] = acc;
}
"""

FENCE_LOOP = r"""
extern "C" __global__ void __launch_bounds__(256)
fence_steps(const float* __restrict__ in, float* __restrict__ out, int n, int steps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    for (int s = 0; s < steps; ++s) {
        v = v * 1.0001f + 0.5f;
        out[(long long)s * n + i] = v;
        __threadfence();  // planted: a device-wide fence every iteration
    }
}
"""

FENCE_AFTER_LOOP = r"""
extern "C" __global__ void __launch_bounds__(256)
fence_once(const float* __restrict__ in, float* __restrict__ out, int n, int steps) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    for (int s = 0; s < steps; ++s) {
        v = v * 1.0001f + 0.5f;
        out[(long long)s * n + i] = v;
    }
    __threadfence();  // once, after the writes it orders
}
"""

DEVICE_MALLOC = r"""
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
"""

REGISTER_SCRATCH = r"""
extern "C" __global__ void __launch_bounds__(256)
register_scratch(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float tmp[8];  // constant indices after unrolling: registers
#pragma unroll
    for (int k = 0; k < 8; ++k) tmp[k] = in[i] * (float)(k + 1);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; ++k) s += tmp[k];
    out[i] = s;
}
"""

_CALL_LOOP = r"""
__device__ QUAL float step(float v, int k) { return v * 1.0001f + 0.5f / (float)(k + 1); }

extern "C" __global__ void __launch_bounds__(256)
NAME(const float* __restrict__ in, float* __restrict__ out, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    for (int k = 0; k < iters; ++k) v = step(v, k);
    out[i] = v;
}
"""
NOINLINE_CALL_LOOP = _CALL_LOOP.replace("QUAL", "__noinline__").replace("NAME", "call_loop")
INLINE_CALL_LOOP = _CALL_LOOP.replace("QUAL", "__forceinline__").replace("NAME", "inline_loop")

SINF_LOOP = r"""
extern "C" __global__ void __launch_bounds__(256)
sin_sum(const float* __restrict__ in, float* __restrict__ out, int n, int terms) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = in[i], acc = 0.0f;
    for (int k = 1; k <= terms; ++k) acc += SIN(x * (float)k) / (float)k;
    out[i] = acc;
}
"""
PRECISE_SIN_LOOP = SINF_LOOP.replace("SIN", "sinf")  # planted: sinf's Payne-Hanek slow path
FAST_SIN_LOOP = SINF_LOOP.replace("SIN", "__sinf").replace("sin_sum", "fast_sin_sum")

INT64_DIV_LOOP = r"""
extern "C" __global__ void __launch_bounds__(256)
ring64(const float* __restrict__ in, float* __restrict__ out, int n, int iters, int ring) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = in[i], acc = 0.0f;
    for (int k = 0; k < iters; ++k) {
        long long j = (i + (long long)k * 977) % (long long)ring;  // planted: a 64-bit remainder in the loop
        acc += x * (float)j;
    }
    out[i] = acc;
}
"""

CLOCK_SAXPY = r"""
extern "C" __global__ void __launch_bounds__(256)
saxpy_timed(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out, float a,
            int n, long long* __restrict__ timing) {
    long long t0 = clock64();  // planted: profiling left in (one clock read per thread, a smell)
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
    if (threadIdx.x == 0) timing[blockIdx.x] = clock64() - t0;
}
"""

SAXPY_100 = r"""
extern "C" __global__ void __launch_bounds__(100)
saxpy100(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // planted: 100 threads = 3 full warps + 4 lanes
    if (i < n) out[i] = a * x[i] + y[i];
}
"""

# oss: the structure of NVIDIA/cuda-samples Samples/2_Concepts_and_Techniques/reduction/reduction_kernel.cu
# `reduce3` (shared-memory tree, one __syncthreads per halving step), rewritten here
SMEM_TREE_REDUCE = r"""
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
"""

SHUFFLE_REDUCE = r"""
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
"""

# oss: the structure of NVIDIA/cuda-samples Samples/0_Introduction/matrixMul/matrixMul.cu (shared-memory
# tiles, an FMA per element of the tile product: no tensor cores), rewritten here
SGEMM_SMEM = r"""
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
"""

WMMA_GEMM = r"""
#include <mma.h>
#include <cuda_fp16.h>
using namespace nvcuda;
// one warp per 16x16 output tile, fp16 in, fp32 accumulate on the tensor cores
extern "C" __global__ void __launch_bounds__(128)
hgemm_wmma(const half* __restrict__ A, const half* __restrict__ B, float* __restrict__ C, int n) {
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int tiles = n / 16;
    int tm = warp / tiles, tn = warp % tiles;
    if (tm >= tiles) return;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> c;
    wmma::fill_fragment(c, 0.0f);
    for (int k = 0; k < n; k += 16) {
        wmma::load_matrix_sync(a, A + (long long)tm * 16 * n + k, n);
        wmma::load_matrix_sync(b, B + (long long)k * n + tn * 16, n);
        wmma::mma_sync(c, a, b, c);
    }
    wmma::store_matrix_sync(C + (long long)tm * 16 * n + tn * 16, c, n, wmma::mem_row_major);
}
"""

HIST_GLOBAL = r"""
extern "C" __global__ void __launch_bounds__(256)
hist_global(const int* __restrict__ in, int* __restrict__ hist, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        atomicAdd(&hist[in[i] & 255], 1);  // planted: every element an atomic on 256 global bins
    }
}
"""

HIST_SHARED = r"""
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
"""

TRAILING_BARRIER = r"""
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
"""

PRINTF_SAXPY = r"""
extern "C" __global__ void __launch_bounds__(256)
saxpy_printf(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a * x[i] + y[i];
        if (out[i] > 1e30f) printf("overflow at %d\n", i);  // planted: debug printf left in
    }
}
"""

# the common float atomicMax through an atomicCAS loop (widespread in open-source CUDA code)
CAS_MAX = r"""
__device__ float atomic_max_float(float* addr, float v) {
    int* a = (int*)addr;
    int old = *a, assumed;
    do {
        assumed = old;
        old = atomicCAS(a, assumed, __float_as_int(fmaxf(v, __int_as_float(assumed))));
    } while (assumed != old);  // planted: retried until this lane wins
    return __int_as_float(old);
}

extern "C" __global__ void __launch_bounds__(256)
block_max_cas(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomic_max_float(&out[i & 1023], fabsf(in[i]));
}
"""

INT_MAX = r"""
extern "C" __global__ void __launch_bounds__(256)
block_max_int(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    // non-negative floats order as their int bits: one native atomicMax, no retry loop
    if (i < n) atomicMax((int*)&out[i & 1023], __float_as_int(fabsf(in[i])));
}
"""

CUDA_WIDE_CASES: tuple[CudaCase, ...] = (
    CudaCase(
        "cuda_atomic_cas_max",
        "block_max_cas",
        CAS_MAX,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", 1024), ("int", N)),
        flops=float(N),
        bytes_moved=_ew(N, 1),
        expect="atomic_cas_retry_loop",
        kind="planted",
    ),
    CudaCase(
        "cuda_clean_atomic_int_max",
        "block_max_int",
        INT_MAX,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", 1024), ("int", N)),
        flops=float(N),
        bytes_moved=_ew(N, 1),
        kind="clean",
    ),
    CudaCase(
        "cuda_printf_left_in",
        "saxpy_printf",
        PRINTF_SAXPY,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("in", N), ("out", N), ("float", 2.0), ("int", N)),
        flops=2.0 * N,
        bytes_moved=_ew(N, 3),
        expect="debug_print_or_assert",
        kind="planted",
    ),
    CudaCase(
        "cuda_double_literal_loop",
        "double_literal",
        DOUBLE_LITERAL_LOOP,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N), ("int", 64)),
        flops=2.0 * 64 * N,
        bytes_moved=_ew(N, 2),
        expect="float_promoted_to_double",
        kind="planted",
    ),
    CudaCase(
        "cuda_volatile_loop",
        "volatile_sum",
        VOLATILE_LOOP,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N), ("int", 32)),
        flops=2.0 * 32 * N,
        bytes_moved=_ew(N, 2),
        expect="volatile_access_in_loop",
        kind="planted",
    ),
    CudaCase(
        "cuda_fence_in_loop",
        "fence_steps",
        FENCE_LOOP,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", 8 * N), ("int", N), ("int", 8)),
        flops=2.0 * 8 * N,
        bytes_moved=_ew(N, 9),
        expect="memory_fence_in_loop",
        kind="planted",
    ),
    CudaCase(
        "cuda_clean_fence_after_loop",
        "fence_once",
        FENCE_AFTER_LOOP,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", 8 * N), ("int", N), ("int", 8)),
        flops=2.0 * 8 * N,
        bytes_moved=_ew(N, 9),
        kind="clean",
    ),
    CudaCase(
        "cuda_device_malloc",
        "malloc_scratch",
        DEVICE_MALLOC,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N)),
        flops=16.0 * N,
        bytes_moved=_ew(N, 2),
        expect="device_heap_allocation",
        kind="planted",
    ),
    CudaCase(
        "cuda_clean_register_scratch",
        "register_scratch",
        REGISTER_SCRATCH,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N)),
        flops=16.0 * N,
        bytes_moved=_ew(N, 2),
        kind="clean",
    ),
    CudaCase(
        "cuda_noinline_call_loop",
        "call_loop",
        NOINLINE_CALL_LOOP,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N), ("int", 64)),
        flops=3.0 * 64 * N,
        bytes_moved=_ew(N, 2),
        expect="noinline_call_in_loop",
        kind="planted",
    ),
    CudaCase(
        "cuda_clean_inline_call_loop",
        "inline_loop",
        INLINE_CALL_LOOP,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N), ("int", 64)),
        flops=3.0 * 64 * N,
        bytes_moved=_ew(N, 2),
        kind="clean",
    ),
    CudaCase(
        "cuda_precise_sin_loop",
        "sin_sum",
        PRECISE_SIN_LOOP,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N), ("int", 16)),
        flops=4.0 * 16 * N,
        bytes_moved=_ew(N, 2),
        expect="trig_slow_range_reduction",
        kind="planted",
    ),
    CudaCase(
        "cuda_clean_fast_sin_loop",
        "fast_sin_sum",
        FAST_SIN_LOOP,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N), ("int", 16)),
        flops=4.0 * 16 * N,
        bytes_moved=_ew(N, 2),
        kind="clean",
    ),
    CudaCase(
        "cuda_int64_div_loop",
        "ring64",
        INT64_DIV_LOOP,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N), ("int", 32), ("int", 4093)),
        flops=2.0 * 32 * N,
        bytes_moved=_ew(N, 2),
        expect="int64_division",
        kind="planted",
    ),
    CudaCase(
        "cuda_clock_saxpy",
        "saxpy_timed",
        CLOCK_SAXPY,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("in", N), ("out", N), ("float", 2.0), ("int", N), ("out", 2 * (N // 256))),
        flops=2.0 * N,
        bytes_moved=_ew(N, 3),
        expect="timing_instrumentation_left_in",
        kind="no_cost",
    ),
    CudaCase(
        "cuda_saxpy_block100",
        "saxpy100",
        SAXPY_100,
        grid=((N + 99) // 100,),
        block=(100,),
        args=(("in", N), ("in", N), ("out", N), ("float", 2.0), ("int", N)),
        flops=2.0 * N,
        bytes_moved=_ew(N, 3),
        expect="block_not_multiple_of_warp",
        kind="planted",
    ),
    CudaCase(
        "cuda_oss_samples_reduce_tree",
        "reduce_tree",
        SMEM_TREE_REDUCE,
        grid=(N // 512,),
        block=(256,),
        args=(("in", N), ("out", N // 512), ("int", N)),
        flops=float(N),
        bytes_moved=_ew(N, 1),
        expect="shared_memory_tree_reduction",
        origin="NVIDIA/cuda-samples Samples/2_Concepts_and_Techniques/reduction/reduction_kernel.cu (reduce3)",
        kind="oss",
    ),
    CudaCase(
        "cuda_clean_shuffle_reduce",
        "reduce_shfl",
        SHUFFLE_REDUCE,
        grid=(N // 512,),
        block=(256,),
        args=(("in", N), ("out", N // 512), ("int", N)),
        flops=float(N),
        bytes_moved=_ew(N, 1),
        kind="clean",
    ),
    CudaCase(
        "cuda_oss_samples_matrixmul",
        "sgemm_tiled",
        SGEMM_SMEM,
        grid=(M // 32, M // 32),
        block=(1024,),
        args=(("in", M * M), ("in", M * M), ("out", M * M), ("int", M)),
        flops=2.0 * M**3,
        bytes_moved=_ew(M * M, 3),
        expect="matmul_on_cuda_cores",
        origin="NVIDIA/cuda-samples Samples/0_Introduction/matrixMul/matrixMul.cu",
        kind="oss",
    ),
    CudaCase(
        "cuda_clean_wmma_gemm",
        "hgemm_wmma",
        WMMA_GEMM,
        grid=((M // 16) ** 2 // 4,),
        block=(128,),
        args=(("in", M * M // 2), ("in", M * M // 2), ("out", M * M), ("int", M)),
        flops=2.0 * M**3,
        bytes_moved=2.0 * M * M * 2 + 4.0 * M * M,
        notes="fp16 operands: the bench's fp32 buffers are read as half (timing only)",
        kind="clean",
    ),
    CudaCase(
        "cuda_histogram_global",
        "hist_global",
        HIST_GLOBAL,
        grid=(1024,),
        block=(256,),
        args=(("in_i32", N, 1 << 20), ("out", 256), ("int", N)),
        flops=0.0,
        bytes_moved=_ew(N, 1),
        expect="global_atomics_not_privatised",
        kind="planted",
    ),
    CudaCase(
        "cuda_clean_histogram_shared",
        "hist_shared",
        HIST_SHARED,
        grid=(1024,),
        block=(256,),
        args=(("in_i32", N, 1 << 20), ("out", 256), ("int", N)),
        flops=0.0,
        bytes_moved=_ew(N, 1),
        kind="clean",
    ),
    CudaCase(
        "cuda_trailing_barrier",
        "neighbour_diff",
        TRAILING_BARRIER,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N)),
        flops=float(N),
        bytes_moved=_ew(N, 2),
        expect="barrier_after_last_shared_use",
        kind="no_cost",
    ),
)
