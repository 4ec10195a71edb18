"""Per-kernel counters on request: the telemetry service's `profile.kernel` endpoint.

A ToolRequest whose args are a ProfileRequest comes in; `tools.ncu_profile` is called (through a
ToolClient, so a bus with no GPU runner answers `unavailable`); on success the kernel's StateVector
(ncu_state.kernel_vector) is published on `telemetry.kernel.<node>.<kernel>` (TELEMETRY stream) and is the
reply; on failure the reply is the ToolResult with its error, and nothing is published.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from nats.micro.request import Request

from services.telemetry.ncu_state import NcuRecordError, kernel_vector, ncu_output
from shared.messages import Message, Scalar, StateVector, ToolError, ToolRequest, ToolResult, decode, encode
from shared.subjects import kernel_profile_subject
from shared.toolclient import ToolClient

TOOL = "ncu_profile"


class ProfileRequest(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """The args of a `profile.kernel` request."""

    task_path: str  # a task file the runner can read (examples/README.md)
    kernel: str = ""  # "" = the task's first kernel
    shape: str = "micro"  # "micro", "full" or "edge:<i>"
    config: dict[str, Scalar] = {}
    cuda_device: int = 0  # the runner's CUDA device index ncu profiles on
    node: str = ""  # label of the published vector; "" = the runner's host
    gpu: str = ""  # label of the published vector (e.g. the NVML UUID); "" = "cuda:<cuda_device>"


Publish = Callable[[str, Message], Awaitable[object]]  # Bus.publish
ProfileReply = StateVector | ToolResult  # what `profile.kernel` answers: decode replies with this type


def parse(req: ToolRequest) -> ProfileRequest | ToolError:
    try:
        return msgspec.convert(req.args, ProfileRequest)
    except msgspec.ValidationError as e:
        return ToolError(code="invalid_request", message=(
            f"profile.kernel args: {e}. Fix: send {{\"task_path\": \"examples/vector_add.py\"}} with optional "
            f"kernel, shape, config, cuda_device, node, gpu"))


def runner_host(runner: str) -> str:
    """The host of a runner instance name, "<hostname>-<pid>" (shared.service.ServiceRuntime)."""
    host, _, pid = runner.rpartition("-")
    return host if host and pid.isdigit() else runner


def failed(req: ToolRequest, error: ToolError, source: str) -> ToolResult:
    return ToolResult(source=source, tool=TOOL, tool_version="", ok=False, error=error, **req.caused())


async def profile(req: ToolRequest, tools: ToolClient, publish: Publish, *,
                  source: str) -> StateVector | ToolResult:
    """The reply to one request: the published StateVector, or the ToolResult that says why not."""
    args = parse(req)
    if isinstance(args, ToolError):
        return failed(req, args, source)
    call: dict[str, Any] = {"task_path": args.task_path, "kernel": args.kernel, "shape": args.shape,
                            "config": args.config, "gpu": args.cuda_device}
    res = await tools.call(TOOL, call, job_id=req.job_id, causation_id=req.id)
    if not res.ok or res.result is None:
        return res if res.error is not None else failed(
            req, ToolError(code="failed", message=f"{TOOL} answered ok with no result"), source)
    try:
        out = ncu_output(res.result)
    except NcuRecordError as e:
        return failed(req, ToolError(code="internal", message=str(e)), source)
    node = args.node or runner_host(res.runner) or "unknown"
    vector = kernel_vector(out, node=node, gpu=args.gpu or f"cuda:{args.cuda_device}", source=source,
                           job_id=req.job_id, causation_id=req.id)
    await publish(kernel_profile_subject(node, out.profile.kernel), vector)
    return vector


def handler(tools: ToolClient, publish: Publish, *, source: str) -> Callable[[Request], Awaitable[None]]:
    """A micro handler answering each request in its own task: one long ncu run blocks no other."""
    inflight: set[asyncio.Task[None]] = set()

    async def serve(msg: Request) -> None:
        try:
            req = decode(msg.data, ToolRequest)
        except (msgspec.DecodeError, msgspec.ValidationError) as e:
            bad = ToolRequest(source="unknown", tool=TOOL)
            await msg.respond(encode(failed(bad, ToolError(code="invalid_request", message=(
                f"not a ToolRequest: {e}. Fix: send ToolRequest(tool=\"ncu_profile\", args={{...}})")), source)))
            return
        try:
            out: Message = await profile(req, tools, publish, source=source)
        except Exception as e:  # noqa: BLE001 - a publish refused or lost: the caller still gets an answer
            out = failed(req, ToolError(code="internal", message=f"profile.kernel: {e}"), source)
        await msg.respond(encode(out))

    async def handle(msg: Request) -> None:
        task = asyncio.create_task(serve(msg))
        inflight.add(task)
        task.add_done_callback(inflight.discard)

    return handle
