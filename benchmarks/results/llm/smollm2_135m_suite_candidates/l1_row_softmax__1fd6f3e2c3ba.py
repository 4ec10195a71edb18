"""L1: softmax over each row of an fp32 matrix; one program per row, online softmax over BLOCK_N chunks.

Two passes over the row (running max and rescaled sum, then normalise and write), so any row length works
with any BLOCK_N. Untuned start: 128-wide chunks and 4 warps (one element per thread per step).
"""

import torch
import triton
import triton.language as tl

LEVEL = "L1"


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * stride_x
    out_row = out_ptr + row.to(tl.int64) * stride_out
    offs = tl.arange(0, BLOCK_N)
    m = tl.full((BLOCK_N,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK_N,), tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        x = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # Lanes that have seen only -inf (past the row end) subtract 0, not -inf: -inf - -inf is nan.
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - m_safe) + tl.exp(x - m_safe)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + offs < n_cols
        x = tl.load(x_row + start + offs, mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - row_max) / row_sum
        tl.store(out_row + start + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


KERNELS = (softmax_kernel,)
CONFIG = {"BLOCK_N": 128, "num_warps": 1, "num_stages": 1}
SPACE = {
    "BLOCK_N": [128, 256, 512, 1024, 2048, 4096, 8192],
    "num_warps": [1, 2, 4, 8, 16],
    "num_stages": [1, 2, 3, 4],
}


def constraint(config, shape):
    return config["BLOCK_N"] >= 32 * config["num_warps"]


SHAPES = {
    "micro": {"rows": 37, "cols": 300},
    "full": {"rows": 8192, "cols": 8192},  # 256 MiB in, 256 MiB out
    "edge": [{"rows": 1, "cols": 1}, {"rows": 3, "cols": 10007}, {"rows": 129, "cols": 33}],
}
DTYPE = "float32"
TOLERANCE = {"float32": [1e-6, 1e-5]}  # exp and a row-long fp32 sum: a few ulp from torch's softmax
PRECISION = "exact"


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    dtype = getattr(torch, shape.get("dtype", DTYPE))
    return (3.0 * torch.randn(shape["rows"], shape["cols"], device=device, dtype=dtype),)


def launch(inputs, BLOCK_N, num_warps, num_stages):
    (x,) = inputs
    out = torch.empty_like(x)
    softmax_kernel[(x.shape[0],)](
        x,
        out,
        x.shape[1],
        x.stride(0),
        out.stride(0),
        BLOCK_N=BLOCK_N,
        num_warps=num_warps,
        num_stages=num_stages,
    )
    return out


def reference(inputs):
    (x,) = inputs
    return torch.softmax(x.float(), dim=1).to(x.dtype)


def eager(inputs):
    (x,) = inputs
    return torch.softmax(x, dim=1)


BASELINES = {"eager": eager}
TARGET = {"against": "roofline", "at_least": 0.92}  # issue #8: >= 92 % of the copy bandwidth


def flops(shape):
    return 8.0 * shape["rows"] * shape["cols"]  # max, sub, exp, fma; sub, exp, div


def bytes_moved(shape):
    return 2.0 * 4 * shape["rows"] * shape["cols"]  # compulsory: read once, write once
