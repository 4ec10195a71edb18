from __future__ import annotations

from services.critic.chain import MessageIndex, build_chain
from shared.messages import JobUpdate, Verdict

from .chains import job, request


def index_of(*messages) -> MessageIndex:
    idx = MessageIndex()
    for m in messages:
        idx.add(m)
    return idx


def test_every_causation_id_of_the_chain_resolves_and_links_run_trigger_to_verdicts() -> None:
    j = job()
    idx = index_of(*j.messages)
    chain = build_chain(j.verdicts[-1], idx)
    assert chain.unresolved == [] and chain.problems == []
    assert chain.trigger is j.trigger and chain.candidate is j.candidate
    for m in chain.path:
        assert m.causation_id is None or m.causation_id in idx
    assert all(link.message_id in idx for link in chain.links)
    assert [link.step for link in chain.links] == [
        "trigger", "state", "diagnosis", "diagnosis", "change",
        "verdict:static", "verdict:micro", "verdict:full"]
    state = chain.links[1].summary
    assert "tensor_core_util[current, global_avg] = 11.4 pct (nvml_gpm:5)" in state
    assert "matmul.py:41" in chain.links[2].summary and "sass:0x0450" in chain.links[3].summary


def test_an_optimize_request_is_a_trigger_too() -> None:
    j = job(kernel="add_kernel", trigger=request(), job_id="job-add")
    chain = build_chain(j.verdicts[-1], index_of(*j.messages))
    assert chain.trigger is j.trigger and not chain.problems
    assert chain.links[0].step == "trigger" and "optimize request for add_kernel" in chain.links[0].summary


def test_a_missing_message_is_named_as_unresolved() -> None:
    j = job()
    idx = index_of(*[m for m in j.messages if m is not j.update])
    chain = build_chain(j.verdicts[-1], idx)
    assert chain.unresolved == [f"candidate {j.candidate.id}: causation id {j.update.id} does not resolve"]
    assert chain.trigger is None


def test_later_iterations_walk_through_earlier_candidates_to_the_first_trigger() -> None:
    first = job()
    second = job(version=2, parent=first)
    chain = build_chain(second.verdicts[-1], index_of(*first.messages, *second.messages[1:]))
    assert chain.trigger is first.trigger and not chain.unresolved and not chain.problems
    steps = [link.step for link in chain.links]
    assert "earlier_change" in steps and "earlier_verdict:full" in steps
    assert steps[-3:] == ["verdict:static", "verdict:micro", "verdict:full"]
    assert chain.verdicts["full"] is second.verdicts[-1]


def test_a_causation_cycle_and_a_root_that_is_no_trigger_are_problems() -> None:
    a = JobUpdate(source="planner", kernel="k", status="planning", id="A", causation_id="B")
    b = JobUpdate(source="planner", kernel="k", status="planning", id="B", causation_id="A")
    v = Verdict(source="verifier", candidate_id="X", kernel="k", layer="full", status="pass",
                causation_id="A")
    chain = build_chain(v, index_of(a, b))
    assert any("loops" in p for p in chain.problems)
    orphan = JobUpdate(source="planner", kernel="k", status="planning", id="C")
    v2 = Verdict(source="verifier", candidate_id="X", kernel="k", layer="full", status="pass",
                 causation_id="C")
    assert any("not at a state-change event" in p for p in build_chain(v2, index_of(orphan)).problems)


def test_jobs_that_disagree_are_a_problem() -> None:
    j = job()
    j.verdicts[-1].job_id = "another-job"
    chain = build_chain(j.verdicts[-1], index_of(*j.messages))
    assert any("different jobs" in p for p in chain.problems)


def test_the_index_is_bounded_and_forgets_oldest_first() -> None:
    j = job()
    idx = MessageIndex(capacity=3)
    for m in j.messages:
        idx.add(m)
    assert len(idx) == 3 and j.trigger.id not in idx and j.verdicts[-1].id in idx
    assert [v.layer for v in idx.verdicts_for(j.candidate.id)] == ["static", "micro", "full"]
    idx.add(j.verdicts[0])  # already there: no change
    assert len(idx) == 3


def test_the_planners_shape_candidate_caused_by_the_trigger_gives_the_same_steps() -> None:
    j = job()
    j.candidate.causation_id = j.trigger.id  # services/planner/jobs.py: candidates name the job's trigger
    for v in j.verdicts:
        v.causation_id = j.candidate.id
    chain = build_chain(j.verdicts[-1], index_of(*j.messages))
    assert not chain.unresolved and not chain.problems
    assert [link.step for link in chain.links] == [
        "trigger", "state", "diagnosis", "change", "verdict:static", "verdict:micro", "verdict:full"]
    assert "tensor_core_tile_small @ matmul.py:41" in chain.links[2].summary
