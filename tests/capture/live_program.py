"""A plain Triton program, not written for kernelpilot: scales a vector in a loop for a bounded time.

    python live_program.py SECONDS [DEVICE]
"""

import sys
import time

import torch
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * factor, mask=m)


def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    scale_kernel[(triton.cdiv(n, 256),)](x, out, n, factor, BLOCK=256)
    return out


if __name__ == "__main__":
    deadline = time.monotonic() + float(sys.argv[1])
    x = torch.randn(1000, device=sys.argv[2] if len(sys.argv) > 2 else "cpu")
    while time.monotonic() < deadline:
        y = scale(x, 2.0)
        time.sleep(0.02)  # the rest of the program's step
    print("ok", float(y.sum()))
