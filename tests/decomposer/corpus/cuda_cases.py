"""Planted-bottleneck corpus, CUDA C++ half: small kernels, each correct, each with ONE planted bottleneck.

Like cases.py: `expect` is the pattern id that must rank first, None for a clean kernel (no high-severity
finding allowed). `capture_cuda_corpus.py` compiles each with nvcc for sm_90 (-lineinfo) and commits the
source, PTX, SASS (nvdisasm --print-line-info) and ptxas -v text under corpus/<name>/. There is no TTGIR:
the decomposer reads these from PTX/SASS/ptxas alone (services/decomposer/native.py).

`args` is the launch description the GPU benchmark uses (benchmarks/bench_decomposer_ncu.py):
("in", elements) a random fp32 input, ("in_i32", elements, high) random ints in [0, high),
("out", elements) a zeroed fp32 output, ("int", value) an int scalar, ("float", value) an fp32 scalar. Kernels carry
`__launch_bounds__(BLOCK)` (PTX `.maxntid`) except where a case plants its absence: then the occupancy model
reads the launch's block (meta.json "block", TaskFacts.block), as `kpilot analyze` does from launch_grid.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class CudaCase:
    name: str
    kernel: str  # extern "C" name
    source: str
    grid: tuple[int, ...]
    block: tuple[int, ...]
    args: tuple[tuple, ...]
    flops: float = 0.0
    bytes_moved: float = 0.0
    expect: str | None = None
    nvcc_flags: tuple[str, ...] = ()
    kernels_in_task: int = 1
    notes: str = field(default="")
    kind: str = "seed"  # as Case.kind (cases_more.py): seed / planted / clean / oss / no_cost
    origin: str = ""  # the open-source kernel an "oss" case follows


N = 1 << 24  # 16.7 M fp32: 64 MB per tensor, beyond the 60 MB L2
R = C = 8192  # transposes: 8192 x 8192 fp32 = 256 MB

TRANSPOSE_NAIVE = r"""
extern "C" __global__ void __launch_bounds__(256)
transpose_naive(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    int c = blockIdx.x * 32 + (threadIdx.x & 31);
    int r = blockIdx.y * 8 + (threadIdx.x >> 5);
    if (r < rows && c < cols) {
        out[(long long)c * rows + r] = in[(long long)r * cols + c];  // writes stride `rows`
    }
}
"""

STRIDED_READ = r"""
extern "C" __global__ void __launch_bounds__(256)
strided_read(const float* __restrict__ in, float* __restrict__ out, int n, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = in[(long long)i * stride] * 2.0f;  // each lane reads its own sector
    }
}
"""

SMEM_COLUMN = r"""
// 32x32 tile read by columns: tile[tx][k] puts the 32 lanes of a warp 128 B apart, one bank
extern "C" __global__ void __launch_bounds__(1024)
smem_column_sum(const float* __restrict__ in, float* __restrict__ out) {
    __shared__ float tile[32][32];
    int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    long long base = (long long)blockIdx.x * 1024;
    tile[ty][tx] = in[base + ty * 32 + tx];
    __syncthreads();
    float s = 0.0f;
    for (int k = 0; k < 32; ++k) {
        s += tile[tx][(k + ty) & 31];
    }
    out[base + ty * 32 + tx] = s;
}
"""

SPILLS = r"""
// 64 live accumulators per thread, but __launch_bounds__(256, 8) caps registers at 32: ptxas must spill
extern "C" __global__ void __launch_bounds__(256, 8)
spill_poly(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = in[i];
    float acc[64];
#pragma unroll
    for (int j = 0; j < 64; ++j) acc[j] = x * (j + 1);
#pragma unroll
    for (int it = 0; it < 8; ++it) {
#pragma unroll
        for (int j = 0; j < 64; ++j) acc[j] = acc[j] * acc[(j + 7) & 63] + 0.5f;
    }
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 64; ++j) s += acc[j];
    out[i] = s;
}
"""

LOCAL_ARRAY = r"""
// a per-thread table indexed by loaded data: dynamic indexing keeps it in local memory
extern "C" __global__ void __launch_bounds__(256)
local_lookup(const int* __restrict__ idx, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float table[32];
#pragma unroll
    for (int j = 0; j < 32; ++j) table[j] = (float)(i + j);
    float s = 0.0f;
    for (int k = 0; k < 16; ++k) {
        s += table[idx[(long long)k * n + i] & 31];
    }
    out[i] = s;
}
"""

FP64_LOOP = r"""
extern "C" __global__ void __launch_bounds__(256)
fp64_poly(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double x = in[i];
    double acc = 0.0;
    for (int k = 0; k < 64; ++k) {
        acc = acc * x + 1.0 / (k + 1);  // fp64 FMA and divide in the hot loop
    }
    out[i] = (float)acc;
}
"""

ATOMIC_ONE = r"""
extern "C" __global__ void __launch_bounds__(256)
atomic_total(const float* __restrict__ in, float* __restrict__ total, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(total, in[i]);  // every thread of every block hits one address
    }
}
"""

BRANCH_BARRIER = r"""
// the barrier sits under a branch on threadIdx: warps may take different paths around __syncthreads
extern "C" __global__ void __launch_bounds__(256)
branch_barrier(const float* __restrict__ in, float* __restrict__ out, int n, int active) {
    __shared__ float buf[256];
    int t = threadIdx.x;
    long long base = (long long)blockIdx.x * 256;
    float v = in[base + t];
    for (int k = 0; k < 8; ++k) {
        if (t < active) {
            buf[t] = v;
            __syncthreads();
            v = 0.5f * (v + buf[255 - t]);
            __syncthreads();
        }
    }
    out[base + t] = v;
}
"""

COPY_FLOAT4 = r"""
extern "C" __global__ void __launch_bounds__(256)
copy_float4(const float4* __restrict__ in, float4* __restrict__ out, int n4) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = in[i];
        v.x *= 2.0f; v.y *= 2.0f; v.z *= 2.0f; v.w *= 2.0f;
        out[i] = v;
    }
}
"""

TRANSPOSE_TILED = r"""
// 32x32 tile through shared memory, padded to 33 columns: coalesced both ways, no bank conflicts
extern "C" __global__ void __launch_bounds__(256)
transpose_tiled(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[32][33];
    int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    int c = blockIdx.x * 32 + tx;
    int r0 = blockIdx.y * 32;
    for (int j = ty; j < 32; j += 8) {
        tile[j][tx] = in[(long long)(r0 + j) * cols + c];
    }
    __syncthreads();
    int oc = r0 + tx;
    int orow0 = blockIdx.x * 32;
    for (int j = ty; j < 32; j += 8) {
        out[(long long)(orow0 + j) * rows + oc] = tile[tx][j];
    }
}
"""

SAXPY = r"""
extern "C" __global__ void __launch_bounds__(256)
saxpy(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a * x[i] + y[i];
    }
}
"""

# Divergence: odd and even lanes take different 32-step polynomials inside the loop, so every warp runs
# both sides one after the other (half the lanes idle through each).
LANE_PARITY = r"""
extern "C" __global__ void __launch_bounds__(256)
lane_parity(const float* __restrict__ in, float* __restrict__ out, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    for (int it = 0; it < iters; ++it) {
        if (threadIdx.x & 1) {
            #pragma unroll
            for (int k = 0; k < 32; ++k) v = v * 1.0001f + 0.5f;
        } else {
            #pragma unroll
            for (int k = 0; k < 32; ++k) v = v * 0.9999f - 0.25f;
        }
    }
    out[i] = v;
}
"""

# Clean counterpart: the same two sides chosen per warp ((threadIdx.x >> 5) & 1): no warp splits.
WARP_PARITY = r"""
extern "C" __global__ void __launch_bounds__(256)
warp_parity(const float* __restrict__ in, float* __restrict__ out, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    for (int it = 0; it < iters; ++it) {
        if ((threadIdx.x >> 5) & 1) {
            #pragma unroll
            for (int k = 0; k < 32; ++k) v = v * 1.0001f + 0.5f;
        } else {
            #pragma unroll
            for (int k = 0; k < 32; ++k) v = v * 0.9999f - 0.25f;
        }
    }
    out[i] = v;
}
"""

# No __launch_bounds__: PTX has no .maxntid; the launch's 32-thread blocks (one warp) cap an SM at 32
# blocks = 32 of 64 warps. Only the launch (TaskFacts.block) tells the decomposer the block size.
ONE_WARP_BLOCKS = r"""
extern "C" __global__ void scale_one_warp(const float* __restrict__ in, float* __restrict__ out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = in[i];
        #pragma unroll 4
        for (int k = 0; k < 64; ++k) v = v * 1.0001f + 0.5f;
        out[i] = v;
    }
}
"""

# A barrier every iteration of a loop that touches no shared memory (a leftover __syncthreads).
BARRIER_LOOP = r"""
extern "C" __global__ void __launch_bounds__(256)
barrier_poly(const float* __restrict__ in, float* __restrict__ out, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    for (int it = 0; it < iters; ++it) {
        v = v * 1.0001f + 0.5f;
        __syncthreads();
    }
    if (i < n) out[i] = v;
}
"""

# Clean twin: the same loop without the barrier.
NO_BARRIER_LOOP = r"""
extern "C" __global__ void __launch_bounds__(256)
poly(const float* __restrict__ in, float* __restrict__ out, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? in[i] : 0.0f;
    for (int it = 0; it < iters; ++it) {
        v = v * 1.0001f + 0.5f;
    }
    if (i < n) out[i] = v;
}
"""

# No cost: saxpy whose inputs are not `const __restrict__` (no ld.global.nc); cuda_clean_saxpy is its twin.
SAXPY_NO_RESTRICT = r"""
extern "C" __global__ void __launch_bounds__(256)
saxpy_alias(const float* x, const float* y, float* out, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = a * x[i] + y[i];
    }
}
"""

# Integer remainder by a run-time value every iteration (a ring-buffer weight index, the same for all lanes).
INT_DIV_LOOP = r"""
extern "C" __global__ void __launch_bounds__(256)
ring_gather(const float* __restrict__ in, float* __restrict__ out, int n, int iters, int ring) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = in[i], acc = 0.0f;
    for (int it = 0; it < iters; ++it) {
        acc += x * (float)((it * 977 + i) % ring);
    }
    out[i] = acc;
}
"""

# IEEE division every iteration (no -use_fast_math).
PRECISE_DIV_LOOP = r"""
extern "C" __global__ void __launch_bounds__(256)
precise_div(const float* __restrict__ in, float* __restrict__ out, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = in[i];
    for (int it = 0; it < iters; ++it) {
        v = v / (1.0f + v * v);
    }
    out[i] = v;
}
"""


def _ew(n: int, tensors: int) -> float:
    return float(n * tensors * 4)


CUDA_CASES: tuple[CudaCase, ...] = (
    CudaCase(
        "cuda_transpose_naive",
        "transpose_naive",
        TRANSPOSE_NAIVE,
        grid=(C // 32, R // 8),
        block=(256,),
        args=(("in", R * C), ("out", R * C), ("int", R), ("int", C)),
        bytes_moved=_ew(R * C, 2),
        expect="transposed_access_no_staging",
    ),
    CudaCase(
        "cuda_strided_read",
        "strided_read",
        STRIDED_READ,
        grid=(N // 2 // 256,),
        block=(256,),
        # stride 8 fp32 = 32 B: every lane reads its own sector
        args=(("in", 4 * N), ("out", N // 2), ("int", N // 2), ("int", 8)),
        flops=N // 2,
        bytes_moved=_ew(N // 2, 2),
        expect="uncoalesced_strided_access",
    ),
    CudaCase(
        "cuda_smem_column",
        "smem_column_sum",
        SMEM_COLUMN,
        grid=(N // 1024,),
        block=(1024,),
        args=(("in", N), ("out", N)),
        flops=32.0 * N,
        bytes_moved=_ew(N, 2),
        expect="shared_bank_conflicts",
    ),
    CudaCase(
        "cuda_spills",
        "spill_poly",
        SPILLS,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N)),
        flops=1024.0 * N,
        bytes_moved=_ew(N, 2),
        expect="register_spills",
    ),
    CudaCase(
        "cuda_local_array",
        "local_lookup",
        LOCAL_ARRAY,
        grid=(N // 256,),
        block=(256,),
        args=(("in_i32", 16 * N, 32), ("out", N), ("int", N)),
        flops=16.0 * N,
        bytes_moved=_ew(N, 17),
        expect="local_memory_array",
    ),
    CudaCase(
        "cuda_fp64_loop",
        "fp64_poly",
        FP64_LOOP,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N)),
        flops=128.0 * N,
        bytes_moved=_ew(N, 2),
        expect="fp64_arithmetic",
    ),
    CudaCase(
        "cuda_atomic_one_address",
        "atomic_total",
        ATOMIC_ONE,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", 1), ("int", N)),
        flops=N,
        bytes_moved=_ew(N, 1),
        expect="atomic_contention",
    ),
    CudaCase(
        "cuda_branch_barrier",
        "branch_barrier",
        BRANCH_BARRIER,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N), ("int", 256)),
        flops=16.0 * N,
        bytes_moved=_ew(N, 2),
        expect="divergent_branch_around_barrier",
    ),
    CudaCase(
        "cuda_clean_copy_float4",
        "copy_float4",
        COPY_FLOAT4,
        grid=(N // 4 // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N // 4)),
        flops=N,
        bytes_moved=_ew(N, 2),
    ),
    CudaCase(
        "cuda_clean_transpose_tiled",
        "transpose_tiled",
        TRANSPOSE_TILED,
        grid=(C // 32, R // 32),
        block=(256,),
        args=(("in", R * C), ("out", R * C), ("int", R), ("int", C)),
        bytes_moved=_ew(R * C, 2),
    ),
    CudaCase(
        "cuda_clean_saxpy",
        "saxpy",
        SAXPY,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("in", N), ("out", N), ("float", 2.0), ("int", N)),
        flops=2.0 * N,
        bytes_moved=_ew(N, 3),
    ),
    CudaCase(
        "cuda_lane_parity_branch",
        "lane_parity",
        LANE_PARITY,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N), ("int", 8)),
        flops=2.0 * 32 * 8 * N,
        bytes_moved=_ew(N, 2),
        expect="warp_divergence",
        kind="planted",
    ),
    CudaCase(
        "cuda_clean_warp_parity_branch",
        "warp_parity",
        WARP_PARITY,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N), ("int", 8)),
        flops=2.0 * 32 * 8 * N,
        bytes_moved=_ew(N, 2),
        notes="clean counterpart of cuda_lane_parity_branch: the branch is uniform per warp",
        kind="clean",
    ),
    CudaCase(
        "cuda_no_launch_bounds_one_warp",
        "scale_one_warp",
        ONE_WARP_BLOCKS,
        grid=(N // 32,),
        block=(32,),
        args=(("in", N), ("out", N), ("int", N)),
        flops=2.0 * 64 * N,
        bytes_moved=_ew(N, 2),
        expect="occupancy_limited_by_block_size",
        notes="no __launch_bounds__: warps and occupancy come from the launch's block",
        kind="planted",
    ),
    CudaCase(
        "cuda_barrier_in_loop",
        "barrier_poly",
        BARRIER_LOOP,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N), ("int", 64)),
        flops=2.0 * 64 * N,
        bytes_moved=_ew(N, 2),
        expect="barrier_in_loop",
        kind="planted",
    ),
    CudaCase(
        "cuda_clean_poly_loop",
        "poly",
        NO_BARRIER_LOOP,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N), ("int", 64)),
        flops=2.0 * 64 * N,
        bytes_moved=_ew(N, 2),
        kind="clean",
    ),
    CudaCase(
        "cuda_saxpy_no_restrict",
        "saxpy_alias",
        SAXPY_NO_RESTRICT,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("in", N), ("out", N), ("float", 2.0), ("int", N)),
        flops=2.0 * N,
        bytes_moved=_ew(N, 3),
        expect="read_only_load_not_nc",
        kind="no_cost",
    ),
    CudaCase(
        "cuda_int_div_loop",
        "ring_gather",
        INT_DIV_LOOP,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N), ("int", 64), ("int", 4093)),
        flops=2.0 * 64 * N,
        bytes_moved=_ew(N, 2),
        expect="integer_division_in_hot_loop",
        kind="planted",
    ),
    CudaCase(
        "cuda_precise_div_loop",
        "precise_div",
        PRECISE_DIV_LOOP,
        grid=(N // 256,),
        block=(256,),
        args=(("in", N), ("out", N), ("int", N), ("int", 64)),
        flops=3.0 * 64 * N,
        bytes_moved=_ew(N, 2),
        expect="slow_precise_math",
        kind="planted",
    ),
)

from tests.decomposer.corpus.cuda_cases_wide import CUDA_WIDE_CASES

CUDA_CASES = CUDA_CASES + CUDA_WIDE_CASES
