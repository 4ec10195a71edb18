"""benchmarks/bench_decomposer_ncu.py off the GPU: exit 0, every case "not measured", a full launch plan."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import bench_decomposer_ncu as bench
from services.toolrunner.nvtools import gpu_count
from tests.decomposer import decomposer_corpus as corpus_io


@pytest.mark.skipif(gpu_count() > 0, reason="a GPU is present: the benchmark would profile")
def test_no_gpu_exits_0_with_every_case_not_measured(tmp_path: Path) -> None:
    out = tmp_path / "b.json"
    assert bench.main(["--out", str(out)]) == 0
    res = json.loads(out.read_text())
    names = {d.name for d in corpus_io.case_dirs()}
    assert {r["case"] for r in res["cases"]} == names
    assert {r["ncu"] for r in res["cases"]} == {"not measured: no GPU"}
    assert res["measured"] == 0 and res["static_plus_ncu"]["planted"] == 0
    # the static half is the corpus attribution itself (test_corpus_attribution.py's targets)
    assert res["static"]["top1"] >= 0.95 and res["static"]["high_fp_rate"] == 0.0


def test_plan_describes_a_launch_for_every_case() -> None:
    entries = bench.plan()
    assert {e["case"] for e in entries} == {d.name for d in corpus_io.case_dirs()}
    for e in entries:
        if e["language"] == "cuda":
            assert e["block"] and e["grid"] and e["args"], e
        else:
            assert "skip" in e or e["elements_per_pointer"] > 0, e
    skipped = [e["case"] for e in entries if "skip" in e]
    assert skipped == ["print_left_in"], skipped  # a new Triton case needs a TRITON_ELEMS entry
