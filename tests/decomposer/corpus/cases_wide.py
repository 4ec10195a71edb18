"""Corpus, third part (issue 22, library 60 -> 80): a planted case and a clean twin for each Triton pattern
added then; kinds and fields as in cases_more.py."""

from __future__ import annotations

import triton
import triton.language as tl

from tests.decomposer.corpus.cases import E24, Case, _ew

ROWS, COLS = 16384, 1024


@triton.jit
def rowmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr, OTHER: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    if OTHER:
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    else:
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols)  # planted: masked lanes undefined
    tl.store(out_ptr + row, tl.max(x, axis=0))


@triton.jit
def naive_softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x)  # planted: no max subtracted, exp overflows for logits above 88
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def add_bf16_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x + y).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def matmul_acc_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, ACC16: tl.constexpr
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    if ACC16:
        acc = tl.zeros((BM, BN), dtype=tl.float16)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _k in range(0, K, BK):
        if ACC16:
            acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc, out_dtype=tl.float16)  # planted: fp16 acc
        else:
            acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


@triton.jit
def accumulate_into_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, RELAXED: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    if RELAXED:
        tl.atomic_add(out_ptr + offs, x, mask=offs < n, sem="relaxed")
    else:
        tl.atomic_add(out_ptr + offs, x, mask=offs < n)  # planted: acq_rel ordering for a plain y += x


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr, UPCAST: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    if UPCAST:
        x = x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(x, axis=0).to(tl.float32))  # planted (no UPCAST): a bf16 sum


@triton.jit
def scale_div_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr, RECIP: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if RECIP:
        y = x * (1.0 / scale)
    else:
        y = x / scale  # planted: a division per element by one run-time scalar
    tl.store(out_ptr + offs, y, mask=mask)


_ROWS = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n_cols": COLS}
_MM = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 4096, "N": 4096, "K": 4096}

WIDE_CASES: tuple[Case, ...] = (
    Case(
        "rowmax_no_other",
        rowmax_kernel,
        _ROWS,
        {"BLOCK": 1024, "OTHER": 0},
        grid=(ROWS,),
        flops=ROWS * COLS,
        bytes_moved=_ew(ROWS * COLS, 1),
        expect="masked_load_without_other_into_reduction",
        kind="planted",
    ),
    Case(
        "clean_rowmax_other",
        rowmax_kernel,
        _ROWS,
        {"BLOCK": 1024, "OTHER": 1},
        grid=(ROWS,),
        flops=ROWS * COLS,
        bytes_moved=_ew(ROWS * COLS, 1),
        kind="clean",
    ),
    Case(
        "softmax_no_max_shift",
        naive_softmax_kernel,
        _ROWS,
        {"BLOCK": 1024},
        grid=(ROWS,),
        flops=4 * ROWS * COLS,
        bytes_moved=_ew(ROWS * COLS, 2),
        expect="exp_without_max_subtraction",
        kind="planted",
    ),
    Case(
        "add_bf16_fp32_out",
        add_bf16_kernel,
        {"x_ptr": "*bf16", "y_ptr": "*bf16", "out_ptr": "*fp32", "n": E24},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        flops=E24,
        bytes_moved=8.0 * E24,
        expect="store_wider_than_inputs",
        kind="planted",
    ),
    Case(
        "clean_add_bf16",
        add_bf16_kernel,
        {"x_ptr": "*bf16", "y_ptr": "*bf16", "out_ptr": "*bf16", "n": E24},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        flops=E24,
        bytes_moved=6.0 * E24,
        kind="clean",
    ),
    Case(
        "matmul_fp16_acc",
        matmul_acc_kernel,
        _MM,
        {"BM": 128, "BN": 128, "BK": 64, "ACC16": 1},
        num_warps=8,
        grid=(32, 32),
        flops=2.0 * 4096**3,
        bytes_moved=3 * 2.0 * 4096**2,
        expect="dot_accumulator_low_precision",
        kind="planted",
    ),
    Case(
        "clean_matmul_fp32_acc",
        matmul_acc_kernel,
        _MM,
        {"BM": 128, "BN": 128, "BK": 64, "ACC16": 0},
        num_warps=8,
        grid=(32, 32),
        flops=2.0 * 4096**3,
        bytes_moved=3 * 2.0 * 4096**2,
        kind="clean",
    ),
    Case(
        "accumulate_acq_rel",
        accumulate_into_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": E24},
        {"BLOCK": 4096, "RELAXED": 0},
        grid=(E24 // 4096,),
        flops=E24,
        bytes_moved=_ew(E24, 1),
        expect="atomic_stronger_ordering_than_needed",
        kind="no_cost",
    ),
    Case(
        "clean_accumulate_relaxed",
        accumulate_into_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": E24},
        {"BLOCK": 4096, "RELAXED": 1},
        grid=(E24 // 4096,),
        flops=E24,
        bytes_moved=_ew(E24, 1),
        kind="clean",
    ),
    Case(
        "rowsum_bf16",
        rowsum_kernel,
        {**_ROWS, "x_ptr": "*bf16"},
        {"BLOCK": 1024, "UPCAST": 0},
        grid=(ROWS,),
        flops=ROWS * COLS,
        bytes_moved=2.0 * ROWS * COLS,
        expect="reduction_in_half_precision",
        kind="planted",
    ),
    Case(
        "clean_rowsum_bf16_fp32",
        rowsum_kernel,
        {**_ROWS, "x_ptr": "*bf16"},
        {"BLOCK": 1024, "UPCAST": 1},
        grid=(ROWS,),
        flops=ROWS * COLS,
        bytes_moved=2.0 * ROWS * COLS,
        kind="clean",
    ),
    Case(
        "scale_div_scalar",
        scale_div_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": E24, "scale": "fp32"},
        {"BLOCK": 1024, "RECIP": 0},
        grid=(E24 // 1024,),
        flops=E24,
        bytes_moved=_ew(E24, 2),
        expect="division_by_runtime_scalar",
        kind="no_cost",
    ),
    Case(
        "clean_scale_reciprocal",
        scale_div_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": E24, "scale": "fp32"},
        {"BLOCK": 1024, "RECIP": 1},
        grid=(E24 // 1024,),
        flops=E24,
        bytes_moved=_ew(E24, 2),
        kind="clean",
    ),
)


@triton.jit
def rownorm_rowmask_kernel(x_ptr, out_ptr, M, N: tl.constexpr, W: tl.constexpr):
    # the row mask is constant along the reduced axis: a masked-off row's garbage stays in that row,
    # which the store masks too (no `other=` needed)
    rows = tl.program_id(0) * W + tl.arange(0, W)
    x = tl.load(x_ptr + rows[:, None] * N + tl.arange(0, N)[None, :], mask=rows[:, None] < M)
    tl.store(out_ptr + rows, tl.sqrt(tl.sum(x * x, axis=1) / N), mask=rows < M)


WIDE_CASES = WIDE_CASES + (
    Case(
        "clean_rownorm_rowmask",
        rownorm_rowmask_kernel,
        {"x_ptr": "*fp32", "out_ptr": "*fp32", "M": ROWS},
        {"N": 1024, "W": 4},
        grid=(ROWS // 4,),
        flops=2 * ROWS * 1024,
        bytes_moved=_ew(ROWS * 1024, 1),
        kind="clean",
    ),
)
