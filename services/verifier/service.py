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

import os
from collections.abc import Mapping

import msgspec

from services.verifier.funnel import Funnel
from services.verifier.jobs import Lineage
from services.verifier.policy import VerifyPolicy
from services.verifier.withdraw import JobWatch
from shared.concurrency import cores, count_from_env
from shared.ids import derived_id
from shared.messages import Candidate, Verdict
from shared.service import ServiceRuntime
from shared.subjects import verdict_subject
from shared.toolclient import BusToolClient

# Candidates verified at once (consumer loops on the durable). H200 run r40 ran two beside a toolrunner
# that ran every CPU tool and correctness run two at a time: the micro layers took turns call by call and
# each got slower (30-58 s against 30-41 s). The toolrunner now sizes its pool to its cores and holds a GPU
# alone only for a timing (services/toolrunner/call_slots.py), so one candidate's static layer and
# correctness runs overlap another's timing. Two on a machine of 8 cores or more (H200 runs r41-r42, 16
# cores: 2-5 candidates finished per 150 s job against r40's 2-3, per-layer times about unchanged); one
# below, where two candidates' compiles would share a few cores (not measured). KPILOT_VERIFIER_WORKERS
# overrides it.
# A killed verifier's candidate is redelivered after the bus's ack wait (30 s); a live one marks it in
# progress, so the funnel's worst case (bench_ab up to 600 s) needs no longer ack wait.
BATCH = 1
WORKERS_ENV = "KPILOT_VERIFIER_WORKERS"


def workers(env: Mapping[str, str]) -> int:
    return count_from_env(env, WORKERS_ENV, 2 if cores() >= 8 else 1, "candidates verified at once")


async def setup(runtime: ServiceRuntime, policy: VerifyPolicy | None = None) -> None:
    runtime.details["role"] = "verifier"
    loops = workers(os.environ)
    runtime.details["workers"] = str(loops)
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
                                  workers=loops)

    runtime.spawn(start_consuming(), "verifier-start")
