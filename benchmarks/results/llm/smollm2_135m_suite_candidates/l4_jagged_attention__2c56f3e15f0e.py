"""L4: jagged (variable-length) attention forward, bf16: a batch of sequences of different lengths packed
back to back, as in LLM prefill with no padding ("varlen" FlashAttention).

Q, K, V are (total_tokens, heads, head_dim); cu_seqlens (batch + 1, int32) holds each sequence's start.
The grid is (query blocks of the longest sequence, batch * heads): programs past their sequence's end
run an empty loop. Lengths are drawn uniformly in [1, s] per seed, so the work per program is uneven.
The launch reads the longest length from cu_seqlens (one device-to-host copy per call, as varlen
FlashAttention's callers do with max_seqlen). Untuned start: 32 x 32 tiles, 4 warps, 1 stage.
"""

import itertools
import math

import torch
import triton
import triton.language as tl

LEVEL = "L4"


@triton.jit
def jagged_attn_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    cu_ptr,
    H,
    sm_scale,
    stride_t,
    stride_h,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    n_programs_total,
    PROGRAMS: tl.constexpr,
):
    for program_item in tl.range(tl.program_id(0), n_programs_total, tl.num_programs(0)):
        pid_m = program_item
        bh = tl.program_id(1)
        b = bh // H
        h = (bh % H).to(tl.int64)
        start = tl.load(cu_ptr + b).to(tl.int64)
        seq_len = tl.load(cu_ptr + b + 1) - tl.load(cu_ptr + b)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = tl.arange(0, BLOCK_N)
        offs_d = tl.arange(0, HEAD_DIM)
        q_base = q_ptr + start * stride_t + h * stride_h
        k_base = k_ptr + start * stride_t + h * stride_h
        v_base = v_ptr + start * stride_t + h * stride_h
        q = tl.load(
            q_base + offs_m[:, None] * stride_t + offs_d[None, :], mask=offs_m[:, None] < seq_len, other=0.0
        )
        qk_scale = sm_scale * 1.44269504  # exp2: log2(e) folded into the scale
        m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
        l_i = tl.zeros((BLOCK_M,), tl.float32)
        acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
        hi = tl.where(pid_m * BLOCK_M < seq_len, seq_len, 0)  # a block past the end does nothing
        for start_n in range(0, hi, BLOCK_N):
            cols = start_n + offs_n
            k = tl.load(
                k_base + cols[None, :] * stride_t + offs_d[:, None], mask=cols[None, :] < seq_len, other=0.0
            )
            qk = tl.where(cols[None, :] < seq_len, tl.dot(q, k) * qk_scale, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(qk, axis=1))
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            p = tl.exp2(qk - m_safe[:, None])
            alpha = tl.exp2(m_i - m_safe)
            l_i = l_i * alpha + tl.sum(p, axis=1)
            v = tl.load(
                v_base + cols[:, None] * stride_t + offs_d[None, :], mask=cols[:, None] < seq_len, other=0.0
            )
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
            m_i = m_new
        acc = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
        o_base = o_ptr + start * stride_t + h * stride_h
        tl.store(
            o_base + offs_m[:, None] * stride_t + offs_d[None, :],
            acc.to(o_ptr.dtype.element_ty),
            mask=offs_m[:, None] < seq_len,
        )


KERNELS = (jagged_attn_kernel,)
CONFIG = {"BLOCK_M": 32, "BLOCK_N": 32, "num_warps": 2, "num_stages": 4, "PROGRAMS": 132}
SPACE = {
    "BLOCK_M": [16, 32, 64, 128, 256],
    "BLOCK_N": [16, 32, 64, 128],
    "num_warps": [2, 4, 8],
    "num_stages": [1, 2, 3, 4],
    "PROGRAMS": [132, 264, 528],
}
SMEM_LIMIT_BYTES = 227 * 1024  # Hopper, per block (GPU.md)


def constraint(config, shape):
    d = shape["d"]
    smem = 2 * (config["BLOCK_M"] * d + 2 * config["BLOCK_N"] * d * max(config["num_stages"], 1))
    return smem <= SMEM_LIMIT_BYTES and config["BLOCK_M"] * config["BLOCK_N"] >= 256 * config["num_warps"]


SHAPES = {
    "micro": {"b": 3, "h": 2, "s": 48, "d": 16},  # s: the longest allowed length
    "full": {"b": 32, "h": 16, "s": 4096, "d": 128},  # ~65k tokens on average
    "edge": [{"b": 1, "h": 1, "s": 1, "d": 16}, {"b": 5, "h": 3, "s": 70, "d": 64}],
}
DTYPE = "bfloat16"
CPU_DTYPE = "float16"  # the interpreter's bf16 tl.dot is garbage; fp16 is exact
TOLERANCE = {"bfloat16": [2e-2, 2e-2], "float16": [5e-3, 5e-3]}  # as dense attention (averages of V)
PRECISION = "exact"


def _lengths(shape, seed):
    g = torch.Generator().manual_seed(seed)  # a CPU generator: lengths are host-side data
    return torch.randint(1, shape["s"] + 1, (shape["b"],), generator=g)


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    dtype = getattr(torch, shape.get("dtype", DTYPE))
    lengths = _lengths(shape, seed)
    cu = torch.zeros(shape["b"] + 1, dtype=torch.int32)
    cu[1:] = torch.cumsum(lengths, 0)
    total = int(cu[-1])
    size = (total, shape["h"], shape["d"])
    q, k, v = (torch.randn(size, device=device, dtype=dtype) for _ in range(3))
    return q, k, v, cu.to(device)


def launch(inputs, BLOCK_M, BLOCK_N, num_warps, num_stages, PROGRAMS=132):
    q, k, v, cu = inputs
    _, H, D = q.shape
    B = cu.shape[0] - 1
    max_len = int((cu[1:] - cu[:-1]).max())
    o = torch.empty_like(q)
    jagged_attn_kernel[(min(triton.cdiv(max_len, BLOCK_M), PROGRAMS), B * H)](
        q,
        k,
        v,
        o,
        cu,
        H,
        1.0 / math.sqrt(D),
        q.stride(0),
        q.stride(1),
        HEAD_DIM=D,
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        num_warps=num_warps,
        num_stages=num_stages,
        n_programs_total=triton.cdiv(max_len, BLOCK_M),
        PROGRAMS=PROGRAMS,
    )
    return o


def _per_sequence(inputs, attend):
    q, k, v, cu = inputs
    bounds = cu.tolist()
    outs = [
        attend(q[s:e].transpose(0, 1), k[s:e].transpose(0, 1), v[s:e].transpose(0, 1)).transpose(0, 1)
        for s, e in itertools.pairwise(bounds)
    ]
    return torch.cat(outs, dim=0)


def _math(q, k, v):
    p = torch.softmax((q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1]), dim=-1)
    return p @ v.float()


def reference(inputs):
    return _per_sequence(inputs, _math).to(inputs[0].dtype)


def eager(inputs):
    return _per_sequence(inputs, lambda q, k, v: _math(q, k, v).to(q.dtype))


def sdpa(inputs):
    # One SDPA call per sequence: what a torch user without nested tensors writes.
    return _per_sequence(inputs, torch.nn.functional.scaled_dot_product_attention)


BASELINES = {"eager": eager, "sdpa": sdpa}
TARGET = {"against": "sdpa", "at_least": 1.0}  # one fused launch must beat a launch per sequence


# The formulas see the shape only, not the seed: they use seed 0's lengths, the seed bench, bench_ab and
# autotune time by default (another seed gives other lengths and so other FLOPs).
FORMULA_SEED = 0


def flops(shape):
    lengths = _lengths(shape, FORMULA_SEED).double()
    return 4.0 * shape["h"] * shape["d"] * float((lengths * lengths).sum())


def bytes_moved(shape):
    total = float(_lengths(shape, FORMULA_SEED).sum())
    return 2.0 * 4 * total * shape["h"] * shape["d"] + 4.0 * (shape["b"] + 1)  # Q, K, V, O; cu_seqlens
