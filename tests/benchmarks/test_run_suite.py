"""run_suite.py on CPU: the --dry-run end to end on three tasks (static layers through the real loader,
planner pruning and compile tool), and its pure pieces (search loop, roofline bound, target check).

The numbers in the pure tests are TEST INPUT chosen to be checkable by hand, not measurements.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks import run_suite
from benchmarks.suite import SuiteError, Target, TaskMeta, select

TASKS = "l2_matmul_square,l1_transpose_cuda"


@pytest.mark.slow
def test_dry_run_writes_rows_that_say_not_measured(tmp_path: Path) -> None:
    out_json, out_md = tmp_path / "kernels.json", tmp_path / "kernels.md"
    rc = run_suite.main(["--dry-run", "--tasks", TASKS, "--out-json", str(out_json), "--out-md", str(out_md)])
    assert rc == 0
    report = json.loads(out_json.read_text())
    assert report["dry_run"] is True
    rows = {r["task"]: r for r in report["rows"]}
    assert list(rows) == TASKS.split(",")
    for name, row in rows.items():
        for field in (
            "task",
            "level",
            "device",
            "driver",
            "cuda",
            "triton",
            "torch",
            "gpus",
            "target",
            "meets_target",
            "search",
        ):
            assert field in row, f"{name}: no {field}"
        assert row["not_measured"] == "not measured: no GPU"
        assert row["device"] == "not measured: no GPU" and row["meets_target"] is None
        assert row["before"] is None and row["after"] is None and row["speedup"] is None
        assert row["funnel"]["compiled_start"] == 1, row["notes"]
        assert row["search"].startswith("not run (dry run)")
    # SPACE sizes are products of the tasks' SPACE lists: 3 x 3 x 3 x 2 x 2 x 4 and 4 x 6 (USE_TILE gone).
    assert rows["l2_matmul_square"]["funnel"]["space"] == 432
    assert rows["l1_transpose_cuda"]["funnel"]["space"] == 24
    assert 0 < rows["l2_matmul_square"]["funnel"]["static_pass"] < 432  # the planner prunes some
    assert (
        rows["l2_matmul_square"]["level"] == "L2" and rows["l2_matmul_square"]["target"] == ">= 0.95x matmul"
    )
    md = out_md.read_text()
    assert "| l1_transpose_cuda | L1 |" in md and "not measured: no GPU" in md


def test_unknown_task_is_refused_with_the_known_names() -> None:
    with pytest.raises(SuiteError, match="known: .*l1_vector_add"):
        select("l1_vector_add,no_such_task")


def test_without_a_gpu_the_real_run_is_refused() -> None:
    from services.toolrunner.tools.run_correctness.spec import gpu_count

    if gpu_count():
        pytest.skip("a GPU is present")
    with pytest.raises(SystemExit):
        run_suite.main(["--tasks", "l1_relu"])


def test_search_loop_stops_when_the_proposer_converges() -> None:
    # Test input: a 1-D space whose time falls to 1 ms at B=512 and rises after.
    times = {128: 4.0, 256: 2.0, 512: 1.0, 1024: 1.5}
    rounds = iter([[{"B": 128}, {"B": 256}], [{"B": 512}], [{"B": 1024}], []])
    seen_history = []

    def propose(history):
        seen_history.append(list(history))
        return next(rounds)

    trace = run_suite.search_loop(
        propose, lambda cs: [(times[c["B"]], "") for c in cs], deadline=math.inf, start={"B": 64}
    )
    assert [e.config["B"] for e in trace] == [128, 256, 512, 1024]
    assert [e.round for e in trace] == [0, 0, 1, 2]
    assert seen_history[0] == [({"B": 64}, None)]  # the start is in the history, unscored
    assert seen_history[1][-1] == ({"B": 256}, 0.5)  # scores are 1 / ms
    fastest, _, checks, _ = run_suite.pick_correct(trace, {"B": 64}, lambda c: SimpleNamespace(passed=True))
    assert fastest.config == {"B": 512} and checks == 1


def test_search_loop_stops_at_the_deadline() -> None:
    clock = iter([0.0, 0.0, 5.0, 5.0, 11.0, 11.0])  # t0, round 0 check, eval stamp, ...
    trace = run_suite.search_loop(
        lambda h: [{"B": len(h)}], lambda cs: [(1.0, "")], deadline=10.0, clock=lambda: next(clock)
    )
    assert len(trace) == 2  # the third round starts at t = 11 > 10


def test_search_loop_runs_its_first_round_even_past_the_deadline() -> None:
    # On the H200 (run 4) a task's share of a tight budget was spent by the fixed costs before its search
    # began, and 8 of 13 tasks timed nothing; the diagnosis-seeded first round now always runs.
    trace = run_suite.search_loop(
        lambda h: [{"B": len(h)}], lambda cs: [(1.0, "")], deadline=-1.0, clock=lambda: 0.0
    )
    assert len(trace) == 1


def test_roofline_bound_and_target() -> None:
    roof = {"copy_bytes_per_s": 4e12, "bf16_flops_per_s": 8e14}  # test input
    # L1: bytes only. 4e9 B / 4e12 B/s = 1 ms.
    assert run_suite.roofline_bound_ms("L1", 1e15, 4e9, roof) == pytest.approx(1.0)
    # L2: max(4e9 / 4e12, 1.6e12 / 8e14) = max(1 ms, 2 ms).
    assert run_suite.roofline_bound_ms("L2", 1.6e12, 4e9, roof) == pytest.approx(2.0)
    assert run_suite.roofline_bound_ms("L2", 1.0, 1.0, {}) is None
    meta = TaskMeta(
        name="t",
        path="t.py",
        level="L2",
        kind="triton",
        baselines=["eager", "compile", "matmul"],
        target=Target(against="matmul", at_least=0.9),
    )
    assert run_suite.meets(meta, None, {"matmul": 0.95}) is True
    assert run_suite.meets(meta, None, {"matmul": 0.85}) is False
    assert run_suite.meets(meta, 0.99, {"matmul": None}) is None


def _row(task: str, level: str, speedup: float | None) -> run_suite.Row:
    return run_suite.Row(
        task=task,
        level=level,
        kind="triton",
        device="d",
        driver="v",
        cuda="c",
        triton="t",
        torch="p",
        gpus=1,
        target=">= 1x",
        meets_target=None,
        search="s",
        start_config={},
        speedup=speedup,
    )


def test_append_keeps_earlier_rows_and_replaces_the_rerun_ones(tmp_path: Path) -> None:
    out_json, out_md = tmp_path / "kernels.json", tmp_path / "kernels.md"
    first = run_suite.Report(
        dry_run=False, budget_s=1.0, rows=[_row("l2_b", "L2", 2.0), _row("l1_a", "L1", 1.5)], command="first"
    )
    run_suite.write(first, out_json, out_md)
    earlier = run_suite._earlier(out_json)
    assert earlier is not None
    cut_short = run_suite.Report(dry_run=False, budget_s=1.0, rows=[], command="second")
    run_suite.write(cut_short, out_json, out_md, earlier)  # killed before its first task: nothing lost
    assert [r["task"] for r in json.loads(out_json.read_text())["rows"]] == ["l1_a", "l2_b"]
    second = run_suite.Report(dry_run=False, budget_s=1.0, rows=[_row("l2_b", "L2", 3.0)], command="second")
    run_suite.write(second, out_json, out_md, earlier)
    merged = json.loads(out_json.read_text())
    assert [(r["task"], r["speedup"]) for r in merged["rows"]] == [("l1_a", 1.5), ("l2_b", 3.0)]
    assert merged["command"] == "second" and merged["earlier_commands"] == ["first"]
    assert "| l1_a | L1 |" in out_md.read_text()


def test_the_markdown_gives_one_roofline_line_over_the_rows_runs() -> None:
    a, b, c = _row("l1_a", "L1", 1.5), _row("l1_b", "L1", 1.2), _row("l1_c", "L1", 1.1)
    a.roofline = {"copy_bytes_per_s": 4.22e12, "bf16_flops_per_s": 701e12}  # TEST INPUT, two runs' roofs
    b.roofline = {"copy_bytes_per_s": 4.25e12, "bf16_flops_per_s": 729e12}
    c.roofline = {"not_measured": "timeout"}  # a run whose roofline failed adds no figure
    md = run_suite.markdown(run_suite.Report(dry_run=False, budget_s=None, rows=[a, b, c], command="x"))
    lines = [line for line in md.splitlines() if line.startswith("Roofline")]
    want = (
        "Roofline measured in the runs of these rows (each row's fraction is against its own run's): "
        "copy 4.22-4.25 TB/s, bf16 matmul 701-729 TFLOP/s."
    )
    assert lines == [want]
    b.roofline = dict(a.roofline)
    md = run_suite.markdown(run_suite.Report(dry_run=False, budget_s=None, rows=[a, b], command="x"))
    assert "copy 4.22 TB/s, bf16 matmul 701 TFLOP/s." in md


def test_settle_ships_the_start_config_when_the_best_is_slower_or_wrong() -> None:
    # TEST INPUT shaped like H200 run 4's l1_transpose_cuda row: the one searched config was 4.6x slower.
    row = _row("l1_t", "L1", None)
    row.before = run_suite.Timing(median_ms=4.36, p20_ms=4.36, p80_ms=4.37, n=4)
    best = run_suite.Timing(median_ms=20.18, p20_ms=20.18, p80_ms=20.19, n=4)
    row.evaluations = [run_suite.Evaluation(config={"B": 8}, median_ms=20.18)]
    run_suite.settle(row, best, 0.216, [0.215, 0.217], changed=True, correct=True)
    assert row.after == row.before and row.speedup == 1.0 and row.speedup_ci is None
    assert row.outcome.startswith("start kept") and "0.22x" in row.outcome and row.candidate_speedup == 0.216
    run_suite.settle(row, best, 3.0, [2.9, 3.1], changed=True, correct=False)
    assert row.after == row.before and "failed correctness" in row.outcome
    run_suite.settle(row, best, 3.0, [2.9, 3.1], changed=True, correct=True)
    assert row.after == best and row.speedup == 3.0 and row.outcome.startswith("patched")
    row.evaluations = []
    run_suite.settle(row, best, 1.0, [1.0, 1.0], changed=False, correct=True)
    assert "no config was searched" in row.outcome


def test_pick_correct_falls_back_to_the_next_fastest_correct_config() -> None:

    # TEST INPUT: three timed configs, the two fastest fail correctness (as attention d64's did on the H200).
    trace = [
        run_suite.Evaluation(config={"B": b}, median_ms=ms) for b, ms in ((64, 1.0), (128, 2.0), (32, 3.0))
    ]
    trace.append(run_suite.Evaluation(config={"B": 16}, median_ms=None, error="compile failed"))
    asked = []

    def check(overrides):  # type: ignore[no-untyped-def]
        asked.append(overrides)
        return SimpleNamespace(passed=overrides.get("B") == 32, summary=f"B={overrides.get('B')}")

    chosen, result, tried, failed = run_suite.pick_correct(trace, {"B": 8, "w": 4}, check, fallbacks=2)
    assert chosen.config == {"B": 32} and result.passed and tried == 3
    assert asked == [{"B": 64}, {"B": 128}, {"B": 32}] and [e.config for e, _ in failed] == [
        {"B": 64},
        {"B": 128},
    ]
    asked.clear()
    chosen, result, tried, failed = run_suite.pick_correct(trace, {"B": 8, "w": 4}, check, fallbacks=1)
    assert (
        chosen.config == {"B": 64} and not result.passed and tried == 2
    )  # none passed: the fastest, failing
    assert run_suite.pick_correct([], {"B": 8}, check)[0] is None


def test_no_task_starts_once_the_budget_is_spent_and_earlier_measured_rows_stay(tmp_path: Path) -> None:
    """H200 run 8 ran past its --budget-s (round 0 always runs once a task starts) and was killed, losing
    the tasks it had not reached. Now a task that would start past the budget gets a "not started" row,
    unless --append holds an earlier measured row for it."""
    out_json, out_md = tmp_path / "kernels.json", tmp_path / "kernels.md"
    first = run_suite.Report(
        dry_run=False, budget_s=1.0, rows=[_row("l1_transpose_cuda", "L1", 6.6)], command="first"
    )
    run_suite.write(first, out_json, out_md)
    argv = ["--dry-run", "--tasks", TASKS, "--budget-s", "0.000001", "--append"]
    assert run_suite.main([*argv, "--out-json", str(out_json), "--out-md", str(out_md)]) == 0
    rows = {r["task"]: r for r in json.loads(out_json.read_text())["rows"]}
    assert rows["l1_transpose_cuda"]["speedup"] == 6.6  # the earlier measurement is kept
    assert rows["l2_matmul_square"]["search"] == "not started"
    assert "budget-s 0 was spent before this task" in rows["l2_matmul_square"]["not_measured"]
