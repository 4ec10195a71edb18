"""Call a tool by name and get a ToolResult back: the one `ToolClient` protocol and its two clients.

- `BusToolClient`: a ToolRequest on `tools.<name>`, answered by a toolrunner (production).
- `InProcessToolClient`: the same ToolRequest handed to a tool executor in this process (the toolrunner's
  `ToolExecutor`, built by services/toolrunner/registry.py's `local_executor()`): `kpilot verify`, the
  benchmarks and the tests. No bus hop, the same checks; each tool still runs its work in sandboxed
  workers.

The toolrunner that takes a call is watched while it works (`Bus.request(responder="toolrunner")`), so
a runner that dies mid-call ends the call in seconds. When nobody serves `tools.<name>` the runners that
are up say why (their health, from `$SRV.STATS.toolrunner`):

- a GPU tool and only runners without a GPU: `unavailable` (a fact of this machine: "not measured");
- a tool no runner knows: `unknown_tool`;
- no runner up, one still starting, a runner lost mid-call, or no reply in time: an infrastructure
  failure. It says so in its message and, with `raise_infra=True` (the verifier), raises
  `ToolInfraError`, which a bus handler lets through so that the message is retried later instead of
  becoming a candidate's failure (DESIGN.md rule 5).
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from shared.bus import Bus, BusError, NoResponders, RequestTimeout, ResponderLost, Unavailable
from shared.messages import ToolError, ToolRequest, ToolResult
from shared.service import Health, instances
from shared.subjects import tool_subject

RUNNER = "toolrunner"
START_HINT = "start one: `kpilot up`, or `python -m services.toolrunner --nats URL`"


class ToolInfraError(Unavailable):
    """A tool call failed for a reason that is not the call's: retry it once the runner is back."""

    def __init__(self, tool: str, message: str) -> None:
        super().__init__(message)
        self.tool = tool


class ToolClient(Protocol):
    """What every caller of tools holds: `call(tool, args)` -> the tool's ToolResult (ok or an error)."""

    async def call(self, tool: str, args: dict[str, Any], *, job_id: str | None = None,
                   causation_id: str | None = None) -> ToolResult: ...


class ToolExecutorLike(Protocol):
    """One tool request in, one ToolResult out (services/toolrunner/registry.py `ToolExecutor`)."""

    def execute(self, req: ToolRequest) -> ToolResult: ...


def not_served(tool: str, runners: list[Health]) -> tuple[str, str, bool]:
    """(code, message, infrastructure?) for a call of `tool` that found no responder."""
    if not runners:
        return "unavailable", f"no toolrunner is up to run {tool} (none answered); {START_HINT}", True
    starting = [h.instance for h in runners if not h.healthy]
    serving = [h.instance for h in runners if tool in h.details.get("tools", "").split(",")]
    if starting or serving:
        who = ", ".join(starting or serving)
        return "unavailable", (f"tools.{tool} had no responder while toolrunner {who} is "
                               f"{'starting' if starting else 'restarting'}; retry"), True
    if any(tool in h.details.get("gpu_tools", "").split(",") for h in runners):
        return "unavailable", (f"unavailable: {tool} needs a GPU and the {len(runners)} toolrunner(s) up "
                               f"({', '.join(h.instance for h in runners)}) have none; start a toolrunner on "
                               f"a GPU machine"), False
    known = sorted({t for h in runners for t in h.details.get("tools", "").split(",") if t})
    return "unknown_tool", f"no tool named {tool!r}; the toolrunners serve: {', '.join(known)}", False


class BusToolClient:
    def __init__(self, bus: Bus, *, timeout_s: float = 900.0, source: str | None = None,
                 job_id: str | None = None, causation_id: str | None = None, raise_infra: bool = False) -> None:
        self.bus, self.timeout_s, self.source = bus, timeout_s, source or bus.service
        self.job_id, self.causation_id, self.raise_infra = job_id, causation_id, raise_infra

    async def call(self, tool: str, args: dict[str, Any], *, job_id: str | None = None,
                   causation_id: str | None = None) -> ToolResult:
        req = ToolRequest(source=self.source, tool=tool, args=args, job_id=job_id or self.job_id,
                          causation_id=causation_id or self.causation_id)
        try:
            return await self.bus.request(tool_subject(tool), req, ToolResult, timeout_s=self.timeout_s,
                                          responder=RUNNER)
        except NoResponders:
            code, message, infra = not_served(tool, await instances(self.bus, RUNNER))
        except ResponderLost as e:
            code, message, infra = "unavailable", f"{e}; {START_HINT}", True
        except RequestTimeout:
            code, message, infra = "timeout", (f"tools.{tool} gave no reply within {self.timeout_s:g} s although "
                                               f"its runner stayed up"), True
        except BusError as e:  # the connection or the micro layer failed: still not the call's fault
            code, message, infra = "unavailable", f"tools.{tool}: {e}", True
        if infra and self.raise_infra:
            raise ToolInfraError(tool, message)
        return ToolResult(source=self.source, tool=tool, tool_version="", ok=False,
                          error=ToolError(code=code, message=message), **req.caused())  # type: ignore[arg-type]


class InProcessToolClient:
    """`ToolClient` over an executor in this process; each call runs in a worker thread, so the event loop
    stays free while a tool runs (the funnel runs independent inspections at once)."""

    def __init__(self, executor: ToolExecutorLike, *, source: str = "kpilot", job_id: str | None = None,
                 causation_id: str | None = None) -> None:
        self.executor, self.source = executor, source
        self.job_id, self.causation_id = job_id, causation_id

    async def call(self, tool: str, args: dict[str, Any], *, job_id: str | None = None,
                   causation_id: str | None = None) -> ToolResult:
        req = ToolRequest(source=self.source, tool=tool, args=args, job_id=job_id or self.job_id,
                          causation_id=causation_id or self.causation_id)
        return await asyncio.to_thread(self.executor.execute, req)
