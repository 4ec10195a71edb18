"""L1: elementwise add of two fp32 vectors, z = x + y (memory bound: 12 bytes per FLOP).

Untuned start: 128-element blocks, 4 warps (each thread owns one element, no vector loads). The roofline
bound is the copy bandwidth: 3 x 256 MiB per call at the full shape.
"""

import torch
import triton
import triton.language as tl

LEVEL = "L1"


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


KERNELS = (add_kernel,)
CONFIG = {"BLOCK": 2048, "num_warps": 1, "num_stages": 1}
SPACE = {
    "BLOCK": [128, 256, 512, 1024, 2048, 4096, 8192],
    "num_warps": [1, 2, 4, 8, 16],
    "num_stages": [1, 2, 3],
}


def constraint(config, shape):
    return config["BLOCK"] >= 32 * config["num_warps"]  # every thread owns at least one element


SHAPES = {
    "micro": {"n": 4099},
    "full": {"n": 67_108_864},  # 2^26: 256 MiB per operand, far beyond the 60 MB L2
    "edge": [{"n": 1}, {"n": 100003}],  # 100003 is prime: never a multiple of BLOCK
}
DTYPE = "float32"
TOLERANCE = {"float32": [0.0, 0.0]}  # one IEEE add per element: bit-exact
PRECISION = "exact"


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    dtype = getattr(torch, shape.get("dtype", DTYPE))
    n = shape["n"]
    return (torch.randn(n, device=device, dtype=dtype), torch.randn(n, device=device, dtype=dtype))


def launch(inputs, BLOCK, num_warps, num_stages):
    x, y = inputs
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, BLOCK),)](
        x, y, out, n, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages
    )
    return out


def reference(inputs):
    x, y = inputs
    return x + y


def eager(inputs):
    x, y = inputs
    return x + y


BASELINES = {"eager": eager}
TARGET = {"against": "roofline", "at_least": 0.92}  # issue #8: >= 92 % of the copy bandwidth


def flops(shape):
    return float(shape["n"])


def bytes_moved(shape):
    return 3.0 * 4 * shape["n"]  # read x, y; write out
