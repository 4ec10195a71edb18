"""TEST REFERENCE, not a suite task: benchmarks/tasks/l1_col_reduce.py
as it was at commit 7de0bf2, with the author-written SPLIT_M switch the suite no longer has.
tests/transforms/test_suite_variants.py checks that a transformation of the stripped task reproduces it.

L1: column sums of an fp32 matrix, out[j] = sum_i x[i, j] (a strided reduction).

Each program owns BLOCK_N adjacent columns and walks down the rows BLOCK_M at a time. Untuned start:
BLOCK_N = 1, so every program reads one column with a stride of `cols` elements: each 4-byte load pulls a
whole 32-byte sector (8x the compulsory traffic) and nothing coalesces. Wider column blocks fix it, but
they leave cdiv(cols, BLOCK_N) programs (32 at BLOCK_N 256) for 132 SMs: SPLIT_M > 1 also splits the rows
over SPLIT_M programs per column block, each writing a partial sum row, and a second small kernel adds
the SPLIT_M partials per column in a fixed order (deterministic, no atomics). SPLIT_M = 1 is the one-kernel
start: the program writes the output itself.
"""

import torch
import triton
import triton.language as tl

LEVEL = "L1"


@triton.jit
def col_sum_kernel(
    x_ptr, out_ptr, n_rows, n_cols, stride_x, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SPLIT_M: tl.constexpr
):
    pid = tl.program_id(0)
    split = tl.program_id(1)  # which of SPLIT_M row slices; out_ptr's row `split` gets its sum
    rows_per_split = tl.cdiv(tl.cdiv(n_rows, SPLIT_M), BLOCK_M) * BLOCK_M  # whole BLOCK_M steps
    cols = pid * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.arange(0, BLOCK_M)
    row_end = tl.minimum((split + 1) * rows_per_split, n_rows)
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for start in range(split * rows_per_split, row_end, BLOCK_M):
        r = start + rows
        ptrs = x_ptr + r[:, None].to(tl.int64) * stride_x + cols[None, :]
        acc += tl.load(ptrs, mask=(r[:, None] < row_end) & (cols[None, :] < n_cols), other=0.0).to(tl.float32)
    total = tl.sum(acc, axis=0)
    dst = out_ptr + split.to(tl.int64) * n_cols + cols
    tl.store(dst, total.to(out_ptr.dtype.element_ty), mask=cols < n_cols)


@triton.jit
def col_finish_kernel(part_ptr, out_ptr, n_split, n_cols, BLOCK: tl.constexpr):
    """out[j] = sum over s of part[s, j], s in increasing order."""
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for s in range(n_split):
        acc += tl.load(part_ptr + s * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=cols < n_cols)


KERNELS = (col_sum_kernel, col_finish_kernel)
CONFIG = {"BLOCK_M": 128, "BLOCK_N": 1, "num_warps": 4, "num_stages": 1, "SPLIT_M": 1}
# Narrower than the one-knob space of H200 runs 4-11 (BLOCK_M 1-4, BLOCK_N 4 and num_stages 3 left out)
# since SPLIT_M came in, so the whole space stays sweepable exhaustively (benchmarks/exhaustive.py).
SPACE = {
    "BLOCK_M": [8, 16, 32, 64, 128, 256],
    "BLOCK_N": [1, 16, 32, 64, 128, 256, 512],
    "num_warps": [1, 2, 4, 8],
    "num_stages": [1, 2],
    "SPLIT_M": [1, 8, 32],
}
FINISH_BLOCK = 256  # the partials' adder: 32 programs over 8192 columns, each reads SPLIT_M rows


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


def launch(inputs, BLOCK_M, BLOCK_N, num_warps, num_stages, SPLIT_M):
    (x,) = inputs
    rows, cols = x.shape
    out = torch.empty(cols, device=x.device, dtype=x.dtype)
    # A slice past the last row sums nothing and writes a row of zeros, so SPLIT_M partial rows always.
    part = out if SPLIT_M == 1 else torch.empty(SPLIT_M, cols, device=x.device, dtype=torch.float32)
    col_sum_kernel[(triton.cdiv(cols, BLOCK_N), SPLIT_M)](
        x,
        part,
        rows,
        cols,
        x.stride(0),
        BLOCK_M=BLOCK_M,
        BLOCK_N=BLOCK_N,
        SPLIT_M=SPLIT_M,
        num_warps=num_warps,
        num_stages=num_stages,
    )
    if SPLIT_M > 1:
        col_finish_kernel[(triton.cdiv(cols, FINISH_BLOCK),)](part, out, SPLIT_M, cols, BLOCK=FINISH_BLOCK)
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
