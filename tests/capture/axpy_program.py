"""A plain in-place Triton call: y = a * x + y passed as axpy(x, y, y): the same tensor as input and output."""

import torch
import triton
import triton.language as tl


@triton.jit
def axpy(x_ptr, y_ptr, out_ptr, n, a, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, a * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


x = torch.randn(5000)
y = torch.randn(5000)
axpy[(triton.cdiv(5000, 512),)](x, y, y, 5000, 2.0, BLOCK=512)  # in place: y = 2x + y

print("ok")
