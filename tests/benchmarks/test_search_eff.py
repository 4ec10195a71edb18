"""evaluations_to_reach on a small hand-checkable table.

TEST INPUT, not a measurement: the table's times below are made up so the answer can be worked out by
hand; real tables come from benchmarks/exhaustive.py on the GPU.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.search_eff import config_key, evaluations_to_reach, optimum

# Test input (hand-made): optimum is B=512 at 1.00 ms. 98 % of it means config_ms <= 1.00 / 0.98 = 1.0204.
TABLE = {
    config_key({"B": 128, "w": 4}): 2.00,
    config_key({"B": 256, "w": 4}): 1.50,
    config_key({"B": 512, "w": 4}): 1.00,
    config_key({"B": 1024, "w": 4}): 1.02,  # within 98 % (1.00 / 1.02 = 0.980)
    config_key({"B": 2048, "w": 4}): None,  # failed to launch
}


def test_optimum_skips_failed_configs() -> None:
    assert optimum(TABLE) == (config_key({"B": 512, "w": 4}), 1.00)


def test_counts_evaluations_until_within_98_percent() -> None:
    trace = [
        {"B": 128, "w": 4},
        {"B": 2048, "w": 4},
        {"w": 4, "B": 256},
        {"B": 1024, "w": 4},
        {"B": 512, "w": 4},
    ]
    assert evaluations_to_reach(trace, TABLE) == 4  # 1.02 ms is 98.04 % of optimum: the 4th evaluation
    assert evaluations_to_reach(trace, TABLE, fraction=1.0) == 5  # only the optimum itself


def test_config_missing_from_table_counts_but_never_hits() -> None:
    trace = [{"B": 64, "w": 4}, {"B": 512, "w": 4}]
    assert evaluations_to_reach(trace, TABLE) == 2


def test_never_reached_is_none_and_bad_fraction_is_refused() -> None:
    assert evaluations_to_reach([{"B": 128, "w": 4}, {"B": 256, "w": 4}], TABLE) is None
    with pytest.raises(ValueError, match="fraction"):
        evaluations_to_reach([], TABLE, fraction=1.5)


def test_search_report_joins_a_suite_trace_with_its_exhaustive_table(tmp_path: Path) -> None:
    """search_report.py end to end on hand-made files (TEST INPUT, not measurements)."""
    import msgspec

    from benchmarks import run_suite, search_report
    from benchmarks.exhaustive import Entry, Table

    table = Table(
        task="l1_x",
        space_size=5,
        legal=4,
        complete=True,
        entries=[
            Entry(config={"B": b, "w": 4}, median_ms=ms)
            for b, ms in ((128, 2.0), (256, 1.5), (512, 1.0), (1024, 1.02))
        ],
    )
    ex = tmp_path / "ex"
    ex.mkdir()
    (ex / "l1_x.json").write_bytes(msgspec.json.encode(table))
    row = run_suite.Row(
        task="l1_x",
        level="L1",
        kind="triton",
        device="d",
        driver="v",
        cuda="c",
        triton="t",
        torch="p",
        gpus=1,
        target="t",
        meets_target=None,
        search="s",
        start_config={"B": 128, "w": 4},
        evaluations=[
            run_suite.Evaluation(config={"B": 256}, median_ms=1.4),
            run_suite.Evaluation(config={"B": 1024}, median_ms=1.0),
        ],
    )
    other = msgspec.structs.replace(row, task="l2_y", level="L2")
    suite = tmp_path / "kernels.json"
    suite.write_bytes(msgspec.json.encode(run_suite.Report(dry_run=False, budget_s=None, rows=[row, other])))
    assert (
        search_report.main(
            ["--suite", str(suite), "--exhaustive-dir", str(ex), "--out", str(tmp_path / "eff")]
        )
        == 0
    )
    got = {r["task"]: r for r in msgspec.json.decode((tmp_path / "eff.json").read_bytes())}
    # the second evaluation (B=1024 over the start's w=4) is 1.00 / 1.02 = 98.0 % of the optimum: 2 of 4 legal
    assert got["l1_x"]["evaluations_to_98"] == 2 and got["l1_x"]["share_of_space"] == 0.5
    assert got["l1_x"]["meets_target"] is False and got["l1_x"]["search_best_ms"] == 1.02
    assert got["l2_y"]["not_measured"].startswith("no exhaustive table")
    md = (tmp_path / "eff.md").read_text()
    assert "| l1_x | 4 | yes |" in md
    l2_line = next(line for line in md.splitlines() if line.startswith("| l2_y |"))
    assert "not measured" in l2_line and "not reached" not in l2_line  # no table: no search verdict
