"""NATS adapter of the decomposer: one micro endpoint on `decomposer.analyze` (services/decomposer/
analyze.py). A task reference is compiled (text artifacts) through the toolrunner's `tools.compile` first;
then, from the compile cache and concurrently, `tools.ptxas_info` (ptxas -v), `tools.sass` (nvdisasm -gi
text, for per-line SASS correlation), `tools.load_task` (FLOP/byte formulas) and `tools.launch_grid` (the
grid, and a CUDA task's block, of the task's own launch on meta/fake tensors). A tool that fails costs
only its part: the decomposition's warnings say which and why."""

from __future__ import annotations

import asyncio
import time

import msgspec
from nats.micro.request import Request

from services.decomposer import analyze
from shared.messages import ToolError, ToolRequest, ToolResult
from shared.service import ServiceRuntime
from shared.subjects import DECOMPOSER_ANALYZE
from shared.toolclient import BusToolClient

TOOL_TIMEOUT_S = 300.0  # a cold Triton compile of a Hopper matmul takes seconds; a queue of them, minutes


async def setup(runtime: ServiceRuntime) -> None:
    runtime.details["role"] = "decomposer"
    tools = BusToolClient(runtime.bus, timeout_s=TOOL_TIMEOUT_S, source="decomposer")

    async def tool(name: str, args: dict, req: ToolRequest) -> ToolResult:
        return await tools.call(name, args, job_id=req.job_id, causation_id=req.id)

    async def handle(msg: Request) -> None:
        t0 = time.perf_counter()
        try:
            req = msgspec.json.decode(msg.data, type=ToolRequest)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            bad = ToolRequest(source="unknown", tool="decompose")
            await msg.respond(
                msgspec.json.encode(analyze.failed(bad, ToolError(code="invalid_request", message=str(e))))
            )
            return
        inp, notes = analyze.parse(req), []
        if isinstance(inp, analyze.TaskRef):
            ref = {"task_path": inp.task_path, "config": inp.config, "kernel": inp.kernel, "shape": inp.shape}
            comp = await tool("compile", ref | {"include_text": True}, req)
            if not comp.ok or comp.result is None:
                inp = comp.error or ToolError(code="failed", message="compile gave no result")
            else:
                ptx, sass, task, grid = await asyncio.gather(
                    tool("ptxas_info", ref, req),
                    tool("sass", analyze.sass_args(inp), req),
                    tool("load_task", {"path": inp.task_path}, req),
                    tool("launch_grid", analyze.grid_args(inp), req),
                )
                tools = {"ptxas_info": ptx, "sass": sass, "load_task": task, "launch_grid": grid}
                notes = analyze.tool_notes(tools)
                results = [r.result if r.ok else None for r in (ptx, sass, task, grid)]
                if note := analyze.launch_of(inp, results[2], results[3])[2]:
                    notes.append(note)
                inp = analyze.task_input(inp, comp.result, *results)
        out = (
            analyze.failed(req, inp)
            if isinstance(inp, ToolError)
            else analyze.answer(req, inp, time.perf_counter() - t0, notes)
        )
        await msg.respond(msgspec.json.encode(out))

    await runtime.add_endpoint("analyze", DECOMPOSER_ANALYZE, handle)
