"""A fresh CUDA C++ task for the CUDA transformations: fp32 transpose through a BLOCK x BLOCK shared
tile, unpadded (a column read of the tile hits one bank 32 times) and without launch bounds."""

import torch

KERNEL_NAME = "transpose_tile"
CUDA_SOURCE = r"""
#ifndef BLOCK
#define BLOCK 32
#endif
#ifndef ROWS
#define ROWS 8
#endif
extern "C" __global__ void transpose_tile(const float* __restrict__ in, float* __restrict__ out,
                                          int rows, int cols) {
    __shared__ float tile[BLOCK][BLOCK];
    int c0 = blockIdx.x * BLOCK, r0 = blockIdx.y * BLOCK;
    for (int j = threadIdx.y; j < BLOCK; j += ROWS) {
        int r = r0 + j, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[j][threadIdx.x] = in[(long long)r * cols + c];
    }
    __syncthreads();
    for (int j = threadIdx.y; j < BLOCK; j += ROWS) {
        int oc = r0 + threadIdx.x, orow = c0 + j;
        if (orow < cols && oc < rows) out[(long long)orow * rows + oc] = tile[threadIdx.x][j];
    }
}
"""
CONFIG = {"BLOCK": 32, "ROWS": 8}
SPACE = {"BLOCK": [16, 32], "ROWS": [4, 8, 16]}
SHAPES = {"micro": {"rows": 64, "cols": 96}, "full": {"rows": 16384, "cols": 16384},
          "edge": [{"rows": 1, "cols": 1}, {"rows": 33, "cols": 4097}]}
DTYPE = "float32"
TOLERANCE = {"float32": [0.0, 0.0]}
PRECISION = "exact"
_compiled = {}


def make_inputs(shape, seed, device):
    torch.manual_seed(seed)
    return (torch.randn(shape["rows"], shape["cols"], device=device),)


def launch(inputs, BLOCK, ROWS):
    (x,) = inputs
    if x.device.type != "cuda":
        raise RuntimeError("transpose_tile_cuda launches only on a GPU (NVRTC); CPU correctness is not checked")
    rows, cols = x.shape
    if (BLOCK, ROWS) not in _compiled:
        compile_kernel = getattr(torch.cuda, "compile_kernel", None) or torch.cuda._compile_kernel
        _compiled[(BLOCK, ROWS)] = compile_kernel(CUDA_SOURCE, KERNEL_NAME,
                                                  nvcc_options=[f"-DBLOCK={BLOCK}", f"-DROWS={ROWS}"])
    out = torch.empty((cols, rows), device=x.device, dtype=x.dtype)
    grid = ((cols + BLOCK - 1) // BLOCK, (rows + BLOCK - 1) // BLOCK, 1)
    _compiled[(BLOCK, ROWS)](grid=grid, block=(BLOCK, ROWS, 1), args=[x.contiguous(), out, rows, cols])
    return out


def reference(inputs):
    return inputs[0].t().contiguous()


def flops(shape):
    return 0.0


def bytes_moved(shape):
    return 8.0 * shape["rows"] * shape["cols"]
