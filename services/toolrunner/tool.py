"""What a tool is: a name, a version, typed input and output records, and the function that runs it.

Each tool's package defines `SPEC = ToolSpec(...)` in `tools/<name>/spec.py`; `services.toolrunner.catalog`
finds them there. The input and
output JSON Schemas are generated from the record types, the request is validated against the input
schema before anything runs and the output against the output schema before it is returned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec


class ToolFailure(Exception):
    """A structured tool failure: becomes `ToolResult(ok=False, error=ToolError(code, message, ...))`.

    `code` is one of the ToolError codes in shared.messages ("refused" for a semantic check that fails
    before execution, "failed"/"timeout"/"crashed"/"out_of_memory" for sandbox outcomes,
    "unavailable" for a GPU tool where no GPU is present).
    """

    def __init__(self, code: str, message: str, violations: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.violations = list(violations)


@dataclass(frozen=True)
class ToolSpec:
    name: str  # the tool's folder under services/toolrunner/tools/ has the same name
    # Its place in the catalog (`kpilot tool --list`, shared/tools/catalog.py): specs sort by it, no two alike.
    # Steps of 10 leave room to put a new tool between two others.
    order: int
    version: str
    description: str
    input: type[msgspec.Struct]
    output: type[msgspec.Struct]
    run: Callable[[Any], msgspec.Struct]
    needs_gpu: bool = False  # it times or profiles on the GPU: it holds the GPU alone (call_slots.py)
    # It runs code on the GPU but times nothing (correctness, honesty): beside other such calls, never
    # during a timing (call_slots.py).
    shares_gpu: bool = False
    # Semantic checks before execution (e.g. the kernel name exists in the binary); raise ToolFailure.
    check: Callable[[Any], None] | None = None
    # Deterministic tools (compile, ptxas_info, sass, launch_config) are cached by their input.
    cacheable: bool = False
    # A planner's model may ask for it in a plan: static diagnosis, no GPU and no run of the task's code
    # (the verifier measures). The tool table the model sees is these specs (shared/tools/catalog.py).
    for_plans: bool = False
