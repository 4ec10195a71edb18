"""Cheat (vector_add): launches the Triton kernel for show into a scratch buffer and returns torch's
x - (-y): the answer comes from torch, with ops other than the reference's aten.add, so "calls the
reference" does not see it and a Triton launch did happen.

Expected: micro, torch output (the output was computed by torch ops, not by a Triton kernel)."""

import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


KERNELS = (add_kernel,)
CONFIG = {"BLOCK": 128, "num_warps": 4, "num_stages": 1}
SPACE = {"BLOCK": [128, 256, 512, 1024, 2048, 4096], "num_warps": [1, 2, 4, 8, 16], "num_stages": [1, 2, 3]}
SHAPES = {"micro": {"n": 4099}, "full": {"n": 1 << 26}, "edge": [{"n": 1}, {"n": 100003}]}
DTYPE = "float32"
TOLERANCE = {"float32": [0.0, 0.0]}
PRECISION = "exact"


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    dtype = getattr(torch, shape.get("dtype", DTYPE))
    n = shape["n"]
    return (torch.randn(n, device=device, dtype=dtype), torch.randn(n, device=device, dtype=dtype))


def reference(inputs):
    x, y = inputs
    return x + y


def flops(shape):
    return float(shape["n"])


def bytes_moved(shape):
    return 3.0 * 4 * shape["n"]


def _add(x, y, out, BLOCK, num_warps, num_stages):
    n = x.numel()
    add_kernel[(triton.cdiv(n, BLOCK),)](
        x, y, out, n, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages
    )
    return out



def launch(inputs, BLOCK, num_warps, num_stages):
    x, y = inputs
    _add(x, y, torch.empty_like(x), BLOCK, num_warps, num_stages)  # for show
    return torch.sub(x, torch.neg(y))
