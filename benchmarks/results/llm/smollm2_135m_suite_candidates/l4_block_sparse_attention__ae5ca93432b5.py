"""L4: block-sparse attention forward, bf16: each head attends only where its block layout says so.

layout (heads, nb, nb) int32 marks which (query block, key block) pairs of 64 x 64 tokens are
active (nb = ceil(s / SPARSE)); the diagonal is always active so every row sees at least itself. About a
quarter of the blocks are active (a local + random pattern, fixed per seed). The straightforward kernel
visits every key block and masks the inactive ones to -inf, so it does dense work; branching over the
inactive blocks is where the 4x lives. Tiles must nest inside the sparse blocks (BLOCK_M and BLOCK_N
divide 64). Untuned start: 32 x 32 tiles, 4 warps, 1 stage.
"""

import math

import torch
import triton
import triton.language as tl

LEVEL = "L4"
DENSITY = 0.25  # share of off-diagonal blocks drawn active
# Tokens per sparse block side, fixed for every shape (a model property, like a head dim); 64 lets the
# micro shape have several blocks while staying small for the interpreter.
SPARSE_BLOCK = 64


@triton.jit
def block_sparse_attn_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    layout_ptr,
    seq_len,
    n_blocks,
    H,
    sm_scale,
    stride_qb,
    stride_qh,
    stride_qs,
    stride_lh,
    HEAD_DIM: tl.constexpr,
    SPARSE: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    base = b * stride_qb + h * stride_qh  # q, k, v and o share one contiguous (b, h, s, d) layout
    q = tl.load(
        q_ptr + base + offs_m[:, None] * stride_qs + offs_d[None, :],
        mask=offs_m[:, None] < seq_len,
        other=0.0,
    )
    row_block = (pid_m * BLOCK_M) // SPARSE  # BLOCK_M divides SPARSE: the tile sits in one block row
    layout_row = layout_ptr + h * stride_lh + row_block * n_blocks
    qk_scale = sm_scale * 1.44269504  # exp2: log2(e) folded into the scale
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    for kb in range(n_blocks):
        active = tl.load(layout_row + kb)  # 0: an inactive block, masked to -inf below
        for j in range(0, SPARSE, BLOCK_N):
            cols = kb * SPARSE + j + offs_n
            k = tl.load(
                k_ptr + base + cols[None, :] * stride_qs + offs_d[:, None],
                mask=cols[None, :] < seq_len,
                other=0.0,
            )
            keep = (cols[None, :] < seq_len) & (active != 0)
            qk = tl.where(keep, tl.dot(q, k) * qk_scale, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(qk, axis=1))
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # masked tiles: no -inf - -inf
            p = tl.exp2(qk - m_safe[:, None])
            alpha = tl.exp2(m_i - m_safe)
            l_i = l_i * alpha + tl.sum(p, axis=1)
            v = tl.load(
                v_ptr + base + cols[:, None] * stride_qs + offs_d[None, :],
                mask=cols[:, None] < seq_len,
                other=0.0,
            )
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
            m_i = m_new
    acc = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
    tl.store(
        o_ptr + base + offs_m[:, None] * stride_qs + offs_d[None, :],
        acc.to(o_ptr.dtype.element_ty),
        mask=offs_m[:, None] < seq_len,
    )


KERNELS = (block_sparse_attn_kernel,)
CONFIG = {"BLOCK_M": 32, "BLOCK_N": 32, "num_warps": 2, "num_stages": 1}
SPACE = {
    "BLOCK_M": [16, 32, 64],
    "BLOCK_N": [16, 32, 64],
    "num_warps": [2, 4, 8],
    "num_stages": [1, 2, 3, 4],
}
SMEM_LIMIT_BYTES = 227 * 1024  # Hopper, per block (GPU.md)


def constraint(config, shape):
    d, sp = shape["d"], SPARSE_BLOCK
    smem = 2 * (config["BLOCK_M"] * d + 2 * config["BLOCK_N"] * d * max(config["num_stages"], 1))
    nests = sp % config["BLOCK_M"] == 0 and sp % config["BLOCK_N"] == 0
    return (
        nests
        and smem <= SMEM_LIMIT_BYTES
        and config["BLOCK_M"] * config["BLOCK_N"] >= 256 * config["num_warps"]
    )


SHAPES = {
    "micro": {"b": 1, "h": 2, "s": 192, "d": 16},
    "full": {"b": 4, "h": 32, "s": 8192, "d": 128},  # 128 x 128 blocks per head
    "edge": [{"b": 1, "h": 1, "s": 1, "d": 16}, {"b": 2, "h": 3, "s": 100, "d": 64}],
}
DTYPE = "bfloat16"
CPU_DTYPE = "float16"  # the interpreter's bf16 tl.dot is garbage; fp16 is exact
TOLERANCE = {"bfloat16": [2e-2, 2e-2], "float16": [5e-3, 5e-3]}  # as dense attention (averages of V)
PRECISION = "exact"


def _layout(shape, seed):
    nb = -(-shape["s"] // SPARSE_BLOCK)
    g = torch.Generator().manual_seed(seed)  # CPU generator: the pattern is host-side data
    layout = (torch.rand(shape["h"], nb, nb, generator=g) < DENSITY).to(torch.int32)
    layout[:, torch.arange(nb), torch.arange(nb)] = 1
    return layout


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    dtype = getattr(torch, shape.get("dtype", DTYPE))
    size = (shape["b"], shape["h"], shape["s"], shape["d"])
    q, k, v = (torch.randn(size, device=device, dtype=dtype) for _ in range(3))
    return q, k, v, _layout(shape, seed).to(device)


def launch(inputs, BLOCK_M, BLOCK_N, num_warps, num_stages):
    q, k, v, layout = inputs
    B, H, S, D = q.shape
    nb = layout.shape[1]
    o = torch.empty_like(q)
    block_sparse_attn_kernel[(triton.cdiv(S, BLOCK_M), B * H)](
        q,
        k,
        v,
        o,
        layout,
        S,
        nb,
        H,
        1.0 / math.sqrt(D),
        q.stride(0),
        q.stride(1),
        q.stride(2),
        layout.stride(0),
        HEAD_DIM=D,
        SPARSE=SPARSE_BLOCK,
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        num_warps=num_warps,
        num_stages=num_stages,
    )
    return o


def _token_mask(layout, S):
    """(h, S, S) bool: True where a query may attend a key (its block pair is active)."""
    m = layout.bool().repeat_interleave(SPARSE_BLOCK, 1).repeat_interleave(SPARSE_BLOCK, 2)
    return m[:, :S, :S]


def reference(inputs):
    q, k, v, layout = inputs
    s = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    s = s.masked_fill(~_token_mask(layout, q.shape[2]), float("-inf"))
    return (torch.softmax(s, dim=-1) @ v.float()).to(q.dtype)


def eager(inputs):
    q, k, v, layout = inputs
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    s = s.masked_fill(~_token_mask(layout, q.shape[2]), float("-inf"))
    return torch.softmax(s.float(), dim=-1).to(q.dtype) @ v


def sdpa(inputs):
    # Dense SDPA with the block pattern expanded to a boolean mask (no block-sparse SDPA in torch).
    q, k, v, layout = inputs
    return torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=_token_mask(layout, q.shape[2])
    )


BASELINES = {"eager": eager, "sdpa": sdpa}
TARGET = {"against": "sdpa", "at_least": 2.0}  # ~25 % density: skipping blocks should at least halve SDPA


# The formulas see the shape, not the seed: they count seed 0's layout (the seed the timing tools use).
FORMULA_SEED = 0


def _active_pairs(shape):
    """Active (query, key) token pairs summed over heads, for seed 0's layout."""
    s = shape["s"]
    nb = -(-s // SPARSE_BLOCK)
    sizes = torch.full((nb,), SPARSE_BLOCK, dtype=torch.float64)
    sizes[-1] = s - SPARSE_BLOCK * (nb - 1)
    lay = _layout(shape, FORMULA_SEED).double()
    return float(torch.einsum("hij,i,j->", lay, sizes, sizes))


def flops(shape):
    return 4.0 * shape["b"] * shape["d"] * _active_pairs(shape)


def bytes_moved(shape):
    b, h, s, d = shape["b"], shape["h"], shape["s"], shape["d"]
    nb = -(-s // SPARSE_BLOCK)
    return 2.0 * 4 * b * h * s * d + 4.0 * h * nb * nb  # Q, K, V, O; the layout
