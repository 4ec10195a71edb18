"""L1: ReLU of an fp32 tensor, y = max(x, 0): the purest bandwidth test (8 bytes per element, 1 FLOP).

Untuned start: 64-element blocks and 2 warps, i.e. a very fine grid of tiny programs (1M programs at the
full size); the optimizer should make blocks bigger.
"""

import torch
import triton
import triton.language as tl

LEVEL = "L1"


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, n_rows_total, ROWS: tl.constexpr):
    for row_in_program in tl.static_range(ROWS):
        pid = tl.program_id(0) * ROWS + row_in_program
        if pid < n_rows_total:
            offs = pid * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            x = tl.load(x_ptr + offs, mask=mask, other=0.0)
            tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


KERNELS = (relu_kernel,)
CONFIG = {"BLOCK": 64, "num_warps": 2, "num_stages": 1, "ROWS": 1}
SPACE = {
    "BLOCK": [64, 128, 256, 512, 1024, 2048, 4096, 8192],
    "num_warps": [1, 2, 4, 8, 16],
    "num_stages": [1, 2, 3],
    "ROWS": [1, 2, 4, 8],
}


def constraint(config, shape):
    return config["BLOCK"] >= 32 * config["num_warps"]


SHAPES = {
    "micro": {"n": 2053},
    "full": {"n": 67_108_864},  # 2^26: 256 MiB in, 256 MiB out
    "edge": [{"n": 1}, {"n": 65521}],  # 65521: the largest prime below 2^16
}
DTYPE = "float32"
TOLERANCE = {"float32": [0.0, 0.0]}  # a select: bit-exact
PRECISION = "exact"


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    dtype = getattr(torch, shape.get("dtype", DTYPE))
    return (torch.randn(shape["n"], device=device, dtype=dtype),)


def launch(inputs, BLOCK, num_warps, num_stages, ROWS=1):
    (x,) = inputs
    out = torch.empty_like(x)
    n = x.numel()
    relu_kernel[(triton.cdiv(triton.cdiv(n, BLOCK), ROWS),)](x, out, n, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages, n_rows_total=triton.cdiv(n, BLOCK), ROWS=ROWS)
    return out


def reference(inputs):
    (x,) = inputs
    return torch.relu(x)


def eager(inputs):
    (x,) = inputs
    return torch.relu(x)


BASELINES = {"eager": eager}
TARGET = {"against": "roofline", "at_least": 0.92}  # issue #8: >= 92 % of the copy bandwidth


def flops(shape):
    return float(shape["n"])


def bytes_moved(shape):
    return 2.0 * 4 * shape["n"]
