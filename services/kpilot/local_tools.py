"""Run the toolrunner's tools in this process: a `ToolClient` for `kpilot verify` and the tests.

Every call is a ToolRequest handed to the toolrunner's own `ToolExecutor` (services/toolrunner/registry.py
`local_executor()`), so it gets every check the bus endpoint gets: the input schema, the GPU check, the
path checks, the spec's check, the output schema and the result cache. Each tool still executes its work
in sandboxed subprocesses; only the NATS hop is skipped.
"""

from __future__ import annotations

import asyncio
from typing import Any

from services.toolrunner.registry import ToolExecutor, local_executor
from shared.messages import ToolRequest, ToolResult

# The tools the verifier's funnel calls (services/verifier/funnel.py).
VERIFIER_TOOLS = (
    "load_task",
    "compile",
    "ptxas_info",
    "sass",
    "run_correctness",
    "honesty_probe",
    "bench",
    "bench_ab",
)


class LocalToolClient:
    """`ToolClient` over `local_executor()`, each call in a worker thread (the event loop stays free)."""

    def __init__(self, source: str = "kpilot", executor: ToolExecutor | None = None) -> None:
        self.source = source
        self.executor = executor or local_executor()
        self.calls: list[ToolResult] = []

    async def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        req = ToolRequest(source=self.source, tool=tool, args=args)
        res = await asyncio.to_thread(self.executor.execute, req)
        self.calls.append(res)
        return res
