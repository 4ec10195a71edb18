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
