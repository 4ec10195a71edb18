"""L1: column sums of an fp32 matrix, out[j] = sum_i x[i, j] (a strided reduction).

Each program owns BLOCK_N adjacent columns and walks down the rows BLOCK_M at a time. Untuned start:
BLOCK_N = 1, so every program reads one column with a stride of `cols` elements: each 4-byte load pulls a
whole 32-byte sector (8x the compulsory traffic) and nothing coalesces. Wider column blocks fix it, but
they leave cdiv(cols, BLOCK_N) programs (32 at BLOCK_N 256) for 132 SMs. Splitting the rows over more
programs is the planner's job (the split_k transformation: partial rows summed in a fixed order), not a
switch of this file.
"""

import torch
import triton
import triton.language as tl

LEVEL = "L1"


@triton.jit
def col_sum_kernel(x_ptr, out_ptr, n_rows, n_cols, stride_x, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, n_programs_total, PROGRAMS: tl.constexpr):
    for program_item in tl.range(tl.program_id(0), n_programs_total, tl.num_programs(0)):
        pid = program_item
        cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
        rows = tl.arange(0, BLOCK_M)
        set_num_warps
        for start in range(0, n_rows, BLOCK_M):
            r = start + rows
            ptrs = x_ptr + r[:, None].to(tl.int64) * stride_x + cols[None, :]
            acc += tl.load(ptrs, mask=(r[:, None] < n_rows) & (cols[None, :] < n_cols), other=0.0).to(tl.float32)
        total = tl.sum(acc, axis=0)
        tl.store(out_ptr + cols, total.to(out_ptr.dtype.element_ty), mask=cols < n_cols)


KERNELS = (col_sum_kernel,)
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 1, "num_warps": 1, "num_stages": 1, "PROGRAMS": 528}
# Narrower than the space of H200 runs 4-11 (BLOCK_M 1-4, BLOCK_N 4 and num_stages 3 left out), as in runs
# 12 on, so the whole space stays sweepable exhaustively (benchmarks/exhaustive.py).
SPACE = {
    "BLOCK_M": [8, 16, 32, 64, 128, 256],
    "BLOCK_N": [1, 16, 32, 64, 128, 256, 512],
    "num_warps": [1, 2, 4, 8],
    "num_stages": [1, 2],
    "PROGRAMS": [132, 264, 528],
}


def constraint(config, shape):
    tile = config["BLOCK_M"] * config["BLOCK_N"]
    # One element per thread at least, and at most 64 fp32 accumulators per thread (register budget).
    return 32 * config["num_warps"] <= tile <= 64 * 32 * config["num_warps"]


SHAPES = {
    "micro": {"rows": 300, "cols": 37},
    "full": {"rows": 16384, "cols": 8192},  # 512 MiB read, 32 KiB written
    "edge": [{"rows": 1, "cols": 1}, {"rows": 1001, "cols": 3}, {"rows": 2, "cols": 257}],
}
DTYPE = "float32"
# Sums of up to 16384 N(0,1) values in a different order than torch: error ~ sqrt(n) * ulp * |partial|.
TOLERANCE = {"float32": [1e-3, 1e-5]}
PRECISION = "exact"


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    dtype = getattr(torch, shape.get("dtype", DTYPE))
    return (torch.randn(shape["rows"], shape["cols"], device=device, dtype=dtype),)


def launch(inputs, BLOCK_M, BLOCK_N, num_warps, num_stages, PROGRAMS=528):
    (x,) = inputs
    rows, cols = x.shape
    out = torch.empty(cols, device=x.device, dtype=x.dtype)
    col_sum_kernel[(min(triton.cdiv(cols, BLOCK_N), PROGRAMS),)](
        x,
        out,
        rows,
        cols,
        x.stride(0),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        num_warps=num_warps,
        num_stages=num_stages,
        n_programs_total=triton.cdiv(cols, BLOCK_N),
        PROGRAMS=PROGRAMS,
    )
    return out


def reference(inputs):
    (x,) = inputs
    return x.double().sum(dim=0).to(x.dtype)


def eager(inputs):
    (x,) = inputs
    return x.sum(dim=0)


BASELINES = {"eager": eager}
TARGET = {"against": "roofline", "at_least": 0.92}  # issue #8: >= 92 % of the copy bandwidth


def flops(shape):
    return float(shape["rows"] * shape["cols"])


def bytes_moved(shape):
    return 4.0 * (shape["rows"] * shape["cols"] + shape["cols"])
