"""L2: batched bf16 GEMM C[b] = A[b] @ B[b], 64 independent 1024^3 products (grid axis 1 = batch).

Each product alone fills only 64 programs of 128x128; the batch supplies the parallelism. Untuned start:
64x64x32 tiles, 4 warps, 1 stage (no software pipelining).
"""

import torch
import triton
import triton.language as tl

LEVEL = "L2"


@triton.jit
def bmm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_ab,
    stride_am,
    stride_ak,
    stride_bb,
    stride_bk,
    stride_bn,
    stride_cb,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    batch = tl.program_id(1).to(tl.int64)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + batch * stride_ab + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + batch * stride_bb + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + batch * stride_cb + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


KERNELS = (bmm_kernel,)
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 1}
# Hopper-sized space (issue #8's exhaustive sweep has to fit one GPU window): tiles of 64-256 (wgmma needs
# M % 64 == 0), 4 or 8 warps (wgmma: a multiple of 4), 1 stage (the untuned start) or 3-5.
# Runs up to 18 started at 32x32x32 in a wider space (16-256 tiles, 2-8 warps, 1-5 stages).
SPACE = {
    "BLOCK_M": [64, 128, 256],
    "BLOCK_N": [64, 128, 256],
    "BLOCK_K": [32, 64, 128],
    "num_warps": [4, 8],
    "num_stages": [1, 3, 4, 5],
}
SMEM_LIMIT_BYTES = 227 * 1024  # Hopper, per block (GPU.md)


def constraint(config, shape):
    stages = max(config["num_stages"], 1)
    smem = (config["BLOCK_M"] + config["BLOCK_N"]) * config["BLOCK_K"] * 2 * stages
    return smem <= SMEM_LIMIT_BYTES and config["BLOCK_M"] * config["BLOCK_N"] >= 256 * config["num_warps"]


SHAPES = {
    "micro": {"b": 3, "m": 40, "n": 48, "k": 32},
    "full": {"b": 64, "m": 1024, "n": 1024, "k": 1024},
    "edge": [{"b": 1, "m": 1, "n": 1, "k": 1}, {"b": 5, "m": 33, "n": 17, "k": 65}],
}
DTYPE = "bfloat16"
CPU_DTYPE = "float16"  # the interpreter's bf16 tl.dot is garbage; fp16 is exact
TOLERANCE = {"bfloat16": [5e-2, 1e-2], "float16": [1e-2, 1e-2]}
PRECISION = "exact"


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    dtype = getattr(torch, shape.get("dtype", DTYPE))
    a = torch.randn(shape["b"], shape["m"], shape["k"], device=device, dtype=dtype)
    b = torch.randn(shape["b"], shape["k"], shape["n"], device=device, dtype=dtype)
    return a, b


def launch(inputs, BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages):
    a, b = inputs
    B, M, K = a.shape
    N = b.shape[2]
    c = torch.empty((B, M, N), device=a.device, dtype=a.dtype)
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N), B)
    bmm_kernel[grid](
        a,
        b,
        c,
        M,
        N,
        K,
        a.stride(0),
        a.stride(1),
        a.stride(2),
        b.stride(0),
        b.stride(1),
        b.stride(2),
        c.stride(0),
        c.stride(1),
        c.stride(2),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        BLOCK_K=BLOCK_K,
        num_warps=num_warps,
        num_stages=num_stages,
    )
    return c


def reference(inputs):
    a, b = inputs
    return torch.bmm(a.float(), b.float()).to(a.dtype)


def eager(inputs):
    a, b = inputs
    return torch.bmm(a, b)


def library(inputs):
    a, b = inputs
    return torch.matmul(a, b)


BASELINES = {"eager": eager, "matmul": library}
TARGET = {"against": "matmul", "at_least": 0.95}  # issue #8: bf16 matmul at >= 95 % of torch.matmul


def flops(shape):
    return 2.0 * shape["b"] * shape["m"] * shape["n"] * shape["k"]


def bytes_moved(shape):
    b, m, n, k = shape["b"], shape["m"], shape["n"], shape["k"]
    return 2.0 * b * (m * k + k * n + m * n)
