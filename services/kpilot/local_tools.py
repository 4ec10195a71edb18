"""Run the toolrunner's tool specs in this process: a `ToolClient` for `kpilot verify` and the tests.

The same contract as the toolrunner's bus endpoint: the arguments are converted to the tool's input
record (unknown keys refused), `check` then `run`, a ToolFailure becomes `ToolResult(ok=False, error=...)`
and the output is turned back into a plain JSON object. Each tool still executes its work in sandboxed
subprocesses; only the NATS hop is skipped.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import msgspec

from shared.messages import ToolError, ToolResult

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
_specs: dict[str, Any] = {}


def spec(tool: str) -> Any:
    """The toolrunner's spec for `tool` (its catalog, plus load_task until the catalog lists it)."""
    if not _specs:
        from services.toolrunner import task_info
        from services.toolrunner.catalog import load_specs

        _specs.update(load_specs())
        _specs.setdefault("load_task", task_info.SPEC)
    if tool not in _specs:
        raise KeyError(f"unknown tool {tool!r}; in-process tools: {', '.join(_specs)}")
    return _specs[tool]


def run_tool(tool: str, args: dict[str, Any], source: str = "kpilot") -> ToolResult:
    from services.toolrunner.tool import ToolFailure

    start = time.perf_counter()
    try:
        s = spec(tool)
    except KeyError as e:
        return ToolResult(
            source=source,
            tool=tool,
            tool_version="",
            ok=False,
            error=ToolError(code="unknown_tool", message=str(e.args[0])),
        )
    try:
        record = msgspec.convert(args, s.input)
    except msgspec.ValidationError as e:
        return ToolResult(
            source=source,
            tool=tool,
            tool_version=s.version,
            ok=False,
            error=ToolError(code="invalid_request", message=str(e), violations=[str(e)]),
        )
    try:
        if s.check is not None:
            s.check(record)
        out = s.run(record)
    except ToolFailure as e:
        return ToolResult(
            source=source,
            tool=tool,
            tool_version=s.version,
            ok=False,
            error=ToolError(code=e.code, message=e.message, violations=e.violations),
            duration_s=time.perf_counter() - start,
        )
    return ToolResult(
        source=source,
        tool=tool,
        tool_version=s.version,
        ok=True,
        result=msgspec.to_builtins(out),
        duration_s=time.perf_counter() - start,
        runner="in-process",
    )


class LocalToolClient:
    """`ToolClient` that runs specs in a worker thread (the event loop stays free while tools run)."""

    def __init__(self, source: str = "kpilot") -> None:
        self.source = source
        self.calls: list[ToolResult] = []

    async def call(self, tool: str, args: dict[str, Any]) -> ToolResult:
        res = await asyncio.to_thread(run_tool, tool, args, self.source)
        self.calls.append(res)
        return res
