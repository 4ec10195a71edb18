"""The order and time limits of bench_decomposer_ncu.py's ncu runs, and what it does when one fails.

Cases are profiled in batches (one ncu start for many cases). A batch that leaves cases unmeasured is
handled by what its launcher's manifest says about the moment it ended:

- It timed out with one case in flight for more than half of the batch's wall time: that case held the
  batch (H200 run r33: `cuda_device_malloc` hangs under ncu and cost its 16-case batch 86 s, then 25 s
  alone). It is set aside, and the batch's other unmeasured cases, which either finished before it or never
  started, are profiled again as one batch (one ncu start, not one per case). The same rule applies to that
  batch in turn. Half: a batch that is merely slow spends its time across many cases, each a small share.
- Otherwise (a crash, rows that do not line up, a slow batch): each unmeasured case is retried alone.

Set-aside cases (held a batch here, or timed out alone in the run being resumed) run last, one by one, so
a known hang costs nothing but what is left at the end.

The budget bounds the whole: no ncu run starts with less than `case_timeout_s` of it left, and each run's
timeout is cut to what is left, so profiling ends within `budget_s` (before, a run could start a second
before the budget ended and take its whole timeout: r33 started its last lone run at ~277 s of its 280 s
budget, under a 300 s step limit, with 100 s batches). Stdlib only; the profiler and the clock are passed in, so the rules are
tested without a GPU (tests/decomposer/test_bench_ncu_schedule.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Run:
    """One ncu run over some cases."""

    counters: dict[str, dict[str, float]]  # case -> its counters, for each measured case
    missed: dict[str, str]  # case -> why it was not measured
    timed_out: bool = False  # ncu or its sandbox ran out of time
    in_flight: tuple[str, float] | None = None  # the case the launcher was in when the run ended, s in flight
    wall_s: float = 0.0
    timeout_s: float = 0.0  # the timeout it ran under (set by `measure`)


# (cases, timeout_s, tag) -> Run; the tag names the run's files
Profile = Callable[[list[str], float, str], Run]


@dataclass(frozen=True)
class Budgets:
    budget_s: float  # all ncu runs together
    batch_timeout_s: float  # one batch
    case_timeout_s: float  # one case alone; also the least budget a run may start with


@dataclass
class Schedule:
    """What the runs measured, and why each other case was not."""

    counters: dict[str, dict[str, float]] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)
    timed_out_alone: set[str] = field(default_factory=set)
    set_aside: list[dict[str, Any]] = field(default_factory=list)  # one record per set-aside case


def suspect(run: Run, cases: list[str]) -> str | None:
    """The case that held a timed-out batch (see the module doc), or None."""
    if not run.timed_out or len(cases) < 2 or run.in_flight is None:
        return None
    case, seconds = run.in_flight
    return case if case in run.missed and seconds > run.wall_s / 2 else None


def measure(
    batches: list[dict[str, Any]],
    set_aside: dict[str, str],
    profile: Profile,
    b: Budgets,
    clock: Callable[[], float] = time.monotonic,
) -> Schedule:
    """Profile `batches` (records from plan_batches: each gets its timeout, wall time, outcome and what was
    retried or re-run), then the `set_aside` cases (case -> why) and any case found holding a batch."""
    t0 = clock()
    out = Schedule()
    aside = dict(set_aside)
    spent = f"not measured: --budget-s {b.budget_s:.0f} spent"

    def left() -> float:
        return b.budget_s - (clock() - t0)

    def run(cases: list[str], timeout_s: float, tag: str) -> Run | None:
        if left() < b.case_timeout_s:
            return None
        t = min(timeout_s, left())
        r = profile(cases, t, tag)
        r.timeout_s = t
        out.counters.update(r.counters)
        out.why.update(r.missed)
        for c in r.counters:
            out.why.pop(c, None)
        return r

    def lone(case: str, tag: str) -> dict[str, Any]:
        r = run([case], b.case_timeout_s, tag)
        if r is None:
            out.why[case] = spent
            return {"ncu": spent}
        if r.timed_out and case not in r.counters:
            out.timed_out_alone.add(case)
        return {"wall_s": round(r.wall_s, 1), "ncu": "measured" if case in r.counters else out.why[case]}

    def batch(cases: list[str], tag: str, rec: dict[str, Any]) -> None:
        r = run(cases, b.batch_timeout_s, tag)
        if r is None:
            out.why.update(dict.fromkeys(cases, spent))
            rec["outcome"] = "not started: budget spent"
            return
        rec |= {"timeout_s": round(r.timeout_s, 1), "wall_s": round(r.wall_s, 1)}
        rec["outcome"] = f"{len(cases) - len(r.missed)} of {len(cases)} measured"
        if not r.missed:
            return
        rec["missed_because"] = sorted(set(r.missed.values()))[:4]  # kept: retries overwrite each reason
        if len(cases) == 1:
            if r.timed_out:
                out.timed_out_alone.add(cases[0])
            return
        held = suspect(r, cases)
        rest = [c for c in cases if c in r.missed and c != held]
        if held is not None and r.in_flight is not None:
            aside[held] = (
                f"in flight for {r.in_flight[1]:.0f} s of batch {tag}'s {r.wall_s:.0f} s when it timed out"
            )
            rec["set_aside"] = held
        if held is not None and len(rest) > 1:
            again: dict[str, Any] = {"batch": f"{tag}r", "cases": rest}
            rec["rerun"] = again
            batch(rest, f"{tag}r", again)
            return
        rec["retried"] = {c: lone(c, f"{tag}_{c}") for c in rest}

    for rec in batches:
        batch(rec["cases"], f"b{rec['batch']}", rec)
    for case, reason in aside.items():
        if case in out.counters:
            continue
        got = lone(case, f"aside_{case}")
        if case not in out.counters:
            out.why[case] = f"{out.why[case]} (set aside: {reason})"
        out.set_aside.append({"case": case, "why": reason, **got})
    return out
