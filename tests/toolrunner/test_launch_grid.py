"""launch_grid on CPU: the task's own launch() on meta-device inputs, the grid recorded, no kernel run.

Each expected count is the task's launch formula worked by hand at its full shape (in the comments).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from services.planner.search import programs_from
from services.toolrunner.tool import ToolFailure
from services.toolrunner.tools.launch_grid.spec import run
from shared.tools.grid import MAX_CONFIGS, LaunchGridInput
from shared.transforms.base import Refused

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "benchmarks" / "tasks"


def test_col_reduce_programs_follow_its_column_block() -> None:
    # cdiv(cols, BLOCK_N) programs, cols = 8192: the start (BLOCK_N 1) runs 8192; BLOCK_N 256 leaves 32 for
    # 132 SMs, which the planner's shape model (one program per row: 16384) could not see.
    configs = [{}, {"BLOCK_M": 8, "BLOCK_N": 256, "num_warps": 1}]
    out = run(LaunchGridInput(task_path=str(TASKS / "l1_col_reduce.py"), configs=configs))
    assert [r.grids for r in out.results] == [[[8192, 1, 1]], [[32, 1, 1]]]
    assert out.shape == {"rows": 16384, "cols": 8192}


def test_a_helper_launch_after_the_primary_kernel_does_not_stand_for_its_grid() -> None:
    # TEST INPUT: l1_col_reduce as it was with its SPLIT_M switch (tests/transforms/tasks/, recorded at
    # 7de0bf2): SPLIT_M 8 runs 32 x 8 partial sums, then the adder: cdiv(8192, FINISH_BLOCK 256) = 32.
    task = ROOT / "tests" / "transforms" / "tasks" / "removed_l1_col_reduce_split_m.py"
    configs = [{}, {"BLOCK_M": 8, "BLOCK_N": 256, "num_warps": 1}, {"BLOCK_M": 8, "BLOCK_N": 256, "SPLIT_M": 8}]
    out = run(LaunchGridInput(task_path=str(task), configs=configs))
    assert [r.grids for r in out.results] == [[[8192, 1, 1]], [[32, 1, 1]], [[32, 8, 1], [32, 1, 1]]]
    assert out.results[2].kernels == ["col_sum_kernel", "col_finish_kernel"]
    start = {"BLOCK_M": 128, "BLOCK_N": 1, "num_warps": 4, "num_stages": 1, "SPLIT_M": 1}
    full = [start, start | configs[1], start | configs[2]]
    assert sorted(programs_from(full, out.results).values()) == [32, 32, 8192]  # the adder's 32 stands in
    got = programs_from(full, out.results, primary="col_sum_kernel")
    assert sorted(got.values()) == [32, 256, 8192]  # the partial sums' own grid


def test_bmm_counts_every_batch_and_the_micro_shape_is_asked_for_by_name() -> None:
    # 64 batches x cdiv(1024, 64) x cdiv(1024, 128) = 64 x 16 x 8 = 8192 at the full shape.
    cfg = {"BLOCK_M": 64, "BLOCK_N": 128}
    full = run(LaunchGridInput(task_path=str(TASKS / "l2_bmm.py"), configs=[cfg]))
    assert full.results[0].programs == [8192]
    micro = run(LaunchGridInput(task_path=str(TASKS / "l2_bmm.py"), configs=[cfg], shape="micro"))
    assert micro.results[0].programs[0] < 8192 and micro.shape != full.shape


def test_a_multi_kernel_task_lists_each_launch_in_order() -> None:
    out = run(LaunchGridInput(task_path=str(TASKS / "l3_pipeline.py")))
    assert out.results[0].kernels == ["embed_kernel", "attn_kernel", "ffn_kernel", "ffn_kernel"]
    assert all(len(g) == 3 for g in out.results[0].grids)


def test_make_inputs_or_launch_that_needs_real_data_says_so_per_config() -> None:
    # The jagged task reads its sequence offsets back with .item(): shapes alone cannot give its grid.
    out = run(LaunchGridInput(task_path=str(TASKS / "l4_jagged_attention.py")))
    (r,) = out.results
    assert not r.programs and "meta device" in r.error and ".item()" in r.error
    assert programs_from([{}], out.results) == {}


def test_a_cuda_task_records_grid_and_block_from_its_own_launch_on_fake_cuda_tensors(tmp_path) -> None:
    # rows = cols = 16384: the naive kernel's grid cdiv(16384, 32) x cdiv(16384, 8) = 512 x 2048 blocks of
    # 32 x 8 threads; its cuda_tiled_transpose candidate steps BLOCK_X rows per block: 512 x 512.
    from shared.transforms.table import apply

    path = TASKS / "l1_transpose_cuda.py"
    got = apply(path.read_text(), "cuda_tiled_transpose")
    assert not isinstance(got, Refused), got
    cand = tmp_path / "l1_transpose_cuda_tiled.py"
    cand.write_text(got.source)
    (naive,) = run(LaunchGridInput(task_path=str(path))).results
    (tiled,) = run(LaunchGridInput(task_path=str(cand))).results
    assert naive.grids == [[512, 2048, 1]] and naive.blocks == [[32, 8, 1]] and naive.programs == [1048576]
    assert tiled.grids == [[512, 512, 1]] and tiled.blocks == [[32, 8, 1]]
    assert naive.kernels == tiled.kernels == ["transpose"]


@pytest.mark.parametrize(
    ("args", "fix"),
    [
        ({"task_path": str(TASKS / "l1_relu.py"), "configs": [{"BLOK": 1}]}, "not in the task's CONFIG"),
        ({"task_path": str(TASKS / "l1_relu.py"), "shape": "huge"}, "unknown shape"),
        ({"task_path": str(TASKS / "l1_relu.py"), "configs": [{}] * (MAX_CONFIGS + 1)}, "send them in parts"),
    ],
)
def test_bad_requests_are_refused_with_the_fix(args: dict, fix: str) -> None:
    with pytest.raises(ToolFailure) as e:
        run(LaunchGridInput(**args))
    assert e.value.code == "refused" and fix in e.value.message
