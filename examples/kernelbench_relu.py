"""A KernelBench problem file (level 1, "ReLU"), with a Triton candidate `ModelNew` in the same file.

KernelBench's contract: `Model` is the reference, `get_inputs()` the forward inputs (sizes fixed here),
`get_init_inputs()` the constructor arguments; a candidate is a `ModelNew` with the same interface.
The toolrunner's adapter (services/toolrunner/task_runtime.py) turns it into a task.
"""

import torch
import triton
import triton.language as tl

batch_size = 16
dim = 16384


class Model(torch.nn.Module):
    """Simple model that performs a ReLU activation."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []  # no special initialization inputs needed


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        block = 1024
        relu_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK=block, num_warps=4)
        return out
