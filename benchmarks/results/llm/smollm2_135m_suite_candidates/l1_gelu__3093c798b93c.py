"""L1: exact (erf) GELU of a bf16 tensor, y = x * (1 + erf(x / sqrt 2)) / 2, computed in fp32.

Memory bound (2 bytes in, 2 out per element). Untuned start: 256-element blocks, 8 warps, so each thread
holds one bf16 element and issues 2-byte loads; the optimizer should widen the per-thread vector.
"""

import torch
import triton
import triton.language as tl

LEVEL = "L1"


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = 0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))  # 1 / sqrt(2)
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


KERNELS = (gelu_kernel,)
CONFIG = {"BLOCK": 256, "num_warps": 16, "num_stages": 1}
SPACE = {
    "BLOCK": [256, 512, 1024, 2048, 4096, 8192],
    "num_warps": [1, 2, 4, 8, 16],
    "num_stages": [1, 2, 3],
}


def constraint(config, shape):
    return config["BLOCK"] >= 32 * config["num_warps"]


SHAPES = {
    "micro": {"n": 3001},
    "full": {"n": 268_435_456},  # 2^28: 512 MiB of bf16 in, 512 MiB out
    "edge": [{"n": 1}, {"n": 65537}],  # 65537 = 2^16 + 1, prime
}
DTYPE = "bfloat16"
CPU_DTYPE = "float16"  # Triton's interpreter cannot do bf16 arithmetic; fp16 inputs, same fp32 math
# fp32 math, one rounding to the output dtype: half an ulp (bf16 2^-9, fp16 2^-12 relative) plus the
# erf approximation's few fp32 ulp.
TOLERANCE = {"bfloat16": [1e-2, 8e-3], "float16": [1e-3, 1e-3]}
PRECISION = "exact"


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    dtype = getattr(torch, shape.get("dtype", DTYPE))
    return (3.0 * torch.randn(shape["n"], device=device, dtype=dtype),)


def launch(inputs, BLOCK, num_warps, num_stages):
    (x,) = inputs
    out = torch.empty_like(x)
    n = x.numel()
    gelu_kernel[(triton.cdiv(n, BLOCK),)](x, out, n, BLOCK=BLOCK, num_warps=num_warps, num_stages=num_stages)
    return out


def reference(inputs):
    (x,) = inputs
    return torch.nn.functional.gelu(x.float()).to(x.dtype)


def eager(inputs):
    (x,) = inputs
    return torch.nn.functional.gelu(x)


BASELINES = {"eager": eager}
TARGET = {"against": "roofline", "at_least": 0.92}  # issue #8: >= 92 % of the copy bandwidth


def flops(shape):
    return 8.0 * shape["n"]  # mul, erf (counted as ~4), add, 2 mul


def bytes_moved(shape):
    return 2.0 * 2 * shape["n"]
