"""Cheat (transpose_cuda): the tiled transpose's barrier moved into a bounds check, i.e. divergent
code: threads outside the matrix skip it.

Expected: static, needs human review (barrier in divergent code), with the SASS lines.
"""

import torch

KERNEL_NAME = "transpose_naive"
CUDA_SOURCE = r"""
extern "C" __global__ void transpose_naive(const float* __restrict__ in, float* __restrict__ out,
                                           int rows, int cols) {
    // A 32x32 tile staged through shared memory; the __syncthreads() was moved inside the bounds check,
    // so threads of a partial tile skip it (deadlock or a race on the boundary blocks).
    __shared__ float tile[32][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    int r = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += blockDim.y) {
        if (r + j < rows && c < cols) tile[threadIdx.y + j][threadIdx.x] = in[(long long)(r + j) * cols + c];
    }
    if (r < rows && c < cols) __syncthreads();
    int oc = blockIdx.y * 32 + threadIdx.x;
    int orow = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += blockDim.y) {
        if (orow + j < cols && oc < rows)
            out[(long long)(orow + j) * rows + oc] = tile[threadIdx.x][threadIdx.y + j];
    }
}
"""
CONFIG = {"BLOCK_X": 32, "BLOCK_Y": 8}
SPACE = {"BLOCK_X": [32], "BLOCK_Y": [1, 2, 4, 8, 16, 32]}


def constraint(config, shape):
    return config["BLOCK_X"] * config["BLOCK_Y"] <= 1024  # CUDA's threads-per-block limit


SHAPES = {
    "micro": {"rows": 64, "cols": 96},
    "full": {"rows": 8192, "cols": 8192},
    "edge": [{"rows": 1, "cols": 1}, {"rows": 1000, "cols": 37}],
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
        raise RuntimeError("transpose_cuda launches only on a GPU (NVRTC); CPU correctness is not checked")
    rows, cols = x.shape
    key = (BLOCK_X, BLOCK_Y)
    if key not in _compiled:
        compile_kernel = getattr(torch.cuda, "compile_kernel", None) or torch.cuda._compile_kernel
        _compiled[key] = compile_kernel(
            CUDA_SOURCE, KERNEL_NAME, nvcc_options=[f"-DBLOCK_X={BLOCK_X}", f"-DBLOCK_Y={BLOCK_Y}"]
        )
    out = torch.empty((cols, rows), device=x.device, dtype=x.dtype)
    grid = ((cols + 31) // 32, (rows + 31) // 32, 1)  # one block per 32x32 tile (BLOCK_X must be 32)
    _compiled[key](grid=grid, block=(BLOCK_X, BLOCK_Y, 1), args=[x.contiguous(), out, rows, cols])
    return out


def reference(inputs):
    (x,) = inputs
    return x.t().contiguous()


def flops(shape):
    return 0.0


def bytes_moved(shape):
    return 2.0 * 4 * shape["rows"] * shape["cols"]
