"""GPU: run_suite.py end to end on two small tasks (the real search, correctness, bench_ab, baselines).

Run on the H200 with `make test-gpu`. When $KPILOT_FIXTURE_OUT is set, the JSON and Markdown it wrote are
copied there, to be committed as fixtures of a real run.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from benchmarks import run_suite


@pytest.mark.gpu
def test_suite_measures_two_tasks_on_the_gpu(tmp_path: Path) -> None:
    out_json, out_md = tmp_path / "kernels.json", tmp_path / "kernels.md"
    rc = run_suite.main(
        [
            "--tasks",
            "l1_relu,l2_matmul_tall_skinny",
            "--budget-s",
            "240",
            "--skip-compile",
            "--baselines",
            str(tmp_path / "baselines.json"),
            "--out-json",
            str(out_json),
            "--out-md",
            str(out_md),
        ]
    )
    assert rc == 0
    if dest := os.environ.get("KPILOT_FIXTURE_OUT"):
        Path(dest).mkdir(parents=True, exist_ok=True)
        for f in (out_json, out_md, tmp_path / "baselines.json"):
            shutil.copy(f, Path(dest) / f"suite_{f.name}")
    report = json.loads(out_json.read_text())
    assert report["roofline"].get("copy_bytes_per_s"), report["roofline"]
    for row in report["rows"]:
        assert row["not_measured"] == "", row
        assert row["correct"] is True, row["correctness"]
        assert row["before"]["median_ms"] > 0 and row["after"]["median_ms"] > 0
        assert row["speedup_ci"][0] <= row["speedup"] <= row["speedup_ci"][1]
        assert row["gpus"] >= 1 and "H200" in row["device"]
        assert row["meets_target"] in (True, False)
        assert row["evaluations"], "the search timed nothing"
        assert row["baselines_ms"]["eager"] is not None
