"""taskgen's pure parts: SPACE from observed constexprs and @triton.autotune configs, the grid formula."""

from __future__ import annotations

from services.kpilot.capture.records import ArgSpec, KernelRecord, KernelSource, Variant
from services.kpilot.capture.taskgen import _grid_code, _space


def _rec(autotune: list[dict]) -> KernelRecord:
    return KernelRecord(name="k", file="f.py", line=1, params=["x", "n", "BLOCK", "ACT"],
                        constexprs=["BLOCK", "ACT"], source=KernelSource(name="k", functions=[], preamble=[]),
                        autotune_configs=autotune)


def _var(grid: list[int]) -> Variant:
    return Variant(args=[ArgSpec(name="x", kind="tensor", shape=[1000], stride=[1], dtype="float32"),
                         ArgSpec(name="n", kind="scalar", value=1000),
                         ArgSpec(name="BLOCK", kind="constexpr", value=128),
                         ArgSpec(name="ACT", kind="constexpr", value=1)],
                   options={"num_warps": 4, "num_stages": 3}, grid=grid)


def test_space_brackets_block_sizes_keeps_flags_and_adds_autotune_values() -> None:
    config = {"BLOCK": 128, "ACT": 1, "num_warps": 4, "num_stages": 3}
    space = _space(_rec([{"BLOCK": 2048, "num_warps": 32}]), _var([8, 1, 1]), config)
    assert space["BLOCK"] == [32, 64, 128, 256, 512, 2048]
    assert space["ACT"] == [1]  # a flag, not a block size: fixed as observed
    assert space["num_warps"] == [1, 2, 4, 8, 16, 32] and space["num_stages"] == [1, 2, 3, 4]


def test_grid_dimension_that_is_cdiv_of_a_size_follows_the_block() -> None:
    config = {"BLOCK": 128, "ACT": 1, "num_warps": 4, "num_stages": 3}
    code = _grid_code(_var([8, 1, 1]), config)
    assert "triton.cdiv(1000, config['BLOCK'])" in code
    fixed = _grid_code(_var([37, 1, 1]), config)  # not cdiv(1000, 128): stays as captured
    assert "37" in fixed and "cdiv" not in fixed


ROW_KERNEL = '''def row_norm(X, Y, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(X + row * n_cols + cols, mask=cols < n_cols, other=0.0)
    tl.store(Y + row * n_cols + cols, x / tl.sum(x * x, axis=0), mask=cols < n_cols)
'''

LOOPED_KERNEL = '''def row_sum(X, Y, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    acc = 0.0
    for off in tl.range(0, n_cols, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        acc += tl.sum(tl.load(X + row * n_cols + cols, mask=cols < n_cols, other=0.0), axis=0)
    tl.store(Y + row, acc)
'''


def _row_case(source: str, n_cols: int, block: int) -> tuple[KernelRecord, Variant, dict]:
    rec = KernelRecord(name="k", file="f.py", line=1, params=["X", "Y", "n_cols", "BLOCK_SIZE"],
                       constexprs=["BLOCK_SIZE"],
                       source=KernelSource(name="k", functions=[("k", source)], preamble=[]))
    var = Variant(args=[ArgSpec(name="X", kind="tensor", shape=[64, n_cols], stride=[n_cols, 1], dtype="float16"),
                        ArgSpec(name="Y", kind="tensor", shape=[64, n_cols], stride=[n_cols, 1], dtype="float16"),
                        ArgSpec(name="n_cols", kind="scalar", value=n_cols),
                        ArgSpec(name="BLOCK_SIZE", kind="constexpr", value=block)],
                  options={"num_warps": 8, "num_stages": 3}, grid=[64, 1, 1])
    return rec, var, {"BLOCK_SIZE": block, "num_warps": 8, "num_stages": 3}


def test_a_block_that_spans_the_row_is_never_shrunk() -> None:
    """One program per row, the block sized to the row by the host (liger's rms_norm, swiglu): a smaller
    block drops the rest of the row (H200 run r46: candidates at BLOCK_SIZE 1024 and 2048 of a 4096 row
    failed correctness on nearly every element)."""
    assert _space(*_row_case(ROW_KERNEL, 11008, 16384))["BLOCK_SIZE"] == [16384, 32768]
    # the block equals the row's length: it is that size (fla's `D`), kept as captured
    assert _space(*_row_case(ROW_KERNEL, 4096, 4096))["BLOCK_SIZE"] == [4096]


def test_a_block_the_kernel_loops_by_may_shrink() -> None:
    assert _space(*_row_case(LOOPED_KERNEL, 4096, 1024))["BLOCK_SIZE"] == [256, 512, 1024, 2048, 4096]
