"""L4: MoE grouped GEMM, bf16: tokens sorted by expert, y[t] = x[t] @ W[expert(t)] for E experts in one
launch.

x (tokens, k) is sorted by expert and offsets (E + 1, int32) gives each expert's row range; W is
(E, k, n). Routing is uniform at random per seed, so experts get uneven (sometimes zero) row counts. The
grid covers every expert's row tiles: at most ceil(T / BLOCK_M) + E of them (each expert can add one
partial tile); each program finds its (expert, tile) by scanning the offsets, and the spare programs do
masked-out work. Untuned start: 32x32x32 tiles, 4 warps, 1 stage.
"""

import itertools

import torch
import triton
import triton.language as tl

LEVEL = "L4"


@triton.jit
def moe_gemm_kernel(
    x_ptr,
    w_ptr,
    y_ptr,
    off_ptr,
    n_experts,
    N,
    K,
    stride_xm,
    stride_we,
    stride_wk,
    stride_ym,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    pid = tl.program_id(0)
    pid_n = tl.program_id(1)
    # Which expert's row tile this program owns: walk the experts, counting their tiles.
    zero = pid * 0
    tiles_before = zero
    expert = zero
    row_start = zero
    row_end = zero
    for e in range(n_experts):
        lo = tl.load(off_ptr + e)
        hi = tl.load(off_ptr + e + 1)
        n_tiles = tl.cdiv(hi - lo, BLOCK_M)
        hit = (pid >= tiles_before) & (pid < tiles_before + n_tiles)
        expert = tl.where(hit, e, expert)
        row_start = tl.where(hit, lo + (pid - tiles_before) * BLOCK_M, row_start)
        row_end = tl.where(hit, hi, row_end)
        tiles_before += n_tiles
    # A spare program (pid past the last tile) keeps row_start = row_end = 0: every row masked off.
    offs_m = row_start + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    row_ok = offs_m < row_end
    x_ptrs = x_ptr + offs_m[:, None].to(tl.int64) * stride_xm + offs_k[None, :]
    w_ptrs = (
        w_ptr + expert.to(tl.int64) * stride_we + offs_k[:, None].to(tl.int64) * stride_wk + offs_n[None, :]
    )
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(x_ptrs, mask=row_ok[:, None] & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(w_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K * stride_wk
    y_ptrs = y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=row_ok[:, None] & (offs_n[None, :] < N))


KERNELS = (moe_gemm_kernel,)
CONFIG = {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 32, "num_warps": 2, "num_stages": 1}
SPACE = {
    "BLOCK_M": [16, 32, 64, 128, 256],
    "BLOCK_N": [16, 32, 64, 128, 256],
    "BLOCK_K": [16, 32, 64, 128],
    "num_warps": [2, 4, 8],
    "num_stages": [1, 2, 3, 4, 5],
}
SMEM_LIMIT_BYTES = 227 * 1024  # Hopper, per block (GPU.md)


def constraint(config, shape):
    stages = max(config["num_stages"], 1)
    smem = (config["BLOCK_M"] + config["BLOCK_N"]) * config["BLOCK_K"] * 2 * stages
    return smem <= SMEM_LIMIT_BYTES and config["BLOCK_M"] * config["BLOCK_N"] >= 256 * config["num_warps"]


SHAPES = {
    "micro": {"t": 100, "e": 4, "k": 32, "n": 48},
    # Mixtral-like: 8 experts, 4096 -> 14336, 16384 routed token copies (8192 tokens, top-2).
    "full": {"t": 16384, "e": 8, "k": 4096, "n": 14336},
    "edge": [{"t": 1, "e": 1, "k": 1, "n": 1}, {"t": 37, "e": 9, "k": 20, "n": 33}],
}
DTYPE = "bfloat16"
CPU_DTYPE = "float16"  # the interpreter's bf16 tl.dot is garbage; fp16 is exact
# W is scaled by 1/sqrt(k), so outputs are O(1): a few ulp of the output dtype.
TOLERANCE = {"bfloat16": [2e-2, 1e-2], "float16": [2e-3, 2e-3]}
PRECISION = "exact"


def _counts(shape, seed):
    g = torch.Generator().manual_seed(seed)  # CPU generator: routing is host-side data
    experts = torch.randint(0, shape["e"], (shape["t"],), generator=g)
    return torch.bincount(experts, minlength=shape["e"])


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    dtype = getattr(torch, shape.get("dtype", DTYPE))
    offsets = torch.zeros(shape["e"] + 1, dtype=torch.int32)
    offsets[1:] = torch.cumsum(_counts(shape, seed), 0)
    x = torch.randn(shape["t"], shape["k"], device=device, dtype=dtype)
    w = (
        torch.randn(shape["e"], shape["k"], shape["n"], device=device, dtype=dtype)
        / max(shape["k"], 1) ** 0.5
    )
    return x, w, offsets.to(device)


def launch(inputs, BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages):
    x, w, offsets = inputs
    T, K = x.shape
    E, _, N = w.shape
    y = torch.empty((T, N), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(T, BLOCK_M) + E, triton.cdiv(N, BLOCK_N))
    moe_gemm_kernel[grid](
        x,
        w,
        y,
        offsets,
        E,
        N,
        K,
        x.stride(0),
        w.stride(0),
        w.stride(1),
        y.stride(0),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        BLOCK_K=BLOCK_K,
        num_warps=num_warps,
        num_stages=num_stages,
    )
    return y


def _per_expert(inputs, gemm):
    x, w, offsets = inputs
    bounds = offsets.tolist()
    return torch.cat([gemm(x[s:e], w[i]) for i, (s, e) in enumerate(itertools.pairwise(bounds))], dim=0)


def reference(inputs):
    return _per_expert(inputs, lambda a, b: a.float() @ b.float()).to(inputs[0].dtype)


def eager(inputs):
    return _per_expert(inputs, lambda a, b: a @ b)


def library(inputs):
    # One cuBLAS GEMM per expert through torch.matmul (a host loop over experts).
    return _per_expert(inputs, torch.matmul)


BASELINES = {"eager": eager, "matmul": library}
TARGET = {"against": "matmul", "at_least": 1.0}  # one launch must beat E cuBLAS launches


def flops(shape):
    return 2.0 * shape["t"] * shape["k"] * shape["n"]


def bytes_moved(shape):
    t, e, k, n = shape["t"], shape["e"], shape["k"], shape["n"]
    return 2.0 * (t * k + e * k * n + t * n) + 4.0 * (e + 1)
