"""Call a tool by name over the bus and always get a ToolResult back.

A tool nobody serves (GPU tools exist only on runners with a GPU) comes back as
`ToolResult(ok=False, error=ToolError(code="unavailable", ...))`, never as a made-up value.
"""

from __future__ import annotations

from typing import Any, Protocol

from shared.bus import Bus, NoResponders, RequestTimeout
from shared.messages import ToolError, ToolRequest, ToolResult
from shared.subjects import tool_subject


class ToolClient(Protocol):
    async def call(self, tool: str, args: dict[str, Any], *, job_id: str | None = None,
                   causation_id: str | None = None) -> ToolResult: ...


class BusToolClient:
    def __init__(self, bus: Bus, *, timeout_s: float = 900.0) -> None:
        self.bus = bus
        self.timeout_s = timeout_s

    async def call(self, tool: str, args: dict[str, Any], *, job_id: str | None = None,
                   causation_id: str | None = None) -> ToolResult:
        req = ToolRequest(source=self.bus.service, tool=tool, args=args, job_id=job_id,
                          causation_id=causation_id)
        try:
            return await self.bus.request(tool_subject(tool), req, ToolResult, timeout_s=self.timeout_s)
        except NoResponders:
            code, message = "unavailable", (f"unavailable: no runner serves tools.{tool} (GPU tools are served "
                                            f"only by runners with a GPU; start a toolrunner there)")
        except RequestTimeout:
            code, message = "timeout", f"tools.{tool} gave no reply within {self.timeout_s:.0f} s"
        return ToolResult(source=self.bus.service, tool=tool, tool_version="", ok=False,
                          error=ToolError(code=code, message=message), **req.caused())  # type: ignore[arg-type]
