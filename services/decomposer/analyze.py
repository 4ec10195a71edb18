"""The `decomposer.analyze` request, pure: a ToolRequest (tool "decompose") in, a ToolResult out.

Two forms of `args`: a `DecomposeInput` ({"artifacts": {...}, "facts": {...}}), decomposed as given; or a
task reference ({"task_path", "config", "kernel", "shape"}), for which the adapter first fetches through
the toolrunner the compile tool's text artifacts, ptxas -v, the sass tool's nvdisasm text (line info), the
task manifest (FLOP/byte formulas at the shape) and the launch_grid tool's record of the task's own launch
(grid, and for CUDA C++ the block), and passes their results here.
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


def sass_args(ref: TaskRef) -> dict[str, Any]:
    """The sass tool request for the task kernel: nvdisasm text only (the parsed instructions would double
    the record; decompose() reads the text with services/decomposer/sass.py)."""
    return {
        "task_path": ref.task_path,
        "config": ref.config,
        "kernel": ref.kernel,
        "shape": ref.shape,
        "disassembler": "nvdisasm",
        "include_text": True,
        "include_instructions": False,
    }


def artifacts_from(
    compile_result: dict[str, Any],
    ptxas_result: dict[str, Any] | None,
    sass_result: dict[str, Any] | None = None,
) -> Artifacts:
    """Artifacts from a compile tool result (include_text=True), an optional ptxas_info result and an
    optional sass tool result (include_text=True)."""
    texts = {a["kind"]: a.get("text") or "" for a in compile_result.get("artifacts", [])}
    cfg = compile_result.get("config", {})
    return Artifacts(
        ttgir=texts.get("ttgir", ""),
        ptx=texts.get("ptx", ""),
        kernel=compile_result.get("kernel", ""),
        sass=(sass_result or {}).get("text", ""),
        ptxas_info=(ptxas_result or {}).get("log", ""),
        shared_bytes=compile_result.get("shared_bytes"),
        num_stages=cfg.get("num_stages") if isinstance(cfg.get("num_stages"), int) else None,
    )


def grid_args(ref: TaskRef) -> dict[str, Any]:
    """The launch_grid tool request for the analysed config and shape."""
    return {"task_path": ref.task_path, "configs": [ref.config], "shape": ref.shape}


def launch_of(
    ref: TaskRef, manifest: dict[str, Any] | None, grid_result: dict[str, Any] | None
) -> tuple[list[int], list[int], str]:
    """(grid, block, note) of the analysed kernel's launch in a launch_grid result: the first launch of the
    kernel named in the request (default: the task's primary kernel), else the task's first launch."""
    if not grid_result or not grid_result.get("results"):
        return [], [], ""
    r = grid_result["results"][0]
    if r.get("error") or not r.get("grids"):
        return [], [], f"launch grid unknown: {r.get('error') or 'the launch made no kernel launch'}"
    names = r.get("kernels", [])
    want = ref.kernel or next((k.get("name", "") for k in (manifest or {}).get("kernels", [])), "")
    i = names.index(want) if want in names else 0
    blocks = r.get("blocks") or []
    return list(r["grids"][i]), list(blocks[i]) if i < len(blocks) else [], ""


def facts_from(
    ref: TaskRef, manifest: dict[str, Any] | None, grid_result: dict[str, Any] | None = None
) -> TaskFacts:
    """TaskFacts from a load_task result (the task's FLOP/byte formulas at the analysed shape, its dtype,
    precision policy and kernel count) and a launch_grid result (the grid the task's launch() computes for
    this config and shape; CUDA C++: also the block)."""
    grid, block, _ = launch_of(ref, manifest, grid_result)
    if not manifest:
        return TaskFacts(grid=grid, block=block)
    cost = next((c for c in manifest.get("costs", []) if c.get("shape_name") == ref.shape), None)
    cuda_line = manifest.get("cuda_source_line", 0) if manifest.get("kind") == "cuda" else 0
    return TaskFacts(
        grid=grid,
        block=block,
        source_file=manifest.get("path", "") if cuda_line else "",
        source_line=cuda_line,
        flops=cost["flops"] if cost else None,
        bytes_moved=cost["bytes_moved"] if cost else None,
        dtype=manifest.get("dtype", ""),
        precision=manifest.get("precision", "exact"),
        # The task's KERNELS tuple (examples/README.md); declared, not counted at launch, which is what
        # the fusion pattern needs to know (> 1 kernel).
        kernels_in_task=max(1, len(manifest.get("kernels", []))),
    )


def answer(
    req: ToolRequest, inp: DecomposeInput, duration_s: float = 0.0, notes: list[str] | None = None
) -> ToolResult:
    """`notes`: why an input is missing (a tool that failed), added to the decomposition's warnings."""
    try:
        d = decompose(inp.artifacts, inp.facts)
        d.warnings.extend(notes or [])
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
    ref: TaskRef,
    compile_result: dict[str, Any],
    ptxas_result: dict[str, Any] | None,
    sass_result: dict[str, Any] | None = None,
    manifest: dict[str, Any] | None = None,
    grid_result: dict[str, Any] | None = None,
) -> DecomposeInput:
    return DecomposeInput(
        artifacts=artifacts_from(compile_result, ptxas_result, sass_result),
        facts=facts_from(ref, manifest, grid_result),
    )


def tool_notes(results: dict[str, ToolResult]) -> list[str]:
    """One warning per tool whose result is missing: `name failed (code): message`."""
    return [
        f"{name} failed ({r.error.code}): {r.error.message}" if r.error else f"{name} gave no result"
        for name, r in results.items()
        if not r.ok or r.result is None
    ]
