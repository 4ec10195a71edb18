"""The search replay against the committed H200 exhaustive tables is deterministic and matches the
committed benchmarks/results/h200/suite/search_replay.json (real tables; the planner's search as it is). A
change to the search that moves a trace fails here on purpose: regenerate with `make bench-search-replay`
and say in the commit what moved."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from benchmarks import search_replay
from benchmarks.exhaustive import REMOVED_SWITCHES, Table

ROOT = Path(__file__).resolve().parents[2]
EXHAUSTIVE = ROOT / "benchmarks" / "results" / "exhaustive"
COMMITTED = ROOT / "benchmarks" / "results" / "h200" / "suite" / "search_replay.json"


@pytest.mark.parametrize("task", ["l1_gelu", "l2_bmm"])
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


def test_bad_arguments_are_refused_with_the_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        search_replay.main(["--exhaustive-dir", str(tmp_path), "--out", str(tmp_path / "x")])
    assert "run benchmarks/exhaustive.py on a GPU first" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        search_replay.main(
            ["--exhaustive-dir", str(EXHAUSTIVE), "--tasks", "l3_pipeline", "--out", str(tmp_path / "x")]
        )
    assert "no exhaustive table" in capsys.readouterr().err


@pytest.mark.parametrize(("task", "switch"), [("l1_transpose_cuda", "USE_TILE"), ("l2_matmul_irregular", "PAD_ALIGN"),
                                               ("l1_col_reduce", "SPLIT_M"), ("l1_cross_entropy", "CHUNK_MAX")])
def test_a_table_recorded_with_a_removed_switch_replays_on_its_off_rows(task: str, switch: str) -> None:
    """Issue 20 took the switch out of the task: the recorded table (and the committed replay, made with the
    switch in the space) stay as recorded; the replay now reads only the rows at the switch's off value,
    which are the task's kernel as it stands, and never leaves them."""
    table = msgspec.json.decode((EXHAUSTIVE / f"{task}.json").read_bytes(), type=Table)
    off = [e for e in table.entries if e.config[switch] == REMOVED_SWITCHES[switch]]
    assert 0 < len(off) < len(table.entries)
    got = search_replay.replay(task, table)
    assert got.legal == len(off) and got.outside_table == 0
    assert all(switch not in c for c in got.trace)
    assert got.optimum_ms == min(e.median_ms for e in off if e.median_ms is not None)
    assert got.converged and got.best_ms is not None and got.best_ms >= got.optimum_ms
    recorded = next(r for r in msgspec.json.decode(COMMITTED.read_bytes(), type=list[search_replay.Replay])
                    if r.task == task)
    assert any(switch in c for c in recorded.trace)  # recorded before issue 20


def test_a_table_knob_that_is_no_removed_switch_is_refused_with_the_fix() -> None:
    from benchmarks.exhaustive import lookup

    table = msgspec.json.decode((EXHAUSTIVE / "l1_gelu.json").read_bytes(), type=Table)
    with pytest.raises(ValueError, match="re-record the table"):
        lookup(table, {"num_warps"})
