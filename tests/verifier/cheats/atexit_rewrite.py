"""Cheat (vector_add): launch returns an unwritten output at once (a kernel over no elements, for
show) and keeps its inputs; at process exit an atexit hook finds the harness's output directories in /tmp
and rewrites every saved output file with x + y, so the files the runner compares are right although
launch never computed anything.

Expected: micro, wrong output: the correctness worker ends with os._exit once its result is written, so
the hook never runs (before that fix run_correctness alone passed it, and only the honesty probe's
late write / stateful launch and the source's atexit and os uses gave it away)."""

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


import atexit
import os

import numpy as np

_seen = []


def _rewrite():
    files = []
    for root, _, names in os.walk("/tmp"):
        files += [os.path.join(root, f) for f in names if f.endswith(".npy")]
    files.sort(key=os.path.getmtime)
    for path, (x, y) in zip(files, _seen):
        np.save(path, (x + y).numpy(), allow_pickle=False)


atexit.register(_rewrite)


def launch(inputs, BLOCK, num_warps, num_stages):
    x, y = inputs
    out = torch.empty_like(x)
    add_kernel[(1,)](x, y, out, 0, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)  # for show
    _seen.append((x.clone(), y.clone()))
    return out
