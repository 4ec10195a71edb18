"""What the critic remembers per kernel (the `kernels` KV bucket, key `verified.<kernel>`), and the pure
transitions on it: decide once per candidate, keep the best per job, roll back to the previous version.

The record is the idempotency key store: a candidate id in `decided` has had its patch or rejection
published, so a critic restarted mid-job (its consumers redeliver what it had not acked) publishes
nothing twice. The one gap, a kill between the publish and the KV write, is closed by the PATCHES
stream's de-duplication: every outcome's message id is derived from the candidate id (`derived_id`).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from services.critic.review import Decision
from shared import ids
from shared.messages import Scalar
from shared.subjects import token

# Candidate ids remembered as decided per kernel; a job of 50 iterations decides 50, so 2,000 covers the
# last 40 jobs of a kernel, far beyond the stream's 120 s de-dup window that backs it up.
MAX_DECIDED = 2000
MAX_HISTORY = 100  # verified versions kept for rollback
MAX_JOBS = 50  # jobs whose best candidate is remembered


class VerifiedEntry(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    candidate_id: str
    patch_id: str
    version: int
    job_id: str | None
    status: str  # "verified" (proposed patches are not in force and never enter the history)
    speedup: float | None = None
    speedup_low: float | None = None
    ts: float = 0.0
    rolled_back: bool = False
    config: dict[str, Scalar] = {}  # the candidate's CONFIG: which launch config telemetry of it shows


class KernelState(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    kernel: str
    current: str | None = None  # candidate id of the version in force; None = the original
    history: list[VerifiedEntry] = []  # verified versions, oldest first
    decided: list[str] = []  # candidate ids whose outcome was published
    best_by_job: dict[str, str] = {}  # job id -> candidate id of its best verified candidate
    rollbacks: list[str] = []  # ids of the events that caused a rollback (a replayed event acts once)
    proposed_by_job: dict[str, str] = {}  # job id -> candidate id of its proposed (unmeasured) patch
    # candidate id -> the kernel's time per launch (us) first seen in telemetry under that version: what a
    # later anomaly must exceed to be blamed on it (services/critic/regression.py)
    seen_mean_us: dict[str, float] = {}


def state_key(kernel: str) -> str:
    return f"verified.{token(kernel)}"


def derived_id(kind: Literal["verified", "proposed", "rejected", "failure", "rollback"], key: str) -> str:
    """A ULID fixed by (kind, key) (shared/ids.py): a republished outcome is stored once."""
    return ids.derived_id(kind, key)


def entry(state: KernelState, candidate_id: str | None) -> VerifiedEntry | None:
    return next((e for e in state.history if e.candidate_id == candidate_id), None)


def not_better(state: KernelState, job_id: str | None, decision: Decision) -> str | None:
    """Why an accepted candidate does not replace its job's best, or None when it does.

    Verified candidates are ordered by the speedup's lower bound. A proposed (unmeasured) candidate cannot
    be ranked: only the job's first one is published, and none once the job has a verified patch.
    """
    best = entry(state, state.best_by_job.get(job_id or ""))
    if best is not None and best.rolled_back:
        best = None
    if decision.status == "proposed":
        if best is not None:
            return (f"correct, but {decision.not_verified}: cannot show it beats the job's verified best "
                    f"{best.candidate_id}")
        if (first := state.proposed_by_job.get(job_id or "")) is not None:
            return (f"correct, but {decision.not_verified}: the job already proposed {first}, and unmeasured "
                    "candidates cannot be ranked")
        return None
    if best is None:
        return None
    s = decision.speedup
    low = s.low if s.low is not None else s.value
    if best.speedup_low is not None and low is not None and low <= best.speedup_low:
        return (f"verified, but its speedup low {low:g} does not beat the job's best {best.candidate_id} "
                f"(low {best.speedup_low:g})")
    return None


def record_proposed(state: KernelState, job_id: str | None, candidate_id: str) -> None:
    record_decided(state, candidate_id)
    if job_id:
        state.proposed_by_job[job_id] = candidate_id
        while len(state.proposed_by_job) > MAX_JOBS:
            state.proposed_by_job.pop(next(iter(state.proposed_by_job)))


def record_decided(state: KernelState, candidate_id: str) -> None:
    if candidate_id not in state.decided:
        state.decided.append(candidate_id)
        del state.decided[:-MAX_DECIDED]


def record_verified(state: KernelState, new: VerifiedEntry) -> None:
    record_decided(state, new.candidate_id)
    if entry(state, new.candidate_id) is None:
        state.history.append(new)
        del state.history[:-MAX_HISTORY]
    state.current = new.candidate_id
    if new.job_id:
        state.best_by_job[new.job_id] = new.candidate_id
        while len(state.best_by_job) > MAX_JOBS:
            state.best_by_job.pop(next(iter(state.best_by_job)))


def rollback_target(state: KernelState) -> tuple[VerifiedEntry, VerifiedEntry | None] | None:
    """(the version in force, the previous verified version or None for the original), or None."""
    cur = entry(state, state.current)
    if cur is None:
        return None
    earlier = [e for e in state.history if not e.rolled_back and e.candidate_id != cur.candidate_id
               and e.ts <= cur.ts]
    return cur, (earlier[-1] if earlier else None)


def record_rollback(state: KernelState, event_id: str) -> None:
    target = rollback_target(state)
    if target is None:
        return
    cur, prev = target
    cur.rolled_back = True
    state.current = prev.candidate_id if prev else None
    state.rollbacks.append(event_id)
    del state.rollbacks[:-MAX_DECIDED]
