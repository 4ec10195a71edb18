"""benchmarks/classifier_records.py and classifier_report.py on the recorded H200 job files: each finished
candidate is a record whose outcome is its first failing layer (or pass after full); unfinished and
withdrawn candidates are not records; the committed report is what the script regenerates."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from benchmarks import classifier_records as cr
from shared.messages import ChangeDescription

ROOT = Path(__file__).resolve().parents[2]
JOBS = "benchmarks/results/runs/{}/steps/suite_loop/jobs/{}.json"


def test_rationale_patterns_on_recorded_strings() -> None:
    def pats(text: str) -> list[str]:
        return ChangeDescription(change="set_constexpr", rationale=text).patterns()

    # strings as the r38/r39 job files hold them (rules policy: transform, config search, bare search)
    assert pats("k_loop_masked_every_iteration: transformation split_key_loop (attention: unmasked full "
                "key tiles first, masked") == ["k_loop_masked_every_iteration"]
    assert pats("config search (seed) for wgmma_not_used @ task.py:44, sass:0x0dd0; k_loop_not_pipelined @ "
                "task.py:107, task.py:108") == ["wgmma_not_used", "k_loop_not_pipelined"]
    assert pats("config search (seed) for uncoalesced_strided_access @ task.py:27, sass:0x0160") == [
        "uncoalesced_strided_access"]
    assert pats("scalar_global_access: offs_m is BLOCK_M-contiguous") == ["scalar_global_access"]
    assert pats("config search (seed)") == []


def test_col_reduce_job_gives_one_full_failure_and_drops_the_unfinished() -> None:
    recs, dropped = cr.from_job(ROOT / JOBS.format("r38", "l1_col_reduce"))
    job = "job-01M8VBJJ7BSBCC8MVKJJGD2VNN"
    assert [(r.candidate_id, r.record.outcome) for r in recs] == [(f"{job}-v1", "full")]
    r = recs[0].record
    assert r.source == f"r38:l1_col_reduce:{job}-v1"
    assert r.pattern_ids == ["uncoalesced_strided_access"] and r.edit_kinds == ["transform"]
    # config {BLOCK_M: 128, BLOCK_N: 1, num_warps: 4, num_stages: 1} as log2
    assert r.features == {"cfg:BLOCK_M": 7.0, "cfg:BLOCK_N": 0.0, "cfg:num_warps": 2.0, "cfg:num_stages": 0.0}
    assert recs[0].verified_speedup is None
    assert [(d.candidate_id[-2:], d.why) for d in dropped] == [
        ("v2", "unfinished after static pass"), ("v3", "no verdict"), ("v4", "no verdict"),
        ("v5", "no verdict"), ("v6", "no verdict")]


def test_attention_static_failures_and_block_sparse_passes() -> None:
    recs, _ = cr.from_job(ROOT / JOBS.format("r38", "l3_attention_d64_causal"))
    assert [r.record.outcome for r in recs] == ["static"] * 5
    assert recs[1].record.pattern_ids == [
        "wgmma_not_used", "k_loop_not_pipelined", "reduction_across_warps_in_loop", "k_loop_masked_every_iteration"]
    assert recs[1].record.edit_kinds == ["set_constexpr", "set_constexpr", "set_num_stages"]
    recs, dropped = cr.from_job(ROOT / JOBS.format("r39", "l4_block_sparse_attention"))
    assert [(r.version, r.record.outcome) for r in recs] == [(1, "pass"), (2, "pass")]
    assert math.isclose(recs[1].verified_speedup, 3.786, abs_tol=1e-3)
    assert recs[1].record.pattern_ids == ["k_loop_masked_every_iteration"]
    assert [d.why for d in dropped] == ["unfinished after static pass"] + ["no verdict"] * 3


def test_withdrawn_candidates_are_not_records(tmp_path: Path) -> None:
    src = ROOT / JOBS.format("r36", "l1_transpose_cuda")
    dst = tmp_path / JOBS.format("r99", "l1_transpose_cuda")
    dst.parent.mkdir(parents=True)
    job = json.loads(src.read_text())
    v3 = next(c for c, x in job["candidates"].items() if x["version"] == 3)
    v1 = next(c for c, x in job["candidates"].items() if x["version"] == 1)
    # v3 passed static; its job ended before micro. v1 failed full, then a late withdrawn copy arrived.
    job["verdicts"] += [{"candidate_id": v3, "layer": "micro", "status": "withdrawn", "reasons": ["withdrawn"]},
                        {"candidate_id": v1, "layer": "full", "status": "withdrawn", "reasons": []}]
    dst.write_text(json.dumps(job))
    recs, dropped = cr.from_job(dst, tmp_path)
    assert {d.candidate_id: d.why for d in dropped if d.why == "withdrawn"} == {v1: "withdrawn", v3: "withdrawn"}
    assert [r.record.outcome for r in recs] == ["full"]  # v2 only
    assert recs[0].record.source.startswith("r99:l1_transpose_cuda:")
    ex = cr.extract(tmp_path)
    assert ex.files == [JOBS.format("r99", "l1_transpose_cuda")] and len(ex.records) == 1


def test_committed_report_is_what_the_script_regenerates(tmp_path: Path) -> None:
    pytest.importorskip("xgboost")
    from benchmarks import classifier_report

    assert classifier_report.main(["--out", str(tmp_path)]) == 0
    for name in ("classifier.json", "classifier.md"):
        committed = ROOT / "benchmarks/results/h200" / name
        assert (tmp_path / name).read_text() == committed.read_text(), (
            f"{name} is stale: run python3 benchmarks/classifier_report.py")
    got = json.loads((tmp_path / "classifier.json").read_text())
    assert got["records"] == sum(got["by_outcome"].values()) >= 16
    assert got["dropped_withdrawn"] == 0  # no recorded job withdrew a candidate
    shutil.rmtree(tmp_path)


def test_llm_timed_rows_are_llm_records_with_their_first_failing_layer() -> None:
    path = ROOT / "benchmarks/results/runs/r55/steps/llm_timed/llm_timed.json"
    recs, dropped = cr.from_timed(path)
    assert not dropped and len(recs) == 8 and all(r.llm and r.run == "r55" for r in recs)
    by_job = {r.job: r for r in recs}
    assert by_job["l2_bmm"].record.outcome == "pass" and math.isclose(by_job["l2_bmm"].verified_speedup, 1.2580, abs_tol=1e-3)
    assert by_job["l1_gelu"].record.outcome == "static" and by_job["l1_gelu"].verified_speedup is None
    assert by_job["l1_relu"].record.outcome == "full"  # timed at 1.000x: no significant gain
    assert "transform" in by_job["l2_matmul_square"].record.edit_kinds
    assert str(path.relative_to(ROOT)) in cr.extract().files
