"""The `mem_access_profile` tool: sectors per request and bytes per sector for every global memory
instruction of a task's kernels, on CPU.

Two sandboxed workers (worker.py): one compiles each launch for cuda:90 (TTGIR layouts, PTX
widths), the other replays the launch in Triton's interpreter and counts, per warp-level request, the
32 B sectors the active lanes touch (coalescing.py). The numbers are those ncu reports as
l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st} / l1tex__t_requests_..., modelled from addresses and
layouts; benchmarks/probes/compare_mem_access_ncu.py checks them against ncu on the H200.
"""

from __future__ import annotations

import msgspec

from services.toolrunner.sandbox import Limits, SandboxOutcome, run_worker
from services.toolrunner.tasks import load_for_tool
from services.toolrunner.tool import ToolFailure, ToolSpec
from services.toolrunner.tools.mem_access_profile.worker import (
    TARGET,
    CompileResult,
    MemAccessWorkerInput,
    TraceResult,
)
from shared.messages import Scalar
from shared.tools.memaccess import MemAccessInput, MemAccessOutput

WORKER = "services.toolrunner.tools.mem_access_profile.worker"
# The interpreter keeps numpy copies of every tensor; 8 GiB of address space holds the micro shapes of
# the examples many times over and still stops a runaway kernel.
MEMORY_MB = 8192
METHOD = ("Triton interpreter addresses of every tl.load/tl.store, mapped to lanes and warps with the "
          "cuda:90 TTGIR #blocked layout and grouped into warp requests of the PTX vector width; sectors "
          "are distinct 32 B blocks per request (a model of L1 requests, not a measurement)")


def _decode(outcome: SandboxOutcome, type_: type, what: str) -> object:
    if outcome.status != "ok" or outcome.result is None:
        code = outcome.status if outcome.status != "ok" else "failed"
        raise ToolFailure(code, f"{what} {outcome.status}: {outcome.message}")
    return msgspec.json.decode(outcome.result, type=type_)


def run(args: MemAccessInput) -> MemAccessOutput:
    if args.max_programs < 1:
        raise ToolFailure("refused", f"max_programs={args.max_programs}: pass at least 1 (256 is the default)")
    task = load_for_tool(args.task_path)
    if task.kind != "triton":
        raise ToolFailure("refused", f"mem_access_profile reads Triton layouts; {task.path} is a {task.kind} "
                                     "task (use ncu on a GPU)")
    if unknown := sorted(set(args.config) - set(task.config)):
        raise ToolFailure("refused", f"config keys {unknown} are not in the task's CONFIG; use some of "
                                     f"{sorted(task.config)}")
    if args.kernel is not None and args.kernel not in task.kernel_names():
        raise ToolFailure("refused", f"kernel {args.kernel!r} is not in KERNELS {task.kernel_names()}")
    try:
        shape: dict[str, Scalar] = dict(task.shape(args.shape))
    except KeyError as e:
        raise ToolFailure("refused", str(e.args[0])) from e
    notes = []
    if task.dtype == "bfloat16":
        shape["dtype"] = task.cpu_dtype
        notes.append(f"bfloat16 task traced on its {task.cpu_dtype} twin (the interpreter cannot run bf16): "
                     "byte counts are for that dtype")
    config = {**task.config, **args.config}
    base = MemAccessWorkerInput(phase="compile", task_path=task.path, config=config, shape=shape,
                                seed=args.seed, kernel=args.kernel, max_programs=args.max_programs)
    compiled = _decode(run_worker(WORKER, msgspec.json.encode(base),
                                  Limits(timeout_s=args.timeout_s, memory_mb=MEMORY_MB)),
                       CompileResult, "compiling the launch for cuda:90")
    assert isinstance(compiled, CompileResult)
    if not compiled.launches:
        raise ToolFailure("refused", "launch() ran no Triton kernel: it must call kernel[grid](...)")
    trace_req = msgspec.structs.replace(base, phase="trace", launches=compiled.launches)
    traced = _decode(run_worker(WORKER, msgspec.json.encode(trace_req),
                                Limits(timeout_s=args.timeout_s, memory_mb=MEMORY_MB, interpret=True)),
                     TraceResult, "tracing the launch in Triton's interpreter")
    assert isinstance(traced, TraceResult)
    for k in traced.kernels:
        if k.programs_analysed < k.programs_total:
            notes.append(f"{k.kernel}: {k.programs_analysed} of {k.programs_total} programs analysed (evenly "
                         "spread, first and last included); counts are for those programs only")
    notes.append("requests count warp instructions with at least one active lane; a fully masked-off "
                 "instruction is not counted")
    return MemAccessOutput(task=task.path, shape_name=args.shape, shape=shape, config=config,
                           target=f"{TARGET[0]}:{TARGET[1]}", kernels=traced.kernels, method=METHOD,
                           notes=notes + traced.notes)


SPEC = ToolSpec(
    name="mem_access_profile",
    order=100,
    version="1",
    description=("Per global load/store of a Triton task's kernels (with its source line): warp requests, "
                 "32 B sectors per request, bytes used per sector and active lanes, from the interpreter's "
                 "addresses and the cuda:90 TTGIR layout. CPU only; the ncu equivalent is "
                 "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum / l1tex__t_requests_..._ld.sum."),
    input=MemAccessInput,
    output=MemAccessOutput,
    run=run,
)
