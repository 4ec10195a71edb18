"""Corpus, second part (issue 22): a planted case and a clean counterpart for each pattern added then, kernels
derived from open-source projects (their origin in `origin`), and smells with no real cost.

Kinds (`Case.kind`, counted separately by the benchmarks): "seed" cases live in cases.py; here "planted"
(one planted bottleneck, written to show it), "clean" (its counterpart without it), "oss" (a kernel whose
structure follows a kernel of an open-source project, rewritten here, origin noted: never their code
verbatim), and "no_cost" (a smell the decomposer must name but whose cost is small: it must not be high).
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra import libdevice

from tests.decomposer.corpus.cases import E24, Case, _ew
from tests.decomposer.corpus.cases import matmul_kernel as _MATMUL

# ---------------------------------------------------------------- memory


@triton.jit
def running_store_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols0 = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + cols0
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        tl.store(out_ptr + row * BLOCK + cols0, acc)  # planted: the same addresses every iteration


@triton.jit
def partial_store_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols0 = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + cols0
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row * BLOCK + cols0, acc)


@triton.jit
def double_store_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x, mask=mask)  # planted: a leftover store the next one overwrites
    tl.store(out_ptr + offs, x * 2.0, mask=mask)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


@triton.jit
def roundtrip_kernel(x_ptr, tmp_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(tmp_ptr + offs, x * 2.0, mask=mask)  # planted: through global memory and back
    y = tl.load(tmp_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, y + 1.0, mask=mask)


@triton.jit
def scale_shift_kernel(x_ptr, tmp_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(x_ptr + offs, mask=mask) * 2.0
    tl.store(tmp_ptr + offs, y, mask=mask)
    tl.store(out_ptr + offs, y + 1.0, mask=mask)


@triton.jit
def chase_kernel(next_ptr, val_ptr, out_ptr, steps, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    idx = pid
    acc = 0.0
    for _ in range(steps):
        acc += tl.load(val_ptr + idx)  # planted: one scalar load per iteration, each waiting on the last
        idx = tl.load(next_ptr + idx)
    tl.store(out_ptr + pid, acc)


@triton.jit
def tile_sum_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def add_i64_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # no cost: 64-bit offsets (guarding > 2^31 elements) cost a few integer ops per element
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def tile_repeat_kernel(x_ptr, out_ptr, n, n_src, BLOCK: tl.constexpr):
    # no cost on a memory-bound copy: an integer remainder per element to wrap the source index
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs % n_src, mask=mask), mask=mask)


@triton.jit
def tile_repeat_2d_kernel(x_ptr, out_ptr, n_src, BLOCK: tl.constexpr):
    rep = tl.program_id(1)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_src
    tl.store(out_ptr + rep * n_src + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


# ---------------------------------------------------------------- tensor cores


@triton.jit
def matmul_kmask_kernel(
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
    # oss: the K loop of triton-lang/triton python/tutorials/03-matrix-multiplication.py masks the K tail
    # on every iteration (offs_k < K - k * BLOCK_SIZE_K); rewritten here with the corpus's arguments
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
    for k in range(tl.cdiv(K, BK)):
        a_t = tl.load(a, mask=rk[None, :] < K - k * BK, other=0.0)
        b_t = tl.load(b, mask=rk[:, None] < K - k * BK, other=0.0)
        acc += tl.dot(a_t, b_t)
        a += BK
        b += BK * sbk
    tl.store(c_ptr + rm[:, None] * scm + rn[None, :], acc.to(c_ptr.dtype.element_ty))


@triton.jit
def colsum_atomic_kernel(x_ptr, out_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    # split reduction: each program sums ROWS rows of a column block and adds its tile atomically
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    r0 = tl.program_id(1) * ROWS
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for r in range(ROWS):
        acc += tl.load(x_ptr + (r0 + r) * n_cols + cols)
    tl.atomic_add(out_ptr + cols, acc)  # planted: SPLIT programs per output tile


@triton.jit
def colsum_partial_kernel(x_ptr, out_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    r0 = tl.program_id(1) * ROWS
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for r in range(ROWS):
        acc += tl.load(x_ptr + (r0 + r) * n_cols + cols)
    tl.store(out_ptr + tl.program_id(1) * n_cols + cols, acc)  # partials, summed by a second pass


# ---------------------------------------------------------------- control and math


@triton.jit
def online_softmax_exp_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    # no cost: tl.exp lowers to ex2.approx after one multiply by log2(e); per-lane running max and sum,
    # reduced once after the loop (logsumexp of each row)
    row = tl.program_id(0)
    m = tl.full((BLOCK,), -float("inf"), dtype=tl.float32)
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    mx = tl.max(m, axis=0)
    tl.store(out_ptr + row, mx + tl.log(tl.sum(s * tl.exp(m - mx), axis=0)))


@triton.jit
def online_softmax_exp2_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    m = tl.full((BLOCK,), -float("inf"), dtype=tl.float32)
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf")) * 1.4426950408889634
        m_new = tl.maximum(m, x)
        s = s * tl.exp2(m - m_new) + tl.exp2(x - m_new)
        m = m_new
    mx = tl.max(m, axis=0)
    tl.store(out_ptr + row, (mx + tl.log2(tl.sum(s * tl.exp2(m - mx), axis=0))) * 0.6931471805599453)


@triton.jit
def norm_div_sqrt_kernel(x_ptr, out_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    # no cost on a memory-bound row: x / sqrt(var + eps) divides every element (precise division)
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / n_cols
    tl.store(out_ptr + row * stride + cols, d / tl.sqrt(var + eps), mask=mask)


@triton.jit
def norm_rsqrt_kernel(x_ptr, out_ptr, stride, n_cols, eps, BLOCK: tl.constexpr):
    # oss: the forward of triton-lang/triton python/tutorials/05-layer-norm.py scales by rstd computed once
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)
    tl.store(out_ptr + row * stride + cols, d * rstd, mask=mask)


@triton.jit
def tanh_loop_libdevice_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        acc += libdevice.tanh(x)  # planted: a libdevice call per element per iteration
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def tanh_loop_sigmoid_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        acc += 2.0 * tl.sigmoid(2.0 * x) - 1.0
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def barrier_loop_kernel(x_ptr, out_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * stride + cols, mask=cols < n_cols, other=0.0)
        tl.debug_barrier()  # planted: a CTA barrier every iteration, for nothing
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


@triton.jit
def dw_spin_lock_kernel(
    dy_ptr, x_ptr, dw_ptr, lock_ptr, stride, n_cols, GROUP: tl.constexpr, BLOCK: tl.constexpr
):
    # oss: the dW accumulation of triton-lang/triton python/tutorials/05-layer-norm.py
    # (_layer_norm_bwd_dx_fused): programs spin on tl.atomic_cas for a lock per group of rows
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    part = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0) * tl.load(
        x_ptr + row * stride + cols, mask=mask, other=0.0
    )
    lock = lock_ptr + row % GROUP
    dw = dw_ptr + (row % GROUP) * n_cols + cols
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    tl.store(dw, tl.load(dw, mask=mask) + part, mask=mask)
    tl.atomic_xchg(lock, 0)


@triton.jit
def dw_partial_kernel(
    dy_ptr, x_ptr, dw_ptr, lock_ptr, stride, n_cols, GROUP: tl.constexpr, BLOCK: tl.constexpr
):
    # the tutorial's other stage done without a lock: every row writes its own partial (summed by a
    # second kernel in fixed order)
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    part = tl.load(dy_ptr + row * stride + cols, mask=mask, other=0.0) * tl.load(
        x_ptr + row * stride + cols, mask=mask, other=0.0
    )
    tl.store(dw_ptr + row * n_cols + cols, part, mask=mask)


# ---------------------------------------------------------------- grid


@triton.jit
def small_tile_add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


_ROWS, _COLS = 16384, 4096
_F2 = {"x_ptr": "*fp32", "out_ptr": "*fp32"}
_MM = {"M": 4096, "N": 4096, "K": 4096, "sam": 4096, "sbk": 4096, "scm": 4096}
_BF = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16"}
_MMF, _MMB = 2.0 * 4096**3, 3.0 * 2 * 4096 * 4096
_ROW_BYTES = _ew(_ROWS * _COLS, 1)

MORE_CASES: tuple[Case, ...] = (
    Case(
        "store_in_loop",
        running_store_kernel,
        {**_F2, "stride": _COLS, "n_cols": _COLS},
        {"BLOCK": 1024},
        grid=(_ROWS,),
        flops=_ROWS * _COLS,
        bytes_moved=_ROW_BYTES,
        expect="store_in_loop_invariant_address",
        kind="planted",
    ),
    Case(
        "clean_store_after_loop",
        partial_store_kernel,
        {**_F2, "stride": _COLS, "n_cols": _COLS},
        {"BLOCK": 1024},
        grid=(_ROWS,),
        flops=_ROWS * _COLS,
        bytes_moved=_ROW_BYTES,
        kind="clean",
    ),
    Case(
        "double_store",
        double_store_kernel,
        {**_F2, "n": E24},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        flops=E24,
        bytes_moved=_ew(E24, 2),
        expect="redundant_global_store",
        kind="planted",
    ),
    Case(
        "clean_single_store",
        scale_kernel,
        {**_F2, "n": E24},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        flops=E24,
        bytes_moved=_ew(E24, 2),
        kind="clean",
    ),
    Case(
        "global_roundtrip",
        roundtrip_kernel,
        {**_F2, "tmp_ptr": "*fp32", "n": E24},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        flops=2 * E24,
        bytes_moved=_ew(E24, 3),
        expect="global_memory_round_trip",
        kind="planted",
    ),
    Case(
        "clean_registers_no_roundtrip",
        scale_shift_kernel,
        {**_F2, "tmp_ptr": "*fp32", "n": E24},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        flops=2 * E24,
        bytes_moved=_ew(E24, 3),
        kind="clean",
    ),
    Case(
        "pointer_chase",
        chase_kernel,
        {"next_ptr": "*i32", "val_ptr": "*fp32", "out_ptr": "*fp32", "steps": 1024},
        {"BLOCK": 1},
        num_warps=4,
        grid=(132 * 64,),
        flops=132 * 64 * 1024,
        bytes_moved=8.0 * 132 * 64 * 1024,
        expect="scalar_load_in_loop",
        kind="planted",
    ),
    Case(
        "clean_tile_sum",
        tile_sum_kernel,
        {**_F2, "stride": _COLS, "n_cols": _COLS},
        {"BLOCK": 1024},
        grid=(_ROWS,),
        flops=_ROWS * _COLS,
        bytes_moved=_ROW_BYTES,
        kind="clean",
    ),
    Case(
        "add_int64_offsets",
        add_i64_kernel,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": E24},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        flops=E24,
        bytes_moved=_ew(E24, 3),
        expect="int64_address_arithmetic",
        kind="no_cost",
    ),
    Case(
        "repeat_modulo",
        tile_repeat_kernel,
        {**_F2, "n": E24, "n_src": 1 << 20},
        {"BLOCK": 1024},
        grid=(E24 // 1024,),
        bytes_moved=_ew(E24, 1) + _ew(1 << 20, 1),
        expect="integer_modulo_in_address",
        kind="no_cost",
    ),
    Case(
        "clean_repeat_2d",
        tile_repeat_2d_kernel,
        {**_F2, "n_src": 1 << 20},
        {"BLOCK": 1024},
        grid=((1 << 20) // 1024, 16),
        bytes_moved=_ew(E24, 1) + _ew(1 << 20, 1),
        kind="clean",
    ),
    Case(
        "oss_tutorial_matmul_kmask",
        matmul_kmask_kernel,
        {**_BF, **_MM},
        {"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8},
        num_warps=8,
        num_stages=3,
        grid=((4096 // 128) ** 2,),
        flops=_MMF,
        bytes_moved=_MMB,
        expect="k_loop_masked_every_iteration",
        kind="oss",
        origin="triton-lang/triton python/tutorials/03-matrix-multiplication.py (matmul_kernel's K loop)",
    ),
    Case(
        "online_softmax_exp",
        online_softmax_exp_kernel,
        {**_F2, "stride": _COLS, "n_cols": _COLS},
        {"BLOCK": 1024},
        grid=(_ROWS,),
        flops=4.0 * _ROWS * _COLS,
        bytes_moved=_ROW_BYTES,
        expect="exp_instead_of_exp2",
        kind="no_cost",
    ),
    Case(
        "clean_online_softmax_exp2",
        online_softmax_exp2_kernel,
        {**_F2, "stride": _COLS, "n_cols": _COLS},
        {"BLOCK": 1024},
        grid=(_ROWS,),
        flops=4.0 * _ROWS * _COLS,
        bytes_moved=_ROW_BYTES,
        kind="clean",
    ),
    Case(
        "norm_div_sqrt",
        norm_div_sqrt_kernel,
        {**_F2, "stride": _COLS, "n_cols": _COLS, "eps": "fp32"},
        {"BLOCK": 4096},
        num_warps=8,
        grid=(_ROWS,),
        flops=5.0 * _ROWS * _COLS,
        bytes_moved=_ew(_ROWS * _COLS, 2),
        expect="division_by_sqrt_not_rsqrt",
        kind="no_cost",
    ),
    Case(
        "oss_tutorial_layernorm_rstd",
        norm_rsqrt_kernel,
        {**_F2, "stride": _COLS, "n_cols": _COLS, "eps": "fp32"},
        {"BLOCK": 4096},
        num_warps=8,
        grid=(_ROWS,),
        flops=5.0 * _ROWS * _COLS,
        bytes_moved=_ew(_ROWS * _COLS, 2),
        kind="oss",
        origin="triton-lang/triton python/tutorials/05-layer-norm.py (_layer_norm_fwd_fused: rstd once per row)",
    ),
    Case(
        "tanh_libdevice_loop",
        tanh_loop_libdevice_kernel,
        {**_F2, "stride": _COLS, "n_cols": _COLS},
        {"BLOCK": 1024},
        grid=(_ROWS,),
        flops=20.0 * _ROWS * _COLS,
        bytes_moved=_ROW_BYTES,
        expect="libdevice_call_in_loop",
        kind="planted",
    ),
    Case(
        "clean_tanh_sigmoid_loop",
        tanh_loop_sigmoid_kernel,
        {**_F2, "stride": _COLS, "n_cols": _COLS},
        {"BLOCK": 1024},
        grid=(_ROWS,),
        flops=20.0 * _ROWS * _COLS,
        bytes_moved=_ROW_BYTES,
        kind="clean",
    ),
    Case(
        "barrier_in_loop",
        barrier_loop_kernel,
        {**_F2, "stride": _COLS, "n_cols": _COLS},
        {"BLOCK": 1024},
        grid=(_ROWS,),
        flops=_ROWS * _COLS,
        bytes_moved=_ROW_BYTES,
        expect="barrier_in_loop",
        kind="planted",
    ),
    Case(
        "oss_tutorial_layernorm_dw_lock",
        dw_spin_lock_kernel,
        {
            "dy_ptr": "*fp32",
            "x_ptr": "*fp32",
            "dw_ptr": "*fp32",
            "lock_ptr": "*i32",
            "stride": _COLS,
            "n_cols": _COLS,
        },
        {"GROUP": 64, "BLOCK": 4096},
        num_warps=8,
        grid=(_ROWS,),
        flops=2.0 * _ROWS * _COLS,
        bytes_moved=_ew(_ROWS * _COLS, 2),
        expect="spin_lock_atomic_cas",
        kind="oss",
        origin="triton-lang/triton python/tutorials/05-layer-norm.py (_layer_norm_bwd_dx_fused's Lock)",
    ),
    Case(
        "clean_dw_partials",
        dw_partial_kernel,
        {
            "dy_ptr": "*fp32",
            "x_ptr": "*fp32",
            "dw_ptr": "*fp32",
            "lock_ptr": "*i32",
            "stride": _COLS,
            "n_cols": _COLS,
        },
        {"GROUP": 64, "BLOCK": 4096},
        num_warps=8,
        grid=(_ROWS,),
        flops=_ROWS * _COLS,
        bytes_moved=_ew(_ROWS * _COLS, 3),
        kind="clean",
    ),
    Case(
        "matmul_bk16",
        _MATMUL,
        {**_BF, **_MM},
        {"BM": 128, "BN": 128, "BK": 16, "GROUP_M": 8, "PREC": "tf32"},
        num_warps=8,
        num_stages=3,
        grid=((4096 // 128) ** 2,),
        flops=_MMF,
        bytes_moved=_MMB,
        expect="dot_k_tile_small",
        kind="planted",
    ),
    Case(
        "clean_matmul_bk64_4k",
        _MATMUL,
        {**_BF, **_MM},
        {"BM": 128, "BN": 128, "BK": 64, "GROUP_M": 8, "PREC": "tf32"},
        num_warps=8,
        num_stages=3,
        grid=((4096 // 128) ** 2,),
        flops=_MMF,
        bytes_moved=_MMB,
        kind="clean",
    ),
    Case(
        "colsum_atomic_split",
        colsum_atomic_kernel,
        {**_F2, "n_rows": 16384, "n_cols": 4096},
        {"ROWS": 256, "BLOCK": 1024},
        grid=(4, 64),
        flops=16384 * 4096,
        bytes_moved=_ew(16384 * 4096, 1),
        expect="atomic_output_accumulation",
        kind="planted",
    ),
    Case(
        "clean_colsum_partials",
        colsum_partial_kernel,
        {**_F2, "n_rows": 16384, "n_cols": 4096},
        {"ROWS": 256, "BLOCK": 1024},
        grid=(4, 64),
        flops=16384 * 4096,
        bytes_moved=_ew(16384 * 4096, 1),
        kind="clean",
    ),
    Case(
        "small_tile_add",
        small_tile_add_kernel,
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": E24},
        {"BLOCK": 128},
        num_warps=4,
        grid=(E24 // 128,),
        flops=E24,
        bytes_moved=_ew(E24, 3),
        expect="tiny_tile_per_program",
        kind="planted",
    ),
)
