"""A fresh straightforward Triton transpose for tiled_transpose: out = x^T, one program per row of x and
BLOCK of its columns. The load is contiguous; the store writes its BLOCK values `rows` elements apart
(one sector per lane)."""

import torch
import triton
import triton.language as tl


@triton.jit
def transpose_rows(x_ptr, y_ptr, rows, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < cols
    v = tl.load(x_ptr + row * cols + offs, mask=mask)
    tl.store(y_ptr + offs * rows + row, v, mask=mask)  # lanes `rows` elements apart


KERNELS = (transpose_rows,)
CONFIG = {"BLOCK": 128, "num_warps": 4, "num_stages": 1}
SPACE = {"BLOCK": [64, 128, 256], "num_warps": [2, 4, 8], "num_stages": [1]}
SHAPES = {
    "micro": {"rows": 50, "cols": 70},  # neither a multiple of a tile
    "full": {"rows": 8192, "cols": 8192},
    "edge": [{"rows": 1, "cols": 1}, {"rows": 37, "cols": 129}, {"rows": 64, "cols": 128}],
}
DTYPE = "float32"
TOLERANCE = {"float32": [0.0, 0.0]}  # a copy: bit-exact
PRECISION = "exact"


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    return (torch.randn(shape["rows"], shape["cols"], device=device),)


def launch(inputs, BLOCK, num_warps, num_stages):
    (x,) = inputs
    rows, cols = x.shape
    y = torch.empty((cols, rows), device=x.device, dtype=x.dtype)
    grid = (rows, triton.cdiv(cols, BLOCK))
    transpose_rows[grid](x, y, rows, cols, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return y


def reference(inputs):
    return inputs[0].t().contiguous()


def flops(shape):
    return 0.0


def bytes_moved(shape):
    return 8.0 * shape["rows"] * shape["cols"]
