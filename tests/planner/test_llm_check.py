"""The llm policy's screen (services/planner/policies/llm_check.py) on answers shaped like the ones the
real SmolLM2-135M gave in benchmarks/bench_llm.py runs, applied with the real patcher to the real source."""

from __future__ import annotations

from services.planner.policies.base import CandidatePlan
from services.planner.policies.llm_check import screen, single_line_statements, with_kernel
from shared.messages import ChangeDescription
from tests.fixtures.llm.contexts import corpus_context


def _evict(policy: str) -> ChangeDescription:
    return ChangeDescription(change="transform", transform="eviction_policy", params={"policy": policy})


def test_a_refused_change_is_dropped_and_the_rest_of_the_candidate_kept() -> None:
    """add_int64_offsets, second run: the model stacked eviction_policy twice in one candidate; the second
    has no load left to rewrite, so the whole answer was refused twice and the plan fell back to rules."""
    ctx = corpus_context("add_int64_offsets")
    twice = with_kernel([_evict("evict_first"), _evict("evict_last"),
                         ChangeDescription(change="set_num_warps", value=8)], ctx.kernel)
    kept, rejected = screen(ctx.task.source, "cases_more.py", [CandidatePlan(changes=twice, rationale="r")])
    assert [c.change for c in kept[0].changes] == ["transform", "set_num_warps"]
    assert kept[0].changes[0].params == {"policy": "evict_first"}
    (why,) = rejected
    assert "without its refused change" in why and "eviction_policy" in why


def test_a_candidate_refused_as_a_whole_is_left_out_with_the_reason() -> None:
    ctx = corpus_context("atomic_one_counter")
    line = "tl.atomic_add(out_ptr, tl.sum(x, axis=0))"
    broken = ChangeDescription(change="source_edit", target="L256", search=line, replace="tl.atomic_add(out_ptr,")
    good = ChangeDescription(change="set_num_warps", value=8)
    kept, rejected = screen(ctx.task.source, "cases.py", [CandidatePlan(changes=[broken, good]),
                                                         CandidatePlan(changes=[good])])
    assert [c.changes for c in kept] == [[good]]
    (why,) = rejected
    assert why.startswith("candidate 0:") and "does not parse" in why


def test_quotable_lines_hold_one_whole_simple_statement() -> None:
    src = "def f(x):\n    for i in range(3):\n        y = x\n    if x: z = 1\n    a = (1,\n         2)\n    b = 1; c = 2\n"
    assert single_line_statements(src) == {3}
