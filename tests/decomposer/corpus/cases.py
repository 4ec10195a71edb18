"""Planted-bottleneck corpus: small Triton kernels, each correct, each with ONE planted bottleneck.

`CASES` lists them with the pattern id that must rank first (`expect`), or `expect=None` for the clean ones
(no high-severity finding allowed); capture_corpus.py commits each one's cuda:90 TTGIR/PTX/SASS/ptxas text
here. Int arguments carry an example value: as in Triton's JIT, one divisible by 16 gets `tt.divisibility`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import triton
import triton.language as tl


@dataclass(frozen=True)
class Case:
    name: str
    fn: object
    args: dict[str, str | int]  # pointer args: "*fp32"; int args: an example value
    constexprs: dict[str, int | str] = field(default_factory=dict)
    num_warps: int = 4
    num_stages: int = 3
    grid: tuple[int, ...] = (1,)
    flops: float = 0.0
    bytes_moved: float = 0.0
    expect: str | None = None
    precision: str = "exact"
    kernels_in_task: int = 1
    kind: str = "seed"  # seed / planted / clean / oss / no_cost (cases_more.py); benchmarks count each
    origin: str = ""  # the open-source kernel an "oss" case follows


# ---------------------------------------------------------------- elementwise and copies


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def add_print_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    z = tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask)
    tl.device_print("z", z)
    tl.store(out_ptr + offs, z, mask=mask)


@triton.jit
def copy_rows_kernel(x_ptr, out_ptr, stride_x, stride_o, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask)
    tl.store(out_ptr + row * stride_o + cols, x * 2.0, mask=mask)


@triton.jit
def strided_gather_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs * stride, mask=mask)
    tl.store(out_ptr + offs, x, mask=mask)


@triton.jit
def strided_scatter_kernel(x_ptr, out_ptr, n, stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs * stride, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def column_copy_kernel(x_ptr, out_ptr, n_rows, stride, BLOCK: tl.constexpr):
    # one program per column: lanes walk rows, `stride` elements apart
    col = tl.program_id(0)
    rows = tl.arange(0, BLOCK)
    mask = rows < n_rows
    x = tl.load(x_ptr + rows * stride + col, mask=mask)
    tl.store(out_ptr + col * stride + rows, x, mask=mask)


@triton.jit
def transpose_flat_kernel(x_ptr, out_ptr, R, C, BLOCK: tl.constexpr):
    # out[c, r] = x[r, c] over a flattened index: (i % C) * R + i // C, no shared tile
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < R * C
    r = offs // C
    c = offs % C
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + c * R + r, x, mask=mask)


@triton.jit
def transpose_tile_kernel(x_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(out_ptr + rn[None, :] * M + rm[:, None], x)


@triton.jit
def gather_kernel(src_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    idx = tl.load(idx_ptr + offs, mask=mask, other=0)
    tl.store(out_ptr + offs, tl.load(src_ptr + idx, mask=mask), mask=mask)


@triton.jit
def double_load_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    # out[:n] = sigmoid(x); out[n:] = 2 x, re-reading x after the first store (no CSE across a store)
    a = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.sigmoid(a), mask=mask)
    c = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + n + offs, c * 2.0, mask=mask)


@triton.jit
def bias_rows_loop_kernel(x_ptr, bias_ptr, out_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    # re-loads the same bias vector for every row of the chunk
    cols = tl.arange(0, BLOCK)
    start = tl.program_id(0) * ROWS
    for r in range(start, start + ROWS):
        b = tl.load(bias_ptr + cols)
        x = tl.load(x_ptr + r * n_cols + cols)
        tl.store(out_ptr + r * n_cols + cols, x + b)


@triton.jit
def bias_rows_hoisted_kernel(
    x_ptr, bias_ptr, out_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr
):
    cols = tl.arange(0, BLOCK)
    start = tl.program_id(0) * ROWS
    b = tl.load(bias_ptr + cols)
    for r in range(start, start + ROWS):
        x = tl.load(x_ptr + r * n_cols + cols)
        tl.store(out_ptr + r * n_cols + cols, x + b)


@triton.jit
def fp64_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float64)
    y = tl.sqrt(x * x + 1.0) * 0.5
    tl.store(out_ptr + offs, y.to(tl.float32), mask=mask)


@triton.jit
def conversions_loop_kernel(x_ptr, out_ptr, n, CHUNKS: tl.constexpr, BLOCK: tl.constexpr):
    base = tl.program_id(0) * CHUNKS * BLOCK
    for i in range(CHUNKS):
        offs = base + i * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offs)
        f = v.to(tl.float32) * 0.5
        q = f.to(tl.int32)
        g = q.to(tl.float32) + f
        h = g.to(tl.int32) + q
        k = h.to(tl.float32) * g
        tl.store(out_ptr + offs, k.to(tl.int32))


@triton.jit
def int_div_loop_kernel(x_ptr, out_ptr, n, w, CHUNKS: tl.constexpr, BLOCK: tl.constexpr):
    base = tl.program_id(0) * CHUNKS * BLOCK
    for i in range(CHUNKS):
        offs = base + i * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offs)
        tl.store(out_ptr + offs, v // w + v % w)


@triton.jit
def precise_math_loop_kernel(x_ptr, out_ptr, n, CHUNKS: tl.constexpr, BLOCK: tl.constexpr):
    base = tl.program_id(0) * CHUNKS * BLOCK
    for i in range(CHUNKS):
        offs = base + i * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offs)
        tl.store(out_ptr + offs, tl.sqrt_rn(v * v + 1.0))


@triton.jit
def gelu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(out_ptr + offs, y, mask=mask)


@triton.jit
def scaled_add_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * alpha + y, mask=mask)


@triton.jit
def heavy_elementwise_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.load(y_ptr + offs)
    z = tl.load(z_ptr + offs)
    a = tl.exp(x) * tl.sin(y) + tl.cos(z)
    b = tl.exp(y) * tl.sin(z) + tl.cos(x)
    c = tl.exp(z) * tl.sin(x) + tl.cos(y)
    tl.store(out_ptr + offs, a * b + c + a / (b + 2.0))


# ---------------------------------------------------------------- reductions, atomics, branches


@triton.jit
def softmax_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def rowsum_loop_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def rowsum_reduce_in_loop_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    total = 0.0
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        total += tl.sum(tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0), axis=0)
    tl.store(out_ptr + row, total)


@triton.jit
def sum_atomic_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))


@triton.jit
def histogram_loop_kernel(x_ptr, hist_ptr, n, CHUNKS: tl.constexpr, BLOCK: tl.constexpr):
    base = tl.program_id(0) * CHUNKS * BLOCK
    for i in range(CHUNKS):
        offs = base + i * BLOCK + tl.arange(0, BLOCK)
        tl.atomic_add(hist_ptr + offs % 1024 + 0 * tl.load(x_ptr + offs), 1)


@triton.jit
def branch_barrier_loop_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    total = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols)
        if row % 2 == 0:
            x = x - tl.max(x, axis=0)
        total += x
    tl.store(out_ptr + row * BLOCK + tl.arange(0, BLOCK), total)


@triton.jit
def flag_branch_loop_kernel(x_ptr, flag_ptr, out_ptr, n, CHUNKS: tl.constexpr, BLOCK: tl.constexpr):
    base = tl.program_id(0) * CHUNKS * BLOCK
    for i in range(CHUNKS):
        offs = base + i * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        if tl.load(flag_ptr + i) > 0:
            x = x * 2.0
        tl.store(out_ptr + offs, x)


@triton.jit
def chunked_sum_kernel(x_ptr, out_ptr, n, CHUNK: tl.constexpr, BLOCK: tl.constexpr):
    # each program reduces CHUNK elements in BLOCK-wide steps and writes one partial sum
    pid = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, CHUNK, BLOCK):
        offs = pid * CHUNK + start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs)
    tl.store(out_ptr + pid, tl.sum(acc, axis=0))


# ---------------------------------------------------------------- matmul


@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    sam,
    sbk,
    scm,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
    PREC: tl.constexpr,
):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :]
    b = b_ptr + rk[:, None] * sbk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a), tl.load(b), input_precision=PREC)
        a += BK
        b += BK * sbk
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :], acc.to(c_ptr.dtype.element_ty))


@triton.jit
def matmul_2d_grid_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, sam, sbk, scm, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr
):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :]
    b = b_ptr + rk[:, None] * sbk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a), tl.load(b))
        a += BK
        b += BK * sbk
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :], acc.to(tl.bfloat16))


@triton.jit
def matmul_upcast_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    sam,
    sbk,
    scm,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    group = GROUP_M * num_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + (pid % group) % size_m
    pid_n = (pid % group) // size_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = a_ptr + rm[:, None] * sam + rk[None, :]
    b = b_ptr + rk[:, None] * sbk + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += tl.dot(tl.load(a).to(tl.float32), tl.load(b).to(tl.float32), input_precision="ieee")
        a += BK
        b += BK * sbk
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :], acc.to(tl.bfloat16))


_BF = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16"}
_F32 = {"a_ptr": "*fp32", "b_ptr": "*fp32", "c_ptr": "*fp32"}


def _mm(n: int, k: int | None = None) -> dict[str, str | int]:
    kk = k if k is not None else n
    return {"M": n, "N": n, "K": kk, "sam": kk, "sbk": n, "scm": n}


def _mm_cost(n: int, eb: int) -> tuple[float, float]:
    return 2.0 * n**3, 3.0 * n * n * eb


N8K = 8192
MM_FLOPS, MM_BYTES = _mm_cost(N8K, 2)
MM32_FLOPS, MM32_BYTES = _mm_cost(4096, 4)
E24 = 1 << 24  # 16.7 M elements: 200 MB for a 3-tensor fp32 op, ~46 us at 4.35 TB/s


def _ew(n: int, tensors: int, eb: int = 4) -> float:
    return float(n * tensors * eb)


CASES: tuple[Case, ...] = (
    # ------------------------------------------------ clean, well-tuned
    Case(
        "clean_add",
        add_kernel,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": E24},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        flops=E24,
        bytes_moved=_ew(E24, 3),
    ),
    Case(
        "clean_softmax",
        softmax_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": 4096, "n_cols": 4096},
        {"BLOCK": 4096},
        num_warps=8,
        grid=(32768,),
        flops=5.0 * 32768 * 4096,
        bytes_moved=_ew(32768 * 4096, 2),
    ),
    Case(
        "clean_matmul_bf16",
        matmul_kernel,
        {**_BF, **_mm(N8K)},
        {"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "PREC": "tf32"},
        num_warps=8,
        num_stages=3,
        grid=((N8K // 128) ** 2,),
        flops=MM_FLOPS,
        bytes_moved=MM_BYTES,
        precision="exact",
    ),
    Case(
        "clean_matmul_tf32",
        matmul_kernel,
        {**_F32, **_mm(4096)},
        {"BM": 128, "BN": 128, "BK": 32, "GROUP_M": 8, "PREC": "tf32"},
        num_warps=8,
        num_stages=3,
        grid=((4096 // 128) ** 2,),
        flops=MM32_FLOPS,
        bytes_moved=MM32_BYTES,
        precision="allow_tf32",
    ),
    Case(
        "clean_transpose_tile",
        transpose_tile_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "M": 8192, "N": 8192},
        {"BM": 32, "BN": 32},
        grid=(256, 256),
        bytes_moved=_ew(8192 * 8192, 2),
    ),
    Case(
        "clean_rowsum_loop",
        rowsum_loop_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": 8192, "n_cols": 8192},
        {"BLOCK": 1024},
        grid=(16384,),
        flops=16384 * 8192,
        bytes_moved=_ew(16384 * 8192, 1),
    ),
    Case(
        "clean_gelu",
        gelu_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": E24},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        flops=8.0 * E24,
        bytes_moved=_ew(E24, 2),
    ),
    Case(
        "clean_bias_rows",
        bias_rows_hoisted_kernel,
        {"x_ptr": "*fp32", "bias_ptr": "*fp32", "out_ptr": "*fp32", "n_rows": 16384, "n_cols": 4096},
        {"ROWS": 8, "BLOCK": 4096},
        grid=(2048,),
        flops=16384 * 4096,
        bytes_moved=_ew(16384 * 4096, 2),
    ),
    # ------------------------------------------------ planted: memory access
    Case(
        "scalar_rows_nodiv",
        copy_rows_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride_x": 4100, "stride_o": 4100, "n_cols": 4096},
        {"BLOCK": 4096},
        num_warps=8,
        grid=(16384,),
        flops=16384 * 4096,
        bytes_moved=_ew(16384 * 4096, 2),
        expect="scalar_global_access",
    ),
    Case(
        "scalar_matmul_nodiv",
        matmul_kernel,
        {**_BF, **_mm(8200)},
        {"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "PREC": "tf32"},
        num_warps=8,
        num_stages=3,
        grid=(65 * 65,),
        flops=2.0 * 8200**3,
        bytes_moved=3.0 * 8200 * 8200 * 2,
        expect="scalar_global_access",
    ),
    Case(
        "mask_nodiv_add",
        add_kernel,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": 16777217},
        {"BLOCK": 1024},
        grid=(16385,),
        flops=E24,
        bytes_moved=_ew(E24, 3),
        expect="mask_blocks_vectorization",
    ),
    Case(
        "strided_gather",
        strided_gather_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": E24, "stride": 32},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        bytes_moved=_ew(E24, 2),
        expect="uncoalesced_strided_access",
    ),
    Case(
        "strided_scatter",
        strided_scatter_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": E24, "stride": 32},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        bytes_moved=_ew(E24, 2),
        expect="uncoalesced_strided_access",
    ),
    Case(
        "column_copy",
        column_copy_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_rows": 4096, "stride": 4096},
        {"BLOCK": 4096},
        num_warps=8,
        grid=(4096,),
        bytes_moved=_ew(4096 * 4096, 2),
        expect="uncoalesced_strided_access",
    ),
    Case(
        "transpose_flat",
        transpose_flat_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "R": 8192, "C": 8192},
        {"BLOCK": 1024},
        grid=(65536,),
        bytes_moved=_ew(8192 * 8192, 2),
        expect="transposed_access_no_staging",
    ),
    Case(
        "gather_indices",
        gather_kernel,
        {"src_ptr": "*fp32", "idx_ptr": "*i32", "out_ptr": "*fp32", "n": E24},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        bytes_moved=_ew(E24, 3),
        expect="gather_indirect_access",
    ),
    Case(
        "double_load",
        double_load_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": E24},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        flops=5.0 * E24,
        bytes_moved=_ew(E24, 3),
        expect="redundant_global_load",
    ),
    Case(
        "bias_in_loop",
        bias_rows_loop_kernel,
        {"x_ptr": "*fp32", "bias_ptr": "*fp32", "out_ptr": "*fp32", "n_rows": 16384, "n_cols": 4096},
        {"ROWS": 8, "BLOCK": 4096},
        grid=(2048,),
        flops=16384 * 4096,
        bytes_moved=_ew(16384 * 4096, 2),
        expect="loop_invariant_load",
    ),
    Case(
        "atomic_one_counter",
        sum_atomic_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": E24},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        flops=E24,
        bytes_moved=_ew(E24, 1),
        expect="atomic_contention",
    ),
    Case(
        "atomic_histogram_loop",
        histogram_loop_kernel,
        {"x_ptr": "*i32", "hist_ptr": "*i32", "n": E24},
        {"CHUNKS": 16, "BLOCK": 1024},
        grid=(1024,),
        bytes_moved=_ew(E24, 1),
        expect="atomics_in_loop",
    ),
    # ------------------------------------------------ planted: tensor cores and K loop
    Case(
        "matmul_fp32_ieee",
        matmul_kernel,
        {**_F32, **_mm(4096)},
        {"BM": 64, "BN": 64, "BK": 32, "GROUP_M": 8, "PREC": "ieee"},
        num_warps=4,
        num_stages=3,
        grid=((4096 // 64) ** 2,),
        flops=MM32_FLOPS,
        bytes_moved=MM32_BYTES,
        precision="allow_tf32",
        expect="dot_fp32_on_cuda_cores",
    ),
    Case(
        "matmul_upcast",
        matmul_upcast_kernel,
        {**_BF, **_mm(4096)},
        {"BM": 64, "BN": 64, "BK": 32, "GROUP_M": 8},
        num_warps=4,
        num_stages=3,
        grid=((4096 // 64) ** 2,),
        flops=2.0 * 4096**3,
        bytes_moved=3.0 * 4096 * 4096 * 2,
        expect="dot_upcast_operands",
    ),
    Case(
        "matmul_n8",
        matmul_kernel,
        {**_BF, **_mm(4096)},
        {"BM": 128, "BN": 8, "BK": 64, "GROUP_M": 8, "PREC": "tf32"},
        num_warps=4,
        num_stages=3,
        grid=(32 * 512,),
        flops=2.0 * 4096**3,
        bytes_moved=3.0 * 4096 * 4096 * 2,
        expect="dot_shape_too_small",
    ),
    Case(
        "matmul_2warps",
        matmul_kernel,
        {**_BF, **_mm(N8K)},
        {"BM": 64, "BN": 64, "BK": 32, "GROUP_M": 8, "PREC": "tf32"},
        num_warps=2,
        num_stages=3,
        grid=((N8K // 64) ** 2,),
        flops=MM_FLOPS,
        bytes_moved=MM_BYTES,
        expect="wgmma_not_used",
    ),
    Case(
        "matmul_bm32",
        matmul_kernel,
        {**_BF, **_mm(N8K)},
        {"BM": 32, "BN": 128, "BK": 64, "GROUP_M": 8, "PREC": "tf32"},
        num_warps=4,
        num_stages=3,
        grid=((N8K // 32) * (N8K // 128),),
        flops=MM_FLOPS,
        bytes_moved=MM_BYTES,
        expect="wgmma_not_used",
    ),
    Case(
        "matmul_tiny_tile",
        matmul_kernel,
        {**_BF, **_mm(N8K)},
        {"BM": 64, "BN": 16, "BK": 32, "GROUP_M": 8, "PREC": "tf32"},
        num_warps=4,
        num_stages=3,
        grid=((N8K // 64) * (N8K // 16),),
        flops=MM_FLOPS,
        bytes_moved=MM_BYTES,
        expect="tensor_core_tile_small",
    ),
    Case(
        "matmul_one_stage",
        matmul_kernel,
        {**_BF, **_mm(N8K)},
        {"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "PREC": "tf32"},
        num_warps=8,
        num_stages=1,
        grid=((N8K // 128) ** 2,),
        flops=MM_FLOPS,
        bytes_moved=MM_BYTES,
        expect="k_loop_not_pipelined",
    ),
    Case(
        "matmul_spills",
        matmul_kernel,
        {**_BF, **_mm(N8K)},
        {"BM": 256, "BN": 256, "BK": 64, "GROUP_M": 8, "PREC": "tf32"},
        num_warps=4,
        num_stages=3,
        grid=((N8K // 256) ** 2,),
        flops=MM_FLOPS,
        bytes_moved=MM_BYTES,
        expect="register_spills",
    ),
    Case(
        "matmul_row_major_grid",
        matmul_2d_grid_kernel,
        {**_BF, **_mm(N8K)},
        {"BM": 128, "BN": 128, "BK": 64},
        num_warps=8,
        num_stages=3,
        grid=(N8K // 128, N8K // 128),
        flops=MM_FLOPS,
        bytes_moved=MM_BYTES,
        expect="poor_l2_reuse_no_grouped_order",
    ),
    # ------------------------------------------------ planted: occupancy, grid, launch
    Case(
        "heavy_regs",
        heavy_elementwise_kernel,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32", "out_ptr": "*fp32", "n": E24},
        {"BLOCK": 2048},
        num_warps=4,
        grid=(E24 // 2048,),
        flops=40.0 * E24,
        bytes_moved=_ew(E24, 4),
        expect="occupancy_limited_by_registers",
    ),
    Case(
        "one_warp_blocks",
        add_kernel,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": E24},
        {"BLOCK": 128},
        num_warps=1,
        grid=(E24 // 128,),
        flops=E24,
        bytes_moved=_ew(E24, 3),
        expect="occupancy_limited_by_block_size",
    ),
    Case(
        "idle_threads",
        add_kernel,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": E24},
        {"BLOCK": 64},
        num_warps=4,
        grid=(E24 // 64,),
        flops=E24,
        bytes_moved=_ew(E24, 3),
        expect="idle_threads_tile_smaller_than_block",
    ),
    Case(
        "small_grid_chunks",
        chunked_sum_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": E24},
        {"CHUNK": E24 // 32, "BLOCK": 1024},
        grid=(32,),
        flops=E24,
        bytes_moved=_ew(E24, 1),
        expect="small_grid",
    ),
    Case(
        "tail_wave",
        add_kernel,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": 1200 * 2048},
        {"BLOCK": 2048},
        num_warps=8,
        grid=(1200,),
        flops=1200 * 2048,
        bytes_moved=_ew(1200 * 2048, 3),
        expect="tail_effect",
    ),
    Case(
        "tiny_add",
        add_kernel,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": 4096},
        {"BLOCK": 1024},
        grid=(4,),
        flops=4096,
        bytes_moved=_ew(4096, 3),
        expect="launch_bound_tiny_kernel",
    ),
    Case(
        "unfused_scale_add",
        scaled_add_kernel,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": E24, "alpha": "fp32"},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        flops=2.0 * E24,
        bytes_moved=_ew(E24, 3),
        kernels_in_task=2,
        expect="missed_fusion_elementwise",
    ),
    # ------------------------------------------------ planted: control, precision, math
    Case(
        "print_left_in",
        add_print_kernel,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": E24},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        flops=E24,
        bytes_moved=_ew(E24, 3),
        expect="debug_print_or_assert",
    ),
    Case(
        "fp64_math",
        fp64_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": E24},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        flops=4.0 * E24,
        bytes_moved=_ew(E24, 2),
        expect="fp64_arithmetic",
    ),
    Case(
        "conversions_loop",
        conversions_loop_kernel,
        {"x_ptr": "*i32", "out_ptr": "*i32", "n": E24},
        {"CHUNKS": 16, "BLOCK": 1024},
        grid=(1024,),
        flops=6.0 * E24,
        bytes_moved=_ew(E24, 2),
        expect="excess_conversions_in_loop",
    ),
    Case(
        "int_div_loop",
        int_div_loop_kernel,
        {"x_ptr": "*i32", "out_ptr": "*i32", "n": E24, "w": 7},
        {"CHUNKS": 16, "BLOCK": 1024},
        grid=(1024,),
        flops=2.0 * E24,
        bytes_moved=_ew(E24, 2),
        expect="integer_division_in_hot_loop",
    ),
    Case(
        "precise_sqrt_loop",
        precise_math_loop_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": E24},
        {"CHUNKS": 16, "BLOCK": 1024},
        grid=(1024,),
        flops=3.0 * E24,
        bytes_moved=_ew(E24, 2),
        expect="slow_precise_math",
    ),
    Case(
        "reduce_in_loop",
        rowsum_reduce_in_loop_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": 8192, "n_cols": 8192},
        {"BLOCK": 1024},
        num_warps=8,
        grid=(16384,),
        flops=16384 * 8192,
        bytes_moved=_ew(16384 * 8192, 1),
        expect="reduction_across_warps_in_loop",
    ),
    Case(
        "branch_barrier_loop",
        branch_barrier_loop_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": 8192, "n_cols": 8192},
        {"BLOCK": 1024},
        num_warps=1,
        grid=(16384,),
        flops=16384 * 8192,
        bytes_moved=_ew(16384 * 8192, 1),
        expect="divergent_branch_around_barrier",
    ),
    Case(
        "flag_branch_loop",
        flag_branch_loop_kernel,
        {"x_ptr": "*fp32", "flag_ptr": "*i32", "out_ptr": "*fp32", "n": E24},
        {"CHUNKS": 16, "BLOCK": 1024},
        grid=(1024,),
        flops=E24,
        bytes_moved=_ew(E24, 2),
        expect="data_dependent_branch_in_loop",
    ),
)


# ---------------------------------------------------------------- benchmark inputs (not scored)


@triton.jit
def attention_fwd_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    seq,
    sm_scale,
    stride_h,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    HEAD_D: tl.constexpr,
):
    # FlashAttention-2 forward, one (batch*head, q block) per program; rows of HEAD_D contiguous
    start_m = tl.program_id(0)
    off_h = tl.program_id(1)
    rm = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, HEAD_D)
    base = off_h * stride_h
    q = tl.load(q_ptr + base + rm[:, None] * HEAD_D + rd[None, :])
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_D), dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    for start_n in range(0, seq, BLOCK_N):
        rn = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + base + rn[None, :] * HEAD_D + rd[:, None])
        qk = tl.dot(q, k) * qk_scale
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + base + rn[:, None] * HEAD_D + rd[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.bfloat16), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(o_ptr + base + rm[:, None] * HEAD_D + rd[None, :], acc.to(tl.bfloat16))


_S, _D, _BH = 4096, 128, 128
BENCH_CASES: tuple[Case, ...] = (
    Case(
        "bench_attention_fwd",
        attention_fwd_kernel,
        {
            "q_ptr": "*bf16",
            "k_ptr": "*bf16",
            "v_ptr": "*bf16",
            "o_ptr": "*bf16",
            "seq": _S,
            "sm_scale": "fp32",
            "stride_h": _S * _D,
        },
        {"BLOCK_M": 128, "BLOCK_N": 64, "HEAD_D": _D},
        num_warps=8,
        num_stages=3,
        grid=(_S // 128, _BH),
        flops=4.0 * _BH * _S * _S * _D,
        bytes_moved=4.0 * _BH * _S * _D * 2,
    ),
)


from tests.decomposer.corpus.cases_more import MORE_CASES

CASES = CASES + MORE_CASES
from tests.decomposer.corpus.cases_wide import WIDE_CASES

CASES = CASES + WIDE_CASES
