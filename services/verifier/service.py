"""NATS adapter of the verifier: each `candidates.<kernel>` message runs the funnel (services/verifier/
funnel.py) through the toolrunner's `tools.<name>` endpoints and publishes one `verdicts.<layer>.<kernel>`
per layer reached. A failed candidate is a verdict; only our own bugs raise (and the bus retries them).
"""

from __future__ import annotations

from services.verifier.client import BusToolClient
from services.verifier.funnel import Funnel
from services.verifier.jobs import Lineage
from services.verifier.policy import VerifyPolicy
from services.verifier.withdraw import JobWatch
from shared.messages import Candidate, Verdict
from shared.service import ServiceRuntime
from shared.subjects import verdict_subject

# One candidate at a time (the GPU is shared; a second fetched message would sit out its ack wait), and an
# ack wait longer than the funnel's worst case: CPU correctness ~30 s, bench_ab up to its 600 s limit.
ACK_WAIT_S = 1800.0


async def setup(runtime: ServiceRuntime, policy: VerifyPolicy | None = None) -> None:
    runtime.details["role"] = "verifier"
    lineage = Lineage()
    watch = JobWatch(runtime.bus)

    async def publish(v: Verdict) -> None:
        await runtime.bus.publish(verdict_subject(v.layer, v.kernel), v)

    async def on_candidate(c: Candidate) -> None:
        job = lineage.job(c)
        client = BusToolClient(runtime.bus, source="verifier", job_id=c.job_id, causation_id=c.id)
        verdicts = await Funnel(client, policy, ended=lambda: watch.ended(c.job_id)).verify(job, publish)
        runtime.log.info(
            "verified", candidate=c.id, kernel=c.kernel, layers=[f"{v.layer}:{v.status}" for v in verdicts]
        )

    await runtime.bus.consume(
        "candidates.>", "verifier", on_candidate, Candidate, batch=1, ack_wait_s=ACK_WAIT_S
    )
