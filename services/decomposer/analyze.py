"""The `decomposer.analyze` request, pure: a ToolRequest (tool "decompose") in, a ToolResult out.

Two forms of `args`: a `DecomposeInput` ({"artifacts": {...}, "facts": {...}}), decomposed as given; or a
task reference ({"task_path", "config", "kernel", "shape"}), for which the adapter first fetches the
compile tool's text artifacts and ptxas -v through the toolrunner and passes their results here.
"""

from __future__ import annotations

from typing import Any

import msgspec

from services.decomposer.decompose import decompose
from shared.messages import ToolError, ToolRequest, ToolResult
from shared.tools.decompose import Artifacts, DecomposeInput, TaskFacts

SOURCE = "decomposer"
VERSION = "1"


class TaskRef(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_path: str
    config: dict[str, Any] = {}
    kernel: str = ""
    shape: str = "full"


def parse(req: ToolRequest) -> DecomposeInput | TaskRef | ToolError:
    try:
        if "artifacts" in req.args:
            return msgspec.convert(req.args, DecomposeInput)
        return msgspec.convert(req.args, TaskRef)
    except msgspec.ValidationError as e:
        return ToolError(
            code="invalid_request",
            message=f"decomposer.analyze args: {e}; pass either "
            '{"artifacts": {"ttgir": ...}} or {"task_path": "task.py", "config": {...}}',
        )


def artifacts_from(compile_result: dict[str, Any], ptxas_result: dict[str, Any] | None) -> Artifacts:
    """Artifacts from a compile tool result (include_text=True) and an optional ptxas_info result."""
    texts = {a["kind"]: a.get("text") or "" for a in compile_result.get("artifacts", [])}
    cfg = compile_result.get("config", {})
    return Artifacts(
        ttgir=texts.get("ttgir", ""),
        ptx=texts.get("ptx", ""),
        kernel=compile_result.get("kernel", ""),
        ptxas_info=(ptxas_result or {}).get("log", ""),
        shared_bytes=compile_result.get("shared_bytes"),
        num_stages=cfg.get("num_stages") if isinstance(cfg.get("num_stages"), int) else None,
    )


def answer(req: ToolRequest, inp: DecomposeInput, duration_s: float = 0.0) -> ToolResult:
    try:
        d = decompose(inp.artifacts, inp.facts)
    except ValueError as e:
        return ToolResult(
            source=SOURCE,
            tool="decompose",
            tool_version=VERSION,
            ok=False,
            **req.caused(),
            error=ToolError(code="failed", message=f"cannot decompose: {e}"),
        )
    return ToolResult(
        source=SOURCE,
        tool="decompose",
        tool_version=VERSION,
        ok=True,
        duration_s=duration_s,
        result=msgspec.to_builtins(d),
        **req.caused(),
    )


def failed(req: ToolRequest, error: ToolError) -> ToolResult:
    return ToolResult(
        source=SOURCE, tool="decompose", tool_version=VERSION, ok=False, error=error, **req.caused()
    )


def task_input(
    ref: TaskRef, compile_result: dict[str, Any], ptxas_result: dict[str, Any] | None
) -> DecomposeInput:
    return DecomposeInput(artifacts=artifacts_from(compile_result, ptxas_result), facts=TaskFacts())
