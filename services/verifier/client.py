"""How the verifier calls tools: through shared/toolclient.py's `ToolClient`, and `call_typed` on top.

Over the bus it is `BusToolClient` (a ToolRequest on `tools.<name>`, the runner watched while it works;
with `raise_infra=True` an infrastructure failure raises `ToolInfraError`, which the funnel lets through
and the bus retries: it never becomes a verdict); the kpilot CLI and the tests pass `InProcessToolClient`
over the toolrunner's own executor. The funnel only sees ToolResult records, so both paths are judged by
the same code.
"""

from __future__ import annotations

from typing import TypeVar

import msgspec

from shared.messages import ToolError, ToolResult
from shared.toolclient import ToolClient

T = TypeVar("T")


class ToolCallError(Exception):
    """A tool answered ok=False: the funnel turns it into a reason (or a "not measured" when unavailable)."""

    def __init__(self, tool: str, error: ToolError) -> None:
        super().__init__(f"{tool}: {error.code}: {error.message}")
        self.tool = tool
        self.error = error

    @property
    def unavailable(self) -> bool:
        return self.error.code == "unavailable"


async def call_typed(
    client: ToolClient, tool: str, args: msgspec.Struct, out: type[T]
) -> tuple[T, ToolResult]:
    """Call `tool` with a record; the decoded output record and the ToolResult (for its duration)."""
    res = await client.call(tool, msgspec.to_builtins(args))
    if not res.ok or res.result is None:
        raise ToolCallError(tool, res.error or ToolError(code="internal", message="no result and no error"))
    return msgspec.convert(res.result, out), res
