"""The planner adapter on a real nats-server (tests/conftest.py), with per-service credentials.

A stand-in verifier (verifier credentials, so permissions are the real ones) answers each candidate from
the real H200 table (/work/shared/fixtures/h200-probe/matmul_sdpa.json): listed configs get a full
verdict with their measured TFLOP/s as `tflops`, unlisted ones a `skipped` full verdict ("not measured").
`kpilot optimize` (its coroutine) is the client.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import shutil
from pathlib import Path

from services.kpilot.commands.planner import exit_status, optimize
from services.planner import jobs
from services.planner.service import setup
from shared.messages import Candidate, Measurement, Verdict
from shared.service import ServiceRuntime
from shared.subjects import verdict_subject

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "h200-probe" / "matmul_sdpa.json"
KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")



def _table() -> dict[tuple[int, ...], float]:
    raw = json.loads(FIXTURE.read_text())
    return {
        tuple(int(x) for x in k.removeprefix("tri_mm_").split("_")): v["tflops"]
        for k, v in raw.items()
        if k.startswith("tri_mm_")
    }


async def _replay_verifier(bus, seen: list[str]) -> None:
    table = _table()

    async def on_candidate(c: Candidate) -> None:
        seen.append(c.id)
        cfg = ast.literal_eval(Path(c.candidate_path).read_text().split("\nCONFIG = ", 1)[1].split("\n")[0])
        env = {"source": "verifier", "candidate_id": c.id, "kernel": c.kernel, **c.caused()}
        await bus.publish(verdict_subject("static", c.kernel), Verdict(layer="static", status="pass", **env))
        tf = table.get(tuple(cfg[k] for k in KEYS))
        v = (
            Verdict(
                layer="full",
                status="pass",
                gpu_seconds=1.0,
                measurements=[Measurement(name="tflops", value=tf, unit="TFLOP/s")],
                **env,
            )
            if tf is not None
            else Verdict(
                layer="full", status="skipped", reasons=["not measured (not in the H200 table)"], **env
            )
        )
        await bus.publish(verdict_subject("full", c.kernel), v)

    await bus.consume("candidates.>", "test-verifier", on_candidate, Candidate)


async def test_optimize_end_to_end_and_resume(make_bus, nats_server, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("KPILOT_STATE", str(tmp_path / "state"))
    task = tmp_path / "matmul.py"
    shutil.copy(ROOT / "examples/matmul.py", task)
    planner_bus = await make_bus("planner")
    planner = await setup(ServiceRuntime("planner", planner_bus))
    seen: list[str] = []
    await _replay_verifier(await make_bus("verifier"), seen)

    args = argparse.Namespace(
        kernel="", budget=120.0, gpu_budget=1000.0, max_candidates=30, policy="rules", patch_wait=0.2
    )
    out = await optimize(nats_server.url("operator"), task, args)
    assert out["status"] in ("converged", "done"), out["reasons"]
    assert out["best_score"] > 688 and out["score_name"] == "tflops"
    best = out["candidates"][out["best_candidate_id"]]
    assert tuple(best["config"][k] for k in KEYS) == (128, 256, 64, 8, 8, 4)
    assert Path(best["path"]).is_file() and best["diff"].startswith("--- a/matmul.py")
    assert len(out["verdicts"]) == 2 * len(out["candidates"])
    assert exit_status(out) == 3  # measured, but no critic here published a verified patch

    # The job record is in the `jobs` KV bucket; a restarted planner resumes it without re-planning.
    kv = await planner_bus.js.key_value("jobs")
    state = jobs.decode_state((await kv.get(out["job_id"])).value)
    assert state.status == out["status"] and len(state.candidates) == len(out["candidates"])
    await planner_bus.close()
    again = await setup(ServiceRuntime("planner", await make_bus("planner")))
    await asyncio.sleep(1.0)
    assert again.jobs[out["job_id"]].status == out["status"]
    assert len(seen) == len(out["candidates"])  # nothing republished, nothing re-planned
    del planner


async def test_missing_task_fails_the_job_with_a_reason(
    make_bus, nats_server, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("KPILOT_STATE", str(tmp_path / "state"))
    await setup(ServiceRuntime("planner", await make_bus("planner")))
    gone = tmp_path / "gone.py"
    gone.write_text("CONFIG = {'BLOCK': 1}\n")
    args = argparse.Namespace(
        kernel="k", budget=20.0, gpu_budget=10.0, max_candidates=4, policy="rules", patch_wait=0.1
    )
    gone_path = gone.resolve()
    gone.unlink()
    out = await optimize(nats_server.url("operator"), gone_path, args)
    assert out["status"] == "failed" and "cannot read task" in out["reasons"][0]
    assert exit_status(out) == 1
