"""The bench tool: GPU time of a task's launch by the do_bench method, with clocks and provenance.

GPU only. The task is loaded (sandboxed, cached by content hash) to check the shape and config names, then
worker.py times it on the GPU (services/toolrunner/worker_lib/gpu_timing.py has the method;
timing_stats.py the statistics).
"""

from __future__ import annotations

import msgspec

from services.toolrunner.nvtools import require_gpu
from services.toolrunner.sandbox import Limits, run_worker
from services.toolrunner.tasks import load_for_tool
from services.toolrunner.tool import ToolFailure, ToolSpec
from services.toolrunner.tools.bench.worker import BenchJob
from shared.messages import Scalar
from shared.tools.bench import BenchInput, BenchOutput
from shared.tools.task import TaskManifest


def check_task(manifest: TaskManifest, shape: str, config: dict[str, Scalar]) -> None:
    """Refuse a shape or config key the task does not have, naming the ones it does."""
    try:
        manifest.shape(shape)
    except KeyError as e:
        raise ToolFailure("refused", str(e.args[0])) from None
    unknown = sorted(set(config) - set(manifest.config))
    if unknown and manifest.config:
        raise ToolFailure(
            "refused",
            f"config keys {unknown} are not in task {manifest.name}'s CONFIG; it has "
            f"{', '.join(sorted(manifest.config))}",
        )


def check(req: BenchInput) -> None:
    if req.warmup_ms <= 0 or req.rep_ms <= 0:
        raise ToolFailure("refused", "warmup_ms and rep_ms must be > 0 (do_bench uses 25 and 100)")


def run_bench_worker(job: BenchJob, gpu: int, timeout_s: float) -> bytes:
    outcome = run_worker(
        "services.toolrunner.tools.bench.worker",
        msgspec.json.encode(job),
        Limits(timeout_s=timeout_s, memory_mb=None, gpu=gpu),
    )
    if outcome.status != "ok" or outcome.result is None:
        raise ToolFailure(outcome.status if outcome.status != "ok" else "failed", outcome.message)
    return outcome.result


def run(req: BenchInput) -> BenchOutput:
    check(req)
    require_gpu("bench", req.gpu)
    manifest = load_for_tool(req.task_path)
    check_task(manifest, req.shape, req.config)
    req = msgspec.structs.replace(req, task_path=manifest.path)
    return msgspec.json.decode(
        run_bench_worker(BenchJob(kind="single", single=req), req.gpu, req.timeout_s), type=BenchOutput
    )


SPEC = ToolSpec(
    name="bench",
    order=60,
    version="1",
    description="Time a task's launch on the GPU by Triton's do_bench method (256 MiB L2 flush before every "
    "call outside the CUDA events, 25 ms warm-up / 100 ms budgets, CUDA-graph replay under 10 us): "
    "all samples, median, p20, p80, CV, SM clock and NVML clock-event reasons (capped samples "
    "dropped), TFLOP/s and TB/s from the task's formulas, and versions. GPU only.",
    input=BenchInput,
    output=BenchOutput,
    run=run,
    check=check,
    needs_gpu=True,
)
