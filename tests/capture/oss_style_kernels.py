"""A kernel module written the way installed Triton libraries write theirs (for test_capture_oss_style.py):
the kernel is imported by a program from a package module, not defined in it, and

- is wrapped in @triton.heuristics over @triton.autotune, whose config list is a comprehension over a module
  list with a keyword dict spread in (names of the decorators, not of the kernel);
- has a parameter `w` that shares its name with a module global (here a TypeVar, which cannot be copied);
- pins a float scalar's precision with `eps.to(tl.float32)` (compiled Triton passes floats as fp32 scalars;
  the interpreter hands over a Python float);
- calls `rsqrt` imported from triton.language.extra.libdevice (stubs under the interpreter) and a jit helper.
"""

from typing import TypeVar

import torch
import triton
import triton.language as tl
from triton.language.extra.libdevice import rsqrt

w = TypeVar("w")
WARPS = [1, 2, 4]
_TUNE = {"key": ["n"]}


@triton.jit
def _gate(x):
    return x * tl.sigmoid(x)


@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n"])})
@triton.autotune(configs=[triton.Config({}, num_warps=nw) for nw in WARPS], **_TUNE)
@triton.jit
def norm_gate_kernel(x_ptr, w, y_ptr, eps, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=mask, other=0.0).to(tl.float32)
    eps = eps.to(tl.float32)
    r = rsqrt(tl.sum(x * x, axis=0) / n + eps)
    g = tl.load(w + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * n + offs, _gate(x * r * g), mask=mask)


def norm_gate(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    y = torch.empty_like(x)
    norm_gate_kernel[(x.shape[0],)](x, weight, y, eps, x.shape[1])
    return y
