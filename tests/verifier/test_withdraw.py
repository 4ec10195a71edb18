"""A candidate whose job ended is withdrawn, not verified: the job's last update on the JOBS stream (read
by the verifier's JobWatch from a real nats-server) and the funnel's check before every layer (real tools
in-process, vector_add on Triton's interpreter)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from services.toolrunner.registry import local_executor
from services.verifier.funnel import Funnel, VerifyJob
from services.verifier.withdraw import JobWatch
from shared.messages import JobUpdate
from shared.subjects import job_subject
from shared.toolclient import InProcessToolClient
from tests.conftest import BusFactory

ROOT = Path(__file__).resolve().parents[2]
TASK = str(ROOT / "examples" / "vector_add.py")


async def test_the_watch_reads_the_jobs_last_update_and_remembers_an_ended_job(make_bus: BusFactory) -> None:
    planner, verifier = await make_bus("planner"), await make_bus("verifier")
    watch = JobWatch(verifier)
    assert await watch.ended("job-unknown") is None and await watch.ended(None) is None
    await planner.publish(job_subject("job-a"), JobUpdate(source="planner", job_id="job-a", kernel="k",
                                                          status="verifying"))
    assert await watch.ended("job-a") is None
    await planner.publish(job_subject("job-a"), JobUpdate(source="planner", job_id="job-a", kernel="k",
                                                          status="budget_exhausted",
                                                          reasons=["wall-time budget 6 s spent"]))
    assert await watch.ended("job-a") == "job job-a ended (budget_exhausted: wall-time budget 6 s spent)"
    await planner.publish(job_subject("job-a"), JobUpdate(source="planner", job_id="job-a", kernel="k",
                                                          status="open"))  # a stray later update
    assert await watch.ended("job-a") is not None  # an ended job never reopens


def test_a_job_that_ends_between_layers_withdraws_the_candidate_before_the_next_layer() -> None:
    checks: list[str] = []

    async def ended() -> str | None:
        checks.append("check")
        return "job job-x ended (cancelled: by the test)" if len(checks) > 1 else None

    job = VerifyJob(candidate_id="job-x-v1", task_path=TASK, config={"BLOCK": 1024}, job_id="job-x")
    verdicts = asyncio.run(Funnel(InProcessToolClient(local_executor(), source="test"), ended=ended).verify(job))
    assert [(v.layer, v.status) for v in verdicts] == [("static", "pass"), ("micro", "withdrawn")]
    assert verdicts[1].reasons == ["withdrawn: job job-x ended (cancelled: by the test); not verified"]
