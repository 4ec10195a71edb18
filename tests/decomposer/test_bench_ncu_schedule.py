"""benchmarks/ncu_schedule.py: what the ncu benchmark does when a batch hangs, and its budget, off the GPU.

The profiler is replaced by a model of H200 run r33's costs (benchmarks/results/runs/r33, decomposer_ncu):
an ncu run costs ~8 s to start plus ~0.5 s per CUDA case (batch 3: 16 CUDA cases in 15.9 s; lone retries
8.7-11.7 s), and `cuda_device_malloc` never finishes under ncu (batch 4 timed out at 85 s with it inside;
alone it timed out after 25 s). Time is a fake clock the model advances.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import ncu_schedule as ns

R33 = (
    Path(__file__).resolve().parents[2]
    / "benchmarks/results/runs/r33/steps/decomposer_ncu/results/bench_decomposer_ncu.json"
)
HANGS = "cuda_device_malloc"
START_S, PER_CASE_S = 8.0, 0.5


class Model:
    """A fake profiler and clock: each case costs PER_CASE_S after START_S; HANGS holds its run until the
    timeout. Records every call as (cases, timeout_s)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.calls: list[tuple[list[str], float]] = []

    def clock(self) -> float:
        return self.now

    def profile(self, cases: list[str], timeout_s: float, tag: str) -> ns.Run:
        self.calls.append((cases, timeout_s))
        elapsed = START_S
        for c in cases:
            if c == HANGS:
                self.now += timeout_s
                why = f"not measured: ncu timed out after {timeout_s - 15:.0f} s"
                return ns.Run({}, dict.fromkeys(cases, why), True, (c, timeout_s - elapsed), timeout_s)
            elapsed += PER_CASE_S
        if elapsed > timeout_s:  # slow, not hung: the last case is in flight briefly
            self.now += timeout_s
            why = f"not measured: ncu timed out after {timeout_s - 15:.0f} s"
            return ns.Run({}, dict.fromkeys(cases, why), True, (cases[-1], PER_CASE_S / 2), timeout_s)
        self.now += elapsed
        return ns.Run({c: {"gpu__time_duration.sum": 1.0} for c in cases}, {}, False, None, elapsed)


def _r33_batch4() -> list[str]:
    return json.loads(R33.read_text())["batches"][4]["cases"]


def test_a_case_that_holds_its_batch_is_set_aside_and_the_others_profiled_together() -> None:
    """r33's batch 4 again: the hang is found from the launcher's manifest (in flight for most of the
    batch), the other 15 cases are one more batch, and the hang runs last, alone, once. r33 itself spent
    86.7 s on the batch, then ~10 s on each lone retry, and ran out of budget after 10 of them."""
    cases = _r33_batch4()
    assert HANGS in cases and len(cases) == 16
    m = Model()
    batches = [{"batch": 4, "language": "cuda", "cases": cases}]
    got = ns.measure(batches, {}, m.profile, ns.Budgets(280.0, 100.0, 40.0), m.clock)
    rest = [c for c in cases if c != HANGS]
    assert [c for c, _ in m.calls] == [cases, rest, [HANGS]]
    assert set(got.counters) == set(rest) and got.timed_out_alone == {HANGS}
    assert got.why[HANGS].startswith("not measured: ncu timed out after 25 s (set aside: in flight for")
    b = batches[0]
    assert b["set_aside"] == HANGS and b["outcome"] == "0 of 16 measured"
    assert b["rerun"]["cases"] == rest and b["rerun"]["outcome"] == "15 of 15 measured"
    (aside,) = got.set_aside
    assert aside == {
        "case": HANGS,
        "why": "in flight for 91 s of batch b4's 100 s when it timed out",  # 3rd case: in from 9 s
        "wall_s": 40.0,
        "ncu": "not measured: ncu timed out after 25 s",
    }
    assert m.now == pytest.approx(100 + START_S + 15 * PER_CASE_S + 40)  # 155.5 s, all 15 measured


def test_a_slow_batch_is_not_blamed_on_the_case_it_was_in() -> None:
    """A batch that times out spread over many cases (the one in flight had a small share of it): no case
    is set aside; each is retried alone, as before."""
    m = Model()
    cases = [f"c{i}" for i in range(6)]
    batches = [{"batch": 0, "language": "triton", "cases": cases}]
    got = ns.measure(batches, {}, m.profile, ns.Budgets(600.0, 10.0, 40.0), m.clock)
    assert "set_aside" not in batches[0] and got.set_aside == []
    assert [c for c, _ in m.calls] == [cases] + [[c] for c in cases]
    assert set(got.counters) == set(cases) and set(batches[0]["retried"]) == set(cases)


def test_known_hangs_run_last_and_alone() -> None:
    m = Model()
    batches = [
        {"batch": 0, "language": "cuda", "cases": ["a", "b"]},
        {"batch": 1, "language": "x", "cases": ["c"]},
    ]
    got = ns.measure(batches, {HANGS: "timed out alone in r33"}, m.profile, ns.Budgets(280, 100, 40), m.clock)
    assert m.calls == [(["a", "b"], 100), (["c"], 100), ([HANGS], 40)]
    assert got.timed_out_alone == {HANGS} and got.why[HANGS].endswith("(set aside: timed out alone in r33)")


def test_the_budget_bounds_every_run() -> None:
    """No run starts with less than case_timeout_s left, and each run's timeout is cut to what is left:
    profiling ends within the budget (r33 started its last ncu run at ~277 s of its 280 s budget)."""
    m = Model()
    pairs = [["c0", HANGS], ["c1", "d1"], ["c2", "d2"]]
    batches = [{"batch": i, "language": "cuda", "cases": p} for i, p in enumerate(pairs)]
    got = ns.measure(batches, {}, m.profile, ns.Budgets(150.0, 100.0, 40.0), m.clock)
    # batch 0 hangs for its 100 s; c0 alone (40 s timeout) takes 8.5 s; batch 1 gets the 41.5 s left and
    # takes 9 s; then 32.5 s are left, under the 40 s a lone run is given: nothing else starts
    assert m.calls == [(["c0", HANGS], 100.0), (["c0"], 40.0), (["c1", "d1"], 41.5)]
    assert m.now <= 150.0 and batches[1]["timeout_s"] == 41.5
    assert batches[2]["outcome"] == "not started: budget spent"
    spent = "not measured: --budget-s 150 spent"
    assert got.why["c2"] == got.why["d2"] == spent and got.why[HANGS].startswith(
        spent + " (set aside: in flight"
    )
    assert set(got.counters) == {"c0", "c1", "d1"} and got.set_aside[0]["ncu"] == spent
