from __future__ import annotations

import time

from ulid import ULID

from services.critic.chain import MessageIndex, build_chain
from services.critic.regression import judge, record_sighting, regressed
from services.critic.review import review
from services.critic.state import (
    KernelState,
    VerifiedEntry,
    derived_id,
    not_better,
    record_proposed,
    record_rollback,
    record_verified,
    rollback_target,
)
from shared.messages import KernelShare

from .chains import job, matmul_ms, tc_event


def decision(j):
    idx = MessageIndex()
    for m in j.messages:
        idx.add(m)
    return review(build_chain(j.verdicts[-1], idx))


def verified(cid: str, low: float | None, job_id: str = "job-matmul", ts: float = 0.0) -> VerifiedEntry:
    return VerifiedEntry(candidate_id=cid, patch_id=f"p-{cid}", version=1, job_id=job_id,
                         status="verified", speedup=low,
                         speedup_low=low, ts=ts)


def test_derived_ids_are_fixed_by_kind_and_key_and_keep_the_candidates_time() -> None:
    cid = str(ULID())
    a, b = derived_id("verified", cid), derived_id("verified", cid)
    assert a == b != derived_id("rejected", cid)
    assert ULID.from_str(a).milliseconds == ULID.from_str(cid).milliseconds
    assert len(derived_id("rollback", "not-a-ulid:event")) == 26


def test_the_best_per_job_is_kept_by_speedup_lower_bound() -> None:
    state = KernelState(kernel="matmul_kernel")
    base = matmul_ms("tri_mm_32_32_32_1_4_1")
    d546 = decision(job(speedup=(base, matmul_ms("tri_mm_128_128_32_8_4_3"))))
    d688 = decision(job(speedup=(base, matmul_ms("tri_mm_128_256_64_8_8_4"))))
    d295 = decision(job(speedup=(base, matmul_ms("tri_mm_64_64_32_1_4_2"))))
    assert not_better(state, "job-matmul", d546) is None  # first of its job
    record_verified(state, verified("c546", d546.speedup.value))
    assert not_better(state, "job-matmul", d688) is None
    assert "does not beat the job's best c546" in (not_better(state, "job-matmul", d295) or "")
    assert not_better(state, "another-job", d295) is None
    cpu = decision(job(full="skipped"))
    assert "cannot show it beats the job's verified best c546" in (not_better(state, "job-matmul", cpu) or "")


def test_on_cpu_the_first_proposed_candidate_is_published_and_a_measured_one_still_verifies() -> None:
    state = KernelState(kernel="matmul_kernel")
    cpu = decision(job(full="skipped"))
    assert not_better(state, "job-matmul", cpu) is None
    record_proposed(state, "job-matmul", "cpu1")
    assert state.current is None and state.history == []  # a proposed patch is not in force
    assert "already proposed cpu1" in (not_better(state, "job-matmul", decision(job(full="skipped"))) or "")
    assert not_better(state, "job-matmul", decision(job())) is None


def test_rollback_goes_to_the_previous_verified_version_then_the_original() -> None:
    state = KernelState(kernel="matmul_kernel")
    assert rollback_target(state) is None
    record_verified(state, verified("v1", 6.1, ts=1.0))
    record_verified(state, verified("v2", 7.7, ts=2.0))
    cur, prev = rollback_target(state)  # type: ignore[misc]
    assert (cur.candidate_id, prev and prev.candidate_id) == ("v2", "v1")
    record_rollback(state, "e1")
    assert state.current == "v1" and state.rollbacks == ["e1"]
    cur, prev = rollback_target(state)  # type: ignore[misc]
    assert (cur.candidate_id, prev) == ("v1", None)
    record_rollback(state, "e2")
    assert state.current is None and rollback_target(state) is None


def test_which_events_roll_a_patched_kernel_back() -> None:
    state = KernelState(kernel="matmul_kernel")
    later = time.time() + 10
    assert regressed(tc_event(event="regression", ts=later), state) is None  # nothing patched
    record_verified(state, verified("v1", 6.1, ts=time.time()))
    reason = regressed(tc_event(event="regression", ts=later), state)
    assert reason and reason.startswith("regression start on node0/0") and "(82% of GPU time)" in reason
    assert regressed(tc_event(event="tc_underutilization", ts=later), state) is None
    assert regressed(tc_event(kernel="other_kernel", event="regression", ts=later), state) is None
    assert regressed(tc_event(event="regression", ts=1.0), state) is None  # started before the patch
    cleared = tc_event(event="regression", ts=later)
    cleared.edge = "clear"
    assert regressed(cleared, state) is None
    replayed = tc_event(event="regression", ts=later)
    record_rollback(state, replayed.id)
    record_verified(state, verified("v2", 7.0, ts=time.time()))
    assert regressed(replayed, state) is None  # one event rolls back once


def test_a_device_wide_episode_rolls_back_only_when_the_kernels_own_share_and_time_moved() -> None:
    state = KernelState(kernel="matmul_kernel")
    record_verified(state, verified("v1", 6.1, ts=time.time()))
    t = time.time() + 10
    # Issue 17: a copy kernel's low-bandwidth episode with matmul at 21 % of the time is not matmul's.
    copy = KernelShare(kernel="copy_kernel", share=0.79, launches=900, mean_us=310.0)
    reason, why = judge(tc_event(event="bandwidth_low", ts=t, share=0.21, others=[copy]), state)
    assert reason is None and "copy_kernel 79%: the episode is not matmul_kernel's own" in why
    # Hot, but no earlier figure under this version: nothing shows its time moved.
    first = tc_event(event="anomaly", ts=t, mean_us=1400.0)
    reason, why = judge(first, state)
    assert reason is None and "no earlier figure" in why
    assert record_sighting(first, state) and state.seen_mean_us == {"v1": 1400.0}
    assert not record_sighting(tc_event(event="anomaly", ts=t + 1, mean_us=9000.0), state)  # the first stays
    reason, why = judge(tc_event(event="anomaly", ts=t + 2, mean_us=1450.0), state)
    assert reason is None and "within 10%" in why
    reason, _ = judge(tc_event(event="anomaly", ts=t + 3, mean_us=2100.0), state)
    assert reason and "rose from 1400 to 2100 us" in reason


def test_telemetry_of_another_version_never_rolls_the_patch_back() -> None:
    """A re-run of the demo runs the untuned kernel (or replays the recorded trace): its telemetry shows
    the old config, so not even a regression event naming the kernel blames the version in force."""
    state = KernelState(kernel="matmul_kernel")
    record_verified(state, verified("v1", 6.1, ts=time.time()))
    state.history[-1].config = {"BLOCK_M": 128, "BLOCK_N": 128, "num_stages": 3}
    untuned = {"BLOCK_M": 32, "BLOCK_N": 32, "num_stages": 1, "num_ctas": 1}
    reason, why = judge(tc_event(event="regression", ts=time.time() + 5, config=untuned), state)
    assert reason is None and why.startswith("the telemetry is of another version of matmul_kernel")
    assert "BLOCK_M=32 (patch 128)" in why
    assert not record_sighting(tc_event(event="anomaly", ts=time.time() + 5, config=untuned), state)
    same = {"BLOCK_M": 128, "BLOCK_N": 128, "num_stages": 3, "num_warps": 8}
    assert regressed(tc_event(event="regression", ts=time.time() + 6, config=same), state)


def test_a_planner_style_candidate_id_keeps_its_embedded_time() -> None:
    ulid = str(ULID())
    derived = ULID.from_str(derived_id("verified", f"job-{ulid}-v3"))
    assert derived.milliseconds == ULID.from_str(ulid).milliseconds
