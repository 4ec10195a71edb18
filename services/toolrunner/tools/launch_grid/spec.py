"""The `launch_grid` tool: the programs each launch of a task runs (Triton or CUDA C++), per config, at a shape.

The planner's wave model (search.estimate) needs the program count, and only the task's `launch()` knows
it: `l1_col_reduce` launches `cdiv(cols, BLOCK_N)` programs, so its widest column block leaves 32 programs
for 132 SMs. One sandboxed worker (worker.py) calls `launch()` for every config on meta-device
inputs with the Triton launch replaced by a recorder: nothing is allocated and no kernel runs, so the full
shape costs well under 0.1 ms per config on CPU (6,000 matmul configs: 1.6 s, mostly the worker's start).
"""

from __future__ import annotations

import msgspec

from services.toolrunner.sandbox import Limits, run_worker
from services.toolrunner.tasks import load_for_tool
from services.toolrunner.tool import ToolFailure, ToolSpec
from services.toolrunner.tools.launch_grid.worker import LaunchGridWorkerInput, LaunchGridWorkerResult
from shared.messages import Scalar
from shared.tools.grid import MAX_CONFIGS, LaunchGridInput, LaunchGridOutput

WORKER = "services.toolrunner.tools.launch_grid.worker"
METHOD = ("launch() called on PyTorch meta-device inputs (CUDA C++: fake CUDA tensors) with triton's "
          "JITFunction.run (CUDA: torch.cuda.compile_kernel's launcher) replaced by a recorder of the "
          "evaluated grid and block: no kernel runs; programs = grid x * y * z")


def run(args: LaunchGridInput) -> LaunchGridOutput:
    task = load_for_tool(args.task_path)
    if task.kind not in ("triton", "cuda"):
        raise ToolFailure("refused", f"launch_grid records Triton and CUDA C++ launches; {task.path} is a "
                                     f"{task.kind} task (its grid is in its own launch code: read it there)")
    if len(args.configs) > MAX_CONFIGS:
        raise ToolFailure("refused", f"{len(args.configs)} configs > {MAX_CONFIGS} per request: send them in parts")
    for o in args.configs:
        if unknown := sorted(set(o) - set(task.config)):
            raise ToolFailure("refused", f"config keys {unknown} are not in the task's CONFIG; use some of "
                                         f"{sorted(task.config)}")
    try:
        shape: dict[str, Scalar] = dict(task.shape(args.shape))
    except KeyError as e:
        raise ToolFailure("refused", str(e.args[0])) from e
    configs = [{**task.config, **o} for o in args.configs] or [dict(task.config)]
    req = LaunchGridWorkerInput(task_path=task.path, configs=configs, shape=shape)
    outcome = run_worker(WORKER, msgspec.json.encode(req), Limits(timeout_s=args.timeout_s))
    if outcome.status != "ok" or outcome.result is None:
        code = outcome.status if outcome.status != "ok" else "failed"
        raise ToolFailure(code, f"recording the launch grids {outcome.status}: {outcome.message}")
    res = msgspec.json.decode(outcome.result, type=LaunchGridWorkerResult)
    if res.error:
        raise ToolFailure("failed", f"{res.error}; launch_grid needs make_inputs to build meta tensors "
                                    "(shapes only: no .item(), .tolist() or data-dependent sizes)")
    return LaunchGridOutput(task_path=task.path, shape=shape, results=res.results, method=METHOD)


SPEC = ToolSpec(
    name="launch_grid",
    order=140,
    version="1",
    description=("The grid and program count (CUDA C++: also the block) of every launch a task's launch() "
                 "makes, for each given config, at a named shape (default full), recorded on meta-device "
                 "(CUDA: fake CUDA) inputs: no GPU, no kernel runs. Feeds the planner's waves-per-SM "
                 "estimate and the decomposer's grid."),
    input=LaunchGridInput,
    output=LaunchGridOutput,
    run=run,
)
