"""NATS adapter of the toolrunner: one micro endpoint `tools.<name>` per tool in a queue group, so any
number of runners share the load; `toolrunner.list` answers with every tool and its schemas.

Compiles, CPU tools and correctness runs share a pool of the runner's cores; a timing holds its GPU alone
(call_slots.py). Every call is audited and logged with its duration.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections import OrderedDict
from pathlib import Path

import msgspec
from nats.js.api import ObjectMeta
from nats.js.errors import ObjectNotFoundError
from nats.js.object_store import ObjectStore
from nats.micro.request import Request

from services.toolrunner.call_slots import CallSlots, cpu_pool_size, gpu_index
from services.toolrunner.catalog import load_specs
from services.toolrunner.confinement import probe
from services.toolrunner.nvtools import gpu_count
from services.toolrunner.registry import ToolExecutor
from services.toolrunner.task_paths import roots_from_env
from services.toolrunner.tools.compile import spec as compile_tool
from services.toolrunner.tools.ptxas_info import spec as ptxas_info
from shared.messages import AuditRecord, ToolError, ToolRequest, ToolResult, decode, encode
from shared.service import ServiceRuntime
from shared.subjects import audit_subject, tool_subject

LIST_SUBJECT = "toolrunner.list"


async def setup(runtime: ServiceRuntime) -> None:
    # Artifacts and cached compiles live in the stack's state directory (`kpilot up` sets KPILOT_STATE).
    state = Path(os.environ.get("KPILOT_STATE", ".kpilot")).resolve()
    root = state / "toolrunner"
    compiler = compile_tool.configure(root)
    ptxas_info.configure(root, compiler)
    # Request paths only under examples/, benchmarks/tasks/, the stack's stores and KPILOT_TASK_ROOTS.
    executor = ToolExecutor(load_specs(), gpus=gpu_count(), runner=runtime.instance,
                            roots=roots_from_env(state, dict(os.environ)))
    sandbox = await asyncio.to_thread(probe)
    runtime.details.update(gpus=str(executor.gpus), gpu_model=gpu_model() or "none",
                           tools=",".join(executor.available()), sandbox=sandbox.summary(),
                           task_roots=":".join(executor.roots.roots) if executor.roots else "",
                           gpu_tools=",".join(n for n, s in executor.specs.items() if s.needs_gpu))
    artifacts = ArtifactMirror(await runtime.bus.js.object_store("artifacts"), compiler)
    slots = CallSlots(cpu_pool_size(os.environ))
    runtime.details.update(cpu_pool=str(slots.cpu_pool))

    async def serve(name: str, req: Request) -> None:
        try:
            tool_req = decode(req.data, ToolRequest)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            bad = ToolResult(source="toolrunner", tool=name, tool_version="", ok=False,
                             error=ToolError(code="invalid_request", message=f"not a ToolRequest: {e}"))
            await req.respond(encode(bad))
            return
        if tool_req.tool != name:
            tool_req = msgspec.structs.replace(tool_req, tool=name)  # the subject names the tool
        result = executor.cached(tool_req)  # a repeated call: answered here, no thread, no queue
        queued_s = 0.0
        if result is None:
            spec, asked = executor.specs[name], time.monotonic()
            async with slots.hold(times_gpu=spec.needs_gpu, shares_gpu=spec.shares_gpu and executor.gpus > 0,
                                  gpu=gpu_index(tool_req.args)):
                queued_s = time.monotonic() - asked
                result = await asyncio.to_thread(executor.execute, tool_req)
        if name == "compile" and result.ok and result.result is not None:
            # before the reply: a caller may fetch the artifacts the result names as soon as it has it
            await artifacts.mirror(result.result)
        await req.respond(encode(result))
        runtime.after_reply(record(name, tool_req, result, queued_s), name)

    async def record(name: str, tool_req: ToolRequest, result: ToolResult, queued_s: float) -> None:
        """The call's audit record (its ack checked by the bus off this path) and log line, written after
        the reply (ServiceRuntime.after_reply): the caller does not wait for either."""
        args_hash = hashlib.sha256(msgspec.json.encode(tool_req.args)).hexdigest()
        outcome = "ok" + (" (cached)" if result.cached else "") if result.ok else result.error.code  # type: ignore[union-attr]
        await runtime.bus.publish_checked_later(audit_subject("toolrunner"), AuditRecord(
            source="toolrunner", actor=tool_req.source, action=name, args_sha256=args_hash,
            duration_s=result.duration_s, outcome=outcome, **tool_req.caused()))
        runtime.log.info("tool call", tool=name, outcome=outcome, run_s=round(result.duration_s, 2),
                         queued_s=round(queued_s, 2), caller=tool_req.source)

    def endpoint(name: str):  # type: ignore[no-untyped-def]
        async def handler(req: Request) -> None:
            await serve(name, req)
        return handler

    def error_reply(name: str):  # type: ignore[no-untyped-def]
        def reply(code: str, message: str) -> bytes:  # a limit or a handler bug: still a ToolResult
            return encode(ToolResult(source="toolrunner", tool=name, tool_version="", ok=False,
                                     error=ToolError(code=code, message=message)))  # type: ignore[arg-type]
        return reply

    for name in executor.available():
        group = "toolrunner-gpu" if executor.specs[name].needs_gpu else "toolrunner"
        # concurrent: each call in its own task, so a long compile blocks nothing
        await runtime.add_endpoint(name, tool_subject(name), endpoint(name), queue_group=group,
                                   concurrent=True, error_reply=error_reply(name))

    async def list_tools(req: Request) -> None:
        await req.respond(msgspec.json.encode([
            {"name": n, "version": executor.specs[n].version, "description": executor.specs[n].description,
             "needs_gpu": executor.specs[n].needs_gpu, "input_schema": executor.schemas[n].input,
             "output_schema": executor.schemas[n].output} for n in executor.available()]))

    await runtime.add_endpoint("list", LIST_SUBJECT, list_tools)


class ArtifactMirror:
    """Mirror a compile's artifacts into the JetStream object store `artifacts`, named by sha256, so any
    service (or another runner) can fetch them; the runner's local store stays its fast cache.

    The store is content-addressed and keeps objects without age or size limits (shared/subjects.py), so
    a key this runner stored or found there once stays there: it is remembered and not asked about again.
    A cached compile (same artifacts every time) then costs no object-store round trip per artifact (an
    object deleted from the store by hand is put back by the next runner that has not seen it)."""

    def __init__(self, store: ObjectStore, compiler: compile_tool.Compiler, *, remember: int = 65_536) -> None:
        self.store, self.compiler, self.remember = store, compiler, remember
        self._present: OrderedDict[str, None] = OrderedDict()

    async def mirror(self, record: dict) -> None:
        for art in record.get("artifacts", []):
            key = art["sha256"]
            if key in self._present:
                self._present.move_to_end(key)
                continue
            try:
                await self.store.get_info(key)  # content-addressed: stored once, whoever compiled it
            except ObjectNotFoundError:
                await self.store.put(key, self.compiler.store.get(key),
                                     meta=ObjectMeta(name=key, description=art["kind"]))
            self._present[key] = None
            if len(self._present) > self.remember:
                self._present.popitem(last=False)


def gpu_model() -> str | None:
    """The first GPU's name from NVML, for the runner's announced capabilities."""
    try:
        import pynvml
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver: no GPU
        return None
    try:
        return str(pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))) if \
            pynvml.nvmlDeviceGetCount() else None
    finally:
        pynvml.nvmlShutdown()
