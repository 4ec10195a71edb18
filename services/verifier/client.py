"""How the verifier calls tools: a `ToolClient` (`async call(tool, args) -> ToolResult`).

Over the bus it is `BusToolClient` (a ToolRequest on `tools.<name>`); the kpilot CLI and the tests pass a
client that runs the toolrunner's tool specs in-process (services/kpilot/local_tools.py). The funnel only
sees ToolResult records, so both paths are judged by the same code.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

import msgspec

from shared.bus import Bus, NoResponders, RequestTimeout
from shared.messages import ToolError, ToolRequest, ToolResult
from shared.subjects import tool_subject

T = TypeVar("T")
# A tool call's own limit plus the bus round trip; bench_ab defaults to 600 s.
DEFAULT_TIMEOUT_S = 900.0


class ToolClient(Protocol):
    async def call(self, tool: str, args: dict[str, Any]) -> ToolResult: ...


class ToolCallError(Exception):
    """A tool answered ok=False: the funnel turns it into a reason (or a "not measured" when unavailable)."""

    def __init__(self, tool: str, error: ToolError) -> None:
        super().__init__(f"{tool}: {error.code}: {error.message}")
        self.tool = tool
        self.error = error

    @property
    def unavailable(self) -> bool:
        return self.error.code == "unavailable"


class BusToolClient:
    def __init__(
        self,
        bus: Bus,
        source: str = "verifier",
        timeout_s: float = DEFAULT_TIMEOUT_S,
        job_id: str | None = None,
        causation_id: str | None = None,
    ) -> None:
        self.bus, self.source, self.timeout_s = bus, source, timeout_s
        self.job_id, self.causation_id = job_id, causation_id

    async def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        req = ToolRequest(
            source=self.source, tool=tool, args=args, job_id=self.job_id, causation_id=self.causation_id
        )
        try:
            return await self.bus.request(tool_subject(tool), req, ToolResult, timeout_s=self.timeout_s)
        except NoResponders:
            # A runner without a GPU does not register the GPU tools at all: nobody answers tools.bench.
            error = ToolError(
                code="unavailable",
                message=f"unavailable: no runner on the bus serves {tool} (no GPU runner is up)",
            )
        except RequestTimeout as e:
            error = ToolError(code="timeout", message=str(e))
        return ToolResult(source=self.source, tool=tool, tool_version="", ok=False, error=error)


async def call_typed(
    client: ToolClient, tool: str, args: msgspec.Struct, out: type[T]
) -> tuple[T, ToolResult]:
    """Call `tool` with a record; the decoded output record and the ToolResult (for its duration)."""
    res = await client.call(tool, msgspec.to_builtins(args))
    if not res.ok or res.result is None:
        raise ToolCallError(tool, res.error or ToolError(code="internal", message="no result and no error"))
    return msgspec.convert(res.result, out), res
