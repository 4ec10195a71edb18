"""benchmarks/transforms_bench.py on CPU: every case's transformation applies to its kernel, and with no
GPU every row says "not measured: no GPU" with no number in it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import transforms_bench
from services.toolrunner.nvtools import gpu_count


@pytest.mark.skipif(gpu_count() > 0, reason="the CPU path: this machine has a GPU")
def test_cpu_run_applies_every_case_and_measures_nothing(tmp_path: Path) -> None:
    out = tmp_path / "transforms.json"
    assert transforms_bench.main(["--out", str(out), "--commit", "test"]) == 0
    rec = json.loads(out.read_text())
    assert rec["commit"] == "test" and rec["device"] == "none"
    assert {r["transform"] for r in rec["rows"]} == {c.transform for c in transforms_bench.CASES}
    for r in rec["rows"]:
        assert r["status"] == "not_measured", r
        assert r["reason"] == "not measured: no GPU"
        assert "speedup" not in r and "baseline_ms" not in r
        if r["transform"] != "fuse_epilogue":  # fusing drops the consumer kernel and its BLOCK knob
            assert set(r["candidate_config"]) >= set(r["baseline_config"])
