"""The estimates the rules policy ranks transformations by (services/planner/effects.py): pure, worked by
hand from the literals given."""

from __future__ import annotations

from services.planner.effects import effect, load_width, parallelism, vector_bytes
from services.planner.search import Problem, config_key
from shared.transforms.table import BY_NAME

ALIGNED = BY_NAME["aligned_copies"].spec
SPLIT = BY_NAME["split_k"].spec


def test_vector_bytes_is_the_widest_aligned_load_up_to_128_bits() -> None:
    assert vector_bytes(4001, 2) == 2  # 8002 B: even, not a multiple of 4
    assert vector_bytes(8192, 4) == 16
    assert vector_bytes(37, 4) == 4
    assert vector_bytes(4004, 2) == 8  # 8008 B = 8 x 1001


def test_aligned_copies_lifts_an_odd_extent_and_changes_nothing_on_aligned_ones() -> None:
    odd = load_width(ALIGNED, {"m": 5003, "n": 6007, "k": 4001}, "bfloat16")
    # 64 bf16 = 128 B: rows start on cache lines (r32: 1.975x on the H200; align 8, 16 B rows: 0.944x in r40)
    assert odd.factor == 8.0 and odd.params == {"align": 64, "extents": 1} and odd.same_for == []
    assert "from 128-byte line starts" in odd.why
    f32 = load_width(ALIGNED, {"m": 5003, "k": 4001}, "float32")  # 8 fp32 = 32 B; 64 fp32 = 256 B, two lines
    assert f32.params["align"] == 64 and f32.same_for == []
    even = load_width(ALIGNED, {"rows": 16384, "cols": 8192}, "float32")
    assert even.factor == 1.0 and "changes nothing" in even.why


def _col(programs: dict[int, int], start: int = 1) -> Problem:
    # TEST INPUT: a column sum's literals with programs cdiv(8192, BLOCK_N) as launch_grid records them.
    cfg = {"BLOCK_M": 128, "BLOCK_N": start, "num_warps": 4, "num_stages": 1}
    space = {"BLOCK_N": sorted(programs)}
    return Problem(config=cfg, space=space, full_shape={"rows": 16384, "cols": 8192},
                   programs={config_key(cfg | {"BLOCK_N": b}): n for b, n in programs.items()})


def test_split_k_at_a_short_start_grid_fills_the_sms_up_to_its_largest_split() -> None:
    e = parallelism(SPLIT, _col({256: 32, 512: 16}, start=256))
    assert e.factor == 132 / 32 and e.config == {}  # 4.125 < 8, the largest SPLIT_K
    e = parallelism(SPLIT, _col({256: 32, 512: 16}, start=512))
    assert e.factor == 8.0  # 132 / 16 = 8.25, capped by SPLIT_K <= 8


def test_split_k_weighs_the_short_part_of_the_space_and_names_a_config_there() -> None:
    # BLOCK_N 1 and 16: 8192 and 512 programs; 128 and 256: 64 and 32 programs: half the space is short,
    # median gain of the short ones (132/64, 132/32) = 3.09, weighted by 1/2: 1 + (3.09 - 1) / 2 = 2.05.
    e = parallelism(SPLIT, _col({1: 8192, 16: 512, 128: 64, 256: 32}))
    assert abs(e.factor - (1 + 0.5 * ((132 / 64 + 132 / 32) / 2 - 1))) < 1e-9  # type: ignore[operator]
    assert e.config["BLOCK_N"] in (128, 256) and "2 of 4 SPACE configs" in e.why


def test_split_k_changes_nothing_where_every_config_fills_the_sms() -> None:
    e = parallelism(SPLIT, _col({1: 8192, 16: 512}))
    assert e.factor == 1.0 and "fewest 512" in e.why


def test_a_transformation_without_an_estimate_says_so() -> None:
    e = effect(BY_NAME["grouped_order"].spec, _col({1: 8192}))
    assert e.factor is None
