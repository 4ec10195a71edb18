"""`bench_decomposer_ncu.py --resume`: finish H200 run r33 (61 of 126 cases measured before its budget ran
out) with a second run, off the GPU. The earlier result is the committed r33 one, the file run r34 resumes
from (benchmarks/runs/r34.toml)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks import bench_decomposer_ncu as bench
from benchmarks import ncu_resume
from benchmarks.ncu_schedule import Schedule

ROOT = Path(__file__).resolve().parents[2]
R33 = ROOT / "benchmarks/results/runs/r33/steps/decomposer_ncu/results/bench_decomposer_ncu.json"
R33_REL = str(R33.relative_to(ROOT))
RUN10 = ROOT / "tests/fixtures/h200/decomposer_ncu/run10_bench_decomposer_ncu.json"


def _r33() -> dict:
    return json.loads(R33.read_text())


def test_the_earlier_run_is_named_and_its_lone_timeout_found() -> None:
    doc = ncu_resume.load(R33)
    assert ncu_resume.run_label(R33, doc) == "r33"  # from benchmarks/results/runs/r33/ledger.json
    assert ncu_resume.timed_out_alone(doc) == {"cuda_device_malloc": "not measured: ncu timed out after 25 s"}
    got = ncu_resume.measured(doc, "r33")
    assert len(got) == 61 and {who for _, who in got.values()} == {"r33"}


def test_a_copy_outside_its_recorded_run_is_named_by_its_path(tmp_path: Path) -> None:
    copy = tmp_path / "earlier.json"
    shutil.copy(R33, copy)
    assert ncu_resume.run_label(copy, ncu_resume.load(copy)) == str(copy)


@pytest.mark.parametrize(
    ("text", "words"),
    [("{", "not JSON"), ('{"benchmark": "bench_tools", "cases": []}', "not a bench_decomposer_ncu result")],
)
def test_a_file_that_is_not_an_earlier_result_is_refused_with_the_fix(
    tmp_path: Path, text: str, words: str
) -> None:
    bad = tmp_path / "x.json"
    bad.write_text(text)
    with pytest.raises(SystemExit, match=f"{words}.*give the --out JSON of an earlier"):
        bench.main(["--resume", str(bad), "--dry-run", "--out", str(tmp_path / "o.json")])
    with pytest.raises(SystemExit, match="give one of them"):
        bench.main(["--resume", str(bad), "--replay", str(bad), "--out", str(tmp_path / "o.json")])


def test_a_dry_run_resuming_r33_plans_only_what_r33_left_and_reports_the_whole_corpus(tmp_path: Path) -> None:
    out = tmp_path / "r34.json"
    assert bench.main(["--resume", R33_REL, "--dry-run", "--out", str(out)]) == 0
    res, r33 = json.loads(out.read_text()), _r33()
    done = {c["case"] for c in r33["cases"] if "counters" in c}
    left = [e["case"] for e in res["plan"] if e["case"] not in done and "skip" not in e]
    assert len(done) == 61 and len(left) == 64  # and print_left_in, never launched: 65 not measured
    planned = [c for b in res["batches"] for c in b["cases"]]
    assert planned == [c for c in left if c != "cuda_device_malloc"]  # corpus order, the hang left out
    assert [(b["language"], len(b["cases"])) for b in res["batches"]] == [
        ("cuda", 16),
        ("triton", 16),
        ("triton", 16),
        ("triton", 15),
    ]
    assert res["set_aside"] == [
        {
            "case": "cuda_device_malloc",
            "why": "timed out alone in r33: not measured: ncu timed out after 25 s",
            "ncu": "not run: dry run",
        }
    ]
    rows = {r["case"]: r for r in res["cases"]}
    assert len(rows) == 126 and res["measured"] == 61 and res["measured_this_run"] == 0
    was = {c["case"]: c for c in r33["cases"]}
    for c in done:
        assert rows[c]["measured_by"] == "r33" and rows[c]["counters"] == was[c]["counters"]
    assert {rows[c]["ncu"] for c in left if c != "cuda_device_malloc"} == {"not measured: dry run"}
    assert rows["cuda_device_malloc"]["timed_out_alone"] is True
    assert res["resumed_from"] | {"batches": None} == {
        "path": R33_REL,
        "run": "r33",
        "measured": 61,
        "note": bench.RESUME_NOTE,
        "batches": None,
    }
    assert res["resumed_from"]["batches"] == r33["batches"]
    # the r33 counters are scored by this checkout: the same figures as --replay of r33
    replay = tmp_path / "replay.json"
    assert bench.main(["--replay", R33_REL, "--out", str(replay)]) == 0
    assert res["static_plus_ncu"] == json.loads(replay.read_text())["static_plus_ncu"]


def test_a_second_run_merges_into_one_report_each_row_naming_its_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second run's profiling replaced by real H200 counters of run 10 for the seed cases r33 left
    (the GPU half is the lead's r34); the merged report is resumable again and names both runs."""
    from services.toolrunner import nvtools

    run10 = {c["case"]: c["counters"] for c in json.loads(RUN10.read_text())["cases"] if "counters" in c}
    seen: dict[str, list[str]] = {}

    def fake(entries, batches, set_aside, ncu, args) -> Schedule:
        cases = [c for b in batches for c in b["cases"]]
        seen["planned"], seen["set_aside"] = cases, list(set_aside)
        got = {c: run10[c] for c in cases if c in run10}
        return Schedule(counters=got, why={c: "not measured: no profiled row" for c in cases if c not in got})

    monkeypatch.setattr(bench, "measure", fake)
    monkeypatch.setattr(nvtools, "gpu_count", lambda: 1)
    monkeypatch.setattr(nvtools, "find_tool", lambda name: "/usr/local/cuda/bin/ncu")
    monkeypatch.setenv("KPILOT_RUN_ID", "r34")
    out = tmp_path / "r34.json"
    assert bench.main(["--resume", R33_REL, "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert seen["set_aside"] == ["cuda_device_malloc"] and "cuda_device_malloc" not in seen["planned"]
    rows = {r["case"]: r for r in res["cases"]}
    by = {r["case"]: r.get("measured_by") for r in res["cases"] if r["ncu"] == "measured"}
    new = {c for c, who in by.items() if who == "r34"}
    assert len(new) == res["measured_this_run"] > 20 and res["measured"] == 61 + len(new)
    assert {who for who in by.values()} == {"r33", "r34"} and all(
        rows[c]["counters"] == run10[c] for c in new
    )
    # resumed again: nothing measured by either run is profiled a third time, and each keeps its run
    again = tmp_path / "r35.json"
    monkeypatch.setenv("KPILOT_RUN_ID", "r35")
    assert bench.main(["--resume", str(out), "--out", str(again)]) == 0
    third = json.loads(again.read_text())
    assert not set(seen["planned"]) & set(by)
    assert {r["case"]: r.get("measured_by") for r in third["cases"] if r["ncu"] == "measured"} == by
