"""Switch knobs (a variant of the algorithm, not a size) get each value measured early, and a kernel's one
BLOCK_<X> counts as its block. TEST INPUT: the literals of l1_cross_entropy and l1_col_reduce as they were
with their CHUNK_MAX / SPLIT_M switches (tests/transforms/tasks/removed_*.py, recorded at 7de0bf2: the
suite's files no longer carry them, transformations do), and of the suite's files; nothing here is a
measurement."""

from __future__ import annotations

from pathlib import Path

from services.planner.patcher import TaskSource
from services.planner.search import Problem, next_configs, seeds, switches, tile_keys

ROOT = Path(__file__).resolve().parents[2]
REMOVED = ROOT / "tests" / "transforms" / "tasks"


def _problem(task: str, where: Path = ROOT / "benchmarks" / "tasks") -> Problem:
    src = TaskSource((where / f"{task}.py").read_text())
    return Problem(config=src.literal("CONFIG"), space=src.literal("SPACE"), full_shape=src.literal("SHAPES")["full"])


def test_cross_entropys_one_exp_switch_is_seeded_even_though_the_prior_cannot_rank_it() -> None:
    p = _problem("removed_l1_cross_entropy_chunk_max", REMOVED)
    assert tile_keys(p.config).block == "BLOCK_V" and switches(p) == ["CHUNK_MAX"]
    got = seeds(p, 4)
    assert len(got) == 5 and {c["CHUNK_MAX"] for c in got[:4]} == {0}  # the prior ties the variants
    assert got[4]["CHUNK_MAX"] == 1
    first = next_configs(p, [(p.config, None)])
    second = next_configs(p, [(p.config, None)] + [(c, 1.0) for c in first])
    assert second == [got[4]]  # an untried seed comes before any neighbour


def test_col_reduces_row_split_values_are_all_seeded() -> None:
    p = _problem("removed_l1_col_reduce_split_m", REMOVED)
    assert switches(p) == ["SPLIT_M"]
    assert {c["SPLIT_M"] for c in seeds(p, 4)} == set(p.space["SPLIT_M"])


def test_the_stripped_suite_tasks_hold_no_switch() -> None:
    for task in ("l1_cross_entropy", "l1_col_reduce"):
        assert switches(_problem(task)) == [], task
    assert tile_keys(_problem("l1_cross_entropy").config).block == "BLOCK_V"


def test_two_block_knobs_name_no_single_block_and_launch_options_are_never_switches() -> None:
    assert tile_keys({"BLOCK_X": 32, "BLOCK_Y": 8, "USE_TILE": 0}).block is None
    p = Problem(config={"BLOCK": 128, "num_warps": 4, "num_stages": 1},
                space={"BLOCK": [128, 256], "num_warps": [4, 8], "num_stages": [1, 2]})
    assert switches(p) == []


def test_a_one_knob_local_optimum_gets_one_round_of_pattern_moves_then_the_search_stops() -> None:
    """TEST INPUT (made up so it can be checked by hand): a 2-knob landscape whose optimum (X=64, Y=2)
    is a diagonal step from the one-knob local optimum (X=32, Y=4). Scores are 1 / ms."""
    from services.planner.search import config_key

    ms = {(32, 4): 0.594, (64, 4): 0.619, (32, 2): 0.613, (16, 4): 0.645, (32, 8): 0.654, (64, 2): 0.568,
          (16, 2): 0.700, (64, 8): 0.640, (16, 8): 0.800}
    p = Problem(config={"X": 32, "Y": 4}, space={"X": [16, 32, 64], "Y": [2, 4, 8]})
    history = [({"X": x, "Y": y}, 1 / v) for (x, y), v in ms.items() if (x, y) in
               {(32, 4), (64, 4), (32, 2), (16, 4), (32, 8)}]
    moves = next_configs(p, history)
    assert moves[0] == {"X": 64, "Y": 2}  # the two best directions (X up 0.619, Y down 0.613) together
    assert len(moves) == 4 and {config_key(m) for m in moves}.isdisjoint({config_key(c) for c, _ in history})
    done = history + [(m, 1 / ms[(m["X"], m["Y"])]) for m in moves]
    best = max(done, key=lambda cv: cv[1])[0]
    assert best == {"X": 64, "Y": 2}
    # From the new best the one-knob steps continue; once they and its pattern round are measured and
    # nothing beats it, nothing more is proposed.
    for _ in range(10):
        nxt = next_configs(p, done)
        if not nxt:
            break
        done += [(c, 1 / ms.get((c["X"], c["Y"]), 9.0)) for c in nxt]
    assert next_configs(p, done) == []


def test_size_knobs_are_never_switches_whatever_their_value_count() -> None:
    p = _problem("l1_transpose_cuda")
    assert switches(p) == []  # BLOCK_X has 4 values but is a size (USE_TILE is now cuda_tiled_transpose)
    p = _problem("l3_pipeline")
    assert switches(p) == []  # ATT_BLOCK_M, FFN_BLOCK_K, ... are sizes; its X_LAYOUT switch is gone (issue 20)
