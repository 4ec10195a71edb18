"""A config the full layer measured and refused for too small a gain is a measured point of the search,
and a space with one tile shape still gets a round 0 of several launch options. H200 run r53: the
captured liger-kernel rms_norm (BLOCK_SIZE fixed to its 4096-wide row) got one config in round 0
(num_warps 16, num_stages 1), which ran at 0.900x and counted as unmeasured, and the job ended with
"nothing new to try" and 19 of its 20 configs untried. TEST INPUT: that run's captured task file."""

from __future__ import annotations

from pathlib import Path

from services.planner.context import Attempt, PlannerContext, read_task
from services.planner.patcher import PatchRejected, apply_changes
from services.planner.policies.rules import RulesPolicy, search_score
from services.planner.search import config_key

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "benchmarks/results/runs/r53/steps/i21_oss/capture/_rms_norm_forward_kernel_task.py"
START = {"casting_mode": 0, "elementwise_affine": True, "BLOCK_SIZE": 4096, "num_warps": 8, "num_stages": 3}
NO_GAIN = "full: no significant gain: speedup 0.900x, 95 % CI [0.900, 0.901]; accepting needs the lower bound above 1.020"


def _ctx(attempts: list[Attempt]) -> PlannerContext:
    return PlannerContext(kernel="_rms_norm_forward_kernel", kernel_class="reduction",
                          task=read_task(str(TASK), TASK.read_text()), has_dot=False, attempts=attempts)


def _configs(plan) -> list[dict]:
    out = []
    for c in plan.candidates:
        got = apply_changes(TASK.read_text(), c.changes)
        assert not isinstance(got, PatchRejected), got.summary()
        out.append(dict(got[1]))
    return out


def _slower(config: dict, n: int, reasons: list[str] | None = None) -> Attempt:
    return Attempt(candidate_id=f"c{n}", version=n, config=config, status="fail", layer="full",
                   score=0.9, score_name="speedup", reasons=[NO_GAIN] if reasons is None else reasons)


def test_one_tile_shape_still_seeds_several_launch_options_and_never_the_start() -> None:
    first = _configs(RulesPolicy().plan(_ctx([])))
    assert len(first) >= 3, first
    assert all(c["BLOCK_SIZE"] == 4096 for c in first)  # the block spans the row: never shrunk
    keys = {config_key(c) for c in first}
    assert len(keys) == len(first) and config_key(START) not in keys


def test_a_slower_measured_config_lets_the_search_step_around_the_start() -> None:
    policy = RulesPolicy()
    first = _configs(policy.plan(_ctx([])))
    slower = [_slower(c, n) for n, c in enumerate(first, 1)]
    second = policy.plan(_ctx(slower))
    again = _configs(second)
    assert again, second.analysis
    assert not {config_key(c) for c in again} & {config_key(c) for c in first + [START]}
    assert "neighbour of the best" in second.candidates[0].rationale


def test_only_a_gain_too_small_counts_as_measured() -> None:
    cfg = dict(START, num_warps=16)
    assert search_score(_slower(cfg, 1)) == 0.9
    wrong = ["micro: case 2: max abs error 0.5 > tolerance"]
    assert search_score(_slower(cfg, 2, reasons=wrong)) is None
    impossible = ["full: impossible speedup: the candidate's median 0.001 ms is below the roofline bound", NO_GAIN]
    assert search_score(_slower(cfg, 3, reasons=impossible)) is None
    unscored = Attempt(candidate_id="c4", version=4, config=cfg, status="fail", layer="full", reasons=[NO_GAIN])
    assert search_score(unscored) is None
