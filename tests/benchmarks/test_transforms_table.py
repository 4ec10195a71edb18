"""benchmarks/transforms_table.py: the committed H200 table is what the recorded runs regenerate, and every
row names the run, commit and device it was measured on."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import transforms_table

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "benchmarks" / "results" / "h200"


def test_committed_table_is_regenerated_from_the_recorded_runs(tmp_path: Path) -> None:
    assert transforms_table.main(["--out", str(tmp_path)]) == 0
    for name in ("transforms.json", "transforms.md"):
        assert (tmp_path / name).read_text() == (COMMITTED / name).read_text(), (
            f"{name} is stale: run python3 benchmarks/transforms_table.py")


def test_every_row_is_stamped_and_measured() -> None:
    rows = json.loads((COMMITTED / "transforms.json").read_text())["rows"]
    assert rows
    for r in rows:
        assert r["run_id"] and r["commit"] and r["device"].startswith("NVIDIA"), r
        lo, hi = r["ci95"]
        assert lo <= r["speedup"] <= hi and r["baseline_ms"] > 0 and r["candidate_ms"] > 0, r


def test_a_run_without_transform_rows_adds_nothing(tmp_path: Path) -> None:
    run = tmp_path / "r1"
    (run / "steps" / "transforms").mkdir(parents=True)
    (run / "ledger.json").write_text(json.dumps({"run_id": "r1", "commit": "abc", "env": {"device": "X"}}))
    (run / "steps" / "transforms" / "transforms.json").write_text(json.dumps(
        {"rows": [{"transform": "k_pipeline", "status": "not_measured", "reason": "not measured: no GPU"}]}))
    assert transforms_table.recorded_rows(tmp_path) == []
