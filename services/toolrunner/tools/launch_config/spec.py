"""The launch_config tool: occupancy and waves from registers, shared memory, warps and grid.

Pure arithmetic on numbers (no user code runs), so it runs in the runner process and is cacheable.
"""

from __future__ import annotations

from services.toolrunner.tool import ToolFailure, ToolSpec
from services.toolrunner.tools.launch_config.occupancy import check_launch, launch_config
from shared.gpu_facts import gpu_facts
from shared.tools.launch import LaunchConfigInput, LaunchConfigOutput


def check(req: LaunchConfigInput) -> None:
    try:
        gpu = gpu_facts(req.device)
    except KeyError as e:
        raise ToolFailure("refused", str(e.args[0])) from None
    problems = check_launch(req, gpu)
    if problems:
        raise ToolFailure("refused", "launch_config refused: " + "; ".join(problems), problems)


def run(req: LaunchConfigInput) -> LaunchConfigOutput:
    check(req)
    return launch_config(req, gpu_facts(req.device))


SPEC = ToolSpec(
    name="launch_config",
    order=40,
    version="1",
    description="Theoretical occupancy (blocks and warps per SM) with its limiting resource (warps, blocks, "
    "registers, shared memory), waves per SM and the tail effect, from num_warps, registers per "
    "thread, shared bytes per block and the grid, for a known device (H200).",
    input=LaunchConfigInput,
    output=LaunchConfigOutput,
    run=run,
    check=check,
    cacheable=True,
    for_plans=True,
)
