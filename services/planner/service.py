"""NATS adapter of the planner: triggers in (`optimize.request`, `events.state.>`, and
`capture.registered.>`: a hot kernel's task captured live), cancels in (`optimize.cancel`), verdicts in
(`verdicts.>`), candidates and job updates out, job state in the `jobs` KV bucket. The loop itself is
services/planner/loop.py; on start the saved jobs are resumed (unpublished candidates republished)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import nats.errors

from services.planner import jobs
from services.planner.bus_io import BusIO
from services.planner.classifier import FailureGate
from services.planner.loop import Planner, kernel_of
from services.planner.policies.llm import policy_from_env
from services.planner.policies.rules import RulesPolicy
from shared.bus import BusError
from shared.messages import CancelRequest, CaptureRegistered, OptimizeRequest, StateChangeEvent, Verdict
from shared.service import ServiceRuntime
from shared.subjects import OPTIMIZE_CANCEL, OPTIMIZE_REQUEST

TICK_S = 5.0  # verdict time-outs and the wall-time budget are checked this often


async def setup(runtime: ServiceRuntime) -> Planner:
    runtime.details["role"] = "planner"
    bus = runtime.bus
    io = BusIO(bus, await bus.js.key_value("jobs"), await bus.js.key_value("kernels"))
    rules = RulesPolicy()
    state = Path(os.environ.get("KPILOT_STATE", ".kpilot")).resolve()
    model = state / "classifier.json"  # written by `kpilot train-classifier`
    gate = FailureGate(model) if model.is_file() else None
    policies = {"rules": rules, "llm": policy_from_env(os.environ, fallback=rules)}
    planner = Planner(io, policies, state / "candidates", gate=gate)
    runtime.details["classifier"] = str(model) if gate else "none (rules/llm as asked)"
    await planner.resume(await io.load_all())

    async def on_request(req: OptimizeRequest) -> None:
        kernel = req.kernel or kernel_of(req.task_path)
        await planner.trigger(
            kernel=kernel,
            task_path=req.task_path,
            trigger_id=req.id,
            policy=req.policy,
            job_id=req.job_id,
            budget=jobs.Budget(wall_s=req.budget_s, gpu_s=req.gpu_budget_s, candidates=req.max_candidates),
        )

    async def on_event(ev: StateChangeEvent) -> None:
        if ev.edge != "start":
            return
        for hot in ev.hot_kernels:
            task = await io.task_for(hot.kernel)
            if task is None:
                runtime.log.info("hot kernel has no registered task; the job opens when telemetry registers "
                                 "its live capture", kernel=hot.kernel, trigger=ev.id)
                continue
            await planner.trigger(kernel=hot.kernel, task_path=task, trigger_id=ev.id, triples=ev.triples)

    async def on_captured(reg: CaptureRegistered) -> None:
        # A hot kernel's task captured live (telemetry asked the workload): the job opens on it here, with
        # the state event that made it hot as the trigger, as if the task had been registered before.
        if reg.error or not reg.task_path:
            runtime.log.info("captured task refused", kernel=reg.kernel, error=reg.error)
            return
        await planner.trigger(kernel=reg.kernel, task_path=reg.task_path, trigger_id=reg.event_id or reg.id,
                              triples=reg.triples)

    async def on_cancel(req: CancelRequest) -> None:
        if await planner.cancel(req.job_id or "", req.reason) is None:
            runtime.log.info("cancel for a job this planner does not hold", job_id=req.job_id)

    async def on_verdict(v: Verdict) -> None:
        await planner.verdict(v)

    async def ticker() -> None:
        while True:
            await asyncio.sleep(TICK_S)
            try:
                await planner.tick()
            except (BusError, nats.errors.Error) as e:  # nats-server restarting: the next tick retries
                runtime.log.warning("tick failed", error=str(e))

    await bus.consume(OPTIMIZE_REQUEST, "planner-requests", on_request, OptimizeRequest, ack_wait_s=300)
    await bus.consume("events.state.>", "planner-events", on_event, StateChangeEvent, ack_wait_s=300)
    await bus.consume(OPTIMIZE_CANCEL, "planner-cancels", on_cancel, CancelRequest)
    await bus.consume("capture.registered.>", "planner-captures", on_captured, CaptureRegistered, ack_wait_s=300)
    await bus.consume("verdicts.>", "planner-verdicts", on_verdict, Verdict, ack_wait_s=300)
    runtime.details["tick"] = str(asyncio.create_task(ticker(), name="planner-tick").get_name())
    runtime.details["jobs_resumed"] = str(sum(jobs.is_open(s) for s in planner.jobs.values()))
    return planner
