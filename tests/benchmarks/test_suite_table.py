"""benchmarks/suite_table.py: the committed before/after table is what the recorded runs regenerate; every
row names its run, commit and device; a CPU-only run adds no row."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import suite_table

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "benchmarks" / "results" / "h200" / "suite"


def test_committed_table_is_regenerated_from_the_recorded_runs(tmp_path: Path) -> None:
    assert suite_table.main(["--out", str(tmp_path)]) == 0
    for name in ("after_transforms.json", "after_transforms.md"):
        assert (tmp_path / name).read_text() == (COMMITTED / name).read_text(), (
            f"{name} is stale: run python3 benchmarks/suite_table.py")


def test_every_row_is_stamped_and_a_verified_row_has_its_ci() -> None:
    rows = json.loads((COMMITTED / "after_transforms.json").read_text())["rows"]
    assert rows
    for r in rows:
        assert r["run_id"] and r["commit"] and r["device"].startswith("NVIDIA"), r
        if best := r.get("best"):
            lo, hi = best["speedup_ci"]
            assert lo <= best["speedup"] <= hi, r


def test_a_run_without_a_gpu_adds_nothing(tmp_path: Path) -> None:
    run = tmp_path / "r1"
    (run / "steps" / "suite_loop").mkdir(parents=True)
    (run / "ledger.json").write_text(json.dumps({"run_id": "r1", "commit": "abc", "env": {"device": "X"}}))
    (run / "steps" / "suite_loop" / "after_transforms.json").write_text(json.dumps(
        {"gpu": False, "rows": [{"task": "t", "outcome": "nothing verified"}]}))
    assert suite_table.recorded_rows(tmp_path) == ([], [])


def test_a_patch_timed_on_another_gpu_than_the_baselines_gets_no_ratio() -> None:
    rows = json.loads((COMMITTED / "after_transforms.json").read_text())["rows"]
    md = (COMMITTED / "after_transforms.md").read_text().splitlines()
    for r in rows:
        theirs = (r.get("before") or {}).get("device")
        line = next(ln for ln in md if ln.startswith(f"| {r['task']} |") and f"| {r['run_id']} |" in ln)
        if r.get("best") and theirs and theirs != r["device"]:
            assert f"not comparable: baselines recorded on {theirs}" in line, line
        else:
            assert "not comparable" not in line, line
    assert any("not comparable" in ln for ln in md)  # r56: l1_relu on an H100 against H200 baselines
