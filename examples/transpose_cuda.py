"""Naive fp32 matrix transpose in CUDA C++: reads are coalesced, writes stride by `rows` (uncoalesced).

A CUDA C++ task: CUDA_SOURCE + KERNEL_NAME instead of Triton kernels. CONFIG entries are the thread-block
shape; the compile tool also passes them to nvcc as -D<KEY>=<value> so a source may use them as
compile-time constants. `launch` compiles with NVRTC through torch and so runs only on a GPU; CPU
correctness is "not checked" for this task.
"""

import torch

KERNEL_NAME = "transpose_naive"
CUDA_SOURCE = r"""
extern "C" __global__ void transpose_naive(const float* __restrict__ in, float* __restrict__ out,
                                           int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) {
        out[(long long)c * rows + r] = in[(long long)r * cols + c];
    }
}
"""
CONFIG = {"BLOCK_X": 32, "BLOCK_Y": 8}
SPACE = {"BLOCK_X": [8, 16, 32, 64], "BLOCK_Y": [1, 2, 4, 8, 16, 32]}


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
    grid = ((cols + BLOCK_X - 1) // BLOCK_X, (rows + BLOCK_Y - 1) // BLOCK_Y, 1)
    _compiled[key](grid=grid, block=(BLOCK_X, BLOCK_Y, 1), args=[x.contiguous(), out, rows, cols])
    return out


def reference(inputs):
    (x,) = inputs
    return x.t().contiguous()


def flops(shape):
    return 0.0


def bytes_moved(shape):
    return 2.0 * 4 * shape["rows"] * shape["cols"]
