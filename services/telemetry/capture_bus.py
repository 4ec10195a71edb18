"""NATS adapter of the live capture path (telemetry's side; decisions in capture_admit.py).

On a state event's start edge (consumed from `events.state.>`, as the planner does), each hot kernel with
no `<kernel>` key in the `kernels` bucket gets a CaptureRequest on `capture.request.<node>` (the workload
SDK there answers, services/kpilot/capture/live.py).
A CapturedTaskSource on `capture.task.>` is checked, stored content-addressed under
`<state>/captured/<sha256>.py`, loaded by the toolrunner's sandboxed loader (`tools.load_task`), registered
as `kpilot register` does (`<kernel>` -> {"task_path"}, `task.<kernel>` -> the manifest) and announced as
CaptureRegistered on `capture.registered.<kernel>`, where the planner opens the job. A refused capture is
announced with its reason; a toolrunner that is down defers the message (shared/bus.py `Unavailable`).
"""

from __future__ import annotations

import time
from pathlib import Path

import msgspec
import nats.js.errors

from services.telemetry.capture_admit import MANUAL_FIX, CaptureAsks, check_source, request_for, store
from shared.limits import CAPTURED_TASK_MESSAGE_BYTES
from shared.messages import CapturedTaskSource, CaptureRegistered, StateChangeEvent
from shared.service import ServiceRuntime
from shared.subjects import capture_registered_subject, capture_request_subject, token
from shared.toolclient import BusToolClient
from shared.tools.task import TaskManifest

# Loading a task is a ~3 s sandboxed import (services/toolrunner/tasks.py allows 120 s); 180 s covers a queue.
LOAD_TIMEOUT_S = 180.0


async def setup_capture(runtime: ServiceRuntime, root: Path) -> None:
    """Starts the consumers of state events (durable: an event stored is asked for even if this service
    restarts right after publishing it) and of captured tasks."""
    bus, log = runtime.bus, runtime.log
    kv = await bus.js.key_value("kernels")
    tools = BusToolClient(bus, timeout_s=LOAD_TIMEOUT_S, source=runtime.name, raise_infra=True)
    asks = CaptureAsks()

    async def registered_task(kernel: str) -> str:
        try:
            entry = await kv.get(token(kernel))
        except nats.js.errors.KeyNotFoundError:
            return ""
        try:
            data = msgspec.json.decode(entry.value or b"")
        except msgspec.DecodeError:
            return (entry.value or b"").decode(errors="replace").strip()
        return data.get("task_path", "") if isinstance(data, dict) else str(data)

    async def on_event(ev: StateChangeEvent) -> None:
        now = time.time()
        for hot in asks.wanted(ev, now):
            if await registered_task(hot.kernel):
                continue  # the planner opens the job on the registered task
            await bus.publish(capture_request_subject(ev.node), request_for(ev, hot, runtime.name))
            asks.asked(ev.node, hot.kernel, now)
            log.info("capture requested", kernel=hot.kernel, node=ev.node, trigger=ev.id)

    async def announce(msg: CapturedTaskSource, *, task_path: str = "", error: str = "") -> None:
        if error:
            asks.forget(msg.node, msg.kernel)
            log.warning("captured task refused", kernel=msg.kernel, node=msg.node, error=error)
        await bus.publish(capture_registered_subject(msg.kernel), CaptureRegistered(
            source=runtime.name, kernel=msg.kernel, node=msg.node, event_id=msg.event_id, triples=msg.triples,
            task_path=task_path, sha256=msg.sha256 if task_path else "", error=error, causation_id=msg.id))

    async def on_captured(msg: CapturedTaskSource) -> None:
        if problem := check_source(msg):
            await announce(msg, error=problem)
            return
        if existing := await registered_task(msg.kernel):  # registered meanwhile: never replaced here
            await announce(msg, task_path=existing)
            return
        path = store(root, msg)
        res = await tools.call("load_task", {"path": str(path)}, causation_id=msg.id)
        if not res.ok or res.result is None:
            why = res.error.message if res.error else "the loader returned nothing"
            await announce(msg, error=f"the task loader refused the captured task of {msg.kernel}: {why}; "
                                      f"{MANUAL_FIX} and fix the part named")
            return
        manifest = msgspec.convert(res.result, TaskManifest)
        if msg.kernel not in manifest.kernel_names():
            await announce(msg, error=f"the captured task's KERNELS {manifest.kernel_names()} do not name "
                                      f"{msg.kernel}; {MANUAL_FIX}")
            return
        await kv.put(f"task.{token(msg.kernel)}", msgspec.json.encode(manifest))
        await kv.put(token(msg.kernel), msgspec.json.encode({"task_path": manifest.path}))
        log.info("captured task registered", kernel=msg.kernel, task=manifest.path)
        await announce(msg, task_path=manifest.path)

    # new_only: on its first start the consumer does not ask for the hot kernels of a week of old events.
    await bus.consume("events.state.>", "telemetry-capture-asks", on_event, StateChangeEvent, new_only=True)
    await bus.consume("capture.task.>", "telemetry-captures", on_captured, CapturedTaskSource,
                      ack_wait_s=300, max_bytes=CAPTURED_TASK_MESSAGE_BYTES)
