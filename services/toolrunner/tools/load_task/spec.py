"""The `load_task` tool: a task file's manifest (shapes, dtype, tolerance, precision policy, roofline costs).

Services other than the toolrunner never import task files (DESIGN.md rule 4); the verifier reads the
precision policy and the FLOP/byte formulas it judges by from this record.
"""

from __future__ import annotations

from services.toolrunner.tasks import TaskError, load_task_cached
from services.toolrunner.tool import ToolFailure, ToolSpec
from shared.tools.task import LoadTaskInput, TaskManifest


def run(args: LoadTaskInput) -> TaskManifest:
    try:
        return load_task_cached(args.path)
    except TaskError as e:
        raise ToolFailure("refused", str(e), e.problems) from e


SPEC = ToolSpec(
    name="load_task",
    order=130,
    version="1",
    description="Load a kernel task file in a sandbox and return its manifest: kind, kernels, CONFIG and "
    "SPACE, shapes, dtype and CPU twin dtype, tolerances, precision policy and FLOP/byte costs per shape.",
    input=LoadTaskInput,
    output=TaskManifest,
    run=run,
    cacheable=False,
)
