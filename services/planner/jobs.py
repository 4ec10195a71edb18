"""The job engine, pure: job state records and the functions that move them. No I/O, no clock reads
(`now` is passed in), so a job can be persisted after every step and resumed after a restart without
repeating finished work: candidate ids are `<job_id>-v<version>`, verdicts are counted once by id.

One open job per kernel: a second trigger for the same kernel joins the open job.
Stop rules: budget (wall time, GPU seconds, candidates), convergence (two rounds each < 1 % gain),
roofline (>= 95 % of the bound).
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from services.planner.context import Attempt
from services.planner.patcher import CandidateVersion
from shared.messages import (
    Candidate,
    ChangeDescription,
    JobStatus,
    JobUpdate,
    LlmUsage,
    Measurement,
    Scalar,
    Verdict,
)

OPEN: tuple[JobStatus, ...] = ("open", "planning", "verifying")
CONVERGED_GAIN = 0.01  # DESIGN: two rounds each under 1 % gain = converged
CONVERGED_ROUNDS = 2
ROOFLINE_STOP = 0.95  # 95 % of the roofline bound: nothing worth a GPU minute is left
# Measurement names the verifier may report, best objective first; time-like ones are inverted so that a
# higher score is always better (GPU.md "Timing method": medians).
_HIGHER = ("speedup", "tflops", "tb_s", "gbps", "throughput")
_LOWER = ("median_s", "median_ms", "median_us", "time_s", "time_ms", "time_us")
_ROOF = ("roofline_fraction", "fraction_of_roof")


class Budget(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    wall_s: float = 300.0
    gpu_s: float = 600.0
    candidates: int = 48


class CandidateRecord(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    candidate: Candidate  # the exact message, so a resumed job republishes it byte for byte
    attempt: Attempt
    published: bool = False
    created_ts: float = 0.0
    verdict_ids: list[str] = []


class JobState(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    job_id: str
    kernel: str
    task_path: str
    base_path: str = ""  # content-addressed copy of the task as the job found it (every patch starts there)
    policy: str = "rules"
    status: JobStatus = "open"
    iteration: int = 0
    created_ts: float
    updated_ts: float
    budget: Budget = msgspec.field(default_factory=Budget)
    gpu_seconds: float = 0.0
    causation_id: str | None = None  # the trigger that opened the job
    triggers: list[str] = []  # every trigger id that opened or joined it
    candidates: dict[str, CandidateRecord] = {}
    round_best: list[float] = []  # best score after each finished round that had one
    best_candidate_id: str | None = None
    best_score: float | None = None
    score_name: str = ""
    roofline_fraction: float | None = None
    reasons: list[str] = []
    notes: list[str] = []  # plan analyses and patch rejections, newest last (bounded)
    next_version: int = 1
    llm: LlmUsage | None = None  # the LLM calls of every plan so far (None: no llm plan)


def is_open(s: JobState) -> bool:
    return s.status in OPEN


def find_open(jobs: Iterable[JobState], kernel: str) -> JobState | None:
    return next((j for j in jobs if j.kernel == kernel and is_open(j)), None)


def open_or_join(
    jobs: Iterable[JobState],
    *,
    kernel: str,
    task_path: str,
    trigger_id: str,
    job_id: str,
    now: float,
    policy: str = "rules",
    budget: Budget | None = None,
) -> tuple[JobState, bool]:
    """The open job for `kernel` with this trigger recorded (joined=True), or a new one."""
    found = find_open(jobs, kernel)
    if found is not None:
        if trigger_id not in found.triggers:
            found.triggers.append(trigger_id)
        return found, True
    return JobState(
        job_id=job_id,
        kernel=kernel,
        task_path=task_path,
        policy=policy,
        created_ts=now,
        updated_ts=now,
        budget=budget or Budget(),
        causation_id=trigger_id,
        triggers=[trigger_id],
    ), False


def attempts(s: JobState) -> list[Attempt]:
    return [r.attempt for r in sorted(s.candidates.values(), key=lambda r: r.attempt.version)]


def pending(s: JobState) -> list[CandidateRecord]:
    return [r for r in s.candidates.values() if r.attempt.status == "pending"]


def note(s: JobState, text: str, keep: int = 40) -> None:
    s.notes = (s.notes + [text])[-keep:]


def add_candidates(
    s: JobState,
    versions: list[tuple[CandidateVersion, str]],
    *,
    source: str,
    now: float,
    parent_id: str | None = None,
    llm: LlmUsage | None = None,
) -> list[Candidate]:
    """Record a round of candidate versions (with their rationale) as pending; returns the messages.
    `llm`: the LLM calls of the plan that proposed them (carried on each Candidate for the evidence chain)."""
    out = []
    s.iteration += 1
    for v, rationale in versions:
        cid = f"{s.job_id}-v{s.next_version}"
        cand = Candidate(
            source=source,
            id=cid,
            ts=now,
            job_id=s.job_id,
            causation_id=s.causation_id,
            kernel=s.kernel,
            task_path=s.task_path,
            candidate_path=v.path,
            version=s.next_version,
            parent_id=parent_id,
            config=dict(v.config),
            changes=list(v.changes),
            diff=v.diff,
            source_sha256=v.sha256,
            llm=llm,
        )
        s.candidates[cid] = CandidateRecord(
            candidate=cand,
            created_ts=now,
            attempt=Attempt(
                candidate_id=cid,
                version=s.next_version,
                config=dict(v.config),
                changes=list(v.changes),
                reasons=[rationale] if rationale else [],
            ),
        )
        s.next_version += 1
        out.append(cand)
    s.status = "verifying" if out else s.status
    s.updated_ts = now
    return out


def objective(ms: list[Measurement]) -> tuple[str, float] | None:
    """The score a verdict's measurements give (higher = better), or None when nothing was measured."""
    by = {m.name.lower(): m.value for m in ms if m.value is not None}
    for name in _HIGHER:
        for k, v in by.items():
            if name in k and v is not None and v > 0:
                return k, float(v)
    for name in _LOWER:
        for k, v in by.items():
            if (k.endswith(name) or k == name) and v and v > 0:
                return f"1/{k}", 1.0 / float(v)
    return None


def _roof(ms: list[Measurement]) -> float | None:
    """Fraction of the roofline bound: given directly, or the verifier's roofline_ms / candidate_median_ms."""
    by = {m.name.lower(): m.value for m in ms if m.value is not None}
    for k, v in by.items():
        if any(r in k for r in _ROOF):
            return float(v)  # type: ignore[arg-type]
    bound, took = by.get("roofline_ms"), by.get("candidate_median_ms")
    return bound / took if bound and took else None


def is_terminal(v: Verdict) -> bool:
    """A candidate is finished when a layer fails or the last layer (full) answered: the verifier's funnel
    always ends in a full verdict (`skipped` without a GPU) unless an earlier layer failed."""
    return v.status == "fail" or v.layer == "full"


def record_verdict(s: JobState, v: Verdict, now: float) -> bool:
    """Apply a verdict to its candidate; False when it is not this job's or was already counted."""
    rec = s.candidates.get(v.candidate_id)
    if rec is None or v.id in rec.verdict_ids:
        return False
    rec.verdict_ids.append(v.id)
    a = rec.attempt
    s.gpu_seconds += v.gpu_seconds
    a.gpu_seconds += v.gpu_seconds
    a.layer = v.layer
    a.reasons = (a.reasons + [f"{v.layer}: {r}" for r in v.reasons])[-8:]
    got = objective(v.measurements)
    if got is not None:
        a.score_name, a.score = got
    roof = _roof(v.measurements)
    if roof is not None:
        s.roofline_fraction = max(s.roofline_fraction or 0.0, roof)
    if a.status == "pending" and is_terminal(v):
        a.status = "fail" if v.status == "fail" else "pass"
    elif a.status != "pending" and v.status == "fail":
        a.status = "fail"  # a later layer can still fail what an earlier one passed
    _update_best(s)
    s.updated_ts = now
    return True


def _update_best(s: JobState) -> None:
    done = [
        r.attempt for r in s.candidates.values() if r.attempt.status == "pass" and r.attempt.score is not None
    ]
    if done:
        best = max(done, key=lambda a: a.score or 0.0)
        s.best_candidate_id, s.best_score, s.score_name = best.candidate_id, best.score, best.score_name


def expire(s: JobState, now: float, timeout_s: float) -> list[str]:
    """Mark candidates that waited longer than `timeout_s` for their last verdict as timed out."""
    out = []
    for r in pending(s):
        if now - r.created_ts > timeout_s:
            r.attempt.status = "timeout"
            r.attempt.reasons.append(f"no final verdict within {timeout_s:.0f} s")
            out.append(r.attempt.candidate_id)
    return out


def close_round(s: JobState) -> None:
    """Called once no candidate is pending: remember the best score this round ended with."""
    if s.best_score is not None:
        s.round_best.append(s.best_score)
    if s.status == "verifying":
        s.status = "planning"


def stop_reason(s: JobState, now: float) -> tuple[JobStatus, str] | None:
    """The stop rule that holds now, or None to keep going."""
    b = s.budget
    if now - s.created_ts >= b.wall_s:
        return "budget_exhausted", f"wall-time budget {b.wall_s:.0f} s spent"
    if s.gpu_seconds >= b.gpu_s:
        return "budget_exhausted", f"GPU budget {b.gpu_s:.0f} s spent ({s.gpu_seconds:.1f} s)"
    if s.roofline_fraction is not None and s.roofline_fraction >= ROOFLINE_STOP:
        return "roofline", f"{100 * s.roofline_fraction:.0f} % of the roofline bound (stop at 95 %)"
    if pending(s):
        return None
    if len(s.candidates) >= b.candidates:
        return "budget_exhausted", f"candidate budget {b.candidates} spent"
    r = s.round_best
    if len(r) > CONVERGED_ROUNDS:
        gains = [
            (r[i] - r[i - 1]) / r[i - 1] for i in range(len(r) - CONVERGED_ROUNDS, len(r)) if r[i - 1] > 0
        ]
        if len(gains) == CONVERGED_ROUNDS and all(g < CONVERGED_GAIN for g in gains):
            shown = ", ".join(f"{100 * g:.2f} %" for g in gains)
            return "converged", f"last {CONVERGED_ROUNDS} rounds gained < 1 % ({shown})"
    return None


def finish(s: JobState, status: JobStatus, reason: str, now: float) -> None:
    s.status = status
    s.reasons.append(reason)
    s.updated_ts = now


def update(s: JobState, *, source: str, note_text: str = "", now: float) -> JobUpdate:
    return JobUpdate(
        source=source,
        ts=now,
        job_id=s.job_id,
        causation_id=s.causation_id,
        kernel=s.kernel,
        status=s.status,
        iteration=s.iteration,
        best_candidate_id=s.best_candidate_id,
        note=note_text,
        task_path=s.task_path,
        best_score=s.best_score,
        score_name=s.score_name,
        candidates=len(s.candidates),
        reasons=list(s.reasons),
        llm=s.llm,
    )


def add_usage(total: LlmUsage | None, plan: LlmUsage) -> LlmUsage:
    """A job's running total after one more plan (model and format of the latest plan)."""
    t = total or LlmUsage(dialect=plan.dialect)

    def plus(a: int | None, b: int | None) -> int | None:
        return None if a is None and b is None else (a or 0) + (b or 0)

    return LlmUsage(
        model=plan.model or t.model,
        model_sha256=plan.model_sha256 or t.model_sha256,
        dialect=plan.dialect or t.dialect,
        constraint=plan.constraint or t.constraint,
        calls=t.calls + plan.calls,
        prompt_tokens=plus(t.prompt_tokens, plan.prompt_tokens),
        completion_tokens=plus(t.completion_tokens, plan.completion_tokens),
        seconds=round(t.seconds + plan.seconds, 3),
        fallback=plan.fallback or t.fallback,
    )


def best_config(s: JobState, start: dict[str, Scalar]) -> dict[str, Scalar]:
    if s.best_candidate_id is None:
        return dict(start)
    return dict(s.candidates[s.best_candidate_id].attempt.config)


def analysis_path(s: JobState) -> str:
    """What the decomposer reads for the next round: the best candidate's file once it carries a source
    transformation (its findings, not the original's, say what is left to fix), else the task copy."""
    best = s.candidates.get(s.best_candidate_id) if s.best_candidate_id else None
    if best and best.candidate.candidate_path and any(c.change == "transform" for c in best.attempt.changes):
        return best.candidate.candidate_path
    return s.base_path


def changes_of(s: JobState, candidate_id: str | None) -> list[ChangeDescription]:
    return list(s.candidates[candidate_id].attempt.changes) if candidate_id in s.candidates else []


def encode_state(s: JobState) -> bytes:
    return msgspec.json.encode(s)


def decode_state(data: bytes) -> JobState:
    return msgspec.json.decode(data, type=JobState)
