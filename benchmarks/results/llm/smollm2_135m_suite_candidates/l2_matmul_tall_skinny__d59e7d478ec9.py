"""L2: tall-skinny bf16 GEMM, (65536 x 4096) @ (4096 x 128): A is 512 MiB and C narrow.

Arithmetic intensity ~120 FLOP/byte sits near the H200's ridge point, so this is as much a bandwidth test
for streaming A as a tensor-core test. Untuned start: the square-GEMM 64x64x32 tiles, GROUP_M 1, 4 warps,
1 stage; a tile as wide as N (128) reads A exactly once.
"""

import torch
import triton
import triton.language as tl

LEVEL = "L2"


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # Grouped ordering: GROUP_M row-blocks share B tiles in L2 (GROUP_M = 1 is plain row-major order).
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None].to(tl.int64) * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None].to(tl.int64) * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c = acc.to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None].to(tl.int64) * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


KERNELS = (matmul_kernel,)
CONFIG = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 1, "num_warps": 8, "num_stages": 1}
# Hopper-sized space (issue #8's exhaustive sweep has to fit one GPU window): tiles of 64-256 (wgmma needs
# M % 64 == 0), 4 or 8 warps (wgmma: a multiple of 4), 1 stage (the untuned start) or 3-5.
# Runs up to 18 started at 32x32x32 in a wider space (16-256 tiles, 2-8 warps, 1-5 stages, GROUP_M 1-16).
SPACE = {
    "BLOCK_M": [64, 128, 256],
    "BLOCK_N": [64, 128, 256],
    "BLOCK_K": [32, 64, 128],
    "GROUP_M": [1, 8],
    "num_warps": [4, 8],
    "num_stages": [1, 3, 4, 5],
}
SMEM_LIMIT_BYTES = 227 * 1024  # Hopper, per block (GPU.md)


def constraint(config, shape):
    stages = max(config["num_stages"], 1)
    smem = (config["BLOCK_M"] + config["BLOCK_N"]) * config["BLOCK_K"] * 2 * stages  # bf16 A + B tiles
    min_tile = config["BLOCK_M"] * config["BLOCK_N"] >= 256 * config["num_warps"]  # 16x16 per warp
    return smem <= SMEM_LIMIT_BYTES and min_tile


SHAPES = {
    "micro": {"m": 160, "n": 16, "k": 64},
    "full": {"m": 65536, "n": 128, "k": 4096},
    "edge": [{"m": 1001, "n": 7, "k": 33}, {"m": 1, "n": 1, "k": 1}, {"m": 67, "n": 130, "k": 100}],
}
DTYPE = "bfloat16"
CPU_DTYPE = "float16"  # Triton 3.6.0's interpreter returns garbage for a bf16 tl.dot; fp16 is exact there
# bf16 keeps 8 mantissa bits; K-long fp32 sums of N(0,1) products have magnitude ~sqrt(K).
TOLERANCE = {"bfloat16": [5e-2, 1e-2], "float16": [1e-2, 1e-2]}
PRECISION = "exact"


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    dtype = getattr(torch, shape.get("dtype", DTYPE))
    a = torch.randn(shape["m"], shape["k"], device=device, dtype=dtype)
    b = torch.randn(shape["k"], shape["n"], device=device, dtype=dtype)
    return a, b


def launch(inputs, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, maxnreg=None):
    a, b = inputs
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_kernel[grid](
        a,
        b,
        c,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        b.stride(0),
        b.stride(1),
        c.stride(0),
        c.stride(1),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        BLOCK_K=BLOCK_K,
        GROUP_M=GROUP_M,
        num_warps=num_warps,
        num_stages=num_stages,
        maxnreg=maxnreg,
    )
    return c


def reference(inputs):
    a, b = inputs
    return (a.float() @ b.float()).to(a.dtype)


def eager(inputs):
    a, b = inputs
    return a @ b


def library(inputs):
    a, b = inputs
    return torch.matmul(a, b)


BASELINES = {"eager": eager, "matmul": library}
TARGET = {"against": "matmul", "at_least": 0.95}  # issue #8: bf16 matmul at >= 95 % of torch.matmul


def flops(shape):
    return 2.0 * shape["m"] * shape["n"] * shape["k"]


def bytes_moved(shape):
    return 2.0 * (shape["m"] * shape["k"] + shape["k"] * shape["n"] + shape["m"] * shape["n"])
