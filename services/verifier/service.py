"""NATS adapter of the verifier: each `candidates.<kernel>` message runs the funnel (services/verifier/
funnel.py) through the toolrunner's `tools.<name>` endpoints and publishes one `verdicts.<layer>.<kernel>`
per layer reached. A failed candidate is a verdict; only our own bugs raise (and the bus retries them).

An infrastructure failure (no toolrunner up, the runner lost mid-call, no reply in time) is not the
candidate's: the funnel lets `ToolInfraError` through and the bus defers the message (nak with a delay)
until the runner is back. So a candidate's verdicts are published together once its funnel has run to
its end, each with an id fixed by (candidate, layer): a candidate verified again after a crash between
two publishes is stored once (Nats-Msg-Id de-duplication). The consumer starts once a toolrunner is up
(the service is healthy while it waits; its status details say `waiting_for`).
"""

from __future__ import annotations

import msgspec

from services.verifier.funnel import Funnel
from services.verifier.jobs import Lineage
from services.verifier.policy import VerifyPolicy
from services.verifier.withdraw import JobWatch
from shared.ids import derived_id
from shared.messages import Candidate, Verdict
from shared.service import ServiceRuntime
from shared.subjects import verdict_subject
from shared.toolclient import BusToolClient

# One candidate at a time. The bus can run several consumer loops on the durable (`workers`); H200 run r40
# ran the verifier with two: one candidate's static layer overlapped the other's GPU layers, but their micro
# layers took turns on the GPU call by call and each got slower (30-58 s against 30-41 s), so the gain was
# small. One until whole GPU layers are leased per candidate.
# A killed verifier's candidate is redelivered after the bus's ack wait (30 s); a live one marks it in
# progress, so the funnel's worst case (bench_ab up to 600 s) needs no longer ack wait.
BATCH = 1
WORKERS = 1


async def setup(runtime: ServiceRuntime, policy: VerifyPolicy | None = None) -> None:
    runtime.details["role"] = "verifier"
    lineage = Lineage()
    watch = JobWatch(runtime.bus)

    async def publish(v: Verdict) -> None:
        # The id is fixed by (candidate, layer): a candidate re-verified after a deferral (an
        # infrastructure failure mid-funnel) publishes the same ids, and JetStream stores each once.
        v = msgspec.structs.replace(v, id=derived_id("verdict", f"{v.candidate_id}:{v.layer}"))
        await runtime.bus.publish(verdict_subject(v.layer, v.kernel), v)

    async def on_candidate(c: Candidate) -> None:
        job = lineage.job(c)
        client = BusToolClient(runtime.bus, source="verifier", job_id=c.job_id, causation_id=c.id,
                               raise_infra=True)
        # ToolInfraError: the bus defers the candidate (nak with a delay), it is no verdict.
        verdicts = await Funnel(client, policy, ended=lambda: watch.ended(c.job_id)).verify(job, publish)
        runtime.log.info(
            "verified", candidate=c.id, kernel=c.kernel, layers=[f"{v.layer}:{v.status}" for v in verdicts]
        )

    async def start_consuming() -> None:  # healthy meanwhile: `kpilot status` shows waiting_for
        await runtime.wait_for("toolrunner")
        await runtime.bus.consume("candidates.>", "verifier", on_candidate, Candidate, batch=BATCH,
                                  workers=WORKERS)

    runtime.spawn(start_consuming(), "verifier-start")
