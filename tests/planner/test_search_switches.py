"""Switch knobs (a variant of the algorithm, not a size) get each value measured early, and a kernel's one
BLOCK_<X> counts as its block. TEST INPUT: l1_cross_entropy's and l1_col_reduce's literals, read from the
task files; nothing here is a measurement."""

from __future__ import annotations

from pathlib import Path

from services.planner.patcher import TaskSource
from services.planner.search import Problem, next_configs, seeds, switches, tile_keys

ROOT = Path(__file__).resolve().parents[2]


def _problem(task: str) -> Problem:
    src = TaskSource((ROOT / "benchmarks" / "tasks" / f"{task}.py").read_text())
    return Problem(config=src.literal("CONFIG"), space=src.literal("SPACE"), full_shape=src.literal("SHAPES")["full"])


def test_cross_entropys_one_exp_switch_is_seeded_even_though_the_prior_cannot_rank_it() -> None:
    p = _problem("l1_cross_entropy")
    assert tile_keys(p.config).block == "BLOCK_V" and switches(p) == ["CHUNK_MAX"]
    got = seeds(p, 4)
    assert len(got) == 5 and {c["CHUNK_MAX"] for c in got[:4]} == {0}  # the prior ties the variants
    assert got[4]["CHUNK_MAX"] == 1
    first = next_configs(p, [(p.config, None)])
    second = next_configs(p, [(p.config, None)] + [(c, 1.0) for c in first])
    assert second == [got[4]]  # an untried seed comes before any neighbour


def test_col_reduces_row_split_values_are_all_seeded() -> None:
    p = _problem("l1_col_reduce")
    assert switches(p) == ["SPLIT_M"]
    assert {c["SPLIT_M"] for c in seeds(p, 4)} == set(p.space["SPLIT_M"])


def test_two_block_knobs_name_no_single_block_and_launch_options_are_never_switches() -> None:
    assert tile_keys({"BLOCK_X": 32, "BLOCK_Y": 8, "USE_TILE": 0}).block is None
    p = Problem(config={"BLOCK": 128, "num_warps": 4, "num_stages": 1},
                space={"BLOCK": [128, 256], "num_warps": [4, 8], "num_stages": [1, 2]})
    assert switches(p) == []
