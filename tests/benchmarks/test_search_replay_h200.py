"""The search replay against the committed H200 exhaustive tables is deterministic and matches the
committed benchmarks/results/h200/suite/search_replay.json (real tables; the planner's search as it is). A
change to the search that moves a trace fails here on purpose: regenerate with `make bench-search-replay`
and say in the commit what moved."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from benchmarks import search_replay
from benchmarks.exhaustive import Table

ROOT = Path(__file__).resolve().parents[2]
EXHAUSTIVE = ROOT / "benchmarks" / "results" / "exhaustive"
COMMITTED = ROOT / "benchmarks" / "results" / "h200" / "suite" / "search_replay.json"


@pytest.mark.parametrize("task", ["l1_transpose_cuda", "l1_gelu", "l2_matmul_irregular"])
def test_replay_of_a_committed_table_matches_the_committed_replay(task: str) -> None:
    table = msgspec.json.decode((EXHAUSTIVE / f"{task}.json").read_bytes(), type=Table)
    got = search_replay.replay(task, table)
    want = next(
        r
        for r in msgspec.json.decode(COMMITTED.read_bytes(), type=list[search_replay.Replay])
        if r.task == task
    )
    assert got == want
    assert got.converged and got.best_ms is not None and got.best_ms >= got.optimum_ms


@pytest.mark.parametrize(("task", "knob"), [("l1_cross_entropy", "CHUNK_MAX"), ("l1_col_reduce", "SPLIT_M")])
def test_a_table_swept_with_a_removed_switch_is_refused_not_replayed(task: str, knob: str) -> None:
    """The committed tables of these two tasks (H200, recorded) hold the switch the task files no longer
    have: their times are of the variant kernels too, so no replay of the task as it is can use them."""
    table = msgspec.json.decode((EXHAUSTIVE / f"{task}.json").read_bytes(), type=Table)
    with pytest.raises(search_replay.StaleTable, match=f"swept with \\['{knob}'\\], which the task no longer has"):
        search_replay.replay(task, table)


def test_bad_arguments_are_refused_with_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        search_replay.main(["--exhaustive-dir", str(tmp_path), "--out", str(tmp_path / "x")])
    assert "run benchmarks/exhaustive.py on a GPU first" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        search_replay.main(
            ["--exhaustive-dir", str(EXHAUSTIVE), "--tasks", "l3_pipeline", "--out", str(tmp_path / "x")]
        )
    assert "no exhaustive table" in capsys.readouterr().err
