"""L1 (CUDA C++): fp32 matrix transpose out = in^T, the naive kernel (coalesced reads, strided writes).

A warp reads 32 consecutive floats of a row but writes them `rows` elements apart: 32 sectors per warp
store. Staging through a shared-memory tile is the planner's job (`kpilot transform ... cuda_tiled_transpose`);
until issue 20 this file carried a hand-written tiled path behind a USE_TILE switch.
CONFIG entries reach the source as -D macros (the compile tool and NVRTC alike). GPU only: CPU correctness
reports "not checked".
"""

import torch

LEVEL = "L1"
KERNEL_NAME = "transpose"
CUDA_SOURCE = r"""
#ifndef BLOCK_X
#define BLOCK_X 32
#endif
#ifndef BLOCK_Y
#define BLOCK_Y 8
#endif
extern "C" __global__ void transpose(const float* __restrict__ in, float* __restrict__ out,
                                     int rows, int cols) {
    int c = blockIdx.x * BLOCK_X + threadIdx.x;
    int r = blockIdx.y * BLOCK_Y + threadIdx.y;
    if (r < rows && c < cols) out[(long long)c * rows + r] = in[(long long)r * cols + c];
}
"""
CONFIG = {"BLOCK_X": 8, "BLOCK_Y": 8}
SPACE = {"BLOCK_X": [8, 16, 32, 64], "BLOCK_Y": [1, 2, 4, 8, 16, 32]}


def constraint(config, shape):
    return config["BLOCK_X"] * config["BLOCK_Y"] <= 1024  # CUDA's threads-per-block limit


SHAPES = {
    "micro": {"rows": 64, "cols": 96},
    "full": {"rows": 16384, "cols": 16384},  # 1 GiB in, 1 GiB out
    "edge": [{"rows": 1, "cols": 1}, {"rows": 1000, "cols": 37}, {"rows": 33, "cols": 4097}],
}
DTYPE = "float32"
TOLERANCE = {"float32": [0.0, 0.0]}  # a copy: bit-exact
PRECISION = "exact"

_compiled = {}


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    dtype = getattr(torch, shape.get("dtype", DTYPE))
    return (torch.randn(shape["rows"], shape["cols"], device=device, dtype=dtype),)


def launch(inputs, BLOCK_X, BLOCK_Y):
    (x,) = inputs
    if x.device.type != "cuda":
        raise RuntimeError("l1_transpose_cuda launches only on a GPU (NVRTC); CPU correctness is not checked")
    rows, cols = x.shape
    key = (BLOCK_X, BLOCK_Y)
    if key not in _compiled:
        compile_kernel = getattr(torch.cuda, "compile_kernel", None) or torch.cuda._compile_kernel
        _compiled[key] = compile_kernel(
            CUDA_SOURCE,
            KERNEL_NAME,
            nvcc_options=[f"-DBLOCK_X={BLOCK_X}", f"-DBLOCK_Y={BLOCK_Y}"],
        )
    out = torch.empty((cols, rows), device=x.device, dtype=x.dtype)
    grid = ((cols + BLOCK_X - 1) // BLOCK_X, (rows + BLOCK_Y - 1) // BLOCK_Y, 1)
    _compiled[key](grid=grid, block=(BLOCK_X, BLOCK_Y, 1), args=[x.contiguous(), out, rows, cols])
    return out


def reference(inputs):
    (x,) = inputs
    return x.t().contiguous()


def eager(inputs):
    (x,) = inputs
    return x.t().contiguous()


BASELINES = {"eager": eager}
TARGET = {"against": "roofline", "at_least": 0.92}  # issue #8: >= 92 % of the copy bandwidth


def flops(shape):
    return 0.0


def bytes_moved(shape):
    return 2.0 * 4 * shape["rows"] * shape["cols"]
