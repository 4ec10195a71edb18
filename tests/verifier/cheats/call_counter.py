"""Cheat (vector_add): does the work for the first 64 calls of a process (more than any correctness
or honesty run makes) and then returns the last answer it computed, so a timing loop of hundreds of calls
times nothing after its warm-up.

Expected: micro, stateful launch (a counter changes on every call)."""

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


_state = {"calls": 0, "last": None}


def launch(inputs, BLOCK, num_warps, num_stages):
    x, y = inputs
    _state["calls"] += 1
    if _state["calls"] > 64 and _state["last"] is not None and _state["last"].shape == x.shape:
        return _state["last"]
    _state["last"] = _add(x, y, torch.empty_like(x), BLOCK, num_warps, num_stages)
    return _state["last"]
