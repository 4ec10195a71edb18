"""A round whose every config failed does not end the job. H200 run r38: the attention job's five first
candidates failed static (a false hazard since fixed), the rules policy had "nothing new to try", and the
job ended with 90 of its 150 s unused. TEST INPUT: the suite's stripped l3_attention_d64_causal task."""

from __future__ import annotations

from pathlib import Path

from services.planner.context import Attempt, PlannerContext, read_task
from services.planner.patcher import PatchRejected, apply_changes
from services.planner.policies.base import CandidatePlan
from services.planner.policies.rules import RulesPolicy
from services.planner.search import config_key

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "benchmarks/tasks/l3_attention_d64_causal.py"


def _ctx(attempts: list[Attempt]) -> PlannerContext:
    return PlannerContext(kernel="attn_fwd_kernel", kernel_class="attention",
                          task=read_task(str(TASK), TASK.read_text()), has_dot=True, attempts=attempts)


def _configs(plan_candidates: list[CandidatePlan]) -> list[dict]:
    """The CONFIG of each config-only candidate, through the real patcher."""
    out = []
    for c in plan_candidates:
        if any(ch.change == "transform" for ch in c.changes):
            continue
        got = apply_changes(TASK.read_text(), c.changes)
        assert not isinstance(got, PatchRejected), got.summary()
        out.append(dict(got[1]))
    return out


def test_after_a_round_of_failures_the_next_seeds_are_proposed_and_none_repeats() -> None:
    policy = RulesPolicy()
    first = policy.plan(_ctx([]))
    tried = _configs(first.candidates)
    assert tried
    failed = [Attempt(candidate_id=f"c{n}", version=n, config=c, status="fail", layer="static",
                      reasons=["needs human review"]) for n, c in enumerate(tried, 1)]
    second = policy.plan(_ctx(failed))
    again = _configs(second.candidates)
    assert again, second.analysis
    assert not {config_key(c) for c in again} & {config_key(c) for c in tried}
    assert "every config so far failed" in second.analysis


def test_unmeasured_passes_without_a_gpu_still_end_the_search() -> None:
    # On a machine without a GPU nothing is timed: passes carry no score, and that is no reason to go on.
    policy = RulesPolicy()
    tried = _configs(policy.plan(_ctx([])).candidates)
    passed = [Attempt(candidate_id=f"c{n}", version=n, config=c, status="pass", layer="micro")
              for n, c in enumerate(tried, 1)]
    assert _configs(policy.plan(_ctx(passed)).candidates) == []
    # one failure among unmeasured passes (a CPU job whose big tile ran out of shared memory): still the end
    mixed = [*passed[:-1], Attempt(candidate_id="cx", version=99, config=tried[-1], status="fail", layer="static")]
    assert _configs(policy.plan(_ctx(mixed)).candidates) == []
