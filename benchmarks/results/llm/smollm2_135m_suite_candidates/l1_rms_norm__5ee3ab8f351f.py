"""L1: RMSNorm of a bf16 matrix over its last dim, y = x / sqrt(mean(x^2) + eps) * w, fp32 math.

One program per row, two passes in BLOCK_N chunks (sum of squares, then scale). Untuned start: 128-wide
chunks with 4 warps, i.e. one 2-byte element per thread per load.
"""

import torch
import triton
import triton.language as tl

LEVEL = "L1"
EPS = 1e-6


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, out_ptr, n_cols, stride_x, stride_out, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * stride_x
    out_row = out_ptr + row.to(tl.int64) * stride_out
    offs = tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N,), tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        x = tl.load(x_row + start + offs, mask=start + offs < n_cols, other=0.0).to(tl.float32)
        acc += x * x
    rrms = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_N):
        mask = start + offs < n_cols
        x = tl.load(x_row + start + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + start + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + start + offs, (x * rrms * w).to(out_ptr.dtype.element_ty), mask=mask)


KERNELS = (rms_norm_kernel,)
CONFIG = {"BLOCK_N": 128, "num_warps": 1, "num_stages": 1}
SPACE = {
    "BLOCK_N": [128, 256, 512, 1024, 2048, 4096, 8192],
    "num_warps": [1, 2, 4, 8, 16],
    "num_stages": [1, 2, 3],
}


def constraint(config, shape):
    return config["BLOCK_N"] >= 32 * config["num_warps"]


SHAPES = {
    "micro": {"rows": 23, "cols": 272},
    "full": {"rows": 32768, "cols": 4096},  # Llama-7B hidden size; 256 MiB in, 256 MiB out
    "edge": [{"rows": 1, "cols": 1}, {"rows": 7, "cols": 5003}, {"rows": 130, "cols": 65}],
}
DTYPE = "bfloat16"
CPU_DTYPE = "float16"  # the interpreter cannot do bf16; fp16 in and out, the same fp32 math
# fp32 math with one rounding at the end: half an ulp of the output dtype (|y| up to ~4 * |w|).
TOLERANCE = {"bfloat16": [2e-2, 1e-2], "float16": [2e-3, 2e-3]}
PRECISION = "exact"


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    dtype = getattr(torch, shape.get("dtype", DTYPE))
    r, c = shape["rows"], shape["cols"]
    return torch.randn(r, c, device=device, dtype=dtype), torch.randn(c, device=device, dtype=dtype)


def launch(inputs, BLOCK_N, num_warps, num_stages):
    x, w = inputs
    out = torch.empty_like(x)
    rms_norm_kernel[(x.shape[0],)](
        x,
        w,
        out,
        x.shape[1],
        x.stride(0),
        out.stride(0),
        EPS,
        BLOCK_N=BLOCK_N,
        num_warps=num_warps,
        num_stages=num_stages,
    )
    return out


def reference(inputs):
    x, w = inputs
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(dim=1, keepdim=True) + EPS) * w.float()).to(x.dtype)


def eager(inputs):
    x, w = inputs
    return torch.nn.functional.rms_norm(x, (x.shape[1],), w, EPS)


BASELINES = {"eager": eager}
TARGET = {"against": "roofline", "at_least": 0.92}  # issue #8: >= 92 % of the copy bandwidth


def flops(shape):
    return 4.0 * shape["rows"] * shape["cols"]


def bytes_moved(shape):
    r, c = shape["rows"], shape["cols"]
    return 2.0 * (2 * r * c + c)
