"""A fresh straightforward kernel for two_stage_reduce: the sum of a vector, each program adding its
block's partial sum to one fp32 counter with tl.atomic_add (the order of the adds changes every run)."""

import torch
import triton
import triton.language as tl


@triton.jit
def sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))  # every program: one address


KERNELS = (sum_kernel,)
CONFIG = {"BLOCK": 256, "num_warps": 4, "num_stages": 1}
SPACE = {"BLOCK": [256, 1024, 4096], "num_warps": [4, 8], "num_stages": [1]}
SHAPES = {"micro": {"n": 5000}, "full": {"n": 1 << 26}, "edge": [{"n": 1}, {"n": 257}]}
DTYPE = "float32"
TOLERANCE = {"float32": [1e-4, 1e-5]}  # a different summation order than torch's: a few ulp of the sum
PRECISION = "exact"


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    return (torch.randn(shape["n"], device=device),)


def launch(inputs, BLOCK, num_warps, num_stages):
    (x,) = inputs
    out = torch.zeros(1, device=x.device, dtype=torch.float32)
    grid = (triton.cdiv(x.numel(), BLOCK),)
    sum_kernel[grid](x, out, x.numel(), BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return out


def reference(inputs):
    return inputs[0].sum().reshape(1)


def flops(shape):
    return float(shape["n"])


def bytes_moved(shape):
    return 4.0 * shape["n"]
