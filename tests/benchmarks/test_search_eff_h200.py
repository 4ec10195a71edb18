"""The committed search-efficiency table is what search_report computes from the committed H200 files.

Real data: the suite's search traces (benchmarks/results/h200/suite/kernels.json) and the exhaustive
tables of the nine L1 tasks (benchmarks/results/exhaustive/, H200 runs 16 and 17) and of the five L2 tasks
(runs 21, 22 and 24). Regenerating the report
from them must give the committed search_eff.json, and each table must be complete and hold its optimum.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from benchmarks import search_report
from benchmarks.exhaustive import Table, lookup
from benchmarks.search_eff import optimum

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "benchmarks" / "results" / "h200" / "suite"
EXHAUSTIVE = ROOT / "benchmarks" / "results" / "exhaustive"


def test_the_committed_report_regenerates_from_the_committed_traces_and_tables(tmp_path: Path) -> None:
    out = tmp_path / "eff"
    assert (
        search_report.main(
            ["--suite", str(SUITE / "kernels.json"), "--exhaustive-dir", str(EXHAUSTIVE), "--out", str(out)]
        )
        == 0
    )
    assert out.with_suffix(".json").read_bytes() == (SUITE / "search_eff.json").read_bytes()
    rows = {r["task"]: r for r in msgspec.json.decode(out.with_suffix(".json").read_bytes())}
    l1 = [r for r in rows.values() if r["level"] == "L1"]
    assert len(l1) == 9 and all(r["table_complete"] for r in l1)
    l2 = {r["task"]: r for r in rows.values() if r["level"] == "L2"}
    assert len(l2) == 5 and not any(r["not_measured"] for r in l2.values())
    assert all(r["table_complete"] for r in l2.values())


def test_every_table_is_complete_and_its_optimum_is_its_fastest_entry() -> None:
    tables = sorted(EXHAUSTIVE.glob("*.json"))
    assert len(tables) == 14  # 9 L1 + 5 L2
    for path in tables:
        t = msgspec.json.decode(path.read_bytes(), type=Table)
        assert t.complete and len(t.entries) == t.legal, path.name
        assert t.optimum is not None and t.optimum.median_ms == optimum(lookup(t))[1], path.name
        assert t.device == "NVIDIA H200" and t.triton == "3.6.0", path.name
