"""L1: LayerNorm over the last dim of an fp32 matrix with weight and bias, eps 1e-5.

One program per row, three naive passes over the row in BLOCK_N chunks (mean, variance, normalise), so
the row is read three times; for an 8192-wide fp32 row (32 KiB) the re-reads may hit L1/L2. Untuned
start: 128-wide chunks, 4 warps.
"""

import torch
import triton
import triton.language as tl

LEVEL = "L1"
EPS = 1e-5


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride_x, stride_out, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * stride_x
    out_row = out_ptr + row.to(tl.int64) * stride_out
    offs = tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        acc += tl.load(x_row + start + offs, mask=start + offs < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros((BLOCK_N,), tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + offs < n_cols
        x = tl.load(x_row + start + offs, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + offs < n_cols
        x = tl.load(x_row + start + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + start + offs, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + start + offs, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(out_row + start + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


KERNELS = (layer_norm_kernel,)
CONFIG = {"BLOCK_N": 128, "num_warps": 1, "num_stages": 1}
SPACE = {
    "BLOCK_N": [128, 256, 512, 1024, 2048, 4096, 8192],
    "num_warps": [1, 2, 4, 8, 16],
    "num_stages": [1, 2, 3],
}


def constraint(config, shape):
    return config["BLOCK_N"] >= 32 * config["num_warps"]


SHAPES = {
    "micro": {"rows": 19, "cols": 300},
    "full": {"rows": 16384, "cols": 8192},  # 512 MiB in, 512 MiB out
    "edge": [{"rows": 1, "cols": 1}, {"rows": 5, "cols": 4099}, {"rows": 67, "cols": 129}],
}
DTYPE = "float32"
# Two-pass fp32 variance against torch's Welford: differences grow with the row length (~1e-6 at 8192).
TOLERANCE = {"float32": [2e-5, 1e-5]}
PRECISION = "exact"


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    dtype = getattr(torch, shape.get("dtype", DTYPE))
    r, c = shape["rows"], shape["cols"]
    x = 2.0 * torch.randn(r, c, device=device, dtype=dtype) + 0.5
    w = torch.randn(c, device=device, dtype=dtype)
    b = torch.randn(c, device=device, dtype=dtype)
    return x, w, b


def launch(inputs, BLOCK_N, num_warps, num_stages):
    x, w, b = inputs
    out = torch.empty_like(x)
    layer_norm_kernel[(x.shape[0],)](
        x,
        w,
        b,
        out,
        x.shape[1],
        x.stride(0),
        out.stride(0),
        EPS,
        BLOCK_N=BLOCK_N,
        num_warps=num_warps,
        num_stages=num_stages,
    )
    return out


def reference(inputs):
    x, w, b = inputs
    return torch.nn.functional.layer_norm(x.float(), (x.shape[1],), w.float(), b.float(), EPS).to(x.dtype)


def eager(inputs):
    x, w, b = inputs
    return torch.nn.functional.layer_norm(x, (x.shape[1],), w, b, EPS)


BASELINES = {"eager": eager}
TARGET = {"against": "roofline", "at_least": 0.92}  # issue #8: >= 92 % of the copy bandwidth


def flops(shape):
    return 8.0 * shape["rows"] * shape["cols"]


def bytes_moved(shape):
    r, c = shape["rows"], shape["cols"]
    return 4.0 * (2 * r * c + 2 * c)  # x in, y out, weight and bias once
